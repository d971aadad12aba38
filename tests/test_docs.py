"""The public API's documentation contract: every public name has a numpydoc
docstring that passes numpydoc's validation, full annotations, and Examples
that run (as doctests, here); the package ships ``py.typed``; the Sphinx API
reference covers every public name.

The public API is the ``__all__`` of the modules in ``PUBLIC_MODULES``: a new
public module (``fastsoftmax.theory``, ``fastsoftmax.torch``) is one line
there, and its names, their methods and its doctests are then checked like
the others.
"""
from __future__ import annotations

import doctest
import importlib
import inspect
import os
import re
import types

import pytest

from helpers import REPO

# The public modules, in one place: their ``__all__`` is the public API.
PUBLIC_MODULES = [
    "fastsoftmax",
    "fastsoftmax.api",
    "fastsoftmax.summary",
    "fastsoftmax.models",
    "fastsoftmax.sweeps",
    "fastsoftmax.verify",
    "fastsoftmax.verify.criteria",
    "fastsoftmax.torch",
    "fastsoftmax.theory",
    "fastsoftmax.audits",
    "fastsoftmax.testing",
]

# numpydoc checks every public name must pass, and why these:
#   GL03 double line break, GL06 unknown section, GL07 sections out of order,
#   GL10 reST directive missing its double colon: malformed docstrings that
#   Sphinx renders wrong or drops silently.
#   GL08 no docstring: every public name is documented.
#   SS01 no summary, SS02 summary not capitalised, SS03 summary without a
#   final period, SS06 summary over several lines: a one-line sentence is what
#   API tables, ``help()`` and IDE tooltips show.
#   PR01 a parameter not documented, PR02 a documented parameter that does not
#   exist, PR03 parameters out of order, PR06 "integer"/"boolean"/"string"
#   instead of int/bool/str, PR07 a parameter without a description, PR10
#   "name: type" without the space before the colon (numpydoc then misparses
#   it): the Parameters section is the contract a caller reads.
#   RT01 no Returns section, RT02 a Returns line with more than the type,
#   RT03 a return value without a description (numpydoc itself applies RT01
#   to functions and methods only, not to properties).
# Left out on purpose: SS05 (summaries here are noun phrases, "Softmax along
# axis", rather than imperative verbs), PR08/PR09 and RT04/RT05 (descriptions
# that start with ``code`` or end in a formula), SA01 (See Also only where it
# helps), GL01/GL02 (where the quotes sit), ES01 and EX01 (below, per kind).
# Data (OBS_NAMES, MODELS, verify's constants) has no docstring of its own for
# numpydoc to read: test_sphinx_reference_covers checks that it is documented.
CHECKS = frozenset({
    "GL03", "GL06", "GL07", "GL08", "GL10",
    "SS01", "SS02", "SS03", "SS06",
    "PR01", "PR02", "PR03", "PR06", "PR07", "PR10",
    "RT01", "RT02", "RT03",
})
# functions and classes also need an extended summary (ES01: where the math
# goes) and Examples (EX01); methods need Examples; properties need neither
# (a one-line summary says what they hold).
EXTRA_CHECKS = {
    "function": {"ES01", "EX01"},
    "class": {"ES01", "EX01"},
    "method": {"EX01"},
    "property": set(),
}

OPTIONFLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def _missing_dependency(e):
    """The optional third-party module whose absence raised ``e`` (or caused
    it: ``fastsoftmax.torch`` re-raises with the install command), else None."""
    for err in (e, e.__cause__):
        name = getattr(err, "name", None) if isinstance(err, ModuleNotFoundError) else None
        if name and name.split(".")[0] != "fastsoftmax":
            return name
    return None


def _import(name):
    """The module, or a skip when an optional third-party dependency is missing."""
    try:
        return importlib.import_module(name)
    except ImportError as e:
        if _missing_dependency(e):
            pytest.skip(f"{name} needs {_missing_dependency(e)}")
        raise


def _is_ours(obj):
    return (getattr(obj, "__module__", None) or "").split(".")[0] == "fastsoftmax"


def _members(cls):
    """(name, kind) of a public class's public methods and properties,
    inherited ones included (``params`` of the models), object's left out."""
    seen = {}
    for klass in reversed(cls.__mro__):
        if not _is_ours(klass):
            continue
        for name, attr in vars(klass).items():
            if name.startswith("_"):
                continue
            if isinstance(attr, property):
                seen[name] = "property"
            elif isinstance(attr, (staticmethod, classmethod, types.FunctionType)):
                seen[name] = "method"
    return sorted(seen.items())


