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
import math
import numbers
from dataclasses import asdict, dataclass

import numpy as np
from numba.extending import register_jitable

from . import _rng

__all__ = ["Gaussian", "Shifted", "DotProduct", "MODELS"]

# generator codes understood by ``model_row``
GEN_ROWS = -1        # rows come from an array, not a model
GEN_AFFINE = 0       # x = a + b z
GEN_DOT_EXACT = 1    # x = b sqrt(chi2(d)) z
GEN_DOT_EXPLICIT = 2  # x = b q.k_j


def _check_int(name, v, lo):
    if isinstance(v, bool) or not isinstance(v, (numbers.Integral, np.integer)):
        if isinstance(v, float) and v.is_integer():
            v = int(v)
        else:
            raise TypeError(f"{name} must be an integer, got {v!r}")
    v = int(v)
    if v < lo:
        raise ValueError(f"{name} must be >= {lo}, got {v}")
    return v


def _check_float(name, v, positive=False, nonneg=False):
    if isinstance(v, bool) or not isinstance(v, (numbers.Real, np.floating, np.integer)):
        raise TypeError(f"{name} must be a real number, got {v!r}")
    v = float(v)
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite, got {v}")
    if positive and not v > 0:
        raise ValueError(f"{name} must be > 0, got {v}")
    if nonneg and v < 0:
        raise ValueError(f"{name} must be >= 0, got {v}")
    return v


def _N(name, v):
    return _check_int(name, v, 1)


def _REAL(name, v):
    return _check_float(name, v)


def _NONNEG(name, v):
    return _check_float(name, v, nonneg=True)


def _POSITIVE(name, v):
    return _check_float(name, v, positive=True)


def _affine(a, b, temperature):
    """x = (a + b z) / temperature as the kernels' (code, parameters)."""
    return GEN_AFFINE, np.array([a / temperature, b / temperature, 0.0])


class _Model:
    name = "model"
    # field -> validator, applied (and the value normalised) at construction
    _checks = {}

    def __post_init__(self):
        for field_name, check in self._checks.items():
            object.__setattr__(self, field_name, check(field_name, getattr(self, field_name)))

    @property
    def params(self):
        return asdict(self)

    def _gen(self):
        """(generator code, float64 parameter vector) for the kernels."""
        raise NotImplementedError

    def scratch_len(self):
        return self.n


@dataclass(frozen=True)
class Gaussian(_Model):
    """x_j = (mean + scale z_j) / temperature, z_j ~ N(0, 1) i.i.d."""
    n: int
    scale: float = 1.0
    mean: float = 0.0
    temperature: float = 1.0
    name = "gaussian"
    _checks = dict(n=_N, scale=_NONNEG, mean=_REAL, temperature=_POSITIVE)

    def _gen(self):
        return _affine(self.mean, self.scale, self.temperature)


@dataclass(frozen=True)
class Shifted(_Model):
    """x_j = (offset + spread z_j) / temperature: large but close logits."""
    n: int
    offset: float = 0.0
    spread: float = 1.0
    temperature: float = 1.0
    name = "shifted"
    _checks = dict(n=_N, offset=_REAL, spread=_NONNEG, temperature=_POSITIVE)

    def _gen(self):
        return _affine(self.offset, self.spread, self.temperature)


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

    def _gen(self):
        b = (1.0 / math.sqrt(self.d_k) if self.scaled else 1.0) / self.temperature
        code = GEN_DOT_EXACT if self.method == "exact" else GEN_DOT_EXPLICIT
        return code, np.array([0.0, b, float(self.d_k)])

    def scratch_len(self):
        return max(self.n, self.d_k if self.method == "explicit" else 0)


MODELS = {"gaussian": Gaussian, "shifted": Shifted, "dotproduct": DotProduct}


@register_jitable
def model_row(gen, params, seed, row, n, buf, qbuf):
    """Draw row ``row`` of a model into buf[:n] (dtype of buf).

    ``qbuf`` is scratch of length >= d_k for the explicit DotProduct.
    """
    T = buf.dtype.type
    if gen == GEN_DOT_EXPLICIT:
        d = int(params[2])
        _rng.fill_normals(qbuf, d, seed, row, _rng.STREAM_QUERY)
        b = params[1]
        for j in range(n):
            acc = 0.0
            for t in range(d):
                acc += np.float64(qbuf[t]) * _rng.normal(seed, row, _rng.STREAM_KEYS, j * d + t)
            buf[j] = T(b * acc)
        return
    _rng.fill_normals(buf, n, seed, row, _rng.STREAM_LOGITS)
    if gen == GEN_DOT_EXACT:
        b = T(params[1] * math.sqrt(_rng.chi2(seed, row, _rng.STREAM_SCALE, params[2])))
        for i in range(n):
            buf[i] = b * buf[i]
    else:
        a = T(params[0])
        b = T(params[1])
        for i in range(n):
            buf[i] = a + b * buf[i]
