"""Launch geometry of the CUDA backend (read from ``_settings`` at launch time)."""
import contextlib
import math
import warnings

from numba import cuda

from . import _settings


@contextlib.contextmanager
def _quiet():
    """numba-cuda warns about grids under 128 blocks; small inputs launch
    small grids on purpose (and pytest runs with warnings as errors)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"Grid size \d+ will likely result in GPU")
        yield


def _tpb():
    t = int(_settings.THREADS_PER_BLOCK)
    if t < 32 or t > 256 or t & (t - 1):
        # >= 32: a tile's reduction needs a thread per channel; <= 256: the
        # kernel's shared memory (21 * 8 bytes per thread) stays under 48 KiB
        raise ValueError(f"THREADS_PER_BLOCK must be 32, 64, 128 or 256, got {t}")
    return t


#: threads of a warp: a row's group of threads is at most one warp, so its
#: threads merge their states by warp shuffles (``_kernels._group_state``)
WARP = 32


def group_size(n, tpb=None):
    """Threads per array row: 1 for short rows, else the power of two (at
    most a warp) that gives each about VALUES_PER_THREAD logits; longer rows
    give each of the 32 threads more."""
    tpb = _tpb() if tpb is None else tpb
    g = 1
    while 2 * g <= min(tpb, WARP) and 2 * g * _settings.VALUES_PER_THREAD <= n:
        g *= 2
    return g


def tile_rows(n, g, tpb, brows):
    """Rows per tile: the block size, except that a few long rows per group
    make small tiles (of whole row-blocks where possible), so that the grid
    has many small units of work (n = 16384: 4-row units, not 128)."""
    if g == 1:
        return tpb
    return min(tpb, max(tpb // g, brows))


def _sms():
    dev = cuda.get_current_device()
    return int(getattr(dev, "MULTIPROCESSOR_COUNT", None) or 1)


def _grid_cap():
    if _settings.MAX_GRID:
        return int(_settings.MAX_GRID)
    return max(1, _sms() * _settings.BLOCKS_PER_SM)


def scratch_bytes(per_block):
    """Bytes of generated-row scratch for the two streams, per_block bytes
    a block: SCRATCH_BYTES, or enough for SCRATCH_BLOCKS_PER_SM blocks per
    multiprocessor where that is more, up to SCRATCH_FRACTION of the
    device's memory (the simulator's is unbounded)."""
    want = 2 * per_block * _sms() * _settings.SCRATCH_BLOCKS_PER_SM
    try:
        total = float(cuda.current_context().get_memory_info()[1])
    except Exception:   # noqa: BLE001 - no figure: the fixed budget
        total = 0.0
    room = total * _settings.SCRATCH_FRACTION if math.isfinite(total) else want
    return int(max(_settings.SCRATCH_BYTES, min(want, room)))


def _launch_rows(n, unit):
    per = max(1, _settings.LAUNCH_LOGITS // max(n, 1))
    return max(unit, per - per % unit)
