"""The array types an audited implementation receives: NumPy, PyTorch, JAX.

A framework turns float64 logits into its own array of the audited dtype on
the requested device, turns labels into its integer arrays, and reads any
of its arrays back as float64 NumPy (exactly: every audited dtype is a
subset of float64).
"""
from __future__ import annotations

import importlib
from typing import Any

import numpy as np

__all__ = ["FRAMEWORKS", "Framework", "get_framework", "infer_framework"]

#: The frameworks whose arrays an audited function may take (``framework=``).
FRAMEWORKS = ("numpy", "torch", "jax")


class Framework:
    """NumPy arrays on the host (float16, float32, float64: NumPy has no
    bfloat16)."""
    name = "numpy"
    dtypes: tuple[str, ...] = ("float16", "float32", "float64")

    def check(self, dtype: str, device: Any) -> None:
        """ValueError/ImportError unless ``dtype`` and ``device`` are usable."""
        if dtype not in self.dtypes:
            raise ValueError(f"dtype={dtype!r} is not available with framework={self.name!r} "
                             f"(it has {', '.join(self.dtypes)}); audit bfloat16 with "
                             "framework='torch' or 'jax'")
        if device not in (None, "cpu"):
            raise ValueError(f"device={device!r}: NumPy arrays live in host memory "
                             "(device None or 'cpu')")

    def array(self, x: np.ndarray, dtype: str, device: Any) -> Any:
        """The logits as the implementation receives them."""
        return np.ascontiguousarray(x.astype(dtype))

    def labels(self, y: np.ndarray, device: Any) -> Any:
        """Integer labels of the framework (int64)."""
        return np.ascontiguousarray(y.astype(np.int64))

    def to_numpy(self, a: Any) -> np.ndarray:
        """Any array of the framework as float64 NumPy."""
        return np.asarray(a, dtype=np.float64)

    def sync(self) -> None:
        """Wait for queued device work (timing)."""


class _Torch(Framework):
    """PyTorch tensors on ``device`` (default: the CPU)."""
    name = "torch"
    dtypes = ("float16", "bfloat16", "float32", "float64")

    def __init__(self) -> None:
        self.torch = importlib.import_module("torch")

    def check(self, dtype: str, device: Any) -> None:
        if dtype not in self.dtypes:
            raise ValueError(f"dtype={dtype!r} is not a float dtype of PyTorch")
        try:
            dev = self.torch.device("cpu" if device is None else device)
        except (RuntimeError, TypeError) as e:
            raise ValueError(f"device={device!r} is not a PyTorch device ({e})") from None
        if dev.type == "cuda" and not self.torch.cuda.is_available():
            raise RuntimeError(f"device={device!r}: PyTorch sees no CUDA device here")

    def array(self, x: np.ndarray, dtype: str, device: Any) -> Any:
        t = self.torch.from_numpy(np.ascontiguousarray(x))
        return t.to(device="cpu" if device is None else device, dtype=getattr(self.torch, dtype))

    def labels(self, y: np.ndarray, device: Any) -> Any:
        return self.torch.from_numpy(y.astype(np.int64)).to("cpu" if device is None else device)

    def to_numpy(self, a: Any) -> np.ndarray:
        if isinstance(a, self.torch.Tensor):
            return a.detach().to("cpu", self.torch.float64).numpy()
        return np.asarray(a, dtype=np.float64)

    def sync(self) -> None:
        if self.torch.cuda.is_available() and self.torch.cuda.is_initialized():
            self.torch.cuda.synchronize()


class _Jax(Framework):
    """JAX arrays, placed with ``jax.device_put`` on ``device`` (a JAX
    device or a platform name such as "cpu" or "gpu"; default JAX's)."""
    name = "jax"
    dtypes = ("float16", "bfloat16", "float32", "float64")

    def __init__(self) -> None:
        self.jax = importlib.import_module("jax")
        self.jnp = importlib.import_module("jax.numpy")

    def _device(self, device: Any) -> Any:
        if device is None or not isinstance(device, str):
            return device
        try:
            return self.jax.devices(device)[0]
        except RuntimeError as e:
            raise ValueError(f"device={device!r}: JAX has no such platform ({e})") from None

    def check(self, dtype: str, device: Any) -> None:
        if dtype not in self.dtypes:
            raise ValueError(f"dtype={dtype!r} is not a float dtype of JAX")
        if dtype == "float64" and not self.jax.config.read("jax_enable_x64"):
            raise ValueError("dtype='float64' with JAX needs "
                             "jax.config.update('jax_enable_x64', True) first")
        self._device(device)

    def array(self, x: np.ndarray, dtype: str, device: Any) -> Any:
        return self.jax.device_put(self.jnp.asarray(x, dtype=getattr(self.jnp, dtype)),
                                   self._device(device))

    def labels(self, y: np.ndarray, device: Any) -> Any:
        return self.jax.device_put(self.jnp.asarray(y.astype(np.int32)), self._device(device))

    def to_numpy(self, a: Any) -> np.ndarray:
        return np.asarray(a).astype(np.float64)

    def sync(self) -> None:
        pass


def get_framework(name: Any) -> Framework:
    """The framework called ``name`` (ValueError for another name,
    ImportError when it is not installed)."""
    if name not in FRAMEWORKS:
        raise ValueError(f"framework must be one of {', '.join(map(repr, FRAMEWORKS))}, "
                         f"got {name!r}")
    if name == "numpy":
        return Framework()
    try:
        return _Torch() if name == "torch" else _Jax()
    except ImportError:
        raise ImportError(f"framework={name!r} needs {name}: pip install {name}") from None


def infer_framework(fn: Any) -> str:
    """"torch" or "jax" when ``fn.__module__`` is in one of them, else "numpy"."""
    root = (getattr(fn, "__module__", None) or "").split(".")[0]
    return {"torch": "torch", "jax": "jax", "jaxlib": "jax"}.get(root, "numpy")
