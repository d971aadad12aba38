"""The cases of an audit: the default battery of named regimes, and the
user's own (arrays or fastsoftmax models).

A case is a float64 batch of logit rows (rows along axis 0) before they are
rounded to the audited dtype, with its name, its regime, a nominal logit
scale (the x axis of :meth:`AuditReport.plot`) and, for the cross-entropy
kinds, how its targets are chosen.
"""
from __future__ import annotations

import difflib
import numbers
import zlib
from dataclasses import dataclass, field, replace
from typing import Any, Callable

import numpy as np

from ..models import DotProduct, _Model
from ._kinds import CE_KINDS, KINDS, check_kind
from ._units import FloatFormat, float_format

__all__ = ["Case", "battery", "resolve_cases", "TARGETS", "KINDS", "CE_KINDS", "check_kind"]

TARGETS = ("argmax", "random", "sampled")
# rows per case by row length: a battery of about 40 cases stays well under
# a second of reference time
_ROWS = {1: 256, 2: 256, 64: 64, 1024: 16, 65536: 2}
USER_MODEL_ROWS = 64


@dataclass(frozen=True)
class Case:
    """One named case of an audit: logit rows and what they stand for.

    The battery's cases and the user's (arrays, models) alike; the
    implementation receives ``x`` rounded to the audited dtype.

    Parameters
    ----------
    name : str
        The case's name (``gap_20_n64``).
    regime : str
        Its family ("gaussian", "dominant logit", "masked", a model's name,
        "user").
    description : str
        The regime in words.
    scale : float
        A nominal logit scale (the x axis of ``AuditReport.plot``): the
        Gaussian scale, the gap, the offset; for the user's arrays the median
        of the rows' largest ``|x|``.
    x : ndarray
        The logits, float64, rows x n, before rounding to the audited dtype.
    target : str, default "-"
        The target rule of the cross-entropy kinds ("argmax", "random",
        "sampled"; "-" for the others).
    judged : bool, default True
        False for fully masked rows (no exact value: reported, not judged).

    Examples
    --------
    >>> import fastsoftmax as fs
    >>> c = fs.audit("scipy", cases=["gap_20_n64"]).cases[0]
    >>> c.label, c.regime, c.rows, c.n
    ('gap_20_n64', 'dominant logit', 64, 64)
    """
    name: str
    regime: str
    description: str
    scale: float
    x: np.ndarray = field(repr=False, compare=False)
    target: str = "-"
    judged: bool = True

    @property
    def label(self) -> str:
        """The case's name with its target rule: ``gap_20_n64[argmax]``."""
        return self.name if self.target == "-" else f"{self.name}[{self.target}]"

    @property
    def n(self) -> int:
        """The row length."""
        return int(self.x.shape[1])

    @property
    def rows(self) -> int:
        """The number of rows."""
        return int(self.x.shape[0])


def _rng(seed: int, name: str) -> np.random.Generator:
    return np.random.default_rng([seed, zlib.crc32(name.encode())])


def draw_model(model: _Model, rows: int, rng: np.random.Generator) -> np.ndarray:
    """``rows`` logit vectors of a fastsoftmax model, drawn with NumPy from
    the model's generator (:meth:`~fastsoftmax.models.Gaussian.gen_spec`):
    a + b z, or b sqrt(chi2(d_k)) z for a dot product (the law of q.k_j
    given the query), in float64.  The same law as :func:`fastsoftmax.simulate`
    draws from, not the same rows."""
    spec = model.gen_spec()
    a, b, d = spec.params
    z = rng.standard_normal((rows, spec.n))
    if isinstance(model, DotProduct):
        return b * np.sqrt(rng.chisquare(d, size=(rows, 1))) * z
    return a + b * z


def _fmt_num(v: float) -> str:
    """1e3 -> "1e3", 30 -> "30" (case names)."""
    k = int(round(np.log10(v))) if v > 0 else 0
    return f"1e{k}" if v >= 1000 and v == 10.0 ** k else f"{v:g}"


