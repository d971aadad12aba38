"""Dask backend on a loopback LocalCluster (2 single-threaded worker
processes): simulate(client=) is bit for bit a local run (several pieces,
every target, a worker killed mid-run), summarize(dask.array) equals the
NumPy path (ints exact, moments to rounding), bad input fails before any
work, an unreachable scheduler fails fast."""
import math
import os
import pickle
import time

import numpy as np

AxisError = getattr(np, "exceptions", np).AxisError   # numpy < 1.25 has only np.AxisError
import pytest

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")

import dask  # noqa: E402

import fastsoftmax as fs  # noqa: E402
from fastsoftmax import _config  # noqa: E402
from fastsoftmax._inputs import check_dtype, mc_target  # noqa: E402
from fastsoftmax.backends import dask as _dask  # noqa: E402
from fastsoftmax.backends import get_backend  # noqa: E402
from fastsoftmax.backends.common import ModelJob  # noqa: E402
from fastsoftmax.models import DotProduct, Gaussian  # noqa: E402


def mjob(model, samples, seed, target="argmax", dtype=np.float32, row0=0):
    return ModelJob(gen=model.gen_spec(), samples=samples, seed=seed,
                    target=mc_target(target, model.n), thresholds=ref_thr(),
                    dtype=check_dtype(dtype), row0=row0)


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=":0")  # None still binds :8787
    c = distributed.Client(cluster)
    try:
        yield c
    finally:
        c.close()               # the client first, then the cluster
        cluster.close()


PIECE_BLOCKS = 8            # blocks per piece in these tests (pieces start on blocks)


def seg_rows(n):
    return PIECE_BLOCKS * _config.block_rows(n)


def local(model, samples, **kw):
    return fs.simulate(model, samples, backend="cpu", **kw)


# --------------------------------------------------------------------------
# simulate

def test_plan_starts_on_block_boundaries():
    for samples, n, nth, bpt in [(1, 8, 2, None), (10**6, 8, 2, None), (10**8, 64, 2, None),
                                 (5 * seg_rows(64) + 3, 64, 1, 3), (seg_rows(8), 8, 16, None)]:
        plan = _dask._plan(samples, n, nth, bpt)
        assert sum(nr for _, nr in plan) == samples
        assert all(r0 % _config.block_rows(n) == 0 for r0, _ in plan)
        assert [r0 for r0, _ in plan] == sorted({r0 for r0, _ in plan})
        assert all(a[0] + a[1] == b[0] for a, b in zip(plan, plan[1:]))
    assert len(_dask._plan(10**8, 64, 2)) >= 8       # a few tasks per thread


SIM_CASES = [
    (Gaussian(n=8, scale=3.0), "argmax", "float32"),
    (Gaussian(n=8, scale=3.0), "random", "float32"),
    (Gaussian(n=8, scale=3.0), "sampled", "float32"),
    (DotProduct(n=8, d_k=64, scaled=False), "argmax", "float32"),
    (DotProduct(n=8, d_k=64, scaled=False), "sampled", "float32"),
    (DotProduct(n=8, d_k=64, scaled=True), 5, "float64"),
]


@pytest.mark.parametrize("model,target,dtype", SIM_CASES)
def test_simulate_is_bitwise_local(client, model, target, dtype):
    # 3 segments, the last partial (3 blocks and 57 rows)
    samples = 2 * seg_rows(model.n) + 3 * _config.block_rows(model.n) + 57
    a = fs.simulate(model, samples, seed=7, target=target, dtype=dtype, backend="cpu",
                    client=client)
    b = local(model, samples, seed=7, target=target, dtype=dtype)
    assert a.to_dict() == b.to_dict()
    assert a.samples == samples


def test_simulate_tasks_of_several_segments(client):
    """Any split on block boundaries folds to the same bits (pieces of 1, 3,
    8 and 22 blocks of a 40-block run, the last piece partial: the moment
    trees of the pieces join exactly)."""
    model = Gaussian(n=8, scale=5.0)
    samples = 5 * seg_rows(8) - 1
    ref = local(model, samples, seed=11, target="random")._acc.to_dict()
    for bpt in (1, 3, PIECE_BLOCKS, 22):
        acc = _dask.run_model(client, mjob(model, samples, 11, "random"),
                              blocks_per_task=bpt)
        assert acc.to_dict() == ref, bpt


def ref_thr():
    return np.asarray(_config.DEFAULT_THRESHOLDS, dtype=np.float64)


class Progress:
    def __init__(self):
        self.total = 0
        self.calls = 0

    def update(self, k):
        self.total += k
        self.calls += 1


