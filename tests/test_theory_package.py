"""fastsoftmax.theory as a package: importable without SciPy (and fastsoftmax
without it), its doctests, its modules listed and short; the 0.2.0
spellings warn once and return the same numbers."""
import doctest
import importlib
import inspect
import os
import re
import subprocess
import sys
import warnings

import numpy as np
import pytest

from fastsoftmax import theory
from fastsoftmax.theory import Law, _deprecation

from helpers import subprocess_env


NO_SCIPY = """
import sys
sys.modules["scipy"] = None          # as if SciPy were not installed
import fastsoftmax
assert "fastsoftmax.theory" not in sys.modules
try:
    import fastsoftmax.theory
except ImportError as e:
    print("ImportError", e)
"""


def test_fastsoftmax_imports_without_scipy():
    out = subprocess.run([sys.executable, "-c", NO_SCIPY], capture_output=True, text=True,
                         env=subprocess_env())
    assert out.returncode == 0, out.stderr
    assert "fastsoftmax[theory]" in out.stdout


THEORY_MODULES = ["", "._accuracy", "._checks", "._compat", "._critical", "._deprecation",
                  "._dist", "._extremes", "._frozen", "._gap", "._law", "._quad", "._rem",
                  "._saturation", "._two"]


def _run_by_test_docs():
    """The theory modules whose doctests test_docs runs: the package and the
    modules that define its public names."""
    mods = {"fastsoftmax.theory"}
    for name in theory.__all__:
        obj = getattr(theory, name)
        module = getattr(obj, "__module__", None) or ""
        if (inspect.isclass(obj) or inspect.isfunction(obj)) and module.startswith("fastsoftmax."):
            mods.add(module)
    return mods


def test_doctests():
    """Every theory module's examples run: here those that test_docs does not
    run already (each example once per test run)."""
    found = 0
    done = _run_by_test_docs()
    for name in THEORY_MODULES:
        full = "fastsoftmax.theory" + name
        mod = importlib.import_module(full)
        found += sum(len(t.examples) for t in doctest.DocTestFinder().find(mod))
        if full in done:
            continue
        res = doctest.testmod(mod, optionflags=doctest.NORMALIZE_WHITESPACE)
        assert res.failed == 0, name
    assert found > 40
    assert "fastsoftmax.theory._law" in done            # test_docs runs those


def test_every_module_is_listed_and_short():
    """One concern a module: each under about 800 lines, and the list above
    (the doctests' and the package docstring's) complete."""
    here = os.path.dirname(theory.__file__)
    found = sorted(f[:-3] for f in os.listdir(here) if f.endswith(".py"))
    assert found == sorted(["__init__"] + [m[1:] for m in THEORY_MODULES if m])
    for f in found:
        with open(os.path.join(here, f + ".py")) as fh:
            assert len(fh.readlines()) <= 820, f


@pytest.fixture
def fresh_warnings(monkeypatch):
    """Each deprecated alias warns once per process: start from none warned."""
    monkeypatch.setattr(_deprecation, "_WARNED", set())


