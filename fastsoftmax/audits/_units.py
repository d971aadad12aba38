r"""The unit arithmetic of an audit: the formats, their spacing, the error bound.

An element's error is counted in units of the first-order forward-error
bound of the max-shifted softmax (Blanchard, Higham & Higham 2021, Thm 4.3)
with pairwise summation's :math:`\lceil \log_2 n \rceil` in place of their
:math:`n`.  For a row x of length n, :math:`m = \max_i x_i`, exact
probabilities :math:`p` and the unit roundoff :math:`u` of the dtype:

.. math::

    c_j = 1 + \lceil \log_2 n \rceil + |x_j - m| + \sum_i p_i |x_i - m|

* a probability :math:`p_j` (softmax, the CE gradient's :math:`j \ne y`
  entries): relative error, bound :math:`u c_j`;
* a log-probability (log_softmax, ce_loss :math:`= -\log p_y`): absolute
  error, bound :math:`u (c_j + |\log p_j|)`;
* the target component :math:`1 - p_y = \sum_{k \ne y} p_k` of the CE
  gradient: relative error, bound :math:`u c'_y` with
  :math:`\sum_{k \ne y} p_k |x_k - m| / (1 - p_y)` in place of
  :math:`|x_y - m|`.

Relative errors count where the exact value is a normal number of the
dtype; below the smallest normal the error is absolute, divided by that
smallest normal instead of the value.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["FloatFormat", "FORMATS", "float_format", "ulp", "relative_error",
           "softmax_condition", "target_condition", "units_relative", "units_log"]


@dataclass(frozen=True)
class FloatFormat:
    """An IEEE-style binary format: ``digits`` significand bits (the
    leading one included) and the normal exponents ``emin`` .. ``emax``."""
    name: str
    digits: int
    emin: int
    emax: int

    @property
    def u(self) -> float:
        """The unit roundoff 2**-digits (half the spacing at 1)."""
        return math.ldexp(1.0, -self.digits)

    @property
    def tiny(self) -> float:
        """The smallest positive normal number 2**emin."""
        return math.ldexp(1.0, self.emin)

    @property
    def max(self) -> float:
        """The largest finite number (2 - 2**(1 - digits)) 2**emax."""
        return math.ldexp(2.0 - math.ldexp(1.0, 1 - self.digits), self.emax)

    @property
    def smallest_subnormal(self) -> float:
        """2**(emin - digits + 1), the spacing of the subnormals."""
        return math.ldexp(1.0, self.emin - self.digits + 1)


FORMATS = {
    "float16": FloatFormat("float16", 11, -14, 15),
    "bfloat16": FloatFormat("bfloat16", 8, -126, 127),
    "float32": FloatFormat("float32", 24, -126, 127),
    "float64": FloatFormat("float64", 53, -1022, 1023),
}


def float_format(dtype: str) -> FloatFormat:
    """The :class:`FloatFormat` of a dtype name (ValueError for another)."""
    try:
        return FORMATS[dtype]
    except (KeyError, TypeError):
        raise ValueError(f"dtype must be one of {', '.join(FORMATS)}, got {dtype!r}") from None


def ulp(x: np.ndarray, fmt: FloatFormat) -> np.ndarray:
    """The spacing of ``fmt`` at |x| (float64 in, float64 out).

    2**(e - digits + 1) with e = max(floor(log2 |x|), emin): the distance
    from |x| to the next larger number of the format when |x| is one of its
    numbers (``numpy.spacing``), the subnormal spacing below the smallest
    normal, NaN at infinity.

    Examples
    --------
    >>> import numpy as np
    >>> from fastsoftmax.audits._units import FORMATS, ulp
    >>> float(ulp(np.array(1.0), FORMATS["float32"])) == float(np.spacing(np.float32(1)))
    True
    """
    a = np.abs(np.asarray(x, dtype=np.float64))
    with np.errstate(invalid="ignore"):
        e = np.frexp(a)[1].astype(np.int64) - 1
        e = np.where(a == 0, fmt.emin, np.maximum(e, fmt.emin))
        out = np.ldexp(1.0, e - fmt.digits + 1)
    return np.where(np.isfinite(a), out, np.nan)


def relative_error(err: np.ndarray, exact: np.ndarray, fmt: FloatFormat) -> np.ndarray:
    """err / max(|exact|, tiny): relative where the exact value is a normal
    number of the format, absolute against its smallest normal below that."""
    return err / np.maximum(np.abs(exact), fmt.tiny)


def _log2n(n: int) -> int:
    return int(math.ceil(math.log2(n))) if n > 1 else 0


def softmax_condition(d: np.ndarray, p: np.ndarray) -> np.ndarray:
    r"""The bound's coefficients :math:`c_j = 1 + \lceil \log_2 n \rceil +
    |x_j - m| + \sum_i p_i |x_i - m|` of every element of a batch of rows.

    Parameters
    ----------
    d : ndarray, shape (rows, n)
        x - m, the logits minus their row's maximum (-inf for a masked logit).
    p : ndarray, shape (rows, n)
        The exact probabilities.

    Returns
    -------
    ndarray, shape (rows, n)
        The coefficients (inf for a masked logit).
    """
    ad = np.abs(d)
    mean = np.sum(np.where(p > 0, p * np.where(np.isfinite(ad), ad, 0.0), 0.0), axis=-1,
                  keepdims=True)
    return 1.0 + _log2n(d.shape[-1]) + ad + mean


def target_condition(d: np.ndarray, lp: np.ndarray, labels: np.ndarray) -> np.ndarray:
    r"""The coefficient :math:`c'_y` of the target component :math:`1 - p_y`
    of every row: :math:`c_y` with :math:`\sum_{k \ne y} p_k |x_k - m| / (1 -
    p_y)` (the p-weighted mean of :math:`|x_k - m|` over :math:`k \ne y`,
    computed from the log-probabilities ``lp``, so it never underflows) in
    place of :math:`|x_y - m|`; a row of one finite logit has 0 there.

    Parameters
    ----------
    d : ndarray, shape (rows, n)
        x - m.
    lp : ndarray, shape (rows, n)
        The exact log-probabilities.
    labels : ndarray of int, shape (rows,)
        The targets y.

    Returns
    -------
    ndarray, shape (rows,)
        The coefficients.
    """
    rows = np.arange(d.shape[0])
    other = lp.copy()
    other[rows, labels] = -np.inf
    top = np.max(other, axis=-1, keepdims=True)
    with np.errstate(invalid="ignore"):
        w = np.where(np.isfinite(other), np.exp(other - np.where(np.isfinite(top), top, 0.0)),
                     0.0)
    ad = np.where(np.isfinite(d), np.abs(d), 0.0)
    tot = np.sum(w, axis=-1)
    mean_other = np.where(tot > 0, np.sum(w * ad, axis=-1) / np.where(tot > 0, tot, 1.0), 0.0)
    p = np.exp(lp)
    mean_all = np.sum(np.where(p > 0, p * ad, 0.0), axis=-1)
    return 1.0 + _log2n(d.shape[-1]) + mean_other + mean_all


def units_relative(err: np.ndarray, exact: np.ndarray, c: np.ndarray,
                   fmt: FloatFormat) -> np.ndarray:
    """Errors of probability-like values in units of u c (relative where
    the exact value is normal, else absolute against the smallest normal);
    at a masked logit (c infinite: its exact probability is 0) any output
    but 0 is an unbounded error."""
    with np.errstate(invalid="ignore", divide="ignore"):
        units = relative_error(err, exact, fmt) / (fmt.u * c)
        units = np.where(np.isinf(c), np.where(err == 0, 0.0, np.inf), units)
    return np.where(np.isnan(err), np.inf, units)


def units_log(err: np.ndarray, exact: np.ndarray, c: np.ndarray,
              fmt: FloatFormat) -> np.ndarray:
    """Absolute errors of log-probabilities (or losses) in units of
    u (c + |exact|); where the exact value is infinite (a masked logit) an
    output other than it is an unbounded error."""
    with np.errstate(invalid="ignore", divide="ignore"):
        units = err / (fmt.u * (c + np.abs(exact)))
        units = np.where(np.isinf(exact), np.where(err == 0, 0.0, np.inf), units)
    return np.where(np.isnan(err), np.inf, units)
