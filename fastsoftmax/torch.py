r"""Exact statistics of a real model's attention, per head, while it runs.

:class:`AttentionProbe` is a context manager.  While it is active it sees
every call of ``torch.nn.functional.scaled_dot_product_attention`` (through a
:class:`torch.overrides.TorchFunctionMode`: users' own code, HF transformers'
``sdpa`` attention, ``nn.MultiheadAttention``'s slow path) and every
``nn.MultiheadAttention`` / ``nn.TransformerEncoderLayer`` forward, fused fast
paths included (through module hooks), and, with ``eager=True``, softmax over
the last axis of a 4-d score tensor.  For each call it summarises, per head
over the (batch, query) rows, the attention logits with ``fs.summarize``,
chunk by chunk, without materialising more than ``chunk_logits`` logits.

What is summarised
------------------
The logits SDPA defines, computed in float64 from the query and key tensors
it received (cast to float64, which is exact for float16/bfloat16/float32)::

    logits = (q @ k.transpose(-2, -1)) * scale + mask

* ``scale``: ``1 / sqrt(E)`` with ``E = q.size(-1)`` unless ``scale=`` is given;
* a bool mask masks where it is False (-inf); a float mask is added (in
  float64); ``is_causal`` masks key j > query i (top-left aligned, the
  ``torch.ones(L, S).tril()`` of SDPA's reference code, also when L != S);
* grouped-query attention: with ``enable_gqa=True`` query head h uses key head
  ``h // (Hq // Hkv)`` (SDPA's ``repeat_interleave``); fewer key heads without
  it broadcast as in SDPA (one key head for all);
* masks and batch dimensions broadcast to (batch..., heads, L, S); the head
  axis is dim -3 (as in SDPA's GQA), the dims before it are batch.

``nn.MultiheadAttention`` (and ``nn.TransformerEncoderLayer``'s fused path)
are summarised from the module's inputs and weights: q and k are its input
projections computed in float64, masks as the module applies them (its bool
masks are True where *masked*, the inverse of SDPA's).  Dropout acts on the
attention weights after the softmax: the probe summarises the logits, before
any dropout.

Rows whose every key is masked (padding) have no finite logit: they are
``skipped`` (counted, never an error).  NaN or infinite q, k or mask values
are not an error either: rows whose logits contain NaN or +inf are skipped
too and counted separately (``nonfinite`` in :meth:`AttentionProbe.to_frame`),
so a diverging run is reported rather than crashing the training loop.

Exactness: the probe's Summary equals ``fs.summarize`` of the float64 logits
materialised in one piece: the integer parts (counts, skipped rows, threshold
fractions, sketch quantiles) exactly, min/max and means to rounding.  Means
are merged over chunks with Chan's formula; and a float64 logit is a sum of E
products which BLAS adds in an order that depends on the shapes multiplied, so
two materialisations may differ by an ulp (the products of float32 inputs are
exact in float64).  The model's own kernel (float32, fused) rounds by its own
rounding error, which the probe does not reproduce.

Outputs and autograd are untouched: the original function runs with the
original arguments and its result is returned as is; the statistics are
computed afterwards under ``torch.no_grad()`` from detached tensors.
"""
from __future__ import annotations

import inspect
import itertools
import math
import numbers
import threading
from typing import Any, Callable, Iterable, Sequence

try:
    import torch
    from torch import nn
    from torch.nn import functional as F
    from torch.overrides import TorchFunctionMode
except ImportError as exc:     # pragma: no cover - exercised in a subprocess
    raise ImportError(
        "fastsoftmax.torch needs PyTorch: pip install 'fastsoftmax[torch]'") from exc

import numpy as np

from . import api as _api
from ._config import DEFAULT_THRESHOLDS
from ._math import OBS_NAMES
from ._inputs import check_backend_name, check_samples, check_thresholds
from .summary import Stat, Summary

__all__ = ["AttentionProbe", "CHUNK_LOGITS"]

#: Logits materialised at most per chunk (float64: 32 MiB), unless one row of
#: keys is longer (a row is never split: it is the softmax's unit).
CHUNK_LOGITS = 1 << 22
# On the CPU a chunk is filled in blocks of about 1M logits (8 MiB): smaller
# blocks keep the scale/mask passes in cache but multiply the torch calls,
# each a parallel region that waits for every thread (measured 2.5x slower
# at 2**17 on two cores shared with other work); a GPU takes one block per
# chunk (fewer launches).
_CPU_BLOCK_LOGITS = 1 << 20


# --------------------------------------------------------------------------
# every call into fastsoftmax goes through these two functions, so that the
# engine can later be swapped for a streaming accumulator in one place

def _summarize_chunk(logits: torch.Tensor, target, thresholds, backend: str,
                     config: dict) -> Summary:
    """Summary of the rows of a 2-d float64 tensor of logits (CPU: a NumPy
    view, no copy; CUDA: the device tensor itself)."""
    if logits.device.type == "cuda":
        x = logits.cpu().numpy() if backend == "cpu" else logits
    else:
        x = logits.numpy()
    s = _api.summarize(x, target=target, thresholds=thresholds, nan_policy="omit",
                       backend=backend)
    # one fixed config, so that merged summaries keep it instead of nesting
    s.config = dict(config)
    return s


