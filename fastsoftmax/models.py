r"""Logit models: where the rows of a Monte Carlo run come from.

Every model draws the row's standard normals :math:`z_0, \dots, z_{n-1}` from
the same counter-based stream (``_rng.STREAM_LOGITS`` of (seed, row)), so for
one seed all models see the same underlying normals: *common random
numbers*.  Comparisons between configurations (scaled vs unscaled,
d_k = 16 vs 4096) are then much sharper than with independent runs, and a
sweep's points are correlated (their differences are what is precise).

* :class:`Gaussian` ``(n, scale, mean)``: :math:`x_j = (\mu + \sigma z_j) / T`.
* :class:`Shifted` ``(n, offset, spread)``: "large but close" logits such as
  [100, 101, 99]: :math:`x_j = (c + s z_j) / T`.  Softmax is
  shift-invariant, so its statistics do not depend on ``offset`` (exactly so
  with ``dtype="float64"``; in float32, offset + z is rounded to the float32
  grid, multiples of 1/16 at 1e6).
* :class:`DotProduct` ``(n, d_k, scaled, method)``: :math:`x_j = q \cdot k_j /
  T` (divided by :math:`\sqrt{d_k}` when scaled) with
  :math:`q, k_j \sim N(0, I_{d_k})`.

``T`` is the temperature (logits divided by it).  Models are frozen value
objects, validated at construction (``TypeError``/``ValueError`` before any
work); ``params`` is what sweeps and ``Summary.config`` record and
``gen_spec()`` what the kernels draw rows from.  ``MODELS`` maps the names
``"gaussian"``, ``"shifted"``, ``"dotproduct"`` to the classes.

>>> import fastsoftmax as fs
>>> m = fs.models.DotProduct(n=64, d_k=4096, scaled=False)
>>> s = fs.simulate(m, 10_000, seed=0)
>>> bool(s["ce_grad_target"].median < 1e-6)
True
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Callable, ClassVar

import numpy as np

from . import registries as _reg
from ._kernels import gen as _gen
from ._inputs import check_int, check_real

__all__ = ["Gaussian", "Shifted", "DotProduct", "MODELS"]


def _N(name: str, v: Any) -> int:
    return check_int(name, v, 1)


def _REAL(name: str, v: Any) -> float:
    return check_real(name, v)


def _NONNEG(name: str, v: Any) -> float:
    return check_real(name, v, nonneg=True)


def _POSITIVE(name: str, v: Any) -> float:
    return check_real(name, v, positive=True)


# a parameter's check by its kind in the model's record (fastsoftmax.registries)
_KIND_CHECKS: dict[str, Callable[[str, Any], Any]] = {
    "int>=1": _N, "real": _REAL, "real>=0": _NONNEG, "real>0": _POSITIVE}


def _checks_of(rec: _reg.Model) -> dict[str, Callable[[str, Any], Any]]:
    """field -> check of a model's numeric parameters, from its record."""
    return {p.name: _KIND_CHECKS[p.kind] for p in rec.params if p.kind in _KIND_CHECKS}


class _Model:
    """Base of the model classes: validation at construction, ``params``,
    and the generator spec the backends draw rows from."""
    name: ClassVar[str] = "model"
    n: int
    # field -> validator, applied (and the value normalised) at construction
    _checks: ClassVar[dict[str, Callable[[str, Any], Any]]] = {}

    def __post_init__(self) -> None:
        for field_name, check in self._checks.items():
            object.__setattr__(self, field_name, check(field_name, getattr(self, field_name)))

    @property
    def params(self) -> dict[str, Any]:
        """The model's parameters, a dict of its fields as configurations record them."""
        return asdict(self)  # type: ignore[call-overload]

    def gen_spec(self) -> _gen.GenSpec:
        """What the kernels draw rows from (see ``fastsoftmax._kernels.gen``).

        Returns
        -------
        fastsoftmax._kernels.gen.GenSpec
            The generator code, its three float64 parameters, the row length
            and the scratch length per row.
        """
        raise NotImplementedError