ALIASES = [
    ("gap_sf", lambda: theory.gap_sf([0.1, 1.0], 64), lambda: Law.gaussian(64).gap.sf([0.1, 1.0])),
    ("gap_cdf", lambda: theory.gap_cdf(0.1, 64), lambda: Law.gaussian(64).gap.cdf(0.1)),
    ("gap_quantile", lambda: theory.gap_quantile(0.3, 64), lambda: Law.gaussian(64).gap.ppf(0.3)),
    ("gap_median", lambda: theory.gap_median([2, 64]),
     lambda: Law.gaussian([2, 64]).gap.median()),
    ("rem_entropy", lambda: theory.rem_entropy(1024, 1.0, correction=False),
     lambda: Law.gaussian(1024, 1.0).rem.observable("entropy", correction=False).mean()),
    ("rem_max_prob", lambda: theory.rem_max_prob(1024, 15.0),
     lambda: Law.gaussian(1024, 15.0).rem["max_prob"].mean()),
    ("rem_max_prob_sf", lambda: theory.rem_max_prob_sf(0.5, 16384, 18.0),
     lambda: Law.gaussian(16384, 18.0).rem["max_prob"].sf(0.5)),
    ("expected_max", lambda: theory.expected_max(64, 2.0),
     lambda: Law.gaussian(64, 2.0).rem.expected_max()),
    ("Law.gap_sf", lambda: Law.gaussian(64, 3.0).gap_sf(1.0),
     lambda: Law.gaussian(64, 3.0).gap.sf(1.0)),
    ("Law.gap_cdf", lambda: Law.gaussian(64, 3.0).gap_cdf(1.0),
     lambda: Law.gaussian(64, 3.0).gap.cdf(1.0)),
    ("Law.gap_quantile", lambda: Law.gaussian(64, 3.0).gap_quantile(0.2),
     lambda: Law.gaussian(64, 3.0).gap.ppf(0.2)),
    ("Law.gap_median", lambda: Law.gaussian(64, 3.0).gap_median(),
     lambda: Law.gaussian(64, 3.0).gap.median()),
    ("Law.fraction_below", lambda: Law.gaussian(64, 25.0).fraction_below(
        "ce_loss", 1e-3, "random", order=0),
     lambda: Law.gaussian(64, 25.0).observable("ce_loss", "random", 0).cdf(1e-3)),
    ("Law.fraction_bounds", lambda: Law.gaussian(64, 25.0).fraction_bounds("jac_fro", 1e-3),
     lambda: Law.gaussian(64, 25.0)["jac_fro"].bounds(1e-3)),
    ("Law.mean", lambda: Law.gaussian(2, 1.0).mean("ce_loss", "random"),
     lambda: Law.gaussian(2, 1.0)["ce_loss", "random"].mean()),
    ("Law.quantile", lambda: Law.gaussian(64, 25.0).quantile("jac_diag_max", 0.3, order=0),
     lambda: Law.gaussian(64, 25.0).observable("jac_diag_max", order=0).ppf(0.3)),
    ("Law.median", lambda: Law.gaussian(2, 3.0).median("entropy"),
     lambda: Law.gaussian(2, 3.0)["entropy"].median()),
    ("Law.rem_entropy", lambda: Law.gaussian(1024, 1.0).rem_entropy(),
     lambda: Law.gaussian(1024, 1.0).rem["entropy"].mean()),
    ("Law.rem_max_prob", lambda: Law.gaussian(1024, 15.0).rem_max_prob(),
     lambda: Law.gaussian(1024, 15.0).rem["max_prob"].mean()),
    ("Law.rem_max_prob_sf", lambda: Law.gaussian(1024, 15.0).rem_max_prob_sf(0.7),
     lambda: Law.gaussian(1024, 15.0).rem["max_prob"].sf(0.7)),
    ("Law.rem_max_prob_median", lambda: Law.gaussian(1024, 15.0).rem_max_prob_median(),
     lambda: Law.gaussian(1024, 15.0).rem["max_prob"].median()),
    ("Law.expected_max", lambda: Law.gaussian(1024, 15.0).expected_max(),
     lambda: Law.gaussian(1024, 15.0).rem.expected_max()),
    ("Law.stated_accuracy", lambda: Law.gaussian(64, 12.0).stated_accuracy("fraction_below", 0),
     lambda: Law.gaussian(64, 12.0).observable("jac_diag_max", order=0).stated_accuracy()),
]


@pytest.mark.parametrize("old,call,new", ALIASES, ids=[a[0] for a in ALIASES])
def test_deprecated_alias_warns_once_and_equals_the_new_spelling(fresh_warnings, old, call,
                                                                 new):
    with pytest.warns(DeprecationWarning, match=rf"{re.escape(old)} is deprecated.*use "):
        got = call()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = call()                  # once: no second warning
    np.testing.assert_array_equal(got, new())
    np.testing.assert_array_equal(again, got)


def test_deprecated_aliases_keep_their_checks(fresh_warnings):
    with pytest.warns(DeprecationWarning), pytest.raises(ValueError, match="^scale must"):
        theory.rem_entropy(64, -1.0)
    with pytest.warns(DeprecationWarning), pytest.raises(ValueError, match="^n must"):
        theory.gap_sf(1.0, 0)
    # released names stay importable, outside __all__
    for name in ("gap_sf", "gap_cdf", "gap_quantile", "gap_median", "rem_entropy",
                 "rem_max_prob", "rem_max_prob_sf", "expected_max"):
        assert callable(getattr(theory, name)) and name not in theory.__all__