def _merge(a: Summary | None, b: Summary | None) -> Summary | None:
    if a is None or b is None:
        return b if a is None else a
    return a.merge(b)


# --------------------------------------------------------------------------

class _HeadStats:
    """What the probe keeps per (module, head): the merged Summary and what
    the Summary does not carry."""

    __slots__ = ("summary", "calls", "max_logit", "nonfinite")

    def __init__(self) -> None:
        self.summary: Summary | None = None     # set by the first chunk
        self.calls = 0
        self.max_logit = -math.inf
        self.nonfinite = 0


class _Frame:
    """One module on the probe's stack of running modules."""

    __slots__ = ("module", "suspended", "root", "fused", "attn_ran")

    def __init__(self, module):
        self.module = module
        self.suspended = False      # this frame took the mode off the stack
        self.root = False           # a forward counted by ``every``
        self.fused = None           # "mha" | "encoder_layer" | "encoder" | None
        self.attn_ran = False       # an encoder layer's self_attn ran (slow path)


def _fused_kind(module) -> str | None:
    """Modules whose forward looks at ``has_torch_function`` to pick a fused
    fast path; only the stock forwards are understood."""
    t = type(module)
    if isinstance(module, nn.MultiheadAttention) and t.forward is nn.MultiheadAttention.forward:
        return "mha"
    if (isinstance(module, nn.TransformerEncoderLayer)
            and t.forward is nn.TransformerEncoderLayer.forward):
        return "encoder_layer"
    if isinstance(module, nn.TransformerEncoder) and t.forward is nn.TransformerEncoder.forward:
        return "encoder"
    return None


def _global_hooks_take_kwargs() -> bool:
    try:
        params = inspect.signature(nn.modules.module.register_module_forward_hook).parameters
    except (TypeError, ValueError):     # pragma: no cover
        return False
    return "with_kwargs" in params and "always_call" in params


def _current_mode():
    get = getattr(torch.overrides, "_get_current_function_mode", None)
    return get() if get is not None else None


_SDPA = F.scaled_dot_product_attention
_MHA_F = F.multi_head_attention_forward
_SOFTMAXES = frozenset(f for f in (F.softmax, torch.softmax, torch.Tensor.softmax,
                                   getattr(torch.special, "softmax", None)) if f is not None)
_SDPA_POSITIONAL = ("query", "key", "value", "attn_mask", "dropout_p", "is_causal")
_MHA_F_SIG = inspect.signature(_MHA_F)
_MHA_SIG = inspect.signature(nn.MultiheadAttention.forward)
_TEL_SIG = inspect.signature(nn.TransformerEncoderLayer.forward)


class _ProbeMode(TorchFunctionMode):
    """Sees every torch function call while the probe is active; only the
    attention calls are looked at, everything else passes straight through."""

    def __init__(self, probe):
        super().__init__()
        self._probe = probe
        handlers = {_SDPA: probe._on_sdpa, _MHA_F: probe._on_mha_functional}
        if probe.eager:
            handlers.update(dict.fromkeys(_SOFTMAXES, probe._on_softmax))
        self._handlers = handlers

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if kwargs is None:
            kwargs = {}
        handler = self._handlers.get(func)
        out = func(*args, **kwargs)
        # while this runs the mode is off the stack (handle_torch_function
        # pops it), so the probe's own torch calls are not intercepted
        if handler is not None and not self._probe._skipping:
            handler(args, kwargs)
        return out


