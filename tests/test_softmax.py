"""softmax / log_softmax against SciPy and mpmath, every axis form and dtype."""
import math

import mpmath
import numpy as np

AxisError = getattr(np, "exceptions", np).AxisError   # numpy < 1.25 has only np.AxisError
import pytest
import scipy.special as sp

import fastsoftmax as fs
from reference import softmax_mp

AXES = [-1, 0, 1, (0, 2), None, (0, 1, 2)]


@pytest.mark.parametrize("axis", AXES, ids=str)
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_matches_scipy(axis, dt):
    x = (np.random.default_rng(3).normal(size=(3, 4, 5)) * 10).astype(dt)
    rtol = 2e-6 if dt == np.float32 else 1e-13
    got = fs.softmax(x, axis=axis)
    assert got.dtype == dt and got.shape == x.shape
    np.testing.assert_allclose(got, sp.softmax(x.astype(np.float64), axis=axis), rtol=rtol)
    lgot = fs.log_softmax(x, axis=axis)
    assert lgot.dtype == dt
    np.testing.assert_allclose(lgot, sp.log_softmax(x.astype(np.float64), axis=axis),
                               rtol=rtol, atol=rtol)


def test_dtype_rules():
    x16 = np.array([1.0, 2.0, 3.0], dtype=np.float16)
    assert fs.softmax(x16).dtype == np.float16
    np.testing.assert_allclose(fs.softmax(x16), sp.softmax([1.0, 2.0, 3.0]), rtol=1e-3)
    xi = np.array([1, 2, 3])
    assert fs.softmax(xi).dtype == np.float64
    np.testing.assert_allclose(fs.softmax(xi), sp.softmax(xi), rtol=1e-15)
    assert fs.log_softmax([[0, 1]]).dtype == np.float64


def test_log_softmax_exact_at_max():
    """The max term is separated: log p_top = -log1p(exp(-40)), not 0."""
    out = fs.log_softmax(np.array([0.0, -40.0]))
    assert out[0] == pytest.approx(-math.exp(-40), rel=1e-15)
    assert out[0] != 0.0
    out32 = fs.log_softmax(np.array([0.0, -40.0], dtype=np.float32))
    assert out32[0] == pytest.approx(-math.exp(-40), rel=1e-6)


@pytest.mark.parametrize("row", [
    [1.0, 325.0, 749.0, 750.0],
    [0.0, 1000.0],
    [100.0, 101.0, 99.0],
    [1e30, 0.0, -1e30],
    [-np.inf, 3.0, -np.inf, 2.0],
    [5.0, 5.0, 5.0, 5.0],
])
def test_extreme_rows_against_mpmath(row):
    x = np.array(row)
    ref = softmax_mp(row)
    got = fs.softmax(x)
    lgot = fs.log_softmax(x)
    for i, r in enumerate(ref):
        if r == 0:
            assert got[i] == 0.0 and lgot[i] == -np.inf
            continue
        rv = float(r)
        assert got[i] == pytest.approx(rv, rel=1e-13, abs=0 if rv > 1e-300 else 1e-320)
        with mpmath.workdps(60):
            lr = float(mpmath.log(r))
        assert lgot[i] == pytest.approx(lr, rel=1e-13, abs=1e-300)


def test_translation_invariance_and_one_hot():
    x = np.random.default_rng(4).normal(size=(6, 9))
    np.testing.assert_allclose(fs.softmax(x + 100), fs.softmax(x), rtol=1e-13)
    one_hot = np.array([[0.0, 1000.0, 0.0]])
    np.testing.assert_array_equal(fs.softmax(one_hot), [[0.0, 1.0, 0.0]])


def test_nonfinite_rows_give_nan_like_scipy():
    x = np.array([[1.0, np.nan, 2.0], [np.inf, 1.0, 0.0], [-np.inf, -np.inf, -np.inf],
                  [1.0, 2.0, 3.0]])
    with np.errstate(invalid="ignore"):
        ref = sp.softmax(x, axis=-1)
    got = fs.softmax(x)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    np.testing.assert_allclose(got[3], ref[3], rtol=1e-15)


def test_empty_and_bad_inputs():
    assert fs.softmax(np.empty((0, 3))).shape == (0, 3)
    with pytest.raises(TypeError, match="complex"):
        fs.softmax(np.ones(3, dtype=complex))
    with pytest.raises(TypeError, match="object"):
        fs.softmax(np.array([1, "a"], dtype=object))
    with pytest.raises(AxisError):
        fs.softmax(np.ones((2, 3)), axis=2)
    with pytest.raises(TypeError, match="axis"):
        fs.softmax(np.ones((2, 3)), axis=1.0)
    with pytest.raises(AxisError):
        fs.softmax(np.float64(1.0), axis=1)


@pytest.mark.parametrize("x", [np.float64(1.0), np.float32(-3.5), 7, np.array(2.0)])
def test_zero_d_input_is_one_logit_as_scipy(x):
    """A 0-d input is one row of one logit: softmax 1, log_softmax 0, as SciPy
    (the default axis=-1 and axis=None both accept it)."""
    for axis in (None, -1, 0):
        p = fs.softmax(x, axis=axis)
        lp = fs.log_softmax(x, axis=axis)
        assert np.ndim(p) == 0 and np.ndim(lp) == 0
        assert p == sp.softmax(x, axis=None) == 1.0
        assert lp == sp.log_softmax(x, axis=None) == 0.0
        assert np.asarray(p).dtype == np.asarray(sp.softmax(x, axis=None)).dtype