def test_progress_and_warm_once(client):
    model = Gaussian(n=16)
    samples = 3 * seg_rows(16)
    bar = Progress()
    _dask.run_model(client, mjob(model, samples, 0, dtype=np.float64), progress=bar,
                    blocks_per_task=PIECE_BLOCKS)
    assert bar.total == samples and bar.calls == 3
    # every worker compiled float64 once, before its first task
    warm = client.run(lambda: sorted(_dask._WARM_HERE))
    assert all(("cpu", "<f8") in v for v in warm.values())
    assert {(a, ("cpu", "<f8")) for a in client.nthreads()} <= _dask._WARMED[client]


def test_cuda_backend_routes_to_cuda_backend(monkeypatch):
    """backend="cuda" pieces call the CUDA backend's summarize_model(job) on
    the worker, through the registry (the GPU path itself is tested in
    test_cuda.py)."""
    import fastsoftmax.backends as registry
    calls = []
    job = mjob(Gaussian(n=4), 10, 1, row0=seg_rows(4))
    ref_acc = get_backend("cpu").summarize_model(job)

    class Fake:
        def summarize_model(self, j, progress=None):
            calls.append((j, progress))
            return ref_acc.copy()

    real = registry.get_backend
    monkeypatch.setattr(_dask, "get_backend",
                        lambda name, **kw: Fake() if name == "cuda" else real(name, **kw))
    acc = _dask._run_piece(job, "cuda")
    assert calls == [(job, None)]
    assert acc == ref_acc and acc.tree.block0 == ref_acc.tree.block0


def test_backend_resolved_on_the_workers(client):
    from fastsoftmax.backends import cuda_status
    if any(ok for ok, _ in client.run(cuda_status).values()):
        pytest.skip("workers have a GPU")
    assert _dask.resolve_backend(client, "auto") == "cpu"
    assert _dask.resolve_backend(client, "cpu") == "cpu"
    with pytest.raises(RuntimeError, match="backend='cuda' is not usable on worker tcp://"):
        _dask.resolve_backend(client, "cuda")
    with pytest.raises(ValueError, match="backend must be one of"):
        _dask.resolve_backend(client, "gpu")


def test_no_workers_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(_dask, "WAIT_WORKERS", 0.5)
    with distributed.LocalCluster(n_workers=0, processes=False, dashboard_address=":0") as cl:
        with distributed.Client(cl, set_as_default=False) as c:
            with pytest.raises(RuntimeError, match="no Dask worker joined"):
                fs.simulate(Gaussian(n=4), 100, backend="cpu", client=c)


def test_generated_overflow_names_first_row_like_local(client):
    model = Gaussian(n=8, scale=1e38)                  # float32 overflows for |z| > 3.4
    samples = 3 * seg_rows(8)
    with pytest.raises(FloatingPointError) as local_err:
        local(model, samples)
    with pytest.raises(FloatingPointError) as dask_err:
        fs.simulate(model, samples, backend="cpu", client=client)
    assert str(dask_err.value) == str(local_err.value)


def test_worker_killed_mid_run_same_result(client):
    """os._exit on a busy worker after the first task finished: the nanny
    restarts it, Dask reruns its lost tasks, the bits do not change."""
    model = Gaussian(n=1024, scale=2.0)
    # tasks of 128 blocks (8M logits, a tenth of a second or more): long
    # enough that the other worker is busy when the first ends; 12 tasks
    # leave work queued behind it, so its lost task has to be rerun
    blocks = 128
    tasks = 12
    samples = (tasks - 1) * blocks * _config.block_rows(1024) + 77
    killed = []

    class KillOnce(Progress):
        def update(self, k):
            super().update(k)
            if killed:
                return
            busy = [a for a, keys in client.processing().items() if keys]
            if busy:
                client.run(os._exit, 1, workers=busy[:1], on_error="ignore")
                killed.append((busy[0], self.calls))

    bar = KillOnce()
    acc = _dask.run_model(client, mjob(model, samples, 5, "random"), progress=bar,
                          blocks_per_task=blocks)
    assert killed and killed[0][1] < tasks             # killed while tasks were left
    assert bar.total == samples
    ref = local(model, samples, seed=5, target="random")
    assert acc.to_dict() == ref._acc.to_dict()
    client.wait_for_workers(2, timeout=60)             # the nanny brought it back
    assert killed[0][0] not in client.nthreads()


# --------------------------------------------------------------------------
# summarize a dask.array

def make_x(shape=(3000, 17), seed=0, dtype=np.float64):
    x = np.random.default_rng(seed).normal(size=shape) * 6
    x.reshape(-1, shape[-1])[::7, 0] = -np.inf         # masks
    return x.astype(dtype)


