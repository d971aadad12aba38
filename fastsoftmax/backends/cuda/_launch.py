"""The CUDA backend's host side: the launcher, the run loops and softmax of
device arrays."""
import threading
from typing import Any

import numpy as np
from numba import cuda

from ... import _config
from ..._kernels.gen import GEN_DOT_EXPLICIT, GEN_ROWS
from ..._inputs import (TARGET_LABELS, Rows, bad_row_error, collapse, compute_dtype,
                        generated_row_error, normalize_axis)
from ..._kernels.row import NOBS
from ..._kernels.sketch import I_NEGINF, NTOT, window_start
from ...accumulate import NCH, Accumulator
from ._device import (_DeviceRows, _as_device, _is_device_array, _launch_copy4, _pad2, _view,
                      _wrap_like)
from . import _kernels
from ._kernels import SIMULATOR
from ._geometry import (_grid_cap, _launch_rows, _quiet, _tpb, group_size, scratch_bytes,
                        tile_rows)

_INT64_MAX = np.iinfo(np.int64).max

# --------------------------------------------------------------------------
# host side: the run loop


class _Pool(threading.local):
    """Per host thread: the two streams and the pinned host buffers the
    launcher copies into (pinned allocation costs ~ms: reuse it)."""

    def __init__(self):
        self._streams = None
        self._pinned = {}

    @property
    def streams(self):
        if self._streams is None:
            self._streams = [cuda.stream(), cuda.stream()]
        return self._streams

    def pinned(self, name, shape, dtype):
        bufs = self._pinned.get(name)
        size = int(np.prod(shape))
        if bufs is None or bufs[0].size < size:
            bufs = self._pinned[name] = [cuda.pinned_array(size, dtype) for _ in range(2)]
        return [b[:size].reshape(shape) for b in bufs]


_POOL = None


def _pool():
    global _POOL
    if _POOL is None:
        _POOL = _Pool()
    return _POOL


