"""Device arrays of the CUDA backend: any ``__cuda_array_interface__``
object (numba, CuPy, PyTorch) seen as (rows, n) without a copy where the
layout allows one."""
import numpy as np
from numba import cuda

from ..._inputs import batch_shape, collapse, compute_dtype, normalize_axis
from . import _kernels
from ._kernels import SIMULATOR
from ._geometry import _grid_cap, _quiet, _tpb


def _is_device_array(x):
    if SIMULATOR:
        from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray
        if isinstance(x, FakeCUDAArray):
            return True
    return hasattr(x, "__cuda_array_interface__")


class _HostInterface:
    """``__array_interface__`` from a ``__cuda_array_interface__`` (the
    simulator's device memory is host memory)."""

    def __init__(self, cai):
        d = dict(cai)
        d["version"] = 3
        d.pop("stream", None)
        d.pop("mask", None)
        self.__array_interface__ = d


def _as_device(x):
    """x as a numba device array (no copy)."""
    if SIMULATOR:
        from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray
        if isinstance(x, FakeCUDAArray):
            return x
        return FakeCUDAArray(np.asarray(_HostInterface(x.__cuda_array_interface__)))
    if cuda.is_cuda_array(x):
        return cuda.as_cuda_array(x)
    raise TypeError(f"{type(x).__name__} is not a CUDA device array")


def _view(a, shape, strides):
    """A view of device array a (same first element) with the given shape
    and byte strides."""
    shape = tuple(int(s) for s in shape)
    strides = tuple(int(s) for s in strides)
    if SIMULATOR:
        from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray
        base = a._ary
        return FakeCUDAArray(np.lib.stride_tricks.as_strided(base, shape, strides))
    from numba.cuda.cudadrv.devicearray import DeviceNDArray
    return DeviceNDArray(shape, strides, a.dtype, gpu_data=a.gpu_data)


def _pad2(dims):
    dims = list(dims)
    while len(dims) < 2:
        dims.insert(0, (1, 0))
    return dims


class _DeviceRows:
    """A device array seen as (rows, n) with the softmax axes last: a strided
    view when the layout allows it, else a contiguous device copy (also used
    to convert float16/integer input to the compute dtype)."""

    def __init__(self, x, axis):
        dev = _as_device(x)
        self.dev = dev
        shape = tuple(int(s) for s in dev.shape)
        strides = tuple(int(s) for s in dev.strides)
        self.shape = shape
        self.dtype = np.dtype(dev.dtype)
        self.cdt, self.odt = compute_dtype(self.dtype)
        axes = normalize_axis(axis, len(shape))
        self.axes = axes
        if int(np.prod(shape, dtype=np.int64)) == 0:
            raise ValueError(f"x is empty (shape {shape}): nothing to compute")
        rest = [a for a in range(len(shape)) if a not in axes]
        self.rest = rest
        self.batch, self.n = batch_shape(shape, axes)
        self.rows = int(np.prod(self.batch, dtype=np.int64))
        if any(st < 0 for s, st in zip(shape, strides) if s > 1):
            raise ValueError("device arrays with negative strides are not supported; "
                             "pass a contiguous copy")
        self.bdims = collapse([(shape[a], strides[a]) for a in rest])
        self.adims = collapse([(shape[a], strides[a]) for a in axes])
        if len(self.bdims) > 2 or len(self.adims) > 2:
            raise ValueError(
                f"device array layout (shape {shape}, strides {strides}) cannot be read as "
                "rows without a copy of more than 4 dims; pass a contiguous array")
        self.copied = not (self.dtype == self.cdt and len(self.bdims) <= 1
                           and len(self.adims) <= 1)
        self._x2 = None

    @property
    def x2(self):
        """The (rows, n) device array (the copy, if needed, is made on first use)."""
        if self._x2 is None:
            if not self.copied:
                isz = self.dtype.itemsize
                sb = self.bdims[0][1] if self.bdims else self.n * isz
                sa = self.adims[0][1] if self.adims else isz
                self._x2 = _view(self.dev, (self.rows, self.n), (sb, sa))
            else:
                self._x2 = cuda.device_array((self.rows, self.n), dtype=self.cdt)
                _copy_dims(self.dev, _pad2(self.bdims) + _pad2(self.adims), self._x2)
        return self._x2

    def row_to_host(self, r):
        out = cuda.device_array((1, self.n), dtype=self.cdt)
        src = self.x2[r:r + 1]
        _launch_copy4(_view(src, (1, 1, 1, self.n), (0, 0, 0, src.strides[1])),
                      _view(out, (1, 1, 1, self.n), (0, 0, 0, out.strides[1])))
        return out.copy_to_host()[0]


def _launch_copy4(src4, dst4, stream=0):
    total = int(np.prod(dst4.shape, dtype=np.int64))
    if total == 0:
        return
    tpb = _tpb()
    grid = max(1, min(_grid_cap() * 4, (total + tpb - 1) // tpb))
    with _quiet():
        _kernels.get_kernel("copy4")[grid, tpb, stream](src4, dst4)


def _copy_dims(dev, dims4, dst2):
    """Gather dev (4 (size, stride) dims: batch, batch, axis, axis) into the
    contiguous (rows, n) dst2."""
    shape4 = tuple(s for s, _ in dims4)
    src4 = _view(dev, shape4, tuple(st for _, st in dims4))
    isz = dst2.dtype.itemsize
    cs = (shape4[1] * shape4[2] * shape4[3] * isz, shape4[2] * shape4[3] * isz,
          shape4[3] * isz, isz)
    _launch_copy4(src4, _view(dst2, shape4, cs))


def _wrap_like(x, out):
    """out (a numba device array) as the array type of x where that is free."""
    mod = type(x).__module__.split(".")[0]
    try:
        if mod == "cupy":
            import cupy
            return cupy.asarray(out)
        if mod == "torch":
            import torch
            return torch.as_tensor(out, device=x.device)
    except Exception:   # noqa: BLE001 - fall back to the numba array
        pass
    return out
