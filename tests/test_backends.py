"""The backend contract (fastsoftmax/backends/common.py) and the api's one
dispatch: every registered backend implements every method of the
protocol; the api reaches a backend only through those names (a fake
backend that refuses any other attribute sees every call); ``can_take``
routes each kind of input (NumPy -> cpu, device arrays -> cuda, dask arrays
-> the Dask executor) and anything else is a TypeError naming its type and
every backend; the Dask executor runs its ``inner`` backend; ``Prepared``
holds the backend, the job and its inputs."""
import ast
import dataclasses
import inspect
import os

import numpy as np
import pytest

import fastsoftmax as fs
from fastsoftmax import api, backends
from fastsoftmax.backends.common import (OPERATIONS, ArrayJob, Backend, ModelJob,
                                         UnsupportedOperation)
from fastsoftmax.models import Gaussian

# the names of the protocol: its methods and its attributes
PROTOCOL = ({n for n, v in vars(Backend).items() if not n.startswith("_") and callable(v)}
            | set(Backend.__annotations__))


def _acc(s):
    return s.to_dict()["accumulator"]


def _x(rows=200, n=7, seed=0, dtype=np.float64):
    return (np.random.default_rng(seed).normal(size=(rows, n)) * 5).astype(dtype)


class _CAI:
    """Something with ``__cuda_array_interface__`` (a device array, for
    routing only: no GPU reads it here)."""

    def __init__(self, shape=(3, 4)):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": "<f4", "data": (0, False),
                                         "version": 3, "strides": None}


# --------------------------------------------------------------------------
# every registered backend implements the whole contract

def test_protocol_lists_every_operation():
    assert set(OPERATIONS) <= PROTOCOL
    assert {"can_take", "array_info", "validate", "status", "info", "name", "takes",
            "description", "operations", "inner"} <= PROTOCOL
    for name in PROTOCOL - set(Backend.__annotations__):
        doc = inspect.getdoc(getattr(Backend, name))
        assert doc and "Returns" in doc or name == "validate", name


@pytest.mark.parametrize("name", backends.NAMES)
def test_every_backend_implements_the_protocol(name):
    be = backends.default(name)
    assert isinstance(be, Backend)
    for attr in PROTOCOL:
        assert hasattr(be, attr), (name, attr)
    assert be.name == name
    assert be.operations <= set(OPERATIONS) and be.operations
    assert isinstance(be.takes, str) and isinstance(be.description, str)
    assert be.inner is None or be.inner in ("cpu", "cuda")
    ok, why = be.status()
    assert isinstance(ok, bool) and isinstance(why, str)
    assert isinstance(be.info(), dict)
    # what it does not advertise it refuses by the contract's error
    for op in set(OPERATIONS) - be.operations:
        with pytest.raises(UnsupportedOperation, match=f"{name} backend does not run {op}"):
            getattr(be, op)(np.zeros((2, 3)), None)


def test_what_each_backend_advertises():
    cpu, cuda, dask = (backends.default(n) for n in ("cpu", "cuda", "dask"))
    assert cpu.operations == set(OPERATIONS)
    assert "observables" not in cuda.operations and "observables" not in dask.operations
    assert "softmax" in dask.operations                  # delegated to its inner backend
    assert cpu.inner is None and cuda.inner is None and dask.inner == "cpu"


# --------------------------------------------------------------------------
# can_take routes each kind of input

def test_routing_by_can_take(tmp_path):
    np.save(tmp_path / "x.npy", _x(10, 3))
    mm = np.load(tmp_path / "x.npy", mmap_mode="r")
    for x in (_x(4, 3), mm, [[1.0, 2.0]], 3.0, np.float32(1), (1, 2)):
        assert backends.take(x) == "cpu", type(x)
    assert backends.take(_CAI()) == "cuda"
    da = pytest.importorskip("dask.array")
    assert backends.take(da.zeros((4, 3), chunks=2)) == "dask"


def test_torch_cpu_tensor_goes_to_the_cpu():
    torch = pytest.importorskip("torch")
    t = torch.linspace(-3, 3, 12, dtype=torch.float64).reshape(3, 4)
    assert backends.take(t) == "cpu"
    np.testing.assert_array_equal(fs.softmax(t), fs.softmax(t.numpy()))


