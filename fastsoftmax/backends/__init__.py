"""Backends: peers with one contract (:mod:`.common`), found by name or by input.

* ``get_backend("cpu" | "cuda" | "dask", **options)`` imports the backend's
  module on first use (so ``import fastsoftmax`` never imports numba.cuda or
  dask) and returns the backend object, or a RuntimeError saying why it
  cannot run here (xarray's ``plugins.get_backend``).
* :func:`take` names the backend that reads an input: the first whose
  ``can_take`` says yes, asked in the fixed order :func:`names` (xarray's
  ``guess_engine``); a TypeError naming the input's type and every backend
  when none does.
* :func:`resolve` turns ``backend="auto"`` into a concrete name.
* :func:`info` gathers every backend's runtime information.

The registry imports by module name, so no backend module imports another:
each is one file (or package) that implements the contract.  Others register
with :func:`register` (the tests register fakes).
"""
from __future__ import annotations

import importlib
from typing import Any, Callable

from .._inputs import check_backend_name
from ..registries import BUILTIN_BACKENDS as _MODULES
from ..registries import REGISTERED_BACKENDS as _EXTRA
from ..registries import backend_names
from .common import Backend

__all__ = ["get_backend", "default", "take", "resolve", "cuda_status", "info", "names",
           "register", "unregister", "type_name", "not_usable", "NAMES"]

# the built-in backends, in the order take() asks them (registries.BUILTIN_BACKENDS)
NAMES = tuple(_MODULES)
# default instances (no options), the ones take() asks
_DEFAULT: dict[str, Backend] = {}


def names() -> tuple[str, ...]:
    """The registered backends' names, in the order :func:`take` asks them
    (``fastsoftmax.registries.backend_names``: every ``backend=`` accepts
    them, with "auto", and so do the command line's ``--backend``)."""
    return backend_names()


def _factory(name: str) -> Callable[..., Backend]:
    if name in _EXTRA:
        return _EXTRA[name]
    if name not in _MODULES:
        raise ValueError(f"unknown backend {name!r}: one of {', '.join(names())}")
    return importlib.import_module(_MODULES[name]).backend


def default(name: str) -> Backend:
    """Backend ``name`` with its default options, usable here or not (its
    ``can_take``, ``operations`` and ``status`` need no device)."""
    if name not in _DEFAULT:
        _DEFAULT[name] = _factory(name)()
    return _DEFAULT[name]


def not_usable(name: str, why: str) -> RuntimeError:
    """The one message for a backend that cannot run here."""
    sep = " " if why.startswith("on ") else ": "     # "... not usable on worker X: ..."
    return RuntimeError(f"backend={name!r} is not usable{sep}{why}")


def get_backend(name: str, **options: Any) -> Backend:
    """The backend object ``name``, ready to run.

    ``options`` go to its factory (the Dask executor's ``client`` and
    ``inner``).  A backend that cannot run here (``status()``) is a
    RuntimeError saying why."""
    be = default(name) if not options else _factory(name)(**options)
    ok, why = be.status()
    if not ok:
        raise not_usable(name, why)
    return be


def type_name(x: Any) -> str:
    """x's type as messages name it: ``list``, ``dask.array.core.Array``."""
    t = type(x)
    return t.__qualname__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


def take(x: Any, what: str = "x") -> str:
    """The name of the backend that reads input ``x``.

    The registered backends are asked ``can_take(x)`` in the fixed order of
    :func:`names`; the first that says yes is chosen.  None does: a
    TypeError naming x's type and what each backend takes."""
    for name in names():
        if default(name).can_take(x):
            return name
    kinds = "; ".join(f"{n}: {default(n).takes}" for n in names())
    raise TypeError(f"{what} of type {type_name(x)} is not an input any backend takes ({kinds})")


def cuda_status() -> tuple[bool, str]:
    """(usable, why): can CUDA kernels run here?  Never raises; imports
    numba.cuda only when asked."""
    return default("cuda").status()


def info() -> dict[str, dict[str, Any]]:
    """Every registered backend's ``info()``: what it runs on here (the
    CPU's threads and threading layer, the GPU); never raises."""
    return {name: default(name).info() for name in names()}


def register(name: str, factory: Callable[..., Backend]) -> None:
    """Register a backend: ``factory(**options)`` returns an object with the
    contract of :class:`~.common.Backend`; :func:`take` asks it after the
    built-in backends, and ``backend=name`` names it (``summarize``,
    ``simulate``, ``sweep``)."""
    if not isinstance(name, str) or not name or name == "auto":
        raise ValueError(f"a backend's name is a non-empty string other than 'auto', "
                         f"got {name!r}")
    if name in _MODULES or name in _EXTRA:
        raise ValueError(f"backend {name!r} is already registered")
    _EXTRA[name] = factory


def unregister(name: str) -> None:
    """Remove a backend added by :func:`register`."""
    if name not in _EXTRA:
        raise ValueError(f"backend {name!r} was not registered with register()")
    del _EXTRA[name]
    _DEFAULT.pop(name, None)


def resolve(backend: str, *, host_data: bool = False,
            status: Callable[[], tuple[bool, str]] | None = None) -> str:
    """The backend that ``backend`` names: "cpu" or "cuda" for "auto", "cpu"
    and "cuda" (the one resolution of a kernel backend's name); any other
    registered backend's name as it is.

    "auto" is "cuda" when a GPU is usable, except for data already in host
    memory (``host_data``): copying it to a GPU costs as much as the CPU
    kernel, so host arrays stay on the CPU.  "cuda" without a usable GPU is
    a RuntimeError saying why.  ``status`` answers "is a GPU usable, and if
    not why" (default: on this machine; the Dask executor asks its workers)."""
    backend = check_backend_name(backend)
    if backend not in ("auto", "cpu", "cuda"):
        return backend
    if backend == "cpu" or (backend == "auto" and host_data):
        return "cpu"
    ok, why = (status or cuda_status)()
    if backend == "cuda":
        if not ok:
            raise not_usable("cuda", why)
        return "cuda"
    return "cuda" if ok else "cpu"
