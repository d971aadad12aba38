"""Built-in implementations to audit, by name, for every kind.

``numpy-naive``: the textbook formulas with no max shift (``exp(x) /
sum(exp(x))``, its log, and ``softmax - one_hot`` as the CE gradient).
``scipy``: ``scipy.special.softmax`` / ``log_softmax`` (the CE loss as
``-log_softmax[y]``, the gradient as ``softmax - one_hot``).
``torch``: ``torch.softmax``, ``torch.log_softmax``,
``torch.nn.functional.cross_entropy`` (``reduction="none"``) and its
autograd gradient (``reduction="sum"``).
``jax``: ``jax.nn.softmax``, ``jax.nn.log_softmax``, the loss from
``log_softmax`` and its ``jax.grad``.

Anything else is named ``module:function`` (``mypkg.kernels:softmax``).
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ._kinds import CE_GRAD, CE_LOSS, LOG_SOFTMAX, SOFTMAX, check_kind

__all__ = ["IMPLEMENTATIONS", "Implementation", "resolve_implementation"]



@dataclass(frozen=True)
class Implementation:
    """A named implementation: its framework and a builder of its functions.

    One entry of :data:`IMPLEMENTATIONS`, the registry the command line's
    ``--impl`` names.

    Parameters
    ----------
    name : str
        The registry name (``"torch"``).
    framework : str
        The array type its functions take.
    description : str
        What it is, in words.
    build : callable
        ``build(kind)``: the function for a kind (imports its library).

    Examples
    --------
    >>> from fastsoftmax.audits.implementations import IMPLEMENTATIONS
    >>> IMPLEMENTATIONS["scipy"].framework
    'numpy'
    """
    name: str
    framework: str
    description: str
    build: Callable[[str], Callable[..., Any]]


def _one_hot_np(p: np.ndarray, y: np.ndarray) -> np.ndarray:
    g = p.copy()
    g[np.arange(p.shape[0]), y] -= 1
    return g


def _by_kind(kind: str, *fns: Callable[..., Any]) -> Callable[..., Any]:
    """The one of ``fns`` (given in :data:`KINDS` order) that computes ``kind``."""
    return dict(zip((SOFTMAX, LOG_SOFTMAX, CE_LOSS, CE_GRAD), fns))[kind]


def _numpy_naive(kind: str) -> Callable[..., Any]:
    def softmax(x):
        e = np.exp(x)
        return e / e.sum(axis=-1, keepdims=True)

    def log_softmax(x):
        return np.log(softmax(x))

    def loss(x, y):
        return -np.log(softmax(x)[np.arange(x.shape[0]), y])

    def grad(x, y):
        return _one_hot_np(softmax(x), y)

    return _by_kind(kind, softmax, log_softmax, loss, grad)


def _scipy(kind: str) -> Callable[..., Any]:
    from scipy import special

    def softmax(x):
        return special.softmax(x, axis=-1)

    def log_softmax(x):
        return special.log_softmax(x, axis=-1)

    def loss(x, y):
        return -special.log_softmax(x, axis=-1)[np.arange(x.shape[0]), y]

    def grad(x, y):
        return _one_hot_np(special.softmax(x, axis=-1), y)

    return _by_kind(kind, softmax, log_softmax, loss, grad)


def _torch(kind: str) -> Callable[..., Any]:
    import torch
    import torch.nn.functional as F

    def softmax(x):
        return torch.softmax(x, dim=-1)

    def log_softmax(x):
        return torch.log_softmax(x, dim=-1)

    def loss(x, y):
        return F.cross_entropy(x, y, reduction="none")

    def grad(x, y):
        x = x.detach().requires_grad_(True)
        F.cross_entropy(x, y, reduction="sum").backward()
        return x.grad

    return _by_kind(kind, softmax, log_softmax, loss, grad)


def _jax(kind: str) -> Callable[..., Any]:
    import jax
    import jax.numpy as jnp

    def softmax(x):
        return jax.nn.softmax(x, axis=-1)

    def log_softmax(x):
        return jax.nn.log_softmax(x, axis=-1)

    def loss(x, y):
        return -jnp.take_along_axis(jax.nn.log_softmax(x, axis=-1), y[:, None], axis=-1)[:, 0]

    def grad(x, y):
        return jax.grad(lambda z: jnp.sum(loss(z, y)))(x)

    return _by_kind(kind, softmax, log_softmax, loss, grad)


#: The built-in implementations by name.
IMPLEMENTATIONS: dict[str, Implementation] = {
    "numpy-naive": Implementation("numpy-naive", "numpy",
                                  "exp(x) / sum(exp(x)), no max shift", _numpy_naive),
    "scipy": Implementation("scipy", "numpy", "scipy.special.softmax / log_softmax", _scipy),
    "torch": Implementation("torch", "torch",
                            "torch.softmax / log_softmax / F.cross_entropy", _torch),
    "jax": Implementation("jax", "jax", "jax.nn.softmax / log_softmax / jax.grad", _jax),
}


def resolve_implementation(spec: str, kind: str) -> tuple[Callable[..., Any], str | None, str]:
    """The function, framework and label of an implementation named ``spec``.

    A registry name builds that implementation's function for ``kind``; a
    ``module:function`` path imports the function (its framework is then
    inferred from it by :func:`fastsoftmax.audit`).

    Parameters
    ----------
    spec : str
        A name of :data:`IMPLEMENTATIONS` or ``module:function`` (the
        function imported from the module; dots in the function part walk
        attributes, ``pkg.mod:Class.method``).
    kind : str
        One of :data:`fastsoftmax.audits.KINDS`.

    Returns
    -------
    fn : callable
        The function to audit.
    framework : str or None
        Its framework (None for a dotted path: inferred from the function).
    label : str
        How reports name it.

    Raises
    ------
    ValueError
        An unknown name or a malformed path.
    ImportError
        The implementation's library is not installed, or the module of a
        path cannot be imported.

    Examples
    --------
    >>> from fastsoftmax.audits.implementations import resolve_implementation
    >>> fn, framework, label = resolve_implementation("numpy-naive", "softmax")
    >>> framework, label, fn([[0.0, 0.0]]).tolist()
    ('numpy', 'numpy-naive', [[0.5, 0.5]])
    """
    if not isinstance(spec, str):
        raise TypeError(f"an implementation is named by a string, got {spec!r}")
    check_kind(kind)
    if spec in IMPLEMENTATIONS:
        impl = IMPLEMENTATIONS[spec]
        try:
            return impl.build(kind), impl.framework, spec
        except ImportError as e:
            raise ImportError(f"implementation {spec!r} needs {e.name or impl.framework}: "
                              f"pip install {e.name or impl.framework}") from None
    if ":" not in spec:
        raise ValueError(f"unknown implementation {spec!r}: one of "
                         f"{', '.join(IMPLEMENTATIONS)}, or module:function")
    mod_name, _, attr = spec.partition(":")
    if not mod_name or not attr:
        raise ValueError(f"implementation {spec!r}: expected module:function")
    try:
        obj: Any = importlib.import_module(mod_name)
    except ImportError as e:
        raise ImportError(f"implementation {spec!r}: cannot import {mod_name} ({e})") from None
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ValueError(f"implementation {spec!r}: {mod_name} has no {attr}") from None
    if not callable(obj):
        raise ValueError(f"implementation {spec!r} is not callable")
    return obj, None, spec