def _specs(fmt: FloatFormat) -> list[tuple[str, str, str, float, int, Callable]]:
    """(name, regime, description, scale, n, draw(rng, rows, n)) of every
    battery case for a format."""
    out: list[tuple[str, str, str, float, int, Callable]] = []

    def gauss(s):
        return lambda rng, r, n: s * rng.standard_normal((r, n))

    for s in (1.0, 30.0, 1e3):
        for n in (64, 1024):
            out.append((f"gauss_s{_fmt_num(s)}_n{n}", "gaussian",
                        f"Gaussian logits of scale {s:g}, n = {n}", s, n, gauss(s)))
    for s in (1.0, 30.0):
        for n in (1, 2, 65536):
            out.append((f"gauss_s{_fmt_num(s)}_n{n}", "row length",
                        f"Gaussian logits of scale {s:g}, n = {n}", s, n, gauss(s)))
    for n in (64, 1024):
        m = DotProduct(n=n, d_k=4096, scaled=False)
        out.append((f"dot_dk4096_n{n}", "dot product",
                    f"unscaled dot products q.k, d_k = 4096, n = {n}", 64.0, n,
                    lambda rng, r, n, m=m: draw_model(m, r, rng)))
    top = fmt.max
    top_ulp = np.ldexp(1.0, int(np.frexp(top)[1]) - 1 - fmt.digits + 1)
    draw: Callable
    for off in (1e4, 1e6, None):
        for n in (64, 1024):
            if off is None:
                name, desc, scale = (f"offset_max_n{n}",
                                     f"near the dtype's maximum {top:.4g}, a few spacings "
                                     f"({top_ulp:.3g}) apart, n = {n}", top)
                draw = (lambda rng, r, n: top - top_ulp * np.floor(
                    2 * np.abs(rng.standard_normal((r, n)))))
            else:
                if off > top:
                    continue        # not representable (float16 stops at 65,504)
                name, desc, scale = (f"offset_{_fmt_num(off)}_n{n}",
                                     f"large but close: {off:g} + N(0, 1), n = {n}", off)
                draw = (lambda rng, r, n, off=off: off + rng.standard_normal((r, n)))
            out.append((name, "large but close", desc, scale, n, draw))
    for gap in (20.0, 100.0, 1e4):
        for n in (64, 1024):
            def dominant(rng, r, n, gap=gap):
                x = rng.standard_normal((r, n))
                j = rng.integers(n, size=r)
                x[np.arange(r), j] = x.max(axis=1) + gap
                return x
            out.append((f"gap_{_fmt_num(gap)}_n{n}", "dominant logit",
                        f"one logit {gap:g} above N(0, 1) others, n = {n}", gap, n, dominant))
    for n in (64, 1024):
        def half(rng, r, n):
            x = rng.standard_normal((r, n))
            for row in x:
                row[rng.permutation(n)[: n // 2]] = -np.inf
            return x
        out.append((f"mask_half_n{n}", "masked", f"half the logits -inf, n = {n}", 1.0, n,
                    half))

    def all_but_one(rng, r, n):
        x = np.full((r, n), -np.inf)
        x[np.arange(r), rng.integers(n, size=r)] = rng.standard_normal(r)
        return x
    out.append(("mask_all_but_one_n64", "masked", "every logit -inf but one, n = 64", 1.0, 64,
                all_but_one))
    out.append(("mask_full_n64", "masked", "every logit -inf (no exact value: reported, "
                "not judged), n = 64", 1.0, 64, lambda rng, r, n: np.full((4, n), -np.inf)))
    out.append(("ties_equal_n64", "ties", "all 64 logits equal (uniform 1/64)", 1.0, 64,
                lambda rng, r, n: np.full((r, n), 5.0)))
    out.append(("ties_int_n64", "ties", "integers round(2 z): ties at the top, n = 64", 2.0,
                64, lambda rng, r, n: np.round(2 * rng.standard_normal((r, n)))))
    return out


def battery(kind: str, fmt: FloatFormat, seed: int = 0) -> list[Case]:
    """The default cases for ``kind`` and a format, drawn with ``seed``
    (the CE kinds get each case once per target rule)."""
    cases = []
    for name, regime, desc, scale, n, draw in _specs(fmt):
        x = np.asarray(draw(_rng(seed, name), _ROWS[n], n), dtype=np.float64)
        cases.append(Case(name, regime, desc, float(scale), x,
                          judged=not name.startswith("mask_full")))
    return _with_targets(cases, kind)


def battery_names(dtype: str = "float32") -> list[str]:
    """The names of the default battery's cases for a dtype.

    The battery adapts to what the dtype can represent (float16 has no
    offset of 1e6, its maximum is 65,504).  The cross-entropy kinds run each
    case once per target rule (``gap_20_n64[argmax]``, ``[random]``,
    ``[sampled]``).

    Parameters
    ----------
    dtype : {"float16", "bfloat16", "float32", "float64"}, default "float32"
        The audited dtype.

    Returns
    -------
    list of str
        The case names, in the battery's order.

    Examples
    --------
    >>> from fastsoftmax.audits import battery_names
    >>> names = battery_names("float16")
    >>> len(names), "offset_1e6_n64" in names, "offset_1e6_n64" in battery_names()
    (30, False, True)
    """
    return [s[0] for s in _specs(float_format(dtype))]


def _with_targets(cases: list[Case], kind: str) -> list[Case]:
    if kind not in CE_KINDS:
        return cases
    return [replace(c, target=t) for c in cases for t in TARGETS]


def _user_array(name: str, a: Any) -> np.ndarray:
    try:
        x = np.array(a, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"case {name!r} must be a 2-D array of real logits or a "
                        f"fastsoftmax model, got {type(a).__name__}") from None
    if x.ndim == 1:
        x = x[None, :]
    if x.ndim != 2 or x.size == 0:
        raise ValueError(f"case {name!r} must be a non-empty 2-D array (rows x logits), got "
                         f"shape {x.shape}")
    if np.isnan(x).any() or np.isposinf(x).any():
        raise ValueError(f"case {name!r} contains NaN or +inf: no exact softmax exists")
    return x


def _user_case(name: str, v: Any, seed: int) -> Case:
    if isinstance(v, _Model):
        rows = max(1, min(USER_MODEL_ROWS, 65536 // v.n))
        x = draw_model(v, rows, _rng(seed, name))
        desc = f"{v.name} " + ", ".join(f"{k}={p}" for k, p in v.params.items())
        regime = v.name
    else:
        x = _user_array(name, v)
        desc = f"user logits, {x.shape[0]} x {x.shape[1]}"
        regime = "user"
    fin = np.where(np.isfinite(x), np.abs(x), 0.0)
    scale = float(np.median(fin.max(axis=1)))
    judged = bool(np.isfinite(x).any(axis=1).all())
    return Case(name, regime, desc + ("" if judged else " (a fully masked row: not judged)"),
                scale, x, judged=judged)


def resolve_cases(cases: Any, kind: str, fmt: FloatFormat, seed: int) -> list[Case]:
    """The cases of an audit from its ``cases`` argument (see
    :func:`fastsoftmax.audit`), validated before anything runs.

    ``None``: the default battery.  A dict: name -> 2-D array or model.
    A list (or tuple) of: battery names (``"gap_20_n64"``, or with a target
    rule of a CE kind, ``"gap_20_n64[argmax]"``), 2-D arrays, models, or
    (name, array or model) pairs.  A single array or model is one case.
    """
    if cases is None:
        return battery(kind, fmt, seed)
    if isinstance(cases, (np.ndarray, _Model)):
        cases = [cases]
    if isinstance(cases, dict):
        items: list[Any] = list(cases.items())
    elif isinstance(cases, (list, tuple)):
        items = list(cases)
    else:
        raise TypeError("cases must be None (the default battery), a list of case names, "
                        f"arrays or models, or a dict of name -> array or model, got "
                        f"{type(cases).__name__}")
    if not items:
        raise ValueError("cases is empty: give at least one case (None: the default battery)")
    names = battery_names(fmt.name)
    wanted: list[tuple[str, str | None]] = []
    user: list[Case] = []
    out_order: list[Any] = []
    for i, item in enumerate(items):
        if isinstance(item, str):
            base, _, tgt = item.partition("[")
            tgt_rule = tgt.rstrip("]") if tgt else None
            if base not in names:
                close = difflib.get_close_matches(base, names, n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise ValueError(f"unknown case {item!r}{hint}; the battery's cases for "
                                 f"{fmt.name}: {', '.join(names)}")
            if tgt_rule is not None and (kind not in CE_KINDS or tgt_rule not in TARGETS):
                raise ValueError(f"case {item!r}: a target rule [{'|'.join(TARGETS)}] is "
                                 f"only for kind {' or '.join(map(repr, CE_KINDS))}")
            wanted.append((base, tgt_rule))
            out_order.append(("battery", len(wanted) - 1))
            continue
        if isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str):
            name, v = item
        elif isinstance(item, (numbers.Number, str, bytes)):
            raise TypeError(f"cases[{i}] must be a case name, a 2-D array or a model, got "
                            f"{item!r}")
        else:
            name, v = f"user_{i}", item
        user.append(_user_case(name, v, seed))
        out_order.append(("user", len(user) - 1))
    labels = [c.label for c in user]
    dup = {n for n in labels if labels.count(n) > 1}
    if dup:
        raise ValueError(f"case names must be distinct: {', '.join(sorted(dup))} repeated")
    full = {c.label: c for c in battery(kind, fmt, seed)} if wanted else {}
    result: list[Case] = []
    for where, k in out_order:
        if where == "user":
            result.extend(_with_targets([user[k]], kind))
        else:
            base, rule = wanted[k]
            rules = [rule] if rule else (TARGETS if kind in CE_KINDS else (None,))
            for r in rules:
                result.append(full[base if r is None else f"{base}[{r}]"])
    return result