@pytest.mark.parametrize("bad", ["logits", b"xy", object(), {1: 2.0}, {1.0, 2.0}, None])
def test_an_input_no_backend_takes_is_a_clear_type_error(bad):
    name = type(bad).__qualname__
    for f in (fs.softmax, fs.observables, fs.summarize):
        with pytest.raises(TypeError, match=rf"x of type {name} is not an input any backend "
                                            r"takes \(cpu: .*; cuda: .*; dask: dask arrays\)"):
            f(bad)


def test_a_list_of_strings_is_taken_and_refused_by_dtype():
    with pytest.raises(TypeError, match="real numeric array, got dtype <U"):
        fs.softmax(["a", "b"])
    with pytest.raises(TypeError, match="real numeric array"):
        fs.summarize([["a", "b"]])


def test_named_backend_must_take_the_input():
    # no GPU is needed to refuse these: the dispatch decides before any device
    with pytest.raises(ValueError, match=r"backend='cpu' cannot take x, a .*_CAI: the cuda "
                                         r"backend takes it"):
        fs.summarize(_CAI(), backend="cpu")
    with pytest.raises(TypeError, match="host memory.*cuda backend.*does not run observables"):
        fs.observables(_CAI())
    with pytest.raises(ValueError, match="backend must be one of"):
        fs.summarize(_x(), backend="gpu")


def test_device_input_without_a_gpu_says_why():
    ok, why = backends.cuda_status()
    if ok:
        pytest.skip(f"a GPU is usable here ({why})")
    for f in (lambda: fs.softmax(_CAI()), lambda: fs.summarize(_CAI())):
        with pytest.raises(RuntimeError, match="backend='cuda' is not usable: "):
            f()


def test_cuda_object_exists_without_a_gpu():
    be = backends.default("cuda")                        # never raises
    ok, why = be.status()
    assert be.info()["cuda"].startswith("available" if ok else "not available: ")
    if not ok:
        with pytest.raises(RuntimeError, match="backend='cuda' is not usable: "):
            backends.get_backend("cuda")


# --------------------------------------------------------------------------
# the api calls backends through the protocol only

class Tagged:
    """An array kind only the fake backend takes."""

    def __init__(self, a):
        self.a = np.asarray(a)


class Recorder:
    """A backend over the CPU backend that records every call and refuses
    any attribute outside the protocol."""
    name = "fake"
    takes = "Tagged arrays"
    description = "the CPU backend, recorded"
    inner = None

    def __init__(self, operations=frozenset(OPERATIONS), usable=True):
        object.__setattr__(self, "calls", [])
        object.__setattr__(self, "operations", operations)
        object.__setattr__(self, "_usable", usable)

    def __getattribute__(self, name):
        if not name.startswith("_") and name != "calls":
            assert name in PROTOCOL, f"api used {name!r}, which is not on the protocol"
        return object.__getattribute__(self, name)

    def _cpu(self):
        return backends.get_backend("cpu")

    def _rec(self, name):
        self.calls.append(name)

    def can_take(self, x):
        return isinstance(x, Tagged)

    def array_info(self, x):
        self._rec("array_info")
        return x.a, x.a.shape, x.a.dtype

    def validate(self, job, progress):
        self._rec("validate")

    def summarize_array(self, x, job, progress=None):
        self._rec("summarize_array")
        return self._cpu().summarize_array(x, job, progress)

    def summarize_model(self, job, progress=None):
        self._rec("summarize_model")
        return self._cpu().summarize_model(job, progress)

    def softmax(self, x, axes, log):
        self._rec("softmax")
        return self._cpu().softmax(x, axes, log)

    def observables(self, x, job):
        self._rec("observables")
        return self._cpu().observables(x, job)

    def to_host(self, a):
        self._rec("to_host")
        return a.a

    def status(self):
        return (True, "here") if self._usable else (False, "it is a test")

    def info(self):
        return {"fake": "recorded"}


@pytest.fixture
def fake():
    rec = Recorder()
    backends.register("fake", lambda **kw: rec)
    try:
        yield rec
    finally:
        backends.unregister("fake")


