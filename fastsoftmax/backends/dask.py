r"""Dask executor: ``simulate(..., client=)``, ``summarize(dask_array)``, ``softmax(dask_array)``.

Dask is an executor, not a kernel backend: :class:`DaskExecutor` (from
:func:`backend`, options ``client`` and ``inner``) runs the ``inner``
backend ("cpu" or "cuda", an explicit attribute) on the workers, on the
blocks where they live.  It implements the contract of :mod:`.common`,
called from :mod:`fastsoftmax.api` after it has validated the arguments:

* ``summarize_model`` splits the rows of a Monte Carlo run into tasks that
  start on block boundaries (multiples of ``block_rows(n)`` rows), runs the
  same CPU (or CUDA) kernels on the workers and concatenates the pieces'
  accumulators in order (``Accumulator.concat``), so the Summary is bitwise
  identical to a local run, whatever the number of workers or tasks.
* ``summarize_array`` summarises a ``dask.array`` chunk by chunk and
  reduces the per-chunk accumulators with a tree of merges; nothing
  proportional to the number of rows reaches the client.
* ``softmax`` maps the inner backend's softmax over the blocks (a lazy dask
  array); ``to_host`` computes an array (labels of a host array, say).
  Per-row ``observables`` are not offered: absent from ``operations``.

Only small objects travel: accumulators, whose sketch holds only the
buckets touched and whose moment tree at most 64 nodes.  The workers run the CPU or CUDA backend
through :func:`fastsoftmax.backends.get_backend`, like any caller.

Threads: each task runs the numba kernels on **one** thread, since the
parallelism comes from Dask (one task per worker thread).  Start workers
with ``--nthreads`` equal to their cores (``dask worker``'s default).

:func:`connect` opens a ``distributed.Client`` and turns an unreachable
scheduler into a quick, clear ``ValueError``.
"""
import asyncio
import dataclasses
import threading
import weakref
from typing import Any

import numpy as np

from .. import _config
from .._util import numba_threads
from .._inputs import (TARGET_LABELS, BadRowError, bad_label_error, check_backend_name,
                       compute_dtype, first_bad_label, is_dask_array, row_name)
from ..accumulate import Accumulator
from . import get_backend, resolve
from .common import ArrayJob, ModelJob, unsupported

__all__ = ["connect", "resolve_backend", "backend", "DaskExecutor"]

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
# tasks

def _one_thread():
    """numba kernels on one thread inside a Dask task: the parallelism comes
    from Dask (one task per worker thread)."""
    return numba_threads(1)


# --------------------------------------------------------------------------
# simulate on a cluster

def _run_piece(job, backend):
    """Worker side: the accumulator of ``job``'s rows (small: its sketch
    holds only the buckets touched, its moment tree at most 64 nodes)."""
    if backend == "cuda":
        return get_backend("cuda").summarize_model(job)
    with _one_thread():
        return get_backend("cpu").summarize_model(job)


# worker side: (backend, dtype) pairs this process has compiled
_WARM_HERE: set[tuple[Any, ...]] = set()
_WARM_LOCK = threading.Lock()
# client side: client -> {(worker address, backend, dtype)}
_WARMED: weakref.WeakKeyDictionary[Any, set[tuple[Any, ...]]] = weakref.WeakKeyDictionary()


def _warm(job, backend):
    """Compile (or load from numba's cache) the kernels for this dtype and
    backend once per worker process, with the arguments of the real run."""
    key = (backend, np.dtype(job.dtype).str)
    with _WARM_LOCK:
        if key in _WARM_HERE:
            return False
        _run_piece(dataclasses.replace(job, samples=1, row0=0), backend)
        _WARM_HERE.add(key)
    return True


async def _warm_async(*args):
    # client.run calls functions on the worker's event loop: compile in a
    # thread so that the worker keeps answering heartbeats meanwhile.
    return await asyncio.to_thread(_warm, *args)


def _warm_workers(client, addresses, job, backend):
    key = (backend, np.dtype(job.dtype).str)
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
    res = client.run(_warm_async, job, backend, workers=todo, on_error="return")
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
    from . import cuda_status
    return cuda_status()


