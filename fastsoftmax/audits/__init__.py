r"""Audits: the accuracy of anyone's softmax, log-softmax and cross-entropy,
against the exact values.

>>> import numpy as np
>>> import fastsoftmax as fs
>>> def naive(x):
...     e = np.exp(x)
...     return e / e.sum(axis=-1, keepdims=True)
>>> rep = fs.audit(naive, cases=["gauss_s1_n64", "offset_1e4_n64"])
>>> rep.passed(), rep.failures()
(False, ['offset_1e4_n64'])

``fs.audit`` is the function :func:`audit` of this package,
``fastsoftmax.audits`` (named apart from the function, as ``fs.sweep`` and
``fastsoftmax.sweeps``).  Its parts: ``_units`` (the formats, their
spacing, the error bound), ``_cases`` (the battery and the user's cases),
``_frameworks`` (NumPy, PyTorch, JAX arrays), ``_reference`` (the exact
values: fastsoftmax's log-domain float64 path, mpmath for float64
implementations), ``_report`` (:class:`AuditReport`) and
:mod:`~fastsoftmax.audits.implementations` (the built-in implementations by
name).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from .._inputs import check_seed
from ._cases import Case, battery_names, resolve_cases
from ._kinds import CE_KINDS, CE_LOSS, KINDS, SOFTMAX, check_kind
from ._frameworks import FRAMEWORKS, get_framework, infer_framework
from ._reference import (MP_PREC, add_targets, element_errors, exact_values, mp_rows,
                         mpmath_errors)
from ._report import (DEFAULT_MAX_ULP, METRIC_DOC, AuditReport, case_figures,
                      failure_figures, masked_figures)
from ._units import FORMATS, float_format
from .implementations import IMPLEMENTATIONS, resolve_implementation

__all__ = ["audit", "prepare", "Prepared", "AuditReport", "Case", "KINDS", "DEFAULT_MAX_ULP",
           "IMPLEMENTATIONS", "battery_names", "METRIC_DOC", "DTYPES", "FRAMEWORKS"]

#: The audited dtypes (bfloat16 with PyTorch or JAX only).
DTYPES = tuple(FORMATS)



def _labels(case: Case, x: np.ndarray, p: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    if case.target == "argmax":
        return np.argmax(x, axis=1)
    if case.target == "random":
        fin = np.isfinite(x)
        return np.array([rng.choice(np.flatnonzero(f)) for f in fin], dtype=np.int64)
    cum = np.cumsum(p, axis=1)
    u = rng.random(x.shape[0]) * cum[:, -1]
    y = np.array([np.searchsorted(c, v, side="right") for c, v in zip(cum, u)])
    y = np.minimum(y, x.shape[1] - 1)
    # never a masked class (p = 0): the last class with p > 0 at or below y
    for r in range(x.shape[0]):
        while p[r, y[r]] == 0:
            y[r] -= 1
    return y.astype(np.int64)


def audit(fn: Callable[..., Any] | str, kind: str = "softmax", dtype: str = "float32",
          framework: str | None = None, device: Any = None, cases: Any = None,
          seed: int = 0) -> AuditReport:
    r"""The accuracy of a softmax, log-softmax or cross-entropy implementation.

    Measured on a battery of regimes against the exact values: ``fn``
    receives each case's logits (a 2-D array of ``dtype`` in
    ``framework``'s array type, rows along axis 0) and returns what ``kind``
    names; its output is compared with the exact values of the logits *as it
    received them* (rounded to ``dtype``), computed in float64 through
    fastsoftmax's log-domain path (mpmath at 113 bits on a subsample of rows
    for a float64 implementation).  An element's error is counted in units
    of the first-order bound of the max-shifted algorithm (Blanchard, Higham
    & Higham 2021, Thm 4.3, pairwise summation's depth in place of n):

    .. math::

        c_j = 1 + \lceil \log_2 n \rceil + |x_j - m| + \sum_i p_i |x_i - m|,

    relative error :math:`/ (u c_j)` for a probability (absolute against the
    smallest normal where the exact value is below it), absolute error
    :math:`/ (u (c_j + |\log p_j|))` for a log-probability or a loss, and for
    the CE gradient's target component :math:`1 - p_y` relative with
    :math:`\sum_{k \ne y} p_k |x_k - m| / (1 - p_y)` in place of
    :math:`|x_j - m|`; u is the unit roundoff of ``dtype``.

    Parameters
    ----------
    fn : callable or str
        ``fn(logits)`` (softmax, log_softmax) or ``fn(logits, labels)``
        (ce_loss: the per-row loss; ce_grad: the gradient of the summed loss
        with respect to the logits, p - e_y per row).  A string names a
        built-in implementation (``"numpy-naive"``, ``"scipy"``,
        ``"torch"``, ``"jax"``) or ``"module:function"``.
    kind : {"softmax", "log_softmax", "ce_loss", "ce_grad"}, default "softmax"
        What ``fn`` computes.
    dtype : {"float16", "bfloat16", "float32", "float64"}, default "float32"
        The logits' dtype (bfloat16 with PyTorch or JAX only).
    framework : {"numpy", "torch", "jax"}, optional
        The array type ``fn`` receives; by default inferred from
        ``fn.__module__`` (a function of torch or jax), else NumPy.
    device : optional
        Where the framework puts the logits (``"cuda"``, ``"cuda:1"``, a
        JAX platform or device; default the framework's own).
    cases : optional
        None: the default battery (Gaussian logits at scales 1, 30, 1e3;
        unscaled dot products at d_k = 4096; offsets 1e4, 1e6 and near the
        dtype's maximum; a dominant logit with gaps 20, 100, 1e4; masks;
        ties; n = 1, 2, 64, 1024, 65536; for the CE kinds each with argmax,
        random and sampled targets).  A list of battery names
        (``"gap_20_n64"``, ``"gap_20_n64[argmax]"``; see
        :func:`battery_names`), 2-D arrays, fastsoftmax models or
        ``(name, array or model)`` pairs, or a dict name -> array or model.
    seed : int, default 0
        The battery's and the random targets' seed.

    Returns
    -------
    AuditReport
        Per case: the maximum and 99.9th percentile of the error in units,
        plain ulps and relative errors, non-finite outputs, false zeros,
        false -inf, ``|sum p - 1|``, for ce_grad the errors of 1 - p_y and of
        the gradient's norm; a fully masked row is reported, not judged.

    Raises
    ------
    ValueError
        An unknown kind, dtype, framework, case or implementation name, a
        dtype the framework lacks (NumPy has no bfloat16), a bad case array.
    TypeError
        ``fn`` not callable, a bad ``cases`` type.
    ImportError
        The framework (or mpmath, for float64) is not installed.

    See Also
    --------
    fastsoftmax.testing.assert_softmax_accurate : The same audit as an assertion.

    Examples
    --------
    >>> import fastsoftmax as fs
    >>> rep = fs.audit("scipy", dtype="float64", cases=["gauss_s30_n64", "gap_100_n64"])
    >>> rep.passed()
    True
    >>> rep.to_frame().query("metric == 'units'")[["case", "reference"]].values.tolist()
    ... # doctest: +NORMALIZE_WHITESPACE
    [['gauss_s30_n64', 'mpmath 113 bits, 8 of 64 rows'],
     ['gap_100_n64', 'mpmath 113 bits, 8 of 64 rows']]
    """
    return prepare(fn, kind=kind, dtype=dtype, framework=framework, device=device,
                   cases=cases, seed=seed).run()


@dataclass
class Prepared:
    """A validated audit, nothing run: :func:`prepare`'s result.

    ``run()`` runs it (what :func:`audit` returns); tools that report bad
    arguments apart from failures while running (the command line) call
    the two steps.

    Parameters
    ----------
    fn : callable
        The implementation.
    label : str
        How the report names it.
    kind : str
        What it computes.
    dtype : str
        The logits' dtype.
    framework : str
        The array type it receives.
    device : object
        Where the logits are placed.
    cases : list of Case
        The cases to run.
    seed : int
        The random targets' seed.
    fw : object, optional
        The framework's adapter (``_frameworks``).

    Examples
    --------
    >>> from fastsoftmax.audits import prepare
    >>> p = prepare("scipy", cases=["gauss_s1_n2"])
    >>> p.label, p.run().passed()
    ('scipy', True)
    """
    fn: Callable[..., Any]
    label: str
    kind: str
    dtype: str
    framework: str
    device: Any
    cases: list[Case]
    seed: int
    fw: Any = field(repr=False, default=None)

    def run(self) -> AuditReport:
        """Run the implementation on every case and measure its errors.

        Returns
        -------
        AuditReport
            The figures of every case.

        Examples
        --------
        >>> from fastsoftmax.audits import prepare
        >>> prepare("numpy-naive", cases=["gap_100_n64"]).run().passed()
        False
        """
        return _run(self)


def prepare(fn: Callable[..., Any] | str, kind: str = "softmax", dtype: str = "float32",
            framework: str | None = None, device: Any = None, cases: Any = None,
            seed: int = 0) -> Prepared:
    """:func:`audit`'s checks and cases, nothing run.

    Every argument is checked and every case drawn; the implementation is
    not called until ``.run()``.

    Parameters
    ----------
    fn : callable or str
        As :func:`audit`.
    kind : str, default "softmax"
        As :func:`audit`.
    dtype : str, default "float32"
        As :func:`audit`.
    framework : str, optional
        As :func:`audit`.
    device : optional
        As :func:`audit`.
    cases : optional
        As :func:`audit`.
    seed : int, default 0
        As :func:`audit`.

    Returns
    -------
    Prepared
        The validated audit; ``.run()`` runs it.

    Raises
    ------
    ValueError, TypeError, ImportError, RuntimeError
        As :func:`audit` (a CUDA device PyTorch cannot see: RuntimeError).

    Examples
    --------
    >>> from fastsoftmax.audits import prepare
    >>> p = prepare("scipy", kind="log_softmax", cases=["gap_100_n64"])
    >>> p.framework, [c.label for c in p.cases]
    ('numpy', ['gap_100_n64'])
    """
    # every check before any work
    check_kind(kind)
    fmt = float_format(dtype)
    if isinstance(fn, str):
        fn, fw_default, label = resolve_implementation(fn, kind)
    else:
        if not callable(fn):
            raise TypeError(f"fn must be callable (or an implementation's name), got {fn!r}")
        fw_default = None
        label = (f"{getattr(fn, '__module__', '') or ''}."
                 f"{getattr(fn, '__qualname__', type(fn).__name__)}").lstrip(".")
    if framework is None:
        framework = fw_default or infer_framework(fn)
    if framework not in FRAMEWORKS:
        raise ValueError(f"framework must be one of {', '.join(map(repr, FRAMEWORKS))}, "
                         f"got {framework!r}")
    fw = get_framework(framework)
    fw.check(dtype, device)
    seed = check_seed(seed)
    if dtype == "float64":
        try:
            import mpmath  # noqa: F401
        except ImportError:
            raise ImportError("auditing float64 needs mpmath (the higher-precision "
                              "reference): pip install mpmath") from None
    case_list = resolve_cases(cases, kind, fmt, seed)

    return Prepared(fn=fn, label=label, kind=kind, dtype=dtype, framework=framework,
                    device=device, cases=case_list, seed=seed, fw=fw)


def _run(p: Prepared) -> AuditReport:
    fn, kind, dtype, fw, device, seed = p.fn, p.kind, p.dtype, p.fw, p.device, p.seed
    fmt = float_format(dtype)
    label, framework, case_list = p.label, p.framework, p.cases
    records: list[dict[str, Any]] = []
    t_impl = t_ref = 0.0
    rng = np.random.default_rng([seed, 1])
    for case in case_list:
        t0 = time.perf_counter()
        arr = fw.array(case.x, dtype, device)
        x = fw.to_numpy(arr)
        labels = None
        ex = None
        if case.judged:
            ex = exact_values(x)
            if kind in CE_KINDS:
                labels = _labels(case, x, ex.p, rng)
                add_targets(ex, labels)
        elif kind in CE_KINDS:
            labels = np.zeros(x.shape[0], dtype=np.int64)
        args = (arr,) if labels is None else (arr, fw.labels(labels, device))
        t1 = time.perf_counter()
        try:
            with np.errstate(all="ignore"):     # overflow is what some cases are about
                res = fn(*args)
                fw.sync()
            t2 = time.perf_counter()
            out = fw.to_numpy(res)
            want = (x.shape[0],) if kind == CE_LOSS else x.shape
            if out.shape != want and out.size == int(np.prod(want)):
                out = out.reshape(want)
            if out.shape != want:
                raise ValueError(f"returned shape {out.shape} for logits of shape {x.shape} "
                                 f"({kind} needs {want})")
            failure = None
        except Exception as e:    # the implementation's failure is a finding, not ours
            t2 = time.perf_counter()
            failure = f"{type(e).__name__}: {' '.join(str(e).split())}"[:200]
        t_impl += t2 - t1
        if failure is not None:
            figs = failure_figures(failure)
        elif ex is None:
            figs = masked_figures(out)
        else:
            errs = element_errors(kind, out, ex)
            counts = dict(exact=errs["exact"], out=out)
            ref = "float64 log-domain"
            if dtype == "float64":
                k = mp_rows(case.n, case.rows)
                if k:
                    errs = mpmath_errors(kind, out, ex, k)
                    ref = f"mpmath {MP_PREC} bits, {k} of {case.rows} rows"
                else:
                    ref = "float64 log-domain (rows too long for mpmath)"
            figs = case_figures(kind, out, errs, fmt, ref, counts, "float64 log-domain")
        for f in figs:
            records.append(dict(implementation=label, kind=kind, dtype=dtype,
                                framework=framework, case=case.name, case_label=case.label,
                                regime=case.regime, target=case.target, n=case.n,
                                rows=case.rows, scale=case.scale, note=f.pop("note", ""),
                                **f))
        t_ref += (t1 - t0) + (time.perf_counter() - t2)
    return AuditReport(implementation=label, kind=kind, dtype=dtype, framework=framework,
                       device=device, cases=case_list, records=records,
                       seconds_implementation=t_impl, seconds_reference=t_ref)