def test_the_fake_is_a_backend(fake):
    assert isinstance(fake, Backend)
    assert backends.names()[-1] == "fake" and backends.take(Tagged([1.0])) == "fake"
    assert backends.info()["fake"] == {"fake": "recorded"}


def test_api_reaches_the_fake_through_the_protocol(fake):
    x = _x(300, 6)
    labels = np.random.default_rng(1).integers(0, 6, size=300)
    assert _acc(fs.summarize(Tagged(x))) == _acc(fs.summarize(x))
    assert fake.calls == ["array_info", "validate", "summarize_array"]
    del fake.calls[:]
    np.testing.assert_array_equal(fs.softmax(Tagged(x)), fs.softmax(x))
    np.testing.assert_array_equal(fs.log_softmax(Tagged(x), axis=0), fs.log_softmax(x, axis=0))
    assert fake.calls == ["array_info", "softmax"] * 2
    del fake.calls[:]
    got = fs.observables(Tagged(x), target=labels)
    want = fs.observables(x, target=labels)
    assert got.keys() == want.keys()
    for k in want:
        np.testing.assert_array_equal(got[k], want[k])
    assert fake.calls == ["array_info", "observables"]
    del fake.calls[:]
    # labels of the fake's kind go to host memory through its to_host
    s = fs.summarize(x, target=Tagged(labels))
    assert fake.calls == ["to_host"]
    assert _acc(s) == _acc(fs.summarize(x, target=labels))


def test_the_fake_refused_where_it_cannot(fake):
    with pytest.raises(ValueError, match=r"backend='cpu' cannot take x, a .*Tagged: the fake "
                                         r"backend takes it \(Tagged arrays\)"):
        fs.summarize(Tagged(_x()), backend="cpu")
    object.__setattr__(fake, "operations", frozenset({"summarize_array"}))
    with pytest.raises(TypeError, match="fake backend, which takes x .*does not run softmax"):
        fs.softmax(Tagged(_x()))
    object.__setattr__(fake, "_usable", False)
    with pytest.raises(RuntimeError, match="backend='fake' is not usable: it is a test"):
        fs.summarize(Tagged(_x()))
    assert fake.calls == []                              # refused before any work


def test_backend_by_name_accepts_every_registered_backend(fake):
    """``backend=`` takes every registered name (the registry is the one list
    of names), so a registered backend is reached by name as well as by input."""
    from fastsoftmax._inputs import check_backend_name
    from fastsoftmax.registries import backend_names
    assert backend_names()[-1] == "fake" and backends.names() == backend_names()
    assert check_backend_name("fake") == "fake" and check_backend_name("dask") == "dask"
    assert backends.resolve("fake") == "fake"
    x = _x(300, 6)
    assert _acc(fs.summarize(Tagged(x), backend="fake")) == _acc(fs.summarize(x))
    assert fake.calls == ["array_info", "validate", "summarize_array"]


def test_unregistered_names_are_refused_with_the_registered_list(fake):
    with pytest.raises(ValueError, match=r"backend must be one of \('auto', 'cpu', 'cuda', "
                                         r"'dask', 'fake'\), got 'gpu'"):
        fs.summarize(_x(), backend="gpu")
    backends.unregister("fake")
    try:
        with pytest.raises(ValueError, match="backend must be one of.*got 'fake'"):
            fs.summarize(_x(), backend="fake")
    finally:
        backends.register("fake", lambda **kw: fake)
    for bad in ("", "auto", None):
        with pytest.raises(ValueError, match="a backend's name is a non-empty string"):
            backends.register(bad, Recorder)


def test_registry_errors():
    with pytest.raises(ValueError, match="already registered"):
        backends.register("cpu", Recorder)
    with pytest.raises(ValueError, match="was not registered"):
        backends.unregister("cpu")
    with pytest.raises(ValueError, match="unknown backend 'gpu'"):
        backends.get_backend("gpu")


