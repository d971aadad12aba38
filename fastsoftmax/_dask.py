r"""Dask backend: ``simulate(..., client=)`` and ``summarize(dask_array)``.

Two entry points, called from :mod:`fastsoftmax.api` after it has validated
the arguments:

* :func:`run_model` splits the rows of a Monte Carlo run into tasks whose
  boundaries are segment boundaries (multiples of ``SEGMENT_BLOCKS *
  block_rows(n)`` rows), runs the same CPU (or CUDA) kernels on the workers
  and hands back the integer parts of the accumulator and the ordered list of
  segment moments.  The caller folds the segments, so the Summary is bitwise
  identical to a local run, whatever the number of workers or tasks.
* :func:`summarize_array` summarises a ``dask.array`` chunk by chunk and
  reduces the per-chunk accumulators with a tree of merges; nothing
  proportional to the number of rows reaches the client.

Only small objects travel: an accumulator with its log-bucket sketch packed
sparsely (:class:`_Packed`) and, for ``run_model``, the segment moments
(``NCH * 3`` floats per ``SEGMENT_BLOCKS`` blocks of rows).

Threads: each task runs the numba kernels on **one** thread, since the
parallelism comes from Dask (one task per worker thread).  Start workers
with ``--nthreads`` equal to their cores (``dask worker``'s default).

:func:`connect` opens a ``distributed.Client`` and turns an unreachable
scheduler into a quick, clear ``ValueError``.
"""
import asyncio
import contextlib
import math
import threading
import weakref

import numpy as np

from . import _config, api
from ._math import TARGET_LABELS
from .accumulate import NCH, SEGMENT_BLOCKS, Accumulator, fold_segments, merge_parts_into
from .summary import Summary

__all__ = ["connect", "resolve_backend", "run_model", "summarize_array"]

# A few tasks per worker thread balances the load and bounds the work lost
# with a worker; a task is also at most TASK_LOGITS logits (a couple of
# seconds on one core) so that progress moves and retries stay cheap.
TASKS_PER_THREAD = 4
TASK_LOGITS = 1 << 28
# seconds run_model waits for a first worker to join an empty cluster
WAIT_WORKERS = 120
# fan-in of the tree that merges per-chunk accumulators in summarize_array
SPLIT_EVERY = 8


# --------------------------------------------------------------------------
# connecting

def connect(address, timeout="5s", **kwargs):
    """A ``distributed.Client`` connected to the scheduler at ``address``.

    An unreachable or malformed address raises ``ValueError`` naming it after
    at most ``timeout`` (instead of distributed's default 30 s).
    """
    if not isinstance(address, str) or not address.strip():
        raise ValueError(f"scheduler address must be a non-empty string such as "
                         f"'tcp://10.0.0.5:8786', got {address!r}")
    from distributed import Client
    try:
        return Client(address, timeout=timeout, **kwargs)
    except (OSError, TimeoutError, ValueError) as e:
        raise ValueError(f"cannot connect to the Dask scheduler at {address!r} "
                         f"(timeout {timeout}): {e}") from e


# --------------------------------------------------------------------------
# compact accumulators for the wire

