"""The summary kernels loaded once per process before the first probed forward.

A probe's first forward would otherwise spend 10-60 s compiling kernels in
silence; entering the probe loads them (from numba's on-disk cache when there
is one) and logs one line, naming the cache, when that takes more than 3 s.
"""
from __future__ import annotations

import functools
import logging
import threading

import numpy as np

from .. import api as _api

__all__ = ["warm_kernels"]

_log = logging.getLogger("fastsoftmax.torch")


def _kernel_cache() -> str:
    try:
        import numba
        env = getattr(numba.config, "CACHE_DIR", "")
        if env:
            return f"{env} (NUMBA_CACHE_DIR)"
        from ..backends import cpu
        return str(cpu.observe_chunk._cache._cache_path)
    except Exception:       # never fail on a message
        return "__pycache__ next to the fastsoftmax sources"


@functools.cache       # once per process; not recorded if interrupted
def warm_kernels() -> None:
    """Compile (or load from the cache) the summary kernels, saying so if slow."""
    def note():
        _log.warning("fastsoftmax.torch: loading the summary kernels, compiling them if "
                     "this machine has no cached copy (10-60 s the first time; cache: %s)",
                     _kernel_cache())
    timer = threading.Timer(3.0, note)
    timer.daemon = True
    timer.start()
    try:
        _api.summarize(np.array([[0.0, -np.inf], [1.0, 2.0]]), nan_policy="omit")
    finally:
        timer.cancel()