@dataclass(frozen=True)
class Gaussian(_Model):
    r"""Gaussian logits: x_j = (mean + scale z_j) / temperature.

    .. math::

        x_j = \frac{\mu + \sigma z_j}{T}, \qquad z_j \sim N(0, 1)
        \text{ i.i.d.}, \quad j = 0, \dots, n - 1,

    so :math:`x_j \sim N(\mu / T, (\sigma / T)^2)`.  Softmax is
    shift-invariant: ``mean`` does not change the statistics (beyond
    rounding), ``scale / temperature`` sets them (saturation where it is
    large, near-uniform probabilities where it is small).

    Parameters
    ----------
    n : int
        Logits per row (>= 1; an integral float such as 1e3 is accepted).
    scale : float, default 1.0
        :math:`\sigma`, the spread of the logits (>= 0; 0 gives equal logits).
    mean : float, default 0.0
        :math:`\mu`, a common offset (finite).
    temperature : float, default 1.0
        :math:`T`, the logits are divided by it (> 0).

    Raises
    ------
    TypeError
        A non-integer ``n`` or a non-real parameter.
    ValueError
        n < 1, a negative ``scale``, a non-positive ``temperature``, a
        non-finite value.

    See Also
    --------
    Shifted : The same logits, named for "large but close" offsets.
    fastsoftmax.simulate : Draws rows from a model.

    Examples
    --------
    >>> import fastsoftmax as fs
    >>> m = fs.models.Gaussian(n=64, scale=30.0)
    >>> m.params
    {'n': 64, 'scale': 30.0, 'mean': 0.0, 'temperature': 1.0}
    >>> s = fs.simulate(m, 10_000, seed=0)
    >>> round(s["ce_grad_target"].fraction_below(1e-6), 2)
    0.31
    """
    n: int
    scale: float = 1.0
    mean: float = 0.0
    temperature: float = 1.0
    name = _reg.GAUSSIAN.name
    _checks = _checks_of(_reg.GAUSSIAN)

    def gen_spec(self) -> _gen.GenSpec:
        """What the kernels draw rows from: the affine generator a + b z.

        Returns
        -------
        fastsoftmax._kernels.gen.GenSpec
            The affine generator with a = mean / T and b = scale / T.

        Examples
        --------
        >>> import fastsoftmax as fs
        >>> fs.models.Gaussian(n=4, scale=2.0).gen_spec().params
        (0.0, 2.0, 0.0)
        """
        return _gen.affine(self.n, self.mean, self.scale, self.temperature)


@dataclass(frozen=True)
class Shifted(_Model):
    r"""Large but close logits: x_j = (offset + spread z_j) / temperature.

    .. math::

        x_j = \frac{c + s z_j}{T}, \qquad z_j \sim N(0, 1) \text{ i.i.d.}

    The objection to the 1/sqrt(d_k) argument made concrete: logits such as
    [100, 101, 99] are large but close, and softmax is shift-invariant,
    :math:`\mathrm{softmax}(x + c) = \mathrm{softmax}(x)`, so the statistics
    do not depend on ``offset``: exactly so with ``dtype="float64"``; in
    float32, offset + z is rounded to the float32 grid (multiples of 1/16 at
    1e6).  The same generator as :class:`Gaussian` under other names.

    Parameters
    ----------
    n : int
        Logits per row (>= 1).
    offset : float, default 0.0
        :math:`c`, added to every logit (finite).
    spread : float, default 1.0
        :math:`s`, the spread of the logits around the offset (>= 0).
    temperature : float, default 1.0
        :math:`T`, the logits are divided by it (> 0).

    Raises
    ------
    TypeError
        A non-integer ``n`` or a non-real parameter.
    ValueError
        n < 1, a negative ``spread``, a non-positive ``temperature``, a
        non-finite value.

    See Also
    --------
    Gaussian : The same logits, parameterised by scale and mean.

    Examples
    --------
    >>> import fastsoftmax as fs
    >>> a = fs.simulate(fs.models.Shifted(n=64), 10_000, dtype="float64")
    >>> b = fs.simulate(fs.models.Shifted(n=64, offset=1e6), 10_000, dtype="float64")
    >>> bool(abs(a["jac_fro"].mean - b["jac_fro"].mean) < 1e-9)
    True
    """
    n: int
    offset: float = 0.0
    spread: float = 1.0
    temperature: float = 1.0
    name = _reg.SHIFTED.name
    _checks = _checks_of(_reg.SHIFTED)

    def gen_spec(self) -> _gen.GenSpec:
        """What the kernels draw rows from: the affine generator a + b z.

        Returns
        -------
        fastsoftmax._kernels.gen.GenSpec
            The affine generator with a = offset / T and b = spread / T.

        Examples
        --------
        >>> import fastsoftmax as fs
        >>> fs.models.Shifted(n=4, offset=100.0).gen_spec().params
        (100.0, 1.0, 0.0)
        """
        return _gen.affine(self.n, self.offset, self.spread, self.temperature)


