"""Is a CUDA GPU usable?  Answered without importing numba.cuda at import
time of fastsoftmax (``_cuda`` is the only module that imports it)."""
import functools


@functools.lru_cache(maxsize=None)
def _probe():
    try:
        from . import _cuda
    except ImportError as e:
        return False, f"numba-cuda is not installed ({e}); pip install 'fastsoftmax[cuda]'"
    except Exception as e:    # a broken CUDA install must not break backend="auto"
        return False, f"numba.cuda failed to import: {type(e).__name__}: {e}"
    return _cuda.probe()


def available():
    return _probe()[0]


def require():
    ok, why = _probe()
    if not ok:
        raise RuntimeError(f"backend='cuda' is not usable: {why}")


def reason():
    return _probe()[1]
