"""The registries: each record agrees with the code that reads it.

An observable's record states what the kernels compute (its two-logit
formula against ``observables`` on two-logit rows, whether it depends on the
target, saturates or stays in [0, 1]) and what the laws cover; a model's
record its parameters and their checks; a target's record the names the
entry points accept.
"""
import ast
import dataclasses
import os
import re

import numpy as np
import pytest

import fastsoftmax as fs
from fastsoftmax import registries as reg
from fastsoftmax._inputs import _MC_NAMES
from fastsoftmax._kernels import row
from helpers import REPO


def test_observable_names_and_indices_come_from_the_records():
    assert fs.OBS_NAMES == row.OBS_NAMES == tuple(o.name for o in reg.OBSERVABLES)
    assert row.NOBS == len(reg.OBSERVABLES)
    for o in reg.OBSERVABLES:
        assert getattr(row, o.name.upper()) == o.index
        assert getattr(reg, o.name.upper()) is o is reg.OBSERVABLE[o.name]


# two-logit rows [g, 0] (and the other class as the label), gaps from a tie
# to a saturated row
GAPS = np.array([0.0, 0.3, 2.0, 9.0, 40.0])


@pytest.mark.parametrize("o", reg.OBSERVABLES, ids=lambda o: o.name)
def test_two_logit_formula_is_the_kernels(o):
    """The formula a record names is what the row math computes on a
    two-logit row, for the top class and (targeted) the other one."""
    pytest.importorskip("scipy")
    from fastsoftmax.theory import _two
    x = np.stack([GAPS, np.zeros_like(GAPS)], axis=1)
    f = _two._FORMULAS[o.two_logit][0]
    got = fs.observables(x)[o.name]
    np.testing.assert_allclose(got, f(GAPS), rtol=1e-12, atol=1e-300)
    other = fs.observables(x, target=1)[o.name]
    if o.targeted:
        np.testing.assert_allclose(other, _two._FORMULAS[o.two_logit_other][0](GAPS),
                                   rtol=1e-12)
    else:
        assert o.two_logit_other is None
        np.testing.assert_array_equal(other, got)


def test_targeted_is_what_the_target_changes():
    x = np.random.default_rng(0).normal(size=(64, 16)) * 3.0
    top = fs.observables(x)
    fixed = fs.observables(x, target=5)
    changed = {o.name for o in reg.OBSERVABLES if not np.array_equal(top[o.name], fixed[o.name])}
    assert changed == {o.name for o in reg.OBSERVABLES if o.targeted}


def test_saturates_and_unit_interval_hold_on_rows():
    """A saturated row (gap 60) makes every saturating observable tiny (and
    the entropy, whose law is the random energy model's, but not max_prob);
    every unit-interval observable stays in [0, 1], the others exceed 1 on
    some row (a flat row of 64, a label far from the top)."""
    sat = fs.observables(np.array([[60.0, 0.0, -1.0, -2.0]]))
    tiny = {o.name for o in reg.OBSERVABLES if sat[o.name][0] < 1e-20}
    assert tiny == {o.name for o in reg.OBSERVABLES if o.saturates} | {reg.ENTROPY.name}
    rows = np.concatenate([np.random.default_rng(1).normal(size=(256, 64)) * 4.0,
                           np.zeros((1, 64)), np.eye(64)[:1] * 50.0])
    obs = fs.observables(rows, target=np.r_[np.full(257, 3), 7])
    for o in reg.OBSERVABLES:
        inside = bool(((obs[o.name] >= 0) & (obs[o.name] <= 1)).all())
        assert inside == o.unit_interval, o.name


def test_laws_cover_what_the_records_say():
    theory = pytest.importorskip("fastsoftmax.theory")
    assert theory.SATURATING == tuple(o.name for o in reg.OBSERVABLES if o.saturates)
    law = theory.Law.gaussian(64, 30.0)
    for o in reg.OBSERVABLES:
        if o.rem is None:
            with pytest.raises(ValueError, match="random energy model"):
                law.rem[o.name]
        else:
            rel, _ = law.rem[o.name].stated_accuracy()
            assert rel.shape == ()
        if o.saturates:
            assert 0.0 < float(law[o.name].cdf(1e-3)) < 1.0
        else:
            with pytest.raises(ValueError, match="no saturation law"):
                law[o.name]


def test_observable_table_is_in_the_docstring():
    table = reg.observable_table()
    doc = fs.observables.__doc__
    for o in reg.OBSERVABLES:
        assert f"``{o.name}``" in table and o.math in doc
    assert reg.OBSERVABLE_TABLE not in doc
    assert reg.with_observable_table(None) is None


_BAD = {"int>=1": 0, "real": float("nan"), "real>=0": -1.0, "real>0": 0.0}