@dataclass(frozen=True)
class DotProduct(_Model):
    r"""Attention logits: x_j = q.k_j (/ sqrt(d_k) if scaled) / temperature.

    .. math::

        x_j = \frac{q \cdot k_j}{T \sqrt{d_k}} \text{ (scaled) or }
        \frac{q \cdot k_j}{T} \text{ (unscaled)}, \qquad
        q, k_0, \dots, k_{n-1} \sim N(0, I_{d_k}) \text{ i.i.d.}

    Unscaled, the logits have a spread of about :math:`\sqrt{d_k}`, so the
    softmax saturates as d_k grows (the claim of "Attention Is All You
    Need"); scaled, their spread stays about 1.

    ``method="exact"`` uses that, given q, the :math:`q \cdot k_j` are
    i.i.d. :math:`N(0, \lVert q \rVert^2)` and
    :math:`\lVert q \rVert^2 \sim \chi^2_{d_k}`: :math:`x_j = b \sqrt{c}\,
    z_j` with one chi-square draw c per row, O(n) per row whatever d_k.
    ``method="explicit"`` draws q and the keys (O(n d_k) per row) and exists
    to check it: the two agree in distribution, not row by row.

    Parameters
    ----------
    n : int
        Keys, i.e. logits per row (>= 1).
    d_k : int
        Dimension of the queries and keys (>= 1).
    scaled : bool, default True
        Divide the dot products by :math:`\sqrt{d_k}`.
    method : {"exact", "explicit"}, default "exact"
        How the dot products are drawn (see above).
    temperature : float, default 1.0
        :math:`T`, the logits are divided by it (> 0).

    Raises
    ------
    TypeError
        A non-integer ``n`` or ``d_k``, a non-bool ``scaled``, a non-real
        ``temperature``.
    ValueError
        n < 1, d_k < 1, a non-positive ``temperature``, an unknown ``method``,
        n * d_k > 2**34 with ``method="explicit"``.

    See Also
    --------
    fastsoftmax.simulate : Draws rows from a model.
    fastsoftmax.sweeps.sweep : Simulates a grid of models.

    Examples
    --------
    >>> import fastsoftmax as fs
    >>> unscaled = fs.simulate(fs.models.DotProduct(n=64, d_k=4096, scaled=False), 10_000)
    >>> scaled = fs.simulate(fs.models.DotProduct(n=64, d_k=4096), 10_000)
    >>> bool(unscaled["ce_grad_target"].median < 1e-6 < 0.05 < scaled["ce_grad_target"].median)
    True
    """
    n: int
    d_k: int
    scaled: bool = True
    method: str = "exact"
    temperature: float = 1.0
    name = _reg.DOT_PRODUCT.name
    _checks = _checks_of(_reg.DOT_PRODUCT)

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.scaled, (bool, np.bool_)):
            raise TypeError(f"scaled must be True or False, got {self.scaled!r}")
        object.__setattr__(self, "scaled", bool(self.scaled))
        methods = _reg.DOT_PRODUCT.param("method").choices
        if self.method not in methods:
            raise ValueError(f"method must be {' or '.join(map(repr, methods))}, "
                             f"got {self.method!r}")
        if self.method == "explicit" and self.n * self.d_k > 2 ** 34:
            raise ValueError("explicit DotProduct needs n * d_k <= 2**34 per row")

    def gen_spec(self) -> _gen.GenSpec:
        """What the kernels draw rows from: x_j = b sqrt(chi2(d_k)) z_j or b q.k_j.

        Returns
        -------
        fastsoftmax._kernels.gen.GenSpec
            The exact or explicit dot-product generator with
            b = (1 / sqrt(d_k) if scaled else 1) / T; the explicit one
            needs d_k scratch values per row (the query).

        Examples
        --------
        >>> import fastsoftmax as fs
        >>> fs.models.DotProduct(n=4, d_k=16).gen_spec().params
        (0.0, 0.25, 16.0)
        """
        b = (1.0 / math.sqrt(self.d_k) if self.scaled else 1.0) / self.temperature
        code = _gen.GEN_DOT_EXACT if self.method == "exact" else _gen.GEN_DOT_EXPLICIT
        scratch = max(self.n, self.d_k if self.method == "explicit" else 0)
        return _gen.GenSpec(code, (0.0, b, float(self.d_k)), self.n, scratch)


#: The model classes by name (what ``sweep("dotproduct", ...)`` and the CLI accept).
MODELS: dict[str, type[_Model]] = {
    rec.name: cls for rec, cls in zip(_reg.MODELS, (Gaussian, Shifted, DotProduct))}