class _Launcher:
    """Launches the observe kernel chunk by chunk on two streams and folds
    the per-row-block moments of a chunk while the next one runs."""

    def __init__(self, n, dt, thr, generated, gen=GEN_ROWS, params=None, seed=0, row0=0,
                 ymode=0, yfix=0, q_len=1, nrows=1):
        self.tpb = tpb = _tpb()
        self.n = n
        self.dt = np.dtype(dt)
        self.brows = brows = _config.block_rows(n)
        if row0 % brows:
            raise ValueError("row0 must be a multiple of the block size")
        self.g = 1 if generated else group_size(n, tpb)
        self.tr = tile_rows(n, self.g, tpb, brows)
        self.unit = unit = max(brows, self.tr)
        self.step = min(_launch_rows(n, unit), -(-nrows // unit) * unit)
        grid = _grid_cap()
        units = -(-nrows // unit)
        grid = min(grid, units)
        if generated:
            # one scratch per stream: kernels of the two streams may overlap
            per_block = tpb * (n + (q_len if gen == GEN_DOT_EXPLICIT else 0)) * self.dt.itemsize
            grid = min(grid, max(1, scratch_bytes(per_block) // 2 // per_block))
        self.grid = grid = max(1, grid)
        self.kernel = _kernels.get_kernel("observe", tpb, self.g, bool(generated))
        self.gen = gen
        self.params = cuda.to_device(np.zeros(3) if params is None
                                     else np.asarray(params, np.float64))
        self.seed = np.uint64(seed)
        self.row0 = row0
        self.ymode = ymode
        self.yfix = yfix
        self.thr_host = np.asarray(thr, np.float64).reshape(-1).copy()
        nt = self.nt = self.thr_host.size
        # never a zero-size device array (nt says how many are real)
        self.thr = cuda.to_device(self.thr_host if nt else np.zeros(1))
        self.generated = generated
        self.q_len = q_len if gen == GEN_DOT_EXPLICIT else 1
        self.scr = [None, None]           # per stream, allocated on first use
        self.dummy_x = cuda.device_array((1, 1), dtype=self.dt)
        self.dummy_labels = cuda.to_device(np.zeros(1, np.int64))
        self.bmin = cuda.to_device(np.full((grid, NCH), np.inf))
        self.bmax = cuda.to_device(np.full((grid, NCH), -np.inf))
        self.bnonf = cuda.to_device(np.zeros((grid, NCH), np.int64))
        self.bbelow = cuda.to_device(np.zeros((grid, NOBS, max(nt, 1)), np.int64))
        self.hstart = window_start(self.dt)
        self.hist = cuda.to_device(np.zeros((NOBS, NTOT - self.hstart), np.int64))
        self.hrange = cuda.to_device(np.array([[_INT64_MAX, -1]] * NOBS, np.int64))
        self.hninf = cuda.to_device(np.zeros(NOBS, np.int64))
        nrb = self.step // brows + 1
        pool = _pool()
        self.streams = pool.streams
        self.mom_d = [cuda.device_array((nrb, NCH, 3)) for _ in range(2)]
        self.mom_h = pool.pinned("mom", (nrb, NCH, 3), np.float64)
        self.bad_d = [cuda.device_array(2, np.int64) for _ in range(2)]
        self.bad_h = pool.pinned("bad", (2,), np.int64)
        self.xbuf: list[Any] = [None, None]      # device buffers, allocated on first use
        self.lbuf: list[Any] = [None, None]
        self.acc = Accumulator(self.thr_host, block0=row0 // brows)
        self.skipped = 0
        self.pending = None
        self.i = 0

    def launch(self, r0, r1, x=None, labels=None, host=False):
        """Launch rows [r0, r1) (relative to row0): x the device (or, with
        host=True, host) rows of the chunk; labels their int64 labels."""
        k = self.i % 2
        self.i += 1
        s = self.streams[k]
        nr = r1 - r0
        if x is None:
            xd = self.dummy_x
        elif host:
            if self.xbuf[k] is None or self.xbuf[k].shape[0] < nr:
                self.xbuf[k] = cuda.device_array((self.step, self.n), dtype=self.dt)
            xd = self.xbuf[k][:nr]
            xd.copy_to_device(x, stream=s)
        else:
            xd = x
        if labels is None:
            ld = self.dummy_labels
        else:
            if self.lbuf[k] is None or self.lbuf[k].shape[0] < nr:
                self.lbuf[k] = cuda.device_array(self.step, dtype=np.int64)
            ld = self.lbuf[k][:nr]
            ld.copy_to_device(np.ascontiguousarray(labels, dtype=np.int64), stream=s)
        self.bad_d[k].copy_to_device(np.array([0, _INT64_MAX], np.int64), stream=s)
        grid = max(1, min(self.grid, -(-nr // self.unit)))
        scr, qscr = self._scratch(k)
        with _quiet():
            # the kernel's argument groups: the model (generated rows), the
            # rows' geometry, the target, the thresholds, the row scratch,
            # the per-block outputs, the sketch, the bad-row counter
            self.kernel[grid, self.tpb, s](
                xd, (np.int64(self.gen), self.params, self.seed),
                (np.int64(self.row0 + r0), np.int64(nr), np.int64(self.n), np.int64(self.brows),
                 np.int64(self.tr)),
                (ld, np.int64(self.ymode), np.int64(self.yfix)),
                (self.thr, np.int64(self.nt)), (scr, qscr),
                (self.mom_d[k], self.bmin, self.bmax, self.bnonf, self.bbelow),
                (self.hist, self.hrange, self.hninf, np.int64(self.hstart)), self.bad_d[k])
        nb = -(-nr // self.brows)
        self.mom_d[k][:nb].copy_to_host(self.mom_h[k][:nb], stream=s)
        self.bad_d[k].copy_to_host(self.bad_h[k], stream=s)
        prev, self.pending = self.pending, (k, r0, r1)
        if prev is not None:
            return self._finish(prev)
        return None

    def _scratch(self, k):
        if self.scr[k] is None:
            if self.generated:
                slots = self.grid * self.tpb
                ql = self.q_len
                self.scr[k] = (cuda.device_array((self.n, slots), dtype=self.dt),
                               cuda.device_array((ql, slots if ql > 1 else 1), dtype=self.dt))
            else:
                self.scr[k] = (self.dummy_x, self.dummy_x)
        return self.scr[k]

    def flush(self):
        prev, self.pending = self.pending, None
        if prev is not None:
            return self._finish(prev)
        return None

    def _finish(self, p):
        """Fold a finished launch.  Returns (rows, first bad row or None)."""
        k, r0, r1 = p
        self.streams[k].synchronize()
        nb = -(-(r1 - r0) // self.brows)
        self.acc.tree.push_blocks(self.mom_h[k], nb, (self.row0 + r0) // self.brows)
        nbad = int(self.bad_h[k][0])
        self.skipped += nbad
        return r1 - r0, (r0 + int(self.bad_h[k][1]) if nbad else None)

    def result(self, nrows):
        self.flush()
        cuda.synchronize()
        acc = self.acc
        acc.skipped = self.skipped
        acc.count = nrows - self.skipped
        acc.vmin = self.bmin.copy_to_host().min(axis=0)
        acc.vmax = self.bmax.copy_to_host().max(axis=0)
        acc.nonfinite = self.bnonf.copy_to_host().sum(axis=0)
        acc.below = self.bbelow.copy_to_host().sum(axis=0)[:, :self.nt].copy()
        hr = self.hrange.copy_to_host()
        for k in range(NOBS):
            lo, hi = int(hr[k, 0]), int(hr[k, 1])
            if hi >= lo:
                acc.sketch.add(k, self.hstart + lo, self.hist[k, lo:hi + 1].copy_to_host())
        ninf = self.hninf.copy_to_host()
        for j in np.flatnonzero(ninf):
            acc.sketch.add(int(j), I_NEGINF, ninf[j:j + 1].astype(np.int64))
        return acc


def _run_launches(L, nrows, chunk_source, labels, on_bad, progress):
    """Launch every chunk of rows; ``on_bad(first bad row)`` for a chunk with
    bad rows.  Returns the launcher's finished accumulator."""
    def handle(res):
        if res is None:
            return
        rows, firstbad = res
        if firstbad is not None:
            on_bad(firstbad)
        if progress is not None:
            progress.update(rows)

    for r0 in range(0, nrows, L.step):
        r1 = min(r0 + L.step, nrows)
        x, host = chunk_source(r0, r1)
        handle(L.launch(r0, r1, x=x, host=host,
                        labels=None if labels is None else labels[r0:r1]))
    handle(L.flush())
    return L.result(nrows)


def summarize_model(job, progress=None):
    """Rows [row0, row0 + samples) of a model's stream on the GPU."""
    g = job.gen
    thr = np.asarray(job.thresholds, dtype=np.float64).reshape(-1)
    t = job.target
    L = _Launcher(g.n, job.dtype, thr, True, gen=g.code, params=g.param_array(), seed=job.seed,
                  row0=job.row0, ymode=int(t.mode), yfix=int(t.index), q_len=g.scratch_len,
                  nrows=job.samples)

    def bad(r):
        raise generated_row_error(job.row0 + r)

    return _run_launches(L, job.samples, lambda r0, r1: (None, False), None, bad, progress)


def summarize_array(x, job, progress=None):
    """A host array (streamed to the device chunk by chunk) or a CUDA device
    array (read in place), as rows."""
    t = job.target
    labels = t.labels if t.mode == TARGET_LABELS else None
    if labels is not None and _is_device_array(labels):
        labels = _as_device(labels).copy_to_host()
    if _is_device_array(x):
        if not SIMULATOR:
            cuda.synchronize()   # work queued on other libraries' streams first
        src = _DeviceRows(x, job.axes)
        cdt, nrows, batch = src.cdt, src.rows, src.batch

        def chunk_source(r0, r1):
            return src.x2[r0:r1], False

        def row(r):
            return src.row_to_host(r)
    else:
        rows = Rows(x, job.axes, job.cdt)
        cdt, nrows, batch = job.cdt, rows.rows, rows.batch

        def chunk_source(r0, r1):
            return rows.chunk(r0, r1), True

        row = rows.row
    L = _Launcher(job.n, cdt, job.thresholds, False, ymode=int(t.mode), yfix=int(t.index),
                  nrows=nrows)

    def bad(r):
        if job.nan_policy == "raise":
            raise bad_row_error(row(r), r, batch)

    return _run_launches(L, nrows, chunk_source, labels, bad, progress)


def to_host(a):
    """A device array's contents as a NumPy array (labels, say)."""
    return _as_device(a).copy_to_host()


# --------------------------------------------------------------------------
# softmax of device arrays

def softmax(x, axes=-1, log=False):
    """softmax (log=False) or log_softmax of a CUDA device array along
    ``axes`` (an int, a tuple of ints or None), on the device.

    Returns a new C-contiguous device array of x's shape with the dtypes of
    ``fs.softmax``: float32/float64 kept, float16 computed in float32 and
    returned as float16, integers as float64.  CuPy / PyTorch input gives a
    CuPy array / PyTorch tensor (no copy), anything else a numba device
    array.  Rows with NaN, +inf or no finite logit give NaN, as on the CPU.
    """
    if not SIMULATOR and not isinstance(
            x, cuda.devicearray.DeviceNDArray):  # type: ignore[attr-defined]  # not in its stubs
        cuda.synchronize()   # work queued on other libraries' streams first
    dev = _as_device(x)
    if int(np.prod(dev.shape, dtype=np.int64)) == 0:   # as fs.softmax: empty in, empty out
        normalize_axis(axes, len(dev.shape))
        return _wrap_like(x, cuda.device_array(dev.shape, dtype=compute_dtype(dev.dtype)[1]))
    src = _DeviceRows(dev, axes)
    n, rows = src.n, src.rows
    out = cuda.device_array(src.shape, dtype=src.odt)
    # the output in the (rows, n) order of src.x2
    ostr = _c_strides(src.shape, src.odt.itemsize)
    odims_b = collapse([(src.shape[a], ostr[a]) for a in src.rest])
    odims_a = collapse([(src.shape[a], ostr[a]) for a in src.axes])
    if len(odims_b) <= 1 and len(odims_a) <= 1 and src.odt == src.cdt:
        sb = odims_b[0][1] if odims_b else n * src.cdt.itemsize
        sa = odims_a[0][1] if odims_a else src.cdt.itemsize
        out2 = _view(out, (rows, n), (sb, sa))
        scatter = None
    else:
        if len(odims_b) > 2 or len(odims_a) > 2:
            raise ValueError(f"softmax over axes {src.axes} of a {len(src.shape)}-d array "
                             "is not supported on the device; move the axes together first")
        out2 = cuda.device_array((rows, n), dtype=src.cdt)
        scatter = _pad2(odims_b) + _pad2(odims_a)
    tpb = _tpb()
    g = group_size(n, tpb)
    k = _kernels.get_kernel("softmax", tpb, g, bool(log))
    ng = tpb // g
    grid = max(1, min(_grid_cap(), -(-rows // ng)))
    with _quiet():
        k[grid, tpb](src.x2, out2, np.int64(n))
    if scatter is not None:
        shape4 = tuple(s for s, _ in scatter)
        isz = src.cdt.itemsize
        cs = (shape4[1] * shape4[2] * shape4[3] * isz, shape4[2] * shape4[3] * isz,
              shape4[3] * isz, isz)
        _launch_copy4(_view(out2, shape4, cs), _view(out, shape4, tuple(st for _, st in scatter)))
    return _wrap_like(x, out)


def _c_strides(shape, itemsize):
    st = []
    acc = itemsize
    for s in reversed(shape):
        st.append(acc)
        acc *= max(int(s), 1)
    return tuple(reversed(st))