# public modules public_names() could not import, and the optional dependency
# each lacks: test_every_public_module_checked says so (a skip with the reason)
UNCHECKED: dict[str, str] = {}


def public_names():
    """(dotted name, kind) of every public function, class, method and
    property, each object once (under the first module that exports it)."""
    out, seen = [], set()
    for modname in PUBLIC_MODULES:
        try:
            mod = importlib.import_module(modname)
        except ImportError as e:                # an optional dependency missing
            if not _missing_dependency(e):
                raise
            UNCHECKED[modname] = _missing_dependency(e)
            continue
        for name in mod.__all__:
            obj = getattr(mod, name)
            if isinstance(obj, types.ModuleType) or not _is_ours(obj) or id(obj) in seen:
                continue                # modules; data (OBS_NAMES, MODELS, ...)
            seen.add(id(obj))
            if inspect.isclass(obj):
                out.append((f"{modname}.{name}", "class"))
                out.extend((f"{modname}.{name}.{m}", kind) for m, kind in _members(obj))
            elif callable(obj):
                out.append((f"{modname}.{name}", "function"))
    return out


PUBLIC_NAMES = public_names()


@pytest.mark.parametrize("modname", PUBLIC_MODULES)
def test_every_public_module_checked(modname):
    """A public module whose extra is missing is reported, never dropped silently."""
    if modname in UNCHECKED:
        pytest.skip(f"{modname}'s names not checked: needs {UNCHECKED[modname]} (an extra)")
    mod = importlib.import_module(modname)
    assert mod.__all__, f"{modname} exports nothing"


def _resolve(dotted):
    mod, _, rest = dotted.partition(".")
    obj = importlib.import_module(mod)
    parts = rest.split(".")
    while parts:                   # the longest importable module prefix
        try:
            obj = importlib.import_module(f"{obj.__name__}.{parts[0]}")
        except ModuleNotFoundError:
            break
        parts.pop(0)
    for p in parts:
        obj = getattr(obj, p)
    return obj


# --------------------------------------------------------------------------
# __all__

# the names each module must make public
REQUIRED = {
    "fastsoftmax": ["softmax", "log_softmax", "observables", "summarize", "simulate",
                    "Summary", "Stat", "ApproximationWarning", "OBS_NAMES"],
    "fastsoftmax.models": ["Gaussian", "Shifted", "DotProduct"],
    "fastsoftmax.sweeps": ["sweep", "plan", "Plan", "stat_columns", "point_record",
                           "read_table", "write_table", "SweepLocked", "theory_columns",
                           "theory_record"],
    "fastsoftmax.verify": ["run", "prepare", "VerifyResult", "Claim", "CLAIMS", "ClaimSpec",
                           "Evidence", "judge_claims"],
    "fastsoftmax.verify.criteria": ["Check", "LawPoint", "Est", "judge_band",
                                    "judge_prediction", "judge_law", "same", "all_of",
                                    "measures", "describe"],
    "fastsoftmax.theory": ["Law", "law", "Observable", "Gap", "RandomEnergyModel",
                           "RemObservable", "critical_scale", "critical_d_k", "freezing_scale",
                           "stated_accuracy", "ACCURACY", "SATURATING"],
}


@pytest.mark.parametrize("modname", PUBLIC_MODULES)
def test_all_is_complete(modname):
    mod = _import(modname)
    assert mod.__doc__, f"{modname} has no module docstring"
    assert len(set(mod.__all__)) == len(mod.__all__), "repeated names in __all__"
    missing = [n for n in mod.__all__ if not hasattr(mod, n)]
    assert not missing, f"{modname}.__all__ names what it lacks: {missing}"
    absent = [n for n in REQUIRED.get(modname, []) if n not in mod.__all__]
    assert not absent, f"public names missing from {modname}.__all__: {absent}"


# --------------------------------------------------------------------------
# numpydoc

