"""Backends: peers with one contract (:mod:`.common`), found by name.

``get_backend("cpu" | "cuda" | "dask", **options)`` imports the backend's
module on first use (so ``import fastsoftmax`` never imports numba.cuda or
dask) and returns the backend object; :func:`resolve` turns ``"auto"`` into
a concrete name.  The registry imports by module name, so no backend module
imports another: each is one file (or package) that implements the contract.
"""
from __future__ import annotations

import importlib
from typing import Any, Callable

from .._inputs import check_backend_name

__all__ = ["get_backend", "resolve", "cuda_status", "NAMES"]

NAMES = ("cpu", "cuda", "dask")
_MODULES = {"cpu": "fastsoftmax.backends.cpu", "cuda": "fastsoftmax.backends.cuda",
            "dask": "fastsoftmax.backends.dask"}


def _module(name: str):
    if name not in _MODULES:
        raise ValueError(f"unknown backend {name!r}: one of {', '.join(NAMES)}")
    return importlib.import_module(_MODULES[name])


def get_backend(name: str, **options: Any):
    """The backend object ``name`` (options: the Dask backend's ``client``
    and ``inner`` backend name)."""
    return _module(name).backend(**options)


def cuda_status() -> tuple[bool, str]:
    """(usable, why): can CUDA kernels run here?  Never raises; imports
    numba.cuda only when asked."""
    return _module("cuda").status()


def resolve(backend: str, *, host_data: bool = False,
            status: Callable[[], tuple[bool, str]] | None = None) -> str:
    """"cpu" or "cuda" for ``backend`` ("auto", "cpu", "cuda"): the one
    backend resolution of the package.

    "auto" is "cuda" when a GPU is usable, except for data already in host
    memory (``host_data``): copying it to a GPU costs as much as the CPU
    kernel, so host arrays stay on the CPU.  "cuda" without a usable GPU is
    a RuntimeError saying why.  ``status`` answers "is a GPU usable, and if
    not why" (default: on this machine; the Dask backend asks its workers)."""
    backend = check_backend_name(backend)
    if backend == "cpu" or (backend == "auto" and host_data):
        return "cpu"
    ok, why = (status or cuda_status)()
    if backend == "cuda":
        if not ok:
            sep = " " if why.startswith("on ") else ": "     # "... not usable on worker X: ..."
            raise RuntimeError(f"backend='cuda' is not usable{sep}{why}")
        return "cuda"
    return "cuda" if ok else "cpu"