class AttentionProbe:
    r"""Per-head statistics of every attention call of a model, while it runs.

    A context manager.  While it is active it sees every call of
    ``F.scaled_dot_product_attention`` (and of ``nn.MultiheadAttention`` and
    the encoder layers on their fused fast paths), rebuilds the logits
    :math:`x_{ij} = q_i \cdot k_j \cdot \text{scale} + \text{mask}_{ij}` of
    each head chunk by chunk in float64 exactly as SDPA applies scale, mask,
    causality and grouped-query heads, and summarises them with
    :func:`fastsoftmax.summarize` (per head, over the (batch, query) rows).
    The model's outputs and gradients are those without the probe.

    Parameters
    ----------
    model : torch.nn.Module, optional
        Names the calls: each call is attributed to the innermost submodule of
        ``model`` running it (``transformer.h.3.attn``), the model itself by
        its class name; ``every`` counts the model's forwards.  Without a
        model, names are relative to the outermost module running (any module
        called while nothing else runs is a "forward").  Calls outside any
        module are named ``call0``, ``call1``, ... by their order since the
        last forward started (or since the last :meth:`snapshot`).
    target : "argmax" or int, default "argmax"
        The cross-entropy target of ``fs.summarize``: ``"argmax"`` (the
        attention's own top key) or a key index (an error for a call with
        fewer keys).
    thresholds : sequence of float, default ``(1e-3, 1e-6, 1e-9)``
        Exact ``fraction_below`` thresholds (columns ``<obs>_below_<t>``).
    every : int, default 1
        Probe one forward in ``every`` (the first, then every ``every``-th);
        the other forwards run with no probe at all.
    backend : {"auto", "cpu", "cuda"}, default "auto"
        Where the logits are summarised.  "auto": on the tensor's device (CPU
        tensors through the CPU kernels, CUDA tensors on their GPU, in place);
        "cpu": CUDA chunks are copied to the host; "cuda": CPU chunks are
        copied to the GPU.  Tensors on other devices (MPS, ...) are computed on
        the CPU.
    eager : bool, default False
        Also summarise ``softmax`` over the last axis of any 4-d (batch, heads,
        queries, keys) tensor: the scores of eager attention (HF
        ``attn_implementation="eager"``), masks as the model added them.
    chunk_logits : int, default ``CHUNK_LOGITS`` (2**22)
        Logits materialised at most at a time per call (float64), or one row
        of keys if that is longer.

    Attributes
    ----------
    summaries : dict
        ``(module, head) -> Summary`` merged over calls.
    calls : dict
        ``module -> number of attention calls summarised``.
    history : pandas.DataFrame
        The frames recorded by :meth:`snapshot`, with a ``step`` column.

    Notes
    -----
    Module outputs are bitwise those without the probe: ``nn.MultiheadAttention``,
    ``nn.TransformerEncoderLayer`` and ``nn.TransformerEncoder`` choose their
    fused fast path only when no torch-function mode is active, so the probe
    steps its mode aside during their forwards (with global module hooks,
    which, unlike per-module hooks, do not disable the encoder layer's fast
    path) and summarises them from their arguments afterwards.  That needs
    global forward hooks taking keyword arguments (``with_kwargs``, which
    PyTorch 2.5 and earlier lack); there these modules take their slow path
    under the probe (covered through ``F.multi_head_attention_forward``, but
    eval-mode outputs may differ from the fast path's in the last bits).

    The mode and the module stack are those of the thread that entered the
    probe; calls from other threads are not seen.

    Examples
    --------
    >>> import torch
    >>> from fastsoftmax.torch import AttentionProbe
    >>> mha = torch.nn.MultiheadAttention(16, 2, batch_first=True)
    >>> x = torch.randn(3, 5, 16)
    >>> with AttentionProbe(mha) as probe:
    ...     out, _ = mha(x, x, x, need_weights=False)
    >>> sorted(probe.summaries)
    [('MultiheadAttention', 0), ('MultiheadAttention', 1)]
    >>> probe.summaries["MultiheadAttention", 0].samples    # 3 sequences x 5 queries
    15
    >>> df = probe.to_frame()
    >>> list(df.columns[:7])
    ['module', 'head', 'calls', 'rows', 'skipped', 'nonfinite', 'max_logit']
    """

    def __init__(self, model: nn.Module | None = None, *, target: Any = "argmax",
                 thresholds: Sequence[float] = DEFAULT_THRESHOLDS, every: int = 1,
                 backend: str = "auto", eager: bool = False,
                 chunk_logits: int = CHUNK_LOGITS) -> None:
        if model is not None and not isinstance(model, nn.Module):
            raise TypeError(f"model must be a torch.nn.Module or None, got {type(model).__name__}")
        self.model = model
        self.target = _check_target(target)
        self.thresholds = tuple(float(t) for t in check_thresholds(thresholds))
        self.every = check_samples(every, "every")
        self.backend = check_backend_name(backend)
        self.eager = bool(eager)
        self.chunk_logits = check_samples(chunk_logits, "chunk_logits")
        self._config = {"source": "fastsoftmax.torch", "target": self.target,
                        "thresholds": list(self.thresholds)}
        self._stats: dict[tuple[str, int], _HeadStats] = {}
        self._calls: dict[str, int] = {}
        self._history: list = []
        self._forwards = 0
        self._unnamed = 0
        self._active = False
        self._skipping = False
        self.peak_chunk_logits = 0     # largest chunk materialised so far

    # ---------------------------------------------------------------- results
    @property
    def summaries(self) -> dict[tuple[str, int], Summary]:
        """The Summary of each (module, head), merged over its calls.

        Returns
        -------
        dict of (str, int) to Summary
            Keys are (module name, head index).
        """
        return {k: v.summary for k, v in self._stats.items() if v.summary is not None}

    @property
    def calls(self) -> dict[str, int]:
        """The number of attention calls summarised per module.

        Returns
        -------
        dict of str to int
        """
        return dict(self._calls)

    def to_frame(self, by: str = "head") -> Any:
        """The current figures as a tidy pandas DataFrame.

        Parameters
        ----------
        by : {"head", "module"}, default "head"
            One row per (module, head), or per module with its heads' Summaries
            merged (column ``heads`` instead of ``head``).

        Returns
        -------
        pandas.DataFrame
            Columns ``module``, ``head`` (or ``heads``), ``calls`` (attention
            calls merged), ``rows`` (rows summarised), ``skipped`` (rows with
            every key masked, or with NaN/+inf logits), ``nonfinite`` (rows with
            NaN/+inf logits), ``max_logit`` (the largest finite logit: the
            figure of Wortsman et al. 2023), then ``<observable>_<statistic>``
            for every observable, as ``fastsoftmax.sweep`` names them
            (``jac_diag_max_q0.5``, ``entropy_mean``, ``max_prob_below_1e-06``).

        Raises
        ------
        ValueError
            ``by`` is neither "head" nor "module".

        Examples
        --------
        >>> import torch
        >>> import torch.nn.functional as F
        >>> from fastsoftmax.torch import AttentionProbe
        >>> q = torch.randn(2, 3, 5, 8)                 # (batch, heads, queries, E)
        >>> with AttentionProbe() as probe:
        ...     _ = F.scaled_dot_product_attention(q, q, q, is_causal=True)
        >>> df = probe.to_frame()
        >>> df[["module", "head", "rows"]].values.tolist()
        [['call0', 0, 10], ['call0', 1, 10], ['call0', 2, 10]]
        >>> probe.to_frame(by="module")["heads"].tolist()
        [3]
        """
        import pandas as pd
        if by not in ("head", "module"):
            raise ValueError(f"by must be 'head' or 'module', got {by!r}")
        rows = []
        if by == "head":
            for (module, head), st in self._stats.items():
                rows.append(self._record({"module": module, "head": head}, st.summary,
                                         st.calls, st.nonfinite, st.max_logit))
        else:
            groups: dict[str, list[_HeadStats]] = {}
            for (module, _), st in self._stats.items():
                groups.setdefault(module, []).append(st)
            for module, sts in groups.items():
                s = None
                for st in sts:
                    s = _merge(s, st.summary)
                rows.append(self._record({"module": module, "heads": len(sts)}, s,
                                         max(st.calls for st in sts),
                                         sum(st.nonfinite for st in sts),
                                         max(st.max_logit for st in sts)))
        cols = ["module", "head" if by == "head" else "heads"] + _BASE_COLUMNS \
            + _stat_columns(self.thresholds)
        return pd.DataFrame(rows, columns=cols)

    def _record(self, key, s, calls, nonfinite, max_logit):
        rec = dict(key)
        rec.update(calls=int(calls), rows=int(s.samples), skipped=int(s.skipped),
                   nonfinite=int(nonfinite), max_logit=float(max_logit))
        for name in OBS_NAMES:
            for k, v in s[name].to_dict().items():
                rec[f"{name}_{k}"] = int(v) if k == "nonfinite" else float(v)
        return rec

    def snapshot(self, step: Any = None) -> Any:
        """Append the current figures to :attr:`history` and start afresh.

        A training loop calls it every few steps to log saturation over
        training; the figures of the next steps start from empty summaries.

        Parameters
        ----------
        step : int or any, optional
            The value of the ``step`` column (default: the number of
            snapshots taken so far).

        Returns
        -------
        pandas.DataFrame
            The frame appended (:meth:`to_frame` with a ``step`` column);
            empty, and nothing appended, when nothing was probed since the
            last snapshot (a forward skipped by ``every``).

        Examples
        --------
        >>> import torch
        >>> from fastsoftmax.torch import AttentionProbe
        >>> mha = torch.nn.MultiheadAttention(8, 2, batch_first=True)
        >>> x = torch.randn(1, 4, 8)
        >>> probe = AttentionProbe(mha)
        >>> for step in range(3):
        ...     with probe:
        ...         _ = mha(x, x, x, need_weights=False)
        ...     _ = probe.snapshot(step)
        >>> probe.history["step"].tolist()
        [0, 0, 1, 1, 2, 2]
        """
        df = self.to_frame()
        if len(df):
            df.insert(0, "step", step if step is not None else len(self._history))
            self._history.append(df)
        self.reset()
        return df

    @property
    def history(self) -> Any:
        """Every frame recorded by :meth:`snapshot`, one after the other.

        Returns
        -------
        pandas.DataFrame
            The columns of :meth:`to_frame` after a ``step`` column.
        """
        import pandas as pd
        if not self._history:
            return pd.DataFrame(columns=["step"] + list(self.to_frame().columns))
        return pd.concat(self._history, ignore_index=True)

    def reset(self) -> None:
        """Drop the current figures (the history stays).

        Examples
        --------
        >>> from fastsoftmax.torch import AttentionProbe
        >>> probe = AttentionProbe()
        >>> probe.reset()
        >>> probe.summaries
        {}
        """
        self._stats = {}
        self._calls = {}
        self._unnamed = 0

    def __repr__(self):
        state = "active" if self._active else "inactive"
        return (f"AttentionProbe({state}, {len(self._calls)} modules, "
                f"{sum(self._calls.values())} calls, every={self.every})")

    # ------------------------------------------------------ context manager
    def __enter__(self) -> AttentionProbe:
        if self._active:
            raise RuntimeError("this AttentionProbe is already active")
        self._thread = threading.get_ident()
        self._stack: list[_Frame] = []
        self._off_depth = 0
        self._skipping = False
        self._unnamed = 0
        self._names = None
        if self.model is not None:
            self._names = {id(m): n for n, m in self.model.named_modules()}
        self._root_names: dict[int, tuple[Any, dict]] = {}
        self._fused_ok = _global_hooks_take_kwargs()
        mm = nn.modules.module
        self._handles = [mm.register_module_forward_pre_hook(self._pre_hook)]
        if self._fused_ok:
            self._handles.append(mm.register_module_forward_hook(
                self._post_hook, with_kwargs=True, always_call=True))
        else:
            self._handles.append(mm.register_module_forward_hook(
                self._post_hook, always_call=True))
        self._mode = _ProbeMode(self)
        try:
            self._mode.__enter__()
        except BaseException:
            self._remove_hooks()
            raise
        self._active = True
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self._active = False
        self._remove_hooks()
        if self._off_depth:
            # left from inside a module's forward while the mode was stepped aside
            self._off_depth = 0
        else:
            self._mode.__exit__(exc_type, exc, tb)
        self._stack = []
        self._skipping = False

    def _remove_hooks(self):
        for h in self._handles:
            h.remove()
        self._handles = []

    # ---------------------------------------------------- mode stepping aside
    def _suspend(self) -> bool:
        """Take the mode off the stack (nested: counted); False when another
        mode is above it (then it stays, and the module takes its slow path
        under the mode)."""
        if self._off_depth:
            self._off_depth += 1
            return True
        if _current_mode() is not self._mode:
            return False
        self._mode.__exit__(None, None, None)
        self._off_depth = 1
        return True

    def _resume(self) -> None:
        self._off_depth -= 1
        if self._off_depth == 0:
            self._mode.__enter__()

    # ------------------------------------------------------------ module hooks
    def _pre_hook(self, module, args):
        if threading.get_ident() != self._thread:
            return None
        st = self._stack
        fr = _Frame(module)
        if (not st if self.model is None
                else module is self.model and not any(f.root for f in st)):
            # a forward (of the model, also inside a wrapper such as DataParallel)
            fr.root = True
            self._unnamed = 0
            skip = self._forwards % self.every != 0
            self._forwards += 1
            if skip:
                self._skipping = True
                fr.suspended = self._suspend()
        if not self._skipping:
            if st and st[-1].fused == "encoder_layer" and module is st[-1].module.self_attn:
                st[-1].attn_ran = True
            if self._fused_ok:
                fr.fused = _fused_kind(module)
                if fr.fused is not None and not fr.suspended:
                    fr.suspended = self._suspend()
        st.append(fr)
        return None

    def _post_hook(self, module, args, *rest):
        # (module, args, kwargs, output) normally; (module, args, output) when
        # the forward raised (always_call): then only the stack is unwound
        if threading.get_ident() != self._thread:
            return None
        st = self._stack
        if not st or st[-1].module is not module:
            return None         # entered mid-forward: this pre-hook was not seen
        fr = st[-1]
        try:
            if (len(rest) == 2 and fr.fused is not None and fr.suspended
                    and not self._skipping):
                self._on_fused_module(fr, args, rest[0])
        finally:
            st.pop()
            if fr.suspended:
                self._resume()
            if fr.root:
                self._skipping = False
        return None

    # ----------------------------------------------------------------- names
    def _qualname(self, module) -> str | None:
        """Qualified name of a module ('' for the root), None if unknown."""
        if self._names is not None:
            return self._names.get(id(module))
        root = self._stack[0].module
        hit = self._root_names.get(id(root))
        if hit is None or hit[0] is not root:
            hit = (root, {id(m): n for n, m in root.named_modules()})
            self._root_names[id(root)] = hit
        return hit[1].get(id(module))

    def _display(self, qual: str) -> str:
        if qual:
            return qual
        root = self.model if self.model is not None else self._stack[0].module
        return type(root).__name__

    def _call_name(self) -> str:
        for fr in reversed(self._stack):
            q = self._qualname(fr.module)
            if q is not None:
                return self._display(q)
        name = f"call{self._unnamed}"
        self._unnamed += 1
        return name

    def _module_name(self, module, suffix: str = "") -> str:
        q = self._qualname(module)
        if q is None:
            return self._call_name()
        if suffix:
            q = f"{q}.{suffix}" if q else suffix
        return self._display(q)

    # -------------------------------------------------------------- handlers
    def _on_sdpa(self, args, kwargs):
        a = dict(zip(_SDPA_POSITIONAL, args))
        a.update(kwargs)
        q, k = a["query"], a["key"]
        mask = a.get("attn_mask")
        scale = a.get("scale")
        if scale is None:
            scale = 1.0 / math.sqrt(q.size(-1))
        masks = [] if mask is None else [(mask, mask.dtype == torch.bool)]
        self._attention(self._call_name(), q, k, masks, bool(a.get("is_causal", False)),
                        float(scale), bool(a.get("enable_gqa", False)))

    def _on_mha_functional(self, args, kwargs):
        bound = _MHA_F_SIG.bind(*args, **kwargs)
        bound.apply_defaults()
        a: dict[str, Any] = bound.arguments
        name = self._call_name()
        spec = _mha_logit_inputs(
            a["query"], a["key"], a["num_heads"], a["in_proj_weight"], a["in_proj_bias"],
            a["bias_k"], a["add_zero_attn"], a["key_padding_mask"], a["need_weights"],
            a["attn_mask"], a["use_separate_proj_weight"], a["q_proj_weight"],
            a["k_proj_weight"], a["static_k"], a["is_causal"])
        self._attention(name, *spec, gqa=False)

    def _on_softmax(self, args, kwargs):
        x = args[0] if args else kwargs.get("input")
        dim = kwargs.get("dim", args[1] if len(args) > 1 else None)
        if (not isinstance(x, torch.Tensor) or x.dim() != 4 or dim not in (-1, 3)
                or not x.is_floating_point()):
            return
        self._scores(self._call_name(), x)

    def _on_fused_module(self, fr, args, kwargs):
        m = fr.module
        if fr.fused == "mha":
            bound = _MHA_SIG.bind(m, *args, **kwargs)
            bound.apply_defaults()
            a: dict[str, Any] = bound.arguments
            name = self._module_name(m)
            for i, (query, key, kpm, am) in enumerate(_unnest(
                    a["query"], a["key"], a["key_padding_mask"], a["attn_mask"])):
                if m.batch_first and query.dim() == 3:
                    query, key = query.transpose(0, 1), key.transpose(0, 1)
                spec = _mha_logit_inputs(
                    query, key, m.num_heads, m.in_proj_weight, m.in_proj_bias, m.bias_k,
                    m.add_zero_attn, kpm, a["need_weights"], am, m.in_proj_weight is None,
                    m.q_proj_weight, m.k_proj_weight, None, a["is_causal"])
                self._attention(name, *spec, gqa=False, count=i == 0)
        elif fr.fused == "encoder_layer" and not fr.attn_ran:
            # the fused fast path ran: self_attn was never called
            bound = _TEL_SIG.bind(m, *args, **kwargs)
            bound.apply_defaults()
            a = bound.arguments
            attn = m.self_attn
            name = self._module_name(m, "self_attn")
            for i, (src, _, kpm, am) in enumerate(_unnest(
                    a["src"], a["src"], a["src_key_padding_mask"], a["src_mask"])):
                x = src.detach().to(torch.float64)
                if m.norm_first:
                    n1 = m.norm1
                    x = F.layer_norm(x, n1.normalized_shape, _f64(n1.weight), _f64(n1.bias),
                                     n1.eps)
                if attn.batch_first and x.dim() == 3:
                    x = x.transpose(0, 1)
                spec = _mha_logit_inputs(
                    x, x, attn.num_heads, attn.in_proj_weight, attn.in_proj_bias, attn.bias_k,
                    attn.add_zero_attn, kpm, False, am, attn.in_proj_weight is None,
                    attn.q_proj_weight, attn.k_proj_weight, None, a["is_causal"])
                self._attention(name, *spec, gqa=False, count=i == 0)

    # ------------------------------------------------------------ the work
    def _attention(self, name, q, k, masks, causal, scale, gqa, count=True):
        """Summarise SDPA's logits per head; see the module docstring."""
        with torch.no_grad():
            q, k = q.detach(), k.detach()
            while q.dim() < 3:
                q = q.unsqueeze(0)
            while k.dim() < 3:
                k = k.unsqueeze(0)
            L, E = q.shape[-2], q.shape[-1]
            S = k.shape[-2]
            hq, hk = q.shape[-3], k.shape[-3]
            rep = hq // hk if gqa and hk != hq and hk > 0 else 1
            k_shape = k.shape[:-3] + (hk * rep,) + k.shape[-2:]
            masks = [(m.detach(), is_bool) for m, is_bool in masks]
            batch_heads = torch.broadcast_shapes(q.shape[:-2], k_shape[:-2],
                                                 *(m.shape[:-2] for m, _ in masks))
            lead, H = tuple(batch_heads[:-1]), batch_heads[-1]
            qe = q.expand(lead + (H, L, E))
            ke = k.expand(lead + (hk if rep > 1 else H, S, k.shape[-1]))
            me = [(m.expand(lead + (H, L, S)), b) for m, b in masks]
            device = self._device(q)
            dt = torch.float64
            kcache: dict[str, Any] = {}
            tri_cache: dict[str, Any] = {}

            def tri(n, w):
                t = tri_cache.get("t")
                if t is None or t.shape[0] < n or t.shape[1] < w:
                    # one pattern per call, at most one block's size
                    shape = (n, w) if t is None else (max(n, t.shape[0]), max(w, t.shape[1]))
                    t = tri_cache["t"] = torch.ones(shape, dtype=torch.bool,
                                                    device=device).triu_(1)
                return t[:n, :w]

            # contiguous float64 copies: a cast that keeps a strided layout (q, k
            # are often permuted views of one projection) is up to 100x slower
            # with several threads, and BLAS wants plain rows anyway
            cf = torch.contiguous_format

            def fill(out, b, h, l0, n):
                kv = h // rep if rep > 1 else h
                if kcache.get("key") != (b, kv):
                    kcache["key"] = (b, kv)
                    kcache["kT"] = ke[b][kv].to(device=device, dtype=dt, memory_format=cf).t()
                qb = qe[b][h][l0:l0 + n].to(device=device, dtype=dt, memory_format=cf)
                torch.matmul(qb, kcache["kT"], out=out)
                out.mul_(scale)
                for m, is_bool in me:
                    mb = m[b][h][l0:l0 + n].to(device)
                    if is_bool:
                        out.masked_fill_(mb.logical_not(), -math.inf)
                    else:
                        out.add_(mb)
                if causal:
                    # query l0 + i sees keys j <= l0 + i: keys from l0 + n on are
                    # masked for every row of the block, keys in [l0, l0 + n)
                    # by a strict upper triangle, keys before l0 for none
                    if l0 + n < S:
                        out[:, l0 + n:].fill_(-math.inf)
                    if l0 < S:
                        w = min(n, S - l0)
                        out[:, l0:l0 + w].masked_fill_(tri(n, w), -math.inf)

            self._run_heads(name, H, lead, L, S, device, fill, count)

    def _scores(self, name, x):
        """Summarise a (batch, heads, queries, keys) score tensor per head."""
        with torch.no_grad():
            x = x.detach()
            B, H, L, S = x.shape
            device = self._device(x)

            def fill(out, b, h, l0, n):
                out.copy_(x[b[0], h, l0:l0 + n])

            self._run_heads(name, H, (B,), L, S, device, fill)

    def _device(self, t):
        if t.device.type == "cuda":
            return t.device
        if t.device.type == "cpu" or self.backend != "cuda":
            return torch.device("cpu")
        return torch.device("cuda")

    def _run_heads(self, name, H, lead, L, S, device, fill: Callable, count: bool = True):
        """Rows of each head, (batch, query) order, in chunks of at most
        ``chunk_logits`` logits (one row at least), each summarised and
        merged into the head's figures."""
        self._calls[name] = self._calls.get(name, 0) + int(count)
        batches = list(itertools.product(*(range(n) for n in lead)))
        nrows = len(batches) * L
        if nrows == 0:
            return
        if isinstance(self.target, int) and self.target >= S:
            raise ValueError(f"target={self.target} is out of range for the {S} keys of "
                             f"the attention call {name!r}")
        if S == 0:
            # no key at all: every row is skipped, as a row whose keys are all masked
            for h in range(H):
                empty = torch.full((nrows, 1), -math.inf, dtype=torch.float64)
                self._add(name, h, _summarize_chunk(empty, "argmax", self.thresholds,
                                                    self.backend, self._config),
                          -math.inf, 0, new_call=count)
            return
        cap = max(1, min(nrows, self.chunk_logits // S))
        blk = cap if device.type == "cuda" else max(1, min(cap, _CPU_BLOCK_LOGITS // S))
        buf = torch.empty((cap, S), dtype=torch.float64, device=device)
        self.peak_chunk_logits = max(self.peak_chunk_logits, cap * S)
        for h in range(H):
            mx = -math.inf
            nonfinite = 0
            summary = None
            filled = 0
            for b in batches:
                l0 = 0
                while l0 < L:
                    n = min(L - l0, cap - filled, blk)
                    out = buf[filled:filled + n]
                    fill(out, b, h, l0, n)
                    m = float(out.amax())
                    if not m < math.inf:
                        # NaN or +inf somewhere (amax propagates NaN): count
                        # those rows (summarize skips them) and take the
                        # largest finite logit
                        nonfinite += int((out.isnan() | out.isposinf()).any(dim=1).sum())
                        fin = out[torch.isfinite(out)]
                        m = float(fin.max()) if fin.numel() else -math.inf
                    mx = max(mx, m)
                    filled += n
                    l0 += n
                    if filled == cap:
                        summary = _merge(summary, self._chunk(buf))
                        filled = 0
            if filled:
                summary = _merge(summary, self._chunk(buf[:filled]))
            self._add(name, h, summary, mx, nonfinite, new_call=count)

    def _chunk(self, logits):
        return _summarize_chunk(logits, self.target, self.thresholds, self.backend,
                                self._config)

    def _add(self, name, head, summary, max_logit, nonfinite, new_call):
        st = self._stats.get((name, head))
        if st is None:
            st = self._stats[(name, head)] = _HeadStats()
        st.summary = _merge(st.summary, summary)
        st.calls += int(new_call)
        st.max_logit = max(st.max_logit, max_logit)
        st.nonfinite += nonfinite


# --------------------------------------------------------------------------
# nn.MultiheadAttention's logits, as F.multi_head_attention_forward defines them

def _f64(t):
    return None if t is None else t.detach().to(torch.float64)


def _unnest(query, key, kpm, attn_mask) -> Iterable[tuple]:
    """Nested (jagged) inputs of the fused fast paths, as one batch-1 input per
    sequence (they come without masks); plain inputs as they are."""
    if not query.is_nested:
        yield query, key, kpm, attn_mask
        return
    keys = key.unbind() if key is not query else None
    for i, qi in enumerate(query.unbind()):
        ki = qi if keys is None else keys[i]
        yield qi.unsqueeze(0), ki.unsqueeze(0), None, None


def _mha_logit_inputs(query, key, num_heads, in_proj_weight, in_proj_bias, bias_k,
                      add_zero_attn, key_padding_mask, need_weights, attn_mask,
                      use_separate_proj_weight, q_proj_weight, k_proj_weight, static_k,
                      is_causal) -> tuple[Any, Any, list, bool, float]:
    """(q, k, masks, causal, scale) in SDPA's terms for an MHA call given in
    F.multi_head_attention_forward's layout ((L, N, E) or unbatched (L, E)).

    q, k: (N, H, L, head_dim) float64 projections; masks: SDPA convention
    (bool True = attend, float added), broadcastable to (N, H, L, S).
    """
    if query.dim() == 2:
        query, key = query.unsqueeze(1), key.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    L, N, E = query.shape
    H = num_heads
    hd = E // H
    if use_separate_proj_weight:
        wq, wk = q_proj_weight, k_proj_weight
    else:
        wq, wk, _ = in_proj_weight.chunk(3)
    bq = bk = None
    if in_proj_bias is not None:
        bq, bk, _ = in_proj_bias.chunk(3)
    q = F.linear(_f64(query), _f64(wq), _f64(bq))
    q = q.view(L, N, H, hd).permute(1, 2, 0, 3)
    if static_k is not None:
        k = _f64(static_k).view(N, H, -1, hd)
    else:
        k = F.linear(_f64(key), _f64(wk), _f64(bk))
        if bias_k is not None:
            k = torch.cat([k, _f64(bias_k).repeat(1, N, 1)])
        k = k.view(k.shape[0], N, H, hd).permute(1, 2, 0, 3)
    extra = 0
    if static_k is None and bias_k is not None:
        extra += 1
    if add_zero_attn:
        k = torch.cat([k, k.new_zeros((N, H, 1, hd))], dim=2)
        extra += 1
    S = k.shape[2]

    causal = False
    if is_causal and attn_mask is not None and key_padding_mask is None and not need_weights:
        # the hint stands for the mask (F.multi_head_attention_forward passes
        # is_causal=True to SDPA instead of the mask)
        attn_mask, causal = None, True
    # is_causal without a mask: the slow path raises, so the fast path ran, and
    # it ignores the hint

    masks = []
    if attn_mask is not None:
        am = attn_mask.detach()
        am = am.view(1, 1, L, S - extra) if am.dim() == 2 else am.view(N, H, L, S - extra)
        masks.append(_mha_mask(am, extra))
    if key_padding_mask is not None:
        kp = key_padding_mask.detach().view(N, 1, 1, S - extra)
        masks.append(_mha_mask(kp, extra))
    return q, k, masks, causal, 1.0 / math.sqrt(hd)


def _mha_mask(m, extra):
    """An MHA mask (bool True = masked out, or float added) in SDPA's terms,
    widened by the always-attended extra keys (bias_k, add_zero_attn)."""
    if m.dtype == torch.bool:
        m = m.logical_not()
        if extra:
            m = F.pad(m, (0, extra), value=True)
        return m, True
    if extra:
        m = F.pad(m, (0, extra), value=0.0)
    return m, False


# --------------------------------------------------------------------------
# argument checks and column names

_BASE_COLUMNS = ["calls", "rows", "skipped", "nonfinite", "max_logit"]


def _stat_columns(thresholds) -> list[str]:
    """The sweep's observable columns (``<obs>_<key>``, keys of ``Stat.to_dict``)."""
    return [f"{name}_{k}" for name in OBS_NAMES for k in Stat.keys(thresholds)]


def _check_target(target):
    if isinstance(target, str):
        if target != "argmax":
            raise ValueError(f"target must be 'argmax' or a non-negative key index, got "
                             f"{target!r} (attention has no labels to draw from)")
        return target
    if isinstance(target, (numbers.Integral, np.integer)) and not isinstance(target, bool):
        if int(target) < 0:
            raise ValueError(f"target must be a non-negative key index, got {int(target)}")
        return int(target)
    raise TypeError(f"target must be 'argmax' or an int key index, got {target!r}")