@pytest.mark.parametrize("name,kind", PUBLIC_NAMES, ids=[n for n, _ in PUBLIC_NAMES])
def test_numpydoc(name, kind):
    from numpydoc.validate import validate
    res = validate(name)           # numpydoc's parse warnings are errors too (setup.cfg)
    want = CHECKS | EXTRA_CHECKS[kind]
    errors = [f"{code} {msg}" for code, msg in res["errors"] if code in want]
    assert not errors, f"{name} ({kind}):\n  " + "\n  ".join(errors)


def _tomllib():
    """The standard library's TOML reader, or its backport on Python 3.10 (the
    [test] extra installs it there)."""
    try:
        import tomllib
    except ModuleNotFoundError:                 # Python 3.10
        import tomli as tomllib
    return tomllib


def test_numpydoc_checks_match_pyproject():
    """``[tool.numpydoc_validation]`` (``numpydoc lint``) enforces the same checks."""
    with open(os.path.join(REPO, "pyproject.toml"), "rb") as f:
        cfg = _tomllib().load(f)["tool"]["numpydoc_validation"]
    assert set(cfg["checks"]) == CHECKS


# --------------------------------------------------------------------------
# annotations

def _unannotated(fn):
    sig = inspect.signature(fn)
    missing = [p.name for i, p in enumerate(sig.parameters.values())
               if p.annotation is inspect.Parameter.empty
               and not (i == 0 and p.name in ("self", "cls"))]
    if sig.return_annotation is inspect.Signature.empty:
        missing.append("return")
    return missing


@pytest.mark.parametrize("name,kind", PUBLIC_NAMES, ids=[n for n, _ in PUBLIC_NAMES])
def test_annotated(name, kind):
    obj = _resolve(name)
    if kind == "property":
        fn = obj.fget
    elif kind == "class":
        if "__init__" not in vars(obj) and not any(
                "__init__" in vars(k) for k in obj.__mro__[1:] if _is_ours(k)):
            return                              # object's or an exception's __init__
        fn = obj.__init__
    else:
        fn = obj
    missing = _unannotated(fn)
    assert not missing, f"{name}: no annotation for {', '.join(missing)}"


def test_py_typed_shipped():
    assert os.path.isfile(os.path.join(REPO, "fastsoftmax", "py.typed"))
    with open(os.path.join(REPO, "pyproject.toml"), "rb") as f:
        data = _tomllib().load(f)["tool"]["setuptools"]["package-data"]
    assert "py.typed" in data["fastsoftmax"]


# --------------------------------------------------------------------------
# doctests: every public module, and every module that defines a public name

def _doctest_modules():
    mods = list(PUBLIC_MODULES)
    for name, kind in PUBLIC_NAMES:
        if kind in ("function", "class"):
            m = _resolve(name).__module__
            if m not in mods:
                mods.append(m)
    return mods


DOCTEST_MODULES = _doctest_modules()


@pytest.mark.parametrize("modname", DOCTEST_MODULES)
def test_doctests(modname):
    mod = _import(modname)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=OPTIONFLAGS)
    for test in finder.find(mod, modname):
        runner.run(test)
    res = runner.summarize(verbose=False)
    assert res.attempted > 0, f"{modname} has no Examples"
    assert res.failed == 0, f"{res.failed} of {res.attempted} examples of {modname} failed " \
                            "(the report is above, in the captured stdout)"


# --------------------------------------------------------------------------
# the Sphinx reference names every public name

def _rst():
    d = os.path.join(REPO, "docs")
    texts = []
    for f in sorted(os.listdir(d)):
        if f.endswith(".rst"):
            with open(os.path.join(d, f)) as fh:
                texts.append(fh.read())
    return "\n".join(texts)


def _documented():
    """The objects the reference documents (``.. autofunction:: x``, ``.. data:: x``, ...)."""
    names = set(re.findall(r"^\.\. (?:auto)?\w+:: +([\w.]+)", _rst(), re.M))
    objs = {}
    for d in names:
        try:
            objs[id(_resolve(d))] = d
        except (ImportError, AttributeError):
            pass
    return objs


@pytest.mark.parametrize("modname", PUBLIC_MODULES)
def test_sphinx_reference_covers(modname):
    """Every name of ``__all__`` is in docs/*.rst (under any of its public
    paths, or where it is defined: a constant's ``#:`` comment is read there)."""
    mod = _import(modname)
    documented = _documented()
    missing = [f"{modname}.{name}" for name in mod.__all__
               if id(getattr(mod, name)) not in documented]
    assert not missing, f"not in docs/*.rst: {missing}"
