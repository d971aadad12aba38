"""Model generators: how a model's row r is drawn, compiled for every target.

A model (``fastsoftmax.models``) reduces to a :class:`GenSpec`: a generator
code, three float64 parameters and the row length.  :func:`model_row` draws
row ``row`` of it into a buffer from the counter-based stream of ``_rng``;
it is ``register_jitable`` code, called by the CPU kernels (``numba.njit``)
and by the CUDA kernels (device code), so both targets draw the same rows.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba.extending import register_jitable

from . import rng as _rng
from .simd import vector_width

__all__ = ["GenSpec", "model_row", "GEN_ROWS", "GEN_AFFINE", "GEN_DOT_EXACT",
           "GEN_DOT_EXPLICIT"]

# generator codes understood by ``model_row``
GEN_ROWS = -1        # rows come from an array, not a model
GEN_AFFINE = 0       # x = a + b z
GEN_DOT_EXACT = 1    # x = b sqrt(chi2(d)) z
GEN_DOT_EXPLICIT = 2  # x = b q.k_j


@dataclass(frozen=True)
class GenSpec:
    """What a backend needs to draw a model's rows: the generator code, its
    parameters (a, b, d) as float64, the row length and the scratch length
    per row (n, or d_k for the explicit DotProduct's query)."""
    code: int
    params: tuple
    n: int
    scratch_len: int

    def param_array(self) -> np.ndarray:
        return np.array(self.params, dtype=np.float64)


def affine(n: int, a: float, b: float, temperature: float) -> GenSpec:
    """x = (a + b z) / temperature."""
    return GenSpec(GEN_AFFINE, (a / temperature, b / temperature, 0.0), n, n)


@register_jitable
def model_row(gen, params, seed, row, n, buf, qbuf):
    """Draw row ``row`` of a model into buf[:n] (dtype of buf).

    ``qbuf`` is scratch of length >= d_k for the explicit DotProduct.
    """
    vector_width()
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
    if gen == GEN_DOT_EXACT:
        a = T(0.0)
        b = T(params[1] * math.sqrt(_rng.chi2(seed, row, _rng.STREAM_SCALE, params[2])))
    else:
        a = T(params[0])
        b = T(params[1])
    # x = a + b z, fused into the generating loop
    _rng.fill_normals_affine(buf, n, seed, row, _rng.STREAM_LOGITS, a, b)
