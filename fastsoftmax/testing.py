"""Assertions for other projects' test suites (like ``numpy.testing``).

>>> import numpy as np
>>> from fastsoftmax.testing import assert_softmax_accurate
>>> def softmax(x):
...     e = np.exp(x - x.max(axis=-1, keepdims=True))
...     return e / e.sum(axis=-1, keepdims=True)
>>> assert_softmax_accurate(softmax, cases=["gauss_s30_n64", "gap_100_n64"])
"""
from __future__ import annotations

import math
from typing import Any, Callable

from .audits import DEFAULT_MAX_ULP, audit

__all__ = ["assert_softmax_accurate"]


def assert_softmax_accurate(fn: Callable[..., Any] | str, kind: str = "softmax",
                            dtype: str = "float32", max_ulp: float = DEFAULT_MAX_ULP,
                            **audit_options: Any) -> None:
    r"""Assert that an implementation is accurate on every judged case of an audit.

    Runs :func:`fastsoftmax.audit` and passes when every judged case has
    its error at most ``max_ulp`` units of the bound
    :math:`u (1 + \lceil \log_2 n \rceil + |x_j - m| + \sum_i p_i |x_i - m|)`
    (see :func:`fastsoftmax.audit` for the log and cross-entropy forms) and
    no non-finite output, false zero, false -inf or failure.

    Parameters
    ----------
    fn : callable or str
        As :func:`fastsoftmax.audit`.
    kind : str, default "softmax"
        What ``fn`` computes: one of :data:`fastsoftmax.audits.KINDS`, as
        :func:`fastsoftmax.audit`.
    dtype : {"float16", "bfloat16", "float32", "float64"}, default "float32"
        The logits' dtype.
    max_ulp : float, default 4
        The largest error allowed, in units of the bound.
    **audit_options
        ``framework``, ``device``, ``cases``, ``seed``: as
        :func:`fastsoftmax.audit`.

    Raises
    ------
    AssertionError
        A case fails: the message names the worst case, its regime, its
        figures and every failing case.
    ValueError, TypeError, ImportError
        Bad arguments (as :func:`fastsoftmax.audit`), or a ``max_ulp`` that
        is not a positive number.

    See Also
    --------
    fastsoftmax.audit : The report behind the assertion.

    Examples
    --------
    >>> import numpy as np
    >>> from fastsoftmax.testing import assert_softmax_accurate
    >>> def naive(x):
    ...     e = np.exp(x)
    ...     return e / e.sum(axis=-1, keepdims=True)
    >>> try:
    ...     assert_softmax_accurate(naive, cases=["offset_1e4_n64"])
    ... except AssertionError as e:
    ...     print(str(e).splitlines()[0])
    naive (softmax, float32): 1 of 1 judged cases fail at max_ulp=4
    """
    if isinstance(max_ulp, bool) or not isinstance(max_ulp, (int, float)) \
            or not max_ulp > 0 or math.isnan(max_ulp):
        raise ValueError(f"max_ulp must be a positive number, got {max_ulp!r}")
    rep = audit(fn, kind=kind, dtype=dtype, **audit_options)
    failing = rep.failures(max_ulp)
    if not failing:
        return
    w = rep.worst()
    figs = ", ".join(f"{k} {_fmt(v)}" for k, v in w["figures"].items()
                     if k in ("units", "target_units", "norm_units", "nonfinite", "false_zeros",
                              "false_neg_inf", "note", "ulps", "rel_err"))
    njudged = sum(not math.isnan(rep.case_score(c.label)) for c in rep.cases)
    name = getattr(fn, "__qualname__", fn) if not isinstance(fn, str) else fn
    raise AssertionError(
        f"{name} ({kind}, {dtype}): {len(failing)} of {njudged} judged cases fail at "
        f"max_ulp={max_ulp:g}\n"
        f"worst: {w['case']} ({w['regime']}: {w['description']}): {figs}\n"
        f"failing: {', '.join(failing)}")


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return "inf" if math.isinf(v) else format(v, ".3g")
    return str(v)