def assert_same_summary(sd, sn):
    a, b = sd.to_dict(), sn.to_dict()
    assert a["config"] == b["config"]
    ma = np.array(a["accumulator"].pop("moments"), dtype=float)
    mb = np.array(b["accumulator"].pop("moments"), dtype=float)
    assert a["accumulator"] == b["accumulator"]        # counts, min, max, thresholds, sketch
    assert np.array_equal(ma[:, 0], mb[:, 0])
    np.testing.assert_allclose(ma, mb, rtol=1e-12, atol=0)


@pytest.mark.parametrize("rows,chunks", [(3000, (700, -1)), (3000, (700, 5)), (60, (1, -1)),
                                         (3000, (3000, 4))],
                         ids=["rows", "rows+softmax-axis", "one-row", "softmax-axis"])
def test_summarize_matches_numpy(client, rows, chunks):
    x = make_x(shape=(rows, 17))
    s = fs.summarize(da.from_array(x, chunks=chunks))
    assert_same_summary(s, fs.summarize(x))


def test_accumulators_travel_small():
    """What a task ships back: the accumulator, whose sketch holds only the
    buckets touched, not a dense array over every bucket of the range."""
    x = make_x(shape=(2000, 9))
    acc = fs.summarize(x)._acc
    assert len(pickle.dumps(acc)) < 100_000
    assert pickle.loads(pickle.dumps(acc)) == acc


@pytest.mark.parametrize("dt", [np.float32, np.float16, np.int64])
def test_summarize_dtypes(client, dt):
    x = make_x(shape=(900, 6), dtype=np.float64)
    x = np.nan_to_num(x, neginf=-5).astype(dt)
    assert_same_summary(fs.summarize(da.from_array(x, chunks=(250, 6)), target=2),
                        fs.summarize(x, target=2))


def test_summarize_axes_and_labels(client):
    # softmax over axes (1, 3): n = 15; the chunks split the softmax axis 1
    # and both batch axes unevenly, the labels' chunks fall across x's
    x = make_x(shape=(20, 5, 15, 3))
    labels = np.random.default_rng(2).integers(0, 15, size=(20, 15))
    xd = da.from_array(x, chunks=(9, 2, 6, 3))
    for target in [labels, da.from_array(labels, chunks=(13, 11)), "argmax", 14]:
        s = fs.summarize(xd, target=target, axis=(1, 3), thresholds=(1e-2, 1e-5))
        assert_same_summary(s, fs.summarize(x, target=target if not hasattr(target, "compute")
                                            else labels, axis=(1, 3), thresholds=(1e-2, 1e-5)))
    # axis=0, and a 1-D vector (no batch axes)
    assert_same_summary(fs.summarize(xd, axis=0), fs.summarize(x, axis=0))
    v = x[:, 1, 1, 1]
    assert_same_summary(fs.summarize(da.from_array(v, chunks=7)), fs.summarize(v))


def test_summarize_threaded_scheduler_without_client(client):
    x = make_x(shape=(500, 9))
    with dask.config.set(scheduler="threads"):
        s = fs.summarize(da.from_array(x, chunks=(120, 9)))
    assert_same_summary(s, fs.summarize(x))


def with_bad_rows():
    x = make_x(shape=(60, 50, 8))
    x[41, 7, 2] = np.nan
    x[13, 44, :] = -np.inf                             # first bad row in global order
    x[52, 0, 5] = np.inf
    return x


def test_summarize_raise_names_first_bad_row_globally(client):
    x = with_bad_rows()
    xd = da.from_array(x, chunks=(20, 25, 8))          # the bad rows sit in different chunks
    with pytest.raises(ValueError) as ref:
        fs.summarize(x)
    with pytest.raises(ValueError) as got:
        fs.summarize(xd)
    assert str(got.value) == str(ref.value)
    assert "(13, 44)" in str(got.value)
    # omit: skipped and counted
    assert_same_summary(fs.summarize(xd, nan_policy="omit"), fs.summarize(x, nan_policy="omit"))
    assert fs.summarize(xd, nan_policy="omit").skipped == 3


def test_summarize_bad_dask_labels_named_like_numpy(client):
    x = make_x(shape=(300, 6))
    labels = np.random.default_rng(0).integers(0, 6, size=300)
    labels[[250, 123]] = [-1, 6]
    with pytest.raises(ValueError) as ref:
        fs.summarize(x, target=labels)
    with pytest.raises(ValueError) as got:
        fs.summarize(da.from_array(x, chunks=(50, 6)), target=da.from_array(labels, chunks=40))
    assert str(got.value) == str(ref.value)
    assert "row 123" in str(got.value)


