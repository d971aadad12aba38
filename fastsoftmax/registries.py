r"""The package's registries: plain records that every layer reads.

Nothing here imports the rest of the package, so the compiled kernels, the
argument checks, the laws of :mod:`fastsoftmax.theory` and the docstrings
above them all derive their tables, choices and constants from the same
records.  One record per concept:

* :class:`Observable` (``OBSERVABLES``, in the kernels' index order): a
  per-row observable of the softmax, what it is, its units and the laws of
  :mod:`fastsoftmax.theory` that cover it;
* :class:`Model` (``MODELS``): a logit model of :mod:`fastsoftmax.models`,
  its parameters and their bounds, the generator the kernels draw it with,
  and its law;
* :class:`Target` (``TARGETS``) and :class:`TargetMode`: the class y the
  cross-entropy observables use, and the entry points that accept it;
* the backends' names (``BUILTIN_BACKENDS``, ``REGISTERED_BACKENDS``): what
  ``backend=`` and the command line accept.

A new observable is its formula in the row math
(``fastsoftmax._kernels.row``), one record here and its tests: the names,
indices, documentation tables and the laws' tables follow from the record.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Callable

__all__ = [
    "Observable", "OBSERVABLES", "OBSERVABLE", "observable_table", "with_observable_table",
    "OBSERVABLE_TABLE",
    "MAX_PROB", "ONE_MINUS_MAX_PROB", "ENTROPY", "JAC_DIAG_MAX", "JAC_OFFDIAG_MAX", "JAC_FRO",
    "CE_LOSS", "CE_GRAD_NORM", "CE_GRAD_TARGET",
    "Param", "Model", "MODELS", "MODEL",
    "Target", "TARGETS", "TARGET", "TargetMode",
    "TARGET_ARGMAX", "TARGET_FIXED", "TARGET_LABELS", "TARGET_RANDOM", "TARGET_SAMPLED",
    "BUILTIN_BACKENDS", "REGISTERED_BACKENDS", "backend_names",
]


# ----------------------------------------------------------------------------
# observables

@dataclass(frozen=True)
class Observable:
    r"""One per-row observable of p = softmax(x).

    Attributes
    ----------
    name : str
        Its name: the key of ``observables(x)``, ``Summary[name]``, the
        tables' column prefixes.
    index : int
        Its position in the kernels' output (``OBS_NAMES[index] == name``).
    text : str
        What it is, in words.
    math : str
        Its definition as LaTeX (p_(1) >= p_(2) the two largest
        probabilities, J = diag(p) - p p^T, y the target class).
    units : str
        "probability", "nats" or "1" (a dimensionless magnitude).
    targeted : bool
        Whether its value depends on the target class y.
    unit_interval : bool
        Whether every value lies in [0, 1] (the laws' thresholds t are
        then checked to lie in (0, 1]).
    two_logit : str
        Key of its formula for a two-logit row of gap g in
        ``fastsoftmax.theory._two`` (the row's top class as y): ``"p"``
        (expit(g)), ``"q"`` (1 - p), ``"h2"`` (the binary entropy),
        ``"pq"``, ``"2pq"``, ``"-log p"``, ``"sqrt2 q"``.
    two_logit_other : str or None
        The same with y the other class (targeted observables only):
        ``"-log q"``, ``"sqrt2 p"``, ``"p"``.
    saturation : str or None
        Key of its saturation law in ``fastsoftmax.theory._saturation``
        (the first-order factor of the other logits and the exact bounds):
        ``"a"`` (a function of a = sum_{i != top} e^(x_i - m1) alone),
        ``"a_pq"`` (a / (1 + a)^2), ``"p1p2"``, ``"norm"``, ``"fro"``;
        None: no saturation law (the row is not small when saturated).
    rem : str or None
        Key of its random energy model law (``fastsoftmax.theory._rem``,
        and of its stated accuracy), ``"rem_entropy"`` or
        ``"rem_max_prob"``; None: none.
    """

    name: str
    index: int
    text: str
    math: str
    units: str
    targeted: bool
    unit_interval: bool
    two_logit: str
    two_logit_other: str | None = None
    saturation: str | None = None
    rem: str | None = None

    @property
    def saturates(self) -> bool:
        """Whether the saturation law covers it (a small value marks a saturated row)."""
        return self.saturation is not None


MAX_PROB = Observable(
    "max_prob", 0, "the largest probability", r"p_{(1)}", "probability",
    targeted=False, unit_interval=True, two_logit="p", rem="rem_max_prob")
ONE_MINUS_MAX_PROB = Observable(
    "one_minus_max_prob", 1, "the sum of the other probabilities", r"1 - p_{(1)}",
    "probability", targeted=False, unit_interval=True, two_logit="q", saturation="a")
ENTROPY = Observable(
    "entropy", 2, "the Shannon entropy", r"-\sum_i p_i \log p_i", "nats",
    targeted=False, unit_interval=False, two_logit="h2", rem="rem_entropy")
JAC_DIAG_MAX = Observable(
    "jac_diag_max", 3, "the largest diagonal entry of J", r"\max_i p_i (1 - p_i)", "1",
    targeted=False, unit_interval=True, two_logit="pq", saturation="a_pq")
JAC_OFFDIAG_MAX = Observable(
    "jac_offdiag_max", 4, "the largest off-diagonal size in J",
    r"\max_{i \ne j} p_i p_j = p_{(1)} p_{(2)}", "1",
    targeted=False, unit_interval=True, two_logit="pq", saturation="p1p2")
JAC_FRO = Observable(
    "jac_fro", 5, "the Frobenius norm of J", r"\lVert J \rVert_F", "1",
    targeted=False, unit_interval=True, two_logit="2pq", saturation="fro")
CE_LOSS = Observable(
    "ce_loss", 6, "the cross-entropy loss", r"-\log p_y", "nats",
    targeted=True, unit_interval=False, two_logit="-log p", two_logit_other="-log q",
    saturation="a")
CE_GRAD_NORM = Observable(
    "ce_grad_norm", 7, "the cross-entropy gradient's norm", r"\lVert p - e_y \rVert_2", "1",
    targeted=True, unit_interval=False, two_logit="sqrt2 q", two_logit_other="sqrt2 p",
    saturation="norm")
CE_GRAD_TARGET = Observable(
    "ce_grad_target", 8, "the size of the gradient's target component", r"1 - p_y", "probability",
    targeted=True, unit_interval=True, two_logit="q", two_logit_other="p", saturation="a")

#: Every observable, in the kernels' index order.
OBSERVABLES: tuple[Observable, ...] = (
    MAX_PROB, ONE_MINUS_MAX_PROB, ENTROPY, JAC_DIAG_MAX, JAC_OFFDIAG_MAX, JAC_FRO,
    CE_LOSS, CE_GRAD_NORM, CE_GRAD_TARGET)
#: The observables by name.
OBSERVABLE: dict[str, Observable] = {o.name: o for o in OBSERVABLES}

assert all(o.index == k for k, o in enumerate(OBSERVABLES)), "indices out of order"
assert len(OBSERVABLE) == len(OBSERVABLES), "repeated observable names"


def observable_table(indent: str = "    ") -> str:
    """The observables as a reST simple table (name, definition), for docstrings.

    Parameters
    ----------
    indent : str, default four spaces
        Prefix of every line.

    Returns
    -------
    str
        The table, one row per observable in index order, ending in a newline.
    """
    rows = [(f"``{o.name}``", f":math:`{o.math}`, {o.text}"
             + (" (nats)" if o.units == "nats" else "")) for o in OBSERVABLES]
    w0 = max(len(a) for a, _ in rows)
    w1 = max(len(b) for _, b in rows)
    rule = f"{'=' * w0} {'=' * w1}"
    lines = [rule] + [f"{a:<{w0}} {b}" for a, b in rows] + [rule]
    return "".join(f"{indent}{line}\n" for line in lines)


#: The line a docstring holds where :func:`with_observable_table` puts the table.
OBSERVABLE_TABLE = "<the observables: fastsoftmax.registries.observable_table()>"


def with_observable_table(doc: str | None) -> str | None:
    """A docstring with its ``OBSERVABLE_TABLE`` line replaced by the table.

    Parameters
    ----------
    doc : str or None
        The docstring (None under ``python -OO``).

    Returns
    -------
    str or None
        ``doc`` with the table, indented as the line it replaces.
    """
    if doc is None:
        return None
    out = []
    for line in doc.splitlines(keepends=True):
        if line.strip() == OBSERVABLE_TABLE:
            out.append(observable_table(line[:len(line) - len(line.lstrip())]))
        else:
            out.append(line)
    return "".join(out)


# ----------------------------------------------------------------------------
# models

@dataclass(frozen=True)
class Param:
    """One parameter of a model: its name, kind and default.

    Attributes
    ----------
    name : str
        The field name.
    kind : str
        Its check: ``"int>=1"``, ``"real"``, ``"real>=0"``, ``"real>0"``,
        ``"bool"`` or ``"choice"`` (one of ``choices``).
    default : object
        The default value; None: required.
    choices : tuple
        The allowed values of a ``"choice"`` parameter.
    """

    name: str
    kind: str
    default: object = None
    choices: tuple[str, ...] = ()


@dataclass(frozen=True)
class Model:
    """One logit model of :mod:`fastsoftmax.models`.

    Attributes
    ----------
    name : str
        Its name in sweeps and the command line (``"gaussian"``).
    cls : str
        The class name in :mod:`fastsoftmax.models`.
    params : tuple of Param
        Its parameters in field order (``n`` first).
    generator : str
        The generator the kernels draw its rows with
        (``fastsoftmax._kernels.gen``): ``"affine"`` or ``"dot"`` (exact or
        explicit by ``method``).
    law : str
        Its law in :mod:`fastsoftmax.theory`: ``"gaussian"`` (of scale
        ``scale_param`` / temperature) or ``"dot_product"``.
    scale_param : str or None
        The parameter that is the logit scale of a Gaussian law.
    """

    name: str
    cls: str
    params: tuple[Param, ...]
    generator: str
    law: str
    scale_param: str | None = None

    def param(self, name: str) -> Param:
        """The parameter called ``name``.

        Parameters
        ----------
        name : str
            A field name.

        Returns
        -------
        Param
            Its record.
        """
        return next(p for p in self.params if p.name == name)


_N = Param("n", "int>=1")
_T = Param("temperature", "real>0", 1.0)

GAUSSIAN = Model("gaussian", "Gaussian",
                 (_N, Param("scale", "real>=0", 1.0), Param("mean", "real", 0.0), _T),
                 generator="affine", law="gaussian", scale_param="scale")
SHIFTED = Model("shifted", "Shifted",
                (_N, Param("offset", "real", 0.0), Param("spread", "real>=0", 1.0), _T),
                generator="affine", law="gaussian", scale_param="spread")
DOT_PRODUCT = Model("dotproduct", "DotProduct",
                    (_N, Param("d_k", "int>=1"), Param("scaled", "bool", True),
                     Param("method", "choice", "exact", ("exact", "explicit")), _T),
                    generator="dot", law="dot_product")

#: Every model, in the order the documentation lists them.
MODELS: tuple[Model, ...] = (GAUSSIAN, SHIFTED, DOT_PRODUCT)
#: The models by name.
MODEL: dict[str, Model] = {m.name: m for m in MODELS}


# ----------------------------------------------------------------------------
# targets: one enum, shared by the kernels (as ints) and the Python layers

class TargetMode(enum.IntEnum):
    """Which class y a row's cross-entropy observables use."""
    ARGMAX = 0      #: the top class (a confidently right model)
    FIXED = 1       #: one class index for every row
    LABELS = 2      #: a label per row (an integer array)
    RANDOM = 3      #: a uniform label from the counter-based stream (Monte Carlo)
    SAMPLED = 4     #: y ~ Categorical(softmax(x)) (Monte Carlo: a calibrated model)


# plain ints for the compiled kernels (numba freezes module-level ints)
TARGET_ARGMAX = int(TargetMode.ARGMAX)
TARGET_FIXED = int(TargetMode.FIXED)
TARGET_LABELS = int(TargetMode.LABELS)
TARGET_RANDOM = int(TargetMode.RANDOM)
TARGET_SAMPLED = int(TargetMode.SAMPLED)


@dataclass(frozen=True)
class Target:
    """One way of choosing the target class y.

    Attributes
    ----------
    name : str
        How it is spelled: a string target's value, or what a
        configuration records (``"fixed"`` stands for an int class index,
        ``"labels"`` for an integer array).
    mode : TargetMode
        The kernels' mode.
    text : str
        What it means.
    arrays : bool
        Accepted for rows of an array (``observables``, ``summarize``).
    monte_carlo : bool
        Accepted for simulated rows (``simulate``, ``sweep``).
    by_name : bool
        Passed as the string ``name`` (else as an int or an array).
    """

    name: str
    mode: TargetMode
    text: str
    arrays: bool
    monte_carlo: bool
    by_name: bool


#: Every target, in the kernels' mode order.
TARGETS: tuple[Target, ...] = (
    Target("argmax", TargetMode.ARGMAX, "the top class (a confidently right model)",
           arrays=True, monte_carlo=True, by_name=True),
    Target("fixed", TargetMode.FIXED, "one class index for every row (an int)",
           arrays=True, monte_carlo=True, by_name=False),
    Target("labels", TargetMode.LABELS, "a label per row (an integer array)",
           arrays=True, monte_carlo=False, by_name=False),
    Target("random", TargetMode.RANDOM, "a uniform label per row (Monte Carlo)",
           arrays=False, monte_carlo=True, by_name=True),
    Target("sampled", TargetMode.SAMPLED,
           "y ~ Categorical(softmax(x)) (Monte Carlo: a calibrated model)",
           arrays=False, monte_carlo=True, by_name=True),
)
#: The targets by name.
TARGET: dict[str, Target] = {t.name: t for t in TARGETS}

assert all(int(t.mode) == k for k, t in enumerate(TARGETS)), "targets out of mode order"


# --------------------------------------------------------------------------
# backends: their names, the one list that the argument checks, the backend
# registry (fastsoftmax.backends) and the command line's choices read

#: The built-in backends and the modules that implement them, in the order
#: ``fastsoftmax.backends.take`` asks them: the CPU first, so that "auto"
#: keeps host arrays on the host (the CUDA backend reads them too).
BUILTIN_BACKENDS: dict[str, str] = {
    "cpu": "fastsoftmax.backends.cpu",
    "cuda": "fastsoftmax.backends.cuda",
    "dask": "fastsoftmax.backends.dask",
}

#: Backends registered at run time (``fastsoftmax.backends.register``):
#: name -> factory(**options) returning an object with the backend contract.
REGISTERED_BACKENDS: dict[str, Callable[..., Any]] = {}


def backend_names() -> tuple[str, ...]:
    """Every registered backend's name: the built-in ones, then those
    registered at run time, in the order ``fastsoftmax.backends.take`` asks
    them."""
    return tuple(BUILTIN_BACKENDS) + tuple(REGISTERED_BACKENDS)