class _Packed:
    """An Accumulator with its sketch stored sparsely (the dense sketch is
    NOBS * SKETCH_NB int64, megabytes, nearly all zeros)."""

    __slots__ = ("count", "skipped", "mom", "vmin", "vmax", "nonfinite", "thresholds",
                 "below", "hist_shape", "hist_idx", "hist_cnt")

    def __init__(self, acc):
        self.count = int(acc.count)
        self.skipped = int(acc.skipped)
        self.mom = acc.mom
        self.vmin = acc.vmin
        self.vmax = acc.vmax
        self.nonfinite = acc.nonfinite
        self.thresholds = acc.thresholds
        self.below = acc.below
        self.hist_shape = acc.hist.shape
        flat = acc.hist.reshape(-1)
        self.hist_idx = np.flatnonzero(flat)
        self.hist_cnt = flat[self.hist_idx]

    def add_ints_into(self, acc):
        """Add counts, threshold counts, sketch, min and max into ``acc`` in
        place (Accumulator.merge semantics); its moments are left alone."""
        if (acc.thresholds.shape != self.thresholds.shape
                or not np.array_equal(acc.thresholds, self.thresholds)
                or acc.hist.shape != self.hist_shape):
            raise ValueError("cannot merge accumulators with different thresholds")
        acc.count += self.count
        acc.skipped += self.skipped
        np.minimum(acc.vmin, self.vmin, out=acc.vmin)
        np.maximum(acc.vmax, self.vmax, out=acc.vmax)
        acc.nonfinite += self.nonfinite
        acc.below += self.below
        acc.hist.reshape(-1)[self.hist_idx] += self.hist_cnt

    def unpack(self):
        acc = Accumulator(self.thresholds)
        self.add_ints_into(acc)
        acc.mom = self.mom.copy()
        return acc

    @staticmethod
    def merge(parts):
        """``Accumulator.merge`` of packed accumulators left to right (Chan's
        formula for the moments), without unpacking the sketch."""
        first = parts[0]
        out = _Packed.__new__(_Packed)
        out.thresholds, out.hist_shape = first.thresholds, first.hist_shape
        out.count, out.skipped = first.count, first.skipped
        for name in ("mom", "vmin", "vmax", "nonfinite", "below"):
            setattr(out, name, getattr(first, name).copy())
        for p in parts[1:]:
            if (p.thresholds.shape != out.thresholds.shape
                    or not np.array_equal(p.thresholds, out.thresholds)
                    or p.hist_shape != out.hist_shape):
                raise ValueError("cannot merge accumulators with different thresholds")
            merge_parts_into(out, p)
        # sparse sketch: sum the counts of equal bucket indices
        idx = np.concatenate([p.hist_idx for p in parts])
        cnt = np.concatenate([p.hist_cnt for p in parts])
        order = np.argsort(idx, kind="stable")
        idx, cnt = idx[order], cnt[order]
        if idx.size:
            starts = np.flatnonzero(np.concatenate([[True], idx[1:] != idx[:-1]]))
            idx, cnt = idx[starts], np.add.reduceat(cnt, starts)
        out.hist_idx, out.hist_cnt = idx, cnt
        return out


@contextlib.contextmanager
def _one_thread():
    """numba kernels on one thread inside a Dask task (numba's thread count
    is per calling thread); restored afterwards."""
    import numba
    old = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        yield
    finally:
        numba.set_num_threads(old)


# --------------------------------------------------------------------------
# simulate on a cluster

def _run_piece(model, row0, nrows, seed, ymode, yfix, thr, dt, backend):
    """Worker side: rows [row0, row0 + nrows) of a model.  Returns the packed
    accumulator (no moments) and the segment moments as one (k, NCH, 3)
    array."""
    if backend == "cuda":
        from . import _cuda
        acc, segments = _cuda.run_model(model, nrows, seed, ymode, yfix, thr, dt,
                                        row0=row0, progress=None)
    else:
        with _one_thread():
            acc, segments = api.run_model_rows(model, row0, nrows, seed, ymode, yfix, thr, dt)
    segs = np.array(segments, dtype=np.float64).reshape(-1, NCH, 3)
    return _Packed(acc), segs


# worker side: (backend, dtype) pairs this process has compiled
_WARM_HERE = set()
_WARM_LOCK = threading.Lock()
# client side: client -> {(worker address, backend, dtype)}
_WARMED = weakref.WeakKeyDictionary()


def _warm(model, seed, ymode, yfix, thr, dt, backend):
    """Compile (or load from numba's cache) the kernels for this dtype and
    backend once per worker process, with the arguments of the real run."""
    key = (backend, np.dtype(dt).str)
    with _WARM_LOCK:
        if key in _WARM_HERE:
            return False
        _run_piece(model, 0, 1, seed, ymode, yfix, thr, dt, backend)
        _WARM_HERE.add(key)
    return True


async def _warm_async(*args):
    # client.run calls functions on the worker's event loop: compile in a
    # thread so that the worker keeps answering heartbeats meanwhile.
    return await asyncio.to_thread(_warm, *args)


def _warm_workers(client, addresses, model, seed, ymode, yfix, thr, dt, backend):
    key = (backend, np.dtype(dt).str)
    try:
        done = _WARMED.setdefault(client, set())
    except TypeError:                       # not weak-referenceable: no cache
        done = set()
    todo = [a for a in addresses if (a, key) not in done]
    if not todo:
        return
    # Failures are not errors here: a worker that dies meanwhile is replaced
    # and compiles on its first task, and a real problem (bad parameters, a
    # worker without fastsoftmax) fails the tasks with the task's own error.
    res = client.run(_warm_async, model, seed, ymode, yfix, thr, dt, backend,
                     workers=todo, on_error="return")
    done.update((addr, key) for addr, r in res.items() if not isinstance(r, BaseException))