@pytest.mark.parametrize("rec", reg.MODELS, ids=lambda m: m.name)
def test_model_records_are_the_classes(rec):
    cls = fs.models.MODELS[rec.name]
    assert cls.__name__ == rec.cls and cls.name == rec.name
    fields = dataclasses.fields(cls)
    assert tuple(f.name for f in fields) == tuple(p.name for p in rec.params)
    required = {p.name: (1 if p.kind == "int>=1" else p.default) for p in rec.params
                if p.default is None}
    for p, f in zip(rec.params, fields):
        if p.default is not None:
            assert f.default == p.default, p.name
        if p.kind in _BAD:
            with pytest.raises(ValueError, match=f"^{p.name} must"):
                cls(**{**required, p.name: _BAD[p.kind]})
        elif p.kind == "choice":
            with pytest.raises(ValueError, match=f"^{p.name} must"):
                cls(**{**required, p.name: "neither"})
            for c in p.choices:
                assert getattr(cls(**{**required, p.name: c}), p.name) == c
    assert tuple(fs.models.MODELS) == tuple(m.name for m in reg.MODELS)


def test_model_laws():
    theory = pytest.importorskip("fastsoftmax.theory")
    for rec in reg.MODELS:
        model = fs.models.MODELS[rec.name](n=8, **({"d_k": 4} if rec.name == "dotproduct" else {}))
        law = theory.law(model)
        assert ("scale" in law.params) == (rec.law == "gaussian")
        if rec.scale_param is not None:
            assert float(law.params["scale"]) == getattr(model, rec.scale_param)


def test_target_records():
    assert tuple(int(t.mode) for t in reg.TARGETS) == tuple(range(len(reg.TargetMode)))
    assert set(_MC_NAMES) == {t.name for t in reg.TARGETS if t.monte_carlo and t.by_name}
    x = np.array([[1.0, 0.0, -1.0]])
    model = fs.models.Gaussian(n=8)
    for t in reg.TARGETS:
        if t.by_name:
            if t.monte_carlo:
                fs.simulate(model, 4, seed=0, target=t.name, backend="cpu")
            if t.arrays:
                fs.observables(x, target=t.name)
            else:
                with pytest.raises(ValueError, match="unknown target|labels"):
                    fs.observables(x, target=t.name)


# --------------------------------------------------------------------------
# one home per name: code that means an observable reads its record
# (``registries.JAC_DIAG_MAX.name``), and the audit's kinds come from
# ``fastsoftmax.audits._kinds``, so a name is spelt in a few modules only

HOMES_AT_MOST = 4
PACKAGE = os.path.join(REPO, "fastsoftmax")


def _package_sources():
    """(path relative to the repository, source) of every module of the package."""
    for root, _, files in os.walk(PACKAGE):
        for f in sorted(files):
            if f.endswith(".py"):
                path = os.path.join(root, f)
                with open(path, encoding="utf-8") as fh:
                    yield os.path.relpath(path, REPO), fh.read()


def _docstrings(tree):
    """The string nodes that are docstrings (of the module, a class or a function)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if (body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                    and isinstance(body[0].value.value, str)):
                out.add(id(body[0].value))
    return out


def _code_uses(tree):
    """Every name the code spells: string constants that are a whole name
    (docstrings excluded: an example is text, counted by the literal test
    below) and identifiers (variables, attributes, arguments, keywords,
    definitions)."""
    docs = _docstrings(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if id(node) not in docs:
                yield node.value
        elif isinstance(node, ast.Name):
            yield node.id
        elif isinstance(node, ast.Attribute):
            yield node.attr
        elif isinstance(node, (ast.arg, ast.keyword)) and node.arg:
            yield node.arg
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield node.name


# the observables' names and the audit's kinds that are not words of the
# package's own functions (softmax and log_softmax name public functions)
COUNTED = tuple(o.name for o in reg.OBSERVABLES) + ("ce_grad",)


def _homes(names_in):
    homes = {name: [] for name in COUNTED}
    for path, src in _package_sources():
        for name in set(names_in(src)) & set(COUNTED):
            homes[name].append(path)
    return homes


def _over(homes):
    return {name: sorted(paths) for name, paths in homes.items() if len(paths) > HOMES_AT_MOST}


def test_names_in_code_have_few_homes():
    """An observable's name (or an audit kind) is spelt as code, a string
    constant or an identifier, in at most HOMES_AT_MOST modules."""
    homes = _homes(lambda src: _code_uses(ast.parse(src)))
    assert not _over(homes), f"spelt in more than {HOMES_AT_MOST} modules: {_over(homes)}"
    assert "fastsoftmax/registries.py" in homes[reg.JAC_DIAG_MAX.name]


def test_quoted_names_have_few_homes():
    """Every quoted spelling, docstring examples included: at most
    HOMES_AT_MOST modules per name."""
    def quoted(src):
        return {name for name in COUNTED if re.search(rf"[\"']{name}[\"']", src)}
    homes = _homes(quoted)
    assert not _over(homes), f"quoted in more than {HOMES_AT_MOST} modules: {_over(homes)}"


def test_home_count_fails_on_a_new_spelling():
    """The counter sees a name spelt as a string, an attribute or a keyword,
    and not in a docstring."""
    src = ('def f(s, r):\n    """Uses s["jac_diag_max"]."""\n'
           '    return s["jac_diag_max"], r.ce_loss, g(ce_grad=1)\n')
    assert {"jac_diag_max", "ce_loss", "ce_grad"} <= set(_code_uses(ast.parse(src)))
    doc_only = 'def f():\n    """s["jac_diag_max"]"""\n'
    assert "jac_diag_max" not in set(_code_uses(ast.parse(doc_only)))