def _boom(b):
    raise RuntimeError("work was started")


@pytest.mark.parametrize("kw,x_dtype,err", [
    (dict(axis=2), np.float64, AxisError),
    (dict(axis=(0, 0)), np.float64, ValueError),
    (dict(target="random"), np.float64, ValueError),
    (dict(target=9), np.float64, ValueError),
    (dict(target=np.zeros(7, dtype=np.int64)), np.float64, ValueError),
    (dict(target=np.zeros(40, dtype=np.float64)), np.float64, TypeError),
    (dict(nan_policy="ignore"), np.float64, ValueError),
    (dict(thresholds=(-1.0,)), np.float64, ValueError),
    (dict(), np.complex128, TypeError),
    (dict(), object, TypeError),
])
def test_bad_input_same_errors_before_work(client, kw, x_dtype, err):
    x = np.zeros((40, 6), dtype=x_dtype)
    xd = da.from_array(x, chunks=(10, 6)).map_blocks(_boom, dtype=x_dtype)
    with pytest.raises(err) as ref:
        fs.summarize(x, **kw)
    with pytest.raises(err) as got:
        fs.summarize(xd, **kw)
    assert str(got.value) == str(ref.value)


def test_bad_dask_labels_metadata_before_work(client):
    xd = da.from_array(np.zeros((40, 6)), chunks=(10, 6)).map_blocks(_boom, dtype=float)
    with pytest.raises(ValueError, match=r"shape \(39,\); expected \(40,\)"):
        fs.summarize(xd, target=da.zeros(39, dtype=int, chunks=10))
    with pytest.raises(TypeError, match="must be integers"):
        fs.summarize(xd, target=da.zeros(40, chunks=10))
    with pytest.raises(ValueError, match="empty"):
        fs.summarize(da.zeros((0, 6), chunks=(5, 6)))
    keep = da.from_array(np.arange(40) % 3 == 0, chunks=10)
    with pytest.raises(ValueError, match="compute_chunk_sizes"):
        fs.summarize(xd[keep])                         # unknown chunk sizes


# --------------------------------------------------------------------------
# connecting

@pytest.mark.parametrize("address", ["tcp://127.0.0.1:1", "tcp://256.1.1.1:8786"])
def test_bad_scheduler_address_fails_fast(address):
    t0 = time.perf_counter()
    with pytest.raises(ValueError, match="cannot connect to the Dask scheduler at") as e:
        _dask.connect(address, timeout="1s")
    assert address in str(e.value)
    assert time.perf_counter() - t0 < 15


def test_connect_rejects_non_address():
    with pytest.raises(ValueError, match="non-empty string"):
        _dask.connect(None)


def test_connect_to_running_scheduler(client):
    c = _dask.connect(client.scheduler.address, timeout="5s", set_as_default=False)
    try:
        assert c.nthreads() == client.nthreads()
        assert math.isfinite(fs.simulate(Gaussian(n=4), 1000, backend="cpu",
                                          client=c)["entropy"].mean)
    finally:
        c.close()


# --------------------------------------------------------------------------
# arguments the Dask paths cannot honour raise

def test_dask_array_refuses_progress_and_backend():
    x = da.zeros((10, 4), chunks=(5, 4))
    with pytest.raises(ValueError, match="progress is not available for dask arrays"):
        fs.summarize(x, progress=True)
    with pytest.raises(ValueError, match="dask array"):
        fs.summarize(x, backend="cuda")


def test_chunk_refused_where_unused(client):
    with pytest.raises(ValueError, match="chunk .* not used by a Dask client"):
        fs.simulate(Gaussian(n=4), 100, chunk=64, backend="cpu", client=client)


def test_observables_refuses_device_and_dask_arrays():
    with pytest.raises(TypeError, match="host memory"):
        fs.observables(da.zeros((4, 3), chunks=2))


def test_dask_chunks_run_under_the_guard(monkeypatch):
    """One threading guard for every parallel call, Dask's chunks included."""
    from fastsoftmax.backends import cpu
    entered = []
    real = cpu.guard

    def counting():
        entered.append(1)
        return real()

    monkeypatch.setattr(cpu, "guard", counting)
    x = np.zeros((40, 6))
    x[33, 1] = np.nan
    with dask.config.set(scheduler="synchronous"):
        with pytest.raises(ValueError, match="row 33 of x contains NaN"):
            fs.summarize(da.from_array(x, chunks=(10, 6)))
    assert len(entered) >= 4          # every chunk, the bad one included, went through it