def test_api_source_uses_no_reflection_on_backends():
    """No ``getattr``/``hasattr`` around the protocol and no backend module
    imported by name: api knows backends through the registry and the
    contract only."""
    src = inspect.getsource(api)
    tree = ast.parse(src)
    calls = {n.func.id for n in ast.walk(tree)
             if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    assert not {"getattr", "hasattr"} & calls
    mods = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert not {m for m in mods if m and m.startswith("backends.")} - {"backends.common"}


# --------------------------------------------------------------------------
# Prepared holds the backend, the job and its inputs

def test_prepared_fields():
    fields = [f.name for f in dataclasses.fields(api.Prepared)]
    assert fields == ["backend", "job", "config", "x", "progress"]
    x = _x(50, 4)
    p = api.prepare_summarize(x, target=1)
    assert p.backend is backends.get_backend("cpu") and isinstance(p.job, ArrayJob)
    assert p.x is x and p.job.rows == p.rows == 50 and p.progress is False
    assert _acc(p.run()) == _acc(fs.summarize(x, target=1))
    q = api.prepare_simulate(Gaussian(n=4), 100, seed=3, backend="cpu")
    assert isinstance(q.job, ModelJob) and q.x is None and q.rows == 100
    assert q.config["backend"] == "cpu"
    assert _acc(q.run()) == _acc(fs.simulate(Gaussian(n=4), 100, seed=3, backend="cpu"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.job = q.job                                    # type: ignore[misc]


def test_runtime_info():
    info = backends.info()
    assert set(info) == set(backends.names())
    assert info["cpu"]["threading layer"] == api.threading_layer()
    assert info["cpu"]["threads"] >= 1


# --------------------------------------------------------------------------
# Dask: an executor over an inner backend

def test_dask_executor_runs_its_inner_backend():
    pytest.importorskip("dask.array")
    from fastsoftmax.backends.dask import DaskExecutor
    ex = backends.get_backend("dask")
    assert isinstance(ex, DaskExecutor) and ex.inner == "cpu" and ex.client is None
    with pytest.raises(ValueError, match="inner='cuda' needs a client"):
        DaskExecutor(inner="cuda")
    with pytest.raises(UnsupportedOperation, match="dask backend does not run observables"):
        ex.observables(None, None)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16])
@pytest.mark.parametrize("axis", [-1, 0, (0, 2)])
def test_softmax_of_a_dask_array_is_the_inner_softmax_of_its_blocks(dtype, axis):
    dask = pytest.importorskip("dask")
    da = pytest.importorskip("dask.array")
    x = (np.random.default_rng(5).normal(size=(30, 4, 9)) * 6).astype(dtype)
    x[3, 1, 2] = -np.inf
    xd = da.from_array(x, chunks=(7, 2, 4))            # split along every axis
    for f in (fs.softmax, fs.log_softmax):
        got = f(xd, axis=axis)
        assert isinstance(got, da.Array) and got.dtype == f(x, axis=axis).dtype
        with dask.config.set(scheduler="synchronous"):
            np.testing.assert_array_equal(got.compute(), f(x, axis=axis))


def test_dask_labels_stay_lazy_and_host_labels_of_dask_are_computed():
    dask = pytest.importorskip("dask")
    da = pytest.importorskip("dask.array")
    x = _x(60, 5)
    y = np.random.default_rng(2).integers(0, 5, size=60)
    with dask.config.set(scheduler="synchronous"):
        p = api.prepare_summarize(da.from_array(x, chunks=(20, 5)),
                                  target=da.from_array(y, chunks=20))
        assert isinstance(p.job.target.labels, da.Array)   # checked chunk by chunk
        # a NumPy x with dask labels: computed through the executor's to_host
        s = fs.summarize(x, target=da.from_array(y, chunks=20))
    assert _acc(s) == _acc(fs.summarize(x, target=y))


def test_dask_refuses_progress_before_work():
    da = pytest.importorskip("dask.array")
    with pytest.raises(ValueError, match="progress is not available for dask arrays"):
        api.prepare_summarize(da.zeros((10, 4), chunks=(5, 4)), progress=True)


def test_backends_keep_numba_cuda_in_their_package():
    here = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "fastsoftmax")
    for root, _, files in os.walk(here):
        if os.path.join("backends", "cuda") in root:
            continue
        for f in files:
            if f.endswith(".py"):
                with open(os.path.join(root, f)) as fh:
                    src = fh.read()
                assert "from numba import cuda" not in src and "numba.cuda import" not in src \
                    and "import numba.cuda" not in src, f