def _wait_for_workers(client, timeout):
    """{worker address: threads}, waiting a while for a first worker (a
    cluster that is still starting) instead of queueing tasks forever."""
    nthreads = client.nthreads()
    if not nthreads:
        try:
            client.wait_for_workers(1, timeout=timeout)
        except TimeoutError:
            raise RuntimeError(f"no Dask worker joined the scheduler at "
                               f"{client.scheduler.address} within {timeout} s; start "
                               "some with `dask worker ADDRESS`") from None
        nthreads = client.nthreads()
    return nthreads


def _cuda_probe():
    from . import _cuda_guard
    return _cuda_guard.available(), _cuda_guard.reason()


def resolve_backend(client, backend):
    """'cpu' or 'cuda' as the *workers* see it ("auto": cuda when every worker
    has a usable GPU).  ``api.resolve_backend`` answers for the client's
    machine, which need not have the workers' GPUs."""
    if backend not in api.BACKENDS:
        raise ValueError(f"backend must be one of {api.BACKENDS}, got {backend!r}")
    if backend == "cpu":
        return "cpu"
    probes = client.run(_cuda_probe)
    bad = {a: why for a, (ok, why) in probes.items() if not ok}
    if backend == "cuda" and (bad or not probes):
        a, why = next(iter(bad.items()), ("(none)", "no workers"))
        raise RuntimeError(f"backend='cuda' is not usable on worker {a}: {why}")
    return "cuda" if probes and not bad else "cpu"


