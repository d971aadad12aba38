r"""Logit models: where the rows of a Monte Carlo run come from.

Every model draws the row's standard normals z_0..z_{n-1} from the same
counter-based stream (``_rng.STREAM_LOGITS`` of (seed, row)), so for one seed
all models see the same underlying normals: *common random numbers*.
Comparisons between configurations (scaled vs unscaled, d_k = 16 vs 4096)
are then much sharper than with independent runs, and a sweep's points are
correlated (their differences are what is precise).

* ``Gaussian(n, scale, mean)``: x_j = (mean + scale z_j) / T.
* ``Shifted(n, offset, spread)``: "large but close" logits such as the
  seed's [100, 101, 99]: x_j = (offset + spread z_j) / T.  Softmax is
  shift-invariant, so its statistics do not depend on ``offset`` (exactly so
  with ``dtype="float64"``; in float32, offset + z is rounded to the float32
  grid, multiples of 1/16 at 1e6).
* ``DotProduct(n, d_k, scaled, method)``: x_j = q.k_j (/ sqrt(d_k) when
  scaled) / T with q, k_j ~ N(0, I_{d_k}).  ``method="exact"`` uses that,
  given q, the q.k_j are i.i.d. N(0, |q|^2) and |q|^2 ~ chi^2(d_k): x_j =
  sqrt(c) z_j with one chi-square draw c per row, O(n) whatever d_k.
  ``method="explicit"`` draws q and K (O(n d_k)) and exists to check it.

``T`` is the temperature (logits divided by it).  Models are frozen value
objects; ``params`` is what sweeps and ``Summary.config`` record.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Callable, ClassVar

import numpy as np

from . import _gen
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
    def params(self) -> dict:
        """The model's parameters (a dict of its fields), as configurations record them."""
        return asdict(self)  # type: ignore[call-overload]

    def gen_spec(self) -> _gen.GenSpec:
        """What the kernels draw rows from (see ``fastsoftmax._gen``)."""
        raise NotImplementedError


@dataclass(frozen=True)
class Gaussian(_Model):
    """x_j = (mean + scale z_j) / temperature, z_j ~ N(0, 1) i.i.d."""
    n: int
    scale: float = 1.0
    mean: float = 0.0
    temperature: float = 1.0
    name = "gaussian"
    _checks = dict(n=_N, scale=_NONNEG, mean=_REAL, temperature=_POSITIVE)

    def gen_spec(self) -> _gen.GenSpec:
        return _gen.affine(self.n, self.mean, self.scale, self.temperature)


@dataclass(frozen=True)
class Shifted(_Model):
    """x_j = (offset + spread z_j) / temperature: large but close logits."""
    n: int
    offset: float = 0.0
    spread: float = 1.0
    temperature: float = 1.0
    name = "shifted"
    _checks = dict(n=_N, offset=_REAL, spread=_NONNEG, temperature=_POSITIVE)

    def gen_spec(self) -> _gen.GenSpec:
        return _gen.affine(self.n, self.offset, self.spread, self.temperature)


@dataclass(frozen=True)
class DotProduct(_Model):
    """x_j = q.k_j (/ sqrt(d_k) if scaled) / temperature, q, k_j ~ N(0, I)."""
    n: int
    d_k: int
    scaled: bool = True
    method: str = "exact"
    temperature: float = 1.0
    name = "dotproduct"

    _checks = dict(n=_N, d_k=_N, temperature=_POSITIVE)

    def __post_init__(self):
        super().__post_init__()
        if not isinstance(self.scaled, (bool, np.bool_)):
            raise TypeError(f"scaled must be True or False, got {self.scaled!r}")
        object.__setattr__(self, "scaled", bool(self.scaled))
        if self.method not in ("exact", "explicit"):
            raise ValueError(f"method must be 'exact' or 'explicit', got {self.method!r}")
        if self.method == "explicit" and self.n * self.d_k > 2 ** 34:
            raise ValueError("explicit DotProduct needs n * d_k <= 2**34 per row")

    def gen_spec(self) -> _gen.GenSpec:
        b = (1.0 / math.sqrt(self.d_k) if self.scaled else 1.0) / self.temperature
        code = _gen.GEN_DOT_EXACT if self.method == "exact" else _gen.GEN_DOT_EXPLICIT
        scratch = max(self.n, self.d_k if self.method == "explicit" else 0)
        return _gen.GenSpec(code, (0.0, b, float(self.d_k)), self.n, scratch)


MODELS = {"gaussian": Gaussian, "shifted": Shifted, "dotproduct": DotProduct}
