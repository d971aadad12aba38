"""The wire format of an accumulator: strict JSON, read back strictly.

One place for the conventions every part's dict form follows and for the
checks that read them back:

* floats are JSON numbers, the non-finite ones the strings ``"inf"``,
  ``"-inf"`` and ``"nan"`` (:func:`floats_out`), so the text is strict JSON;
* counts are JSON integers >= 0;
* the accumulator's keys come in the order of :data:`KEYS` (the JSON text of
  a summary is byte for byte that of 0.2.0 for the same data);
* anything else is a ``ValueError`` that starts "malformed summary:" and
  names what is wrong (:func:`need`, :func:`floats`, :func:`ints`,
  :func:`count`), raised before an accumulator is built.

Each part (moments, extremes, threshold counts, sketch) writes its own keys
with ``to_dict`` and reads them with ``from_dict`` through these functions;
``Accumulator.to_dict`` / ``from_dict`` put the parts together.
"""
from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np

__all__ = ["KEYS", "floats_out", "malformed", "need", "floats", "ints", "count", "ordered"]

#: The accumulator's keys, in the order they are written.
KEYS = ("count", "skipped", "thresholds", "moments", "min", "max", "nonfinite", "below",
        "sketch")


def floats_out(a: Any) -> list[float | str]:
    """The values of ``a`` (flattened) as JSON: floats, non-finite ones as strings."""
    return [float(v) if math.isfinite(v) else repr(float(v)) for v in np.asarray(a).ravel()]


def malformed(what: str) -> ValueError:
    """The error for a dict that is not an accumulator's: ``malformed summary: <what>``."""
    return ValueError(f"malformed summary: {what}")


def need(obj: Any, key: str, where: str) -> Any:
    """``obj[key]``, where ``obj`` must be a dict (``where`` names it) holding ``key``."""
    if not isinstance(obj, dict):
        raise malformed(f"{where} must be an object, got {type(obj).__name__}")
    if key not in obj:
        raise malformed(f"{where} has no {key!r}")
    return obj[key]


def _shaped(a: np.ndarray, what: str, shape: tuple[int, ...] | None) -> np.ndarray:
    if shape is None:
        return a
    if a.size != int(np.prod(shape)):
        raise malformed(f"{what} has {a.size} values, expected {int(np.prod(shape))}")
    return a.reshape(shape)


def floats(v: Any, what: str, shape: tuple[int, ...] | None = None) -> np.ndarray:
    """The float64 array of the numbers (or "inf"/"-inf"/"nan" strings) ``v``,
    of ``shape`` when given."""
    try:
        a = np.array([float(x) for x in np.asarray(v, dtype=object).ravel()], dtype=np.float64)
    except (TypeError, ValueError):
        raise malformed(f"{what} must be numbers") from None
    return _shaped(a, what, shape)


def ints(v: Any, what: str, shape: tuple[int, ...] | None = None) -> np.ndarray:
    """The int64 array of the integers >= 0 ``v``, of ``shape`` when given."""
    try:
        a = np.asarray(v)
        if a.size and a.dtype.kind not in "iu":
            raise TypeError
        a = a.astype(np.int64)
    except (TypeError, ValueError, OverflowError):
        raise malformed(f"{what} must be integers") from None
    if a.size and a.min() < 0:
        raise malformed(f"{what} must be >= 0")
    return _shaped(a, what, shape)


def count(v: Any, what: str) -> int:
    """One JSON integer >= 0 (a bool is not one)."""
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
        raise malformed(f"{what} must be an integer >= 0, got {v!r}")
    return int(v)


def ordered(fields: Mapping[str, Any]) -> dict[str, Any]:
    """The accumulator's fields in the order of :data:`KEYS` (all of them needed)."""
    if set(fields) != set(KEYS):
        raise KeyError(f"an accumulator's dict has the keys {KEYS}, got {tuple(fields)}")
    return {k: fields[k] for k in KEYS}