def _plan(samples, n, nthreads, segments_per_task=None):
    """Task row ranges [(row0, nrows)], every row0 a multiple of the segment
    size."""
    seg_rows = SEGMENT_BLOCKS * _config.block_rows(n)
    nseg = -(-samples // seg_rows)
    if segments_per_task is None:
        ntasks = max(TASKS_PER_THREAD * max(1, nthreads), -(-samples * n // TASK_LOGITS))
        segments_per_task = -(-nseg // min(nseg, ntasks))
    step = int(segments_per_task) * seg_rows
    return [(r0, min(step, samples - r0)) for r0 in range(0, samples, step)]


def run_model(client, model, samples, seed, ymode, yfix, thr, dt, backend="cpu",
              progress=None, segments_per_task=None):
    r"""Rows [0, samples) of ``model`` on the workers of ``client``.

    Returns ``(acc, segments)`` exactly like ``api.run_model_rows(model, 0,
    samples, ...)``: ``acc`` with complete integer parts, min and max and
    zero moments; ``segments`` the ordered segment moments to fold with
    ``fold_segments``.  Tasks start on segment boundaries, so the folded
    result is bit for bit that of one local pass.

    Each worker process compiles the kernels once (warmed before the first
    task); a worker lost mid-run has its tasks rerun by Dask with the same
    result.  ``progress`` (a tqdm bar or None) advances as tasks finish.
    """
    from distributed import as_completed

    nthreads = _wait_for_workers(client, WAIT_WORKERS)
    plan = _plan(samples, model.n, sum(nthreads.values()), segments_per_task)
    _warm_workers(client, list(nthreads), model, seed, ymode, yfix, thr, dt, backend)

    from dask.base import tokenize
    token = tokenize(model.name, model.params, samples, seed, ymode, yfix,
                     np.asarray(thr).tolist(), np.dtype(dt).str, backend, plan)
    futures = [client.submit(_run_piece, model, r0, nr, seed, ymode, yfix, thr, dt, backend,
                             key=f"fastsoftmax-rows-{token}-{i}", pure=True)
               for i, (r0, nr) in enumerate(plan)]
    index = {f.key: i for i, f in enumerate(futures)}
    results = [None] * len(plan)
    first_err = None                          # (task index, exception)
    try:
        for fut in as_completed(futures, loop=client.loop):
            i = index[fut.key]
            if fut.cancelled():
                continue
            try:
                results[i] = fut.result()
            except Exception as e:
                # report the error of the earliest failing piece (the row a
                # local run names first); later pieces are not needed
                if first_err is None or i < first_err[0]:
                    first_err = (i, e)
                    client.cancel(futures[i + 1:])
                continue
            if progress is not None:
                progress.update(plan[i][1])
    finally:
        if first_err is not None or any(r is None for r in results):
            client.cancel(futures)
    if first_err is not None:
        raise first_err[1]

    acc = Accumulator(thr)
    segments = []
    for packed, segs in results:
        packed.add_ints_into(acc)
        segments.extend(segs[k] for k in range(segs.shape[0]))
    return acc, segments


# --------------------------------------------------------------------------
# summarize a dask.array

class _Part:
    """A chunk's (or a subtree's) packed accumulator and the first bad label
    and first bad row seen, as (global flat row, detail) or None."""

    __slots__ = ("packed", "bad_label", "bad_row")

    def __init__(self, packed, bad_label=None, bad_row=None):
        self.packed = packed
        self.bad_label = bad_label
        self.bad_row = bad_row


def _first(a, b):
    if a is None:
        return b
    if b is None:
        return a
    return a if a[0] <= b[0] else b


def _global_row(r, bshape, offsets, batch):
    if not batch:
        return 0
    local = np.unravel_index(int(r), bshape)
    return int(np.ravel_multi_index(tuple(int(i) + o for i, o in zip(local, offsets)), batch))


def _first_bad_row(x2, cdt):
    """Index of the first row the kernels call bad (same row function)."""
    from . import _cpu
    from ._math import NOBS
    n = x2.shape[1]
    step = max(1, _config.CHUNK_LOGITS // n)
    dummy = np.zeros(1, dtype=np.int64)
    for r0 in range(0, x2.shape[0], step):
        r1 = min(r0 + step, x2.shape[0])
        status = np.zeros(r1 - r0, dtype=np.int8)
        vals = np.empty((2 * NOBS, r1 - r0))
        _cpu.observe_rows(api._chunk(x2, r0, r1, cdt), dummy, 0, 0, vals, status)
        bad = np.flatnonzero(status)
        if bad.size:
            return r0 + int(bad[0])
    return None


def _chunk_summary(block, labels, offsets, batch, axes, cdt, thr, ymode, yfix, nan_policy):
    """Worker side: the packed accumulator of one chunk (whole rows)."""
    block = np.asarray(block)
    x2, bshape, n = api._rows_view(block, axes)
    acc = Accumulator(thr)
    lab = None
    if ymode == TARGET_LABELS:
        flat = np.asarray(labels).reshape(-1)
        bad = np.flatnonzero((flat < 0) | (flat >= n))
        if bad.size:
            g = _global_row(bad[0], bshape, offsets, batch)
            return _Part(_Packed(acc), bad_label=(g, flat[bad[0]].item()))
        lab = np.ascontiguousarray(flat, dtype=np.int64)
    if x2.shape[0] == 0:
        return _Part(_Packed(acc))
    with _one_thread():
        acc, segments = api.run_rows(x2.shape[0], n, cdt, thr, x2=x2, ymode=ymode, yfix=yfix,
                                     labels=lab, nan_policy="omit")
        fold_segments(segments, out=acc.mom)
        bad_row = None
        r = _first_bad_row(x2, cdt) if acc.skipped and nan_policy == "raise" else None
        if r is not None:
            bad_row = (_global_row(r, bshape, offsets, batch), api._describe_bad_row(x2[r]))
    return _Part(_Packed(acc), bad_row=bad_row)


def _merge_parts(*parts):
    bad_label, bad_row = parts[0].bad_label, parts[0].bad_row
    for p in parts[1:]:
        bad_label = _first(bad_label, p.bad_label)
        bad_row = _first(bad_row, p.bad_row)
    return _Part(_Packed.merge([p.packed for p in parts]), bad_label, bad_row)


def summarize_array(x, target="argmax", axis=-1, thresholds=_config.DEFAULT_THRESHOLDS,
                    nan_policy="raise"):
    r"""Summary of a ``dask.array`` (see :func:`fastsoftmax.summarize`).

    Each chunk is summarised on a worker by the NumPy-path kernels (one
    thread per task) and the per-chunk accumulators are reduced with a tree
    of ``Accumulator.merge`` (fan-in ``SPLIT_EVERY``); only accumulators
    travel, nothing per row reaches the client.  The computation runs on the
    current Dask scheduler (a ``distributed.Client`` if one is the default).

    Chunks must hold whole rows: ``x`` is rechunked so that every softmax
    axis is a single chunk (``x.rechunk({ax: -1 for ax in axes})``), which
    moves data when ``x`` is chunked along a softmax axis; chunk along the
    other axes to avoid that.

    ``target`` labels may be a NumPy or a dask array with the batch shape (x
    without the softmax axes); they are aligned with x's chunks.  Integer
    parts, min and max equal a NumPy run exactly; moments merged by the tree
    equal it to rounding.  ``nan_policy="raise"``: ValueError naming the
    first bad row in global terms (and a bad label before a bad row, as the
    NumPy path checks labels first), raised after the graph has run.
    """
    import dask

    api._check_nan_policy(nan_policy)
    thr = api._check_thresholds(thresholds)
    if any(isinstance(c, float) and math.isnan(c) for cs in x.chunks for c in cs):
        raise ValueError("x has unknown chunk sizes; call x.compute_chunk_sizes() first")
    _, cdt, _ = api._as_float_array(np.empty(0, dtype=x.dtype))
    axes = api._normalize_axis(axis, x.ndim)
    api._check_nonempty(x, axes)
    rest = [a for a in range(x.ndim) if a not in axes]
    batch = tuple(int(x.shape[a]) for a in rest)
    n = int(np.prod([x.shape[a] for a in axes], dtype=np.int64))

    lab_dask = None
    if api._is_dask_array(target):
        labels = target
        if labels.dtype.kind not in "iu":
            raise TypeError(f"target labels must be integers, got dtype {labels.dtype}")
        if tuple(labels.shape) != batch:
            raise ValueError(f"target labels have shape {tuple(labels.shape)}; expected "
                             f"{batch} (the shape of x without the softmax axis)")
        ymode, yfix, lab_np = 2, 0, None
    else:
        ymode, yfix, lab_np = api._resolve_target(target, batch, n)
        if lab_np is not None:
            lab_np = lab_np.reshape(batch)

    x = x.rechunk({ax: -1 for ax in axes})
    batch_chunks = tuple(x.chunks[a] for a in rest)
    starts = [np.concatenate([[0], np.cumsum(c)]).astype(np.int64) for c in batch_chunks]
    if ymode == TARGET_LABELS and lab_np is None:
        lab_dask = labels.rechunk(batch_chunks).to_delayed(optimize_graph=True)

    blocks = x.to_delayed(optimize_graph=True)
    chunk_fn = dask.delayed(_chunk_summary, pure=True)
    parts = []
    for idx in np.ndindex(blocks.shape):
        bidx = tuple(idx[a] for a in rest)
        offsets = tuple(int(starts[k][i]) for k, i in enumerate(bidx))
        if lab_dask is not None:
            lab = lab_dask[bidx]
        elif lab_np is not None:
            sl = tuple(slice(int(starts[k][i]), int(starts[k][i + 1]))
                       for k, i in enumerate(bidx))
            lab = np.ascontiguousarray(lab_np[sl])
        else:
            lab = None
        parts.append(chunk_fn(blocks[idx], lab, offsets, batch, axes, cdt, thr, ymode, yfix,
                              nan_policy))
    merge = dask.delayed(_merge_parts, pure=True)
    while len(parts) > 1:           # an ordered tree, so reruns give the same bits
        parts = [merge(*parts[i:i + SPLIT_EVERY]) for i in range(0, len(parts), SPLIT_EVERY)]
    (part,) = dask.compute(parts[0])

    if part.bad_label is not None:
        g, value = part.bad_label
        raise ValueError(f"target label {value} in row {api._row_name(g, batch)} is out of "
                         f"range for {n} classes (0 <= label < {n})")
    if part.bad_row is not None and nan_policy == "raise":
        g, what = part.bad_row
        raise ValueError(f"row {api._row_name(g, batch)} of x {what}; "
                         "pass nan_policy='omit' to skip such rows")
    config = dict(source="array", shape=list(x.shape), dtype=str(x.dtype), axis=list(axes),
                  target=api._target_repr(target), nan_policy=nan_policy)
    return Summary(part.packed.unpack(), config)