def workers_status(client):
    """(usable, why) for CUDA on *every* worker of ``client`` (the client's
    own machine need not have the workers' GPUs)."""
    probes = client.run(_cuda_probe)
    if not probes:
        return False, "no workers"
    bad = {a: why for a, (ok, why) in probes.items() if not ok}
    if bad:
        a, why = next(iter(bad.items()))
        return False, f"on worker {a}: {why}"
    return True, f"{len(probes)} workers with a GPU"


def resolve_backend(client, backend):
    """'cpu' or 'cuda' as the workers see it ("auto": cuda when every worker
    has a usable GPU)."""
    name = check_backend_name(backend)
    if name not in ("auto", "cpu", "cuda"):
        raise ValueError(f"the workers run a kernel backend: 'auto', 'cpu' or 'cuda', "
                         f"got backend={name!r}")
    return resolve(name, status=lambda: workers_status(client))


def _plan(samples, n, nthreads, blocks_per_task=None):
    """Task row ranges [(row0, nrows)], every row0 a multiple of the block
    size (where the moment trees of the pieces line up)."""
    brows = _config.block_rows(n)
    nblk = -(-samples // brows)
    if blocks_per_task is None:
        ntasks = max(TASKS_PER_THREAD * max(1, nthreads), -(-samples * n // TASK_LOGITS))
        blocks_per_task = -(-nblk // min(nblk, ntasks))
    step = int(blocks_per_task) * brows
    return [(r0, min(step, samples - r0)) for r0 in range(0, samples, step)]


def run_model(client, job, backend="cpu", progress=None, blocks_per_task=None):
    r"""The finished accumulator of ``job``'s rows, computed on the workers
    of ``client``: tasks start on block boundaries and their accumulators
    are concatenated in order, so the result is bit for bit that of one local
    pass.

    Each worker process compiles the kernels once (warmed before the first
    task); a worker lost mid-run has its tasks rerun by Dask with the same
    result.  ``progress`` (an object with ``update(rows)`` or None) advances
    as tasks finish.
    """
    from distributed import as_completed

    nthreads = _wait_for_workers(client, WAIT_WORKERS)
    plan = _plan(job.samples, job.gen.n, sum(nthreads.values()), blocks_per_task)
    _warm_workers(client, list(nthreads), job, backend)

    from dask.base import tokenize
    token = tokenize(job.gen, job.samples, job.seed, int(job.target.mode), job.target.index,
                     np.asarray(job.thresholds).tolist(), np.dtype(job.dtype).str, backend,
                     plan)
    futures = [client.submit(_run_piece,
                             dataclasses.replace(job, row0=job.row0 + r0, samples=nr),
                             backend, key=f"fastsoftmax-rows-{token}-{i}", pure=True)
               for i, (r0, nr) in enumerate(plan)]
    index = {f.key: i for i, f in enumerate(futures)}
    results: list[Any] = [None] * len(plan)
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
    acc = results[0]
    for piece in results[1:]:
        acc = acc.concat(piece)
    return acc


# --------------------------------------------------------------------------
# summarize a dask.array

class _Part:
    """A chunk's (or a subtree's) accumulator and the first bad label and
    first bad row seen, as (global flat row, detail) or None."""

    __slots__ = ("acc", "bad_label", "bad_row")

    def __init__(self, acc, bad_label=None, bad_row=None):
        self.acc = acc
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


def _chunk_summary(block, labels, offsets, job, inner="cpu"):
    """Worker side: the packed accumulator of one chunk (whole rows), by the
    ``inner`` backend."""
    from .._inputs import Target, batch_shape
    block = np.asarray(block)
    bshape, n = batch_shape(block.shape, job.axes)
    t = job.target
    if t.mode == TARGET_LABELS:
        flat = np.asarray(labels).reshape(-1)
        r = first_bad_label(flat, n)
        if r is not None:
            g = _global_row(r, bshape, offsets, job.batch)
            return _Part(Accumulator(job.thresholds), bad_label=(g, flat[r].item()))
        t = Target(t.mode, t.index, np.ascontiguousarray(flat, dtype=np.int64), t.spec)
    rows = int(np.prod(bshape, dtype=np.int64))
    if rows == 0:
        return _Part(Accumulator(job.thresholds))
    local = dataclasses.replace(job, shape=tuple(block.shape), batch=bshape, rows=rows,
                                target=t)
    try:
        with _one_thread():
            acc = get_backend(inner).summarize_array(block, local)
    except BadRowError as e:
        g = _global_row(e.row, bshape, offsets, job.batch)
        return _Part(Accumulator(job.thresholds), bad_row=(g, e.what))
    return _Part(acc)


def _merge_parts(*parts):
    bad_label, bad_row = parts[0].bad_label, parts[0].bad_row
    for p in parts[1:]:
        bad_label = _first(bad_label, p.bad_label)
        bad_row = _first(bad_row, p.bad_row)
    acc = parts[0].acc
    for p in parts[1:]:
        acc = acc.merge(p.acc)
    return _Part(acc, bad_label, bad_row)


def summarize_array(x, job, inner="cpu"):
    r"""The accumulator of a ``dask.array`` (see :func:`fastsoftmax.summarize`).

    Each chunk is summarised on a worker by the CPU backend (one thread per
    task) and the per-chunk accumulators are reduced with an ordered tree of
    ``Accumulator.merge`` (fan-in ``SPLIT_EVERY``); only accumulators travel,
    nothing per row reaches the client.  The computation runs on the current
    Dask scheduler (a ``distributed.Client`` if one is the default).

    Chunks must hold whole rows: ``x`` is rechunked so that every softmax
    axis is a single chunk (``x.rechunk({ax: -1 for ax in axes})``), which
    moves data when ``x`` is chunked along a softmax axis; chunk along the
    other axes to avoid that.

    ``job.target`` labels may be a NumPy or a dask array with the batch shape
    (x without the softmax axes); they are aligned with x's chunks.  Integer
    parts, min and max equal a NumPy run exactly; moments merged by the tree
    equal it to rounding.  ``nan_policy="raise"``: ValueError naming the
    first bad row in global terms (and a bad label before a bad row, as the
    NumPy path checks labels first), raised after the graph has run.
    """
    import dask

    axes, batch, n = job.axes, job.batch, job.n
    rest = [a for a in range(x.ndim) if a not in axes]
    t = job.target
    labels = t.labels if t.mode == TARGET_LABELS else None
    lab_dask = None
    x = x.rechunk({ax: -1 for ax in axes})
    batch_chunks = tuple(x.chunks[a] for a in rest)
    starts = [np.concatenate([[0], np.cumsum(c)]).astype(np.int64) for c in batch_chunks]
    lab_np = None
    if labels is not None:
        if is_dask_array(labels):
            lab_dask = labels.rechunk(batch_chunks).to_delayed(optimize_graph=True)
        else:
            lab_np = np.asarray(labels).reshape(batch)
    # the labels travel per chunk, not with every task's job
    wjob = dataclasses.replace(job, target=dataclasses.replace(t, labels=None))
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
        parts.append(chunk_fn(blocks[idx], lab, offsets, wjob, inner))
    merge = dask.delayed(_merge_parts, pure=True)
    while len(parts) > 1:           # an ordered tree, so reruns give the same bits
        parts = [merge(*parts[i:i + SPLIT_EVERY]) for i in range(0, len(parts), SPLIT_EVERY)]
    (part,) = dask.compute(parts[0])

    if part.bad_label is not None:
        g, value = part.bad_label
        raise bad_label_error(value, g, batch, n)
    if part.bad_row is not None:
        g, what = part.bad_row
        raise BadRowError(f"row {row_name(g, batch)} of x {what}; "
                          "pass nan_policy='omit' to skip such rows", g, what)
    return part.acc


def _block_softmax(block, axes, log, inner):
    """Worker side: the inner backend's softmax of one computed block (whole
    rows), on one thread."""
    with _one_thread():
        return np.asarray(get_backend(inner).softmax(np.asarray(block), axes, log))


class DaskExecutor:
    """The Dask executor: no kernels of its own; it runs the ``inner``
    backend on the blocks of a Dask computation (the contract of
    :class:`.common.Backend`).

    ``client`` is a ``distributed.Client`` (None for dask arrays, which run
    on the current scheduler); ``inner`` the name of the backend the
    workers run: "auto", "cpu" or "cuda", resolved on the workers with a
    client, the CPU backend for the chunks of a dask array.  It takes dask
    arrays; ``softmax`` maps the inner backend's softmax over the blocks
    (lazily); per-row ``observables`` are not offered (nothing per row
    reaches the client)."""
    name = "dask"
    takes = "dask arrays"
    description = "an executor: the cpu (or cuda) backend on the workers of a Dask scheduler"
    operations = frozenset({"summarize_array", "summarize_model", "softmax", "to_host"})

    def __init__(self, client: Any = None, inner: str = "cpu") -> None:
        self.client = client
        if client is not None:
            self.inner: str = resolve_backend(client, inner)
        elif check_backend_name(inner) == "cuda":
            raise ValueError("the chunks of a dask array are summarised by the CPU backend "
                             "on the workers; inner='cuda' needs a client (simulate)")
        else:
            self.inner = "cpu"

    def can_take(self, x: Any) -> bool:
        return is_dask_array(x)

    def array_info(self, x: Any) -> tuple[Any, tuple[int, ...], np.dtype]:
        if any(s != s for s in x.shape):
            raise ValueError("x has unknown chunk sizes; call x.compute_chunk_sizes() first")
        return x, tuple(int(s) for s in x.shape), np.dtype(x.dtype)

    def validate(self, job: ArrayJob | ModelJob, progress: Any) -> None:
        if isinstance(job, ArrayJob):
            if progress:
                raise ValueError("progress is not available for dask arrays: use Dask's own "
                                 "(dask.diagnostics.ProgressBar, distributed.progress)")
            return
        if self.client is None:
            raise ValueError("summarize_model runs on a cluster: give the executor a client")
        if job.chunk is not None:
            raise ValueError("chunk (rows per CPU kernel call) is not used by a Dask "
                             "client: leave it out")

    def summarize_model(self, job: ModelJob, progress: Any = None) -> Accumulator:
        return run_model(self.client, job, backend=self.inner, progress=progress)

    def summarize_array(self, x: Any, job: ArrayJob, progress: Any = None) -> Accumulator:
        return summarize_array(x, job, self.inner)

    def softmax(self, x: Any, axes: tuple, log: bool) -> Any:
        """A dask array: the inner backend's softmax of each block, with the
        softmax axes made one chunk each (``x.rechunk``)."""
        odt = compute_dtype(x.dtype)[1]
        x = x.rechunk({ax: -1 for ax in axes})
        return x.map_blocks(_block_softmax, axes, bool(log), self.inner, dtype=odt,
                            meta=np.empty((0,) * x.ndim, dtype=odt))

    def observables(self, x: Any, job: ArrayJob) -> np.ndarray:
        raise unsupported(self, "observables")

    def to_host(self, a: Any) -> np.ndarray:
        return np.asarray(a.compute())

    def status(self) -> tuple[bool, str]:
        import importlib.util
        if importlib.util.find_spec("dask") is None:
            return False, "dask is not installed; pip install 'fastsoftmax[dask]'"
        if self.client is None:
            return True, f"the current Dask scheduler, {self.inner} backend on the workers"
        return True, f"the scheduler of {self.client!r}, {self.inner} backend on the workers"

    def info(self) -> dict[str, Any]:
        ok, why = self.status()
        return {"dask": ("available: " if ok else "not available: ") + why}


def backend(client: Any = None, inner: str = "cpu") -> DaskExecutor:
    """The Dask executor over ``inner`` (see :class:`DaskExecutor`)."""
    return DaskExecutor(client, inner)
