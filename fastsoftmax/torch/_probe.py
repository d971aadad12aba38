r"""The probe: a context manager that names the attention calls of a model,
counts its forwards, and keeps per-head figures (see the package docstring)."""
from __future__ import annotations

import logging
import numbers
import threading
import warnings
from typing import Any, Sequence

import numpy as np
import torch
from torch import nn

from .._config import DEFAULT_THRESHOLDS
from .._inputs import check_backend_name, check_samples, check_thresholds
from ..summary import Summary
from . import _intercept as _ic
from . import _logits as _lg
from ._aggregate import Aggregator
from ._logging import log_probe
from ._warmup import warm_kernels

__all__ = ["AttentionProbe", "CHUNK_LOGITS", "STATISTICS"]

#: Logits materialised at most per chunk (float64: 32 MiB), unless one row of
#: keys is longer (a row is never split: it is the softmax's unit).
CHUNK_LOGITS = 1 << 22
#: The probe's modes: every statistic (float64 Summaries), or the light mode.
STATISTICS = ("full", "max_logit")

_log = logging.getLogger("fastsoftmax.torch")
# graphs torch.compile builds and calls: never a module of the model
_GraphModule = torch.fx.GraphModule
# torch warns on every call of a torch.compile wrapper while global hooks are
# registered that they fire for the wrapper too; the probe counts the wrapper
# and the module it wraps as one (``_orig``), so that warning is not the user's
_HOOKS_MESSAGE = r"Using `torch.compile\(module\)` when there are global hooks"


class _Frame:
    """One module on the probe's stack of running modules."""

    __slots__ = ("module", "suspended", "root", "fused", "attn_ran", "seen")

    def __init__(self, module):
        self.module = module
        self.suspended = False      # this frame took the mode off the stack
        self.root = False           # a forward counted by ``every``
        self.fused = None           # "mha" | "encoder_layer" | "encoder" | None
        self.attn_ran = False       # an encoder layer's self_attn ran (slow path)
        self.seen = 0               # attention calls seen when the frame began


def _orig(module):
    """The module a ``torch.compile`` wrapper (OptimizedModule) stands for."""
    return getattr(module, "_orig_mod", module)


class AttentionProbe:
    r"""Per-head statistics of every attention call of a model, while it runs.

    A context manager.  While it is active it sees every call of
    ``F.scaled_dot_product_attention``, ``flex_attention`` (its ``score_mod``
    and block mask applied) and of ``nn.MultiheadAttention`` and the encoder
    layers on their fused fast paths, eager or ``torch.compile``\ d, rebuilds
    the logits :math:`x_{ij} = q_i \cdot k_j \cdot \text{scale} +
    \text{mask}_{ij}` of each head chunk by chunk in float64 exactly as the
    attention defines them, and summarises them with
    :func:`fastsoftmax.summarize` (per head, over the (batch, query) rows of
    real tokens: padding rows are skipped).  The model's outputs and
    gradients are those without the probe.

    Parameters
    ----------
    model : torch.nn.Module, optional
        Names the calls: each call is attributed to the innermost submodule of
        ``model`` running it (``transformer.h.3.attn``), the model itself by
        its class name; ``every`` counts the model's forwards (also through
        its ``torch.compile`` wrapper).  Without a model, names are relative
        to the outermost module running (any module called while nothing else
        runs is a "forward").  Calls outside any module are named ``call0``,
        ``call1``, ... by their order since the last forward started (or since
        the last :meth:`snapshot`).
    target : "argmax" or int, default "argmax"
        The cross-entropy target of ``fs.summarize``: ``"argmax"`` (the
        attention's own top key) or a key index (an error for a call with
        fewer keys).
    thresholds : sequence of float, default ``(1e-3, 1e-6, 1e-9)``
        Exact ``fraction_below`` thresholds (columns ``<obs>_below_<t>``).
    every : int, default 1
        Probe one forward in ``every`` (the first, then every ``every``-th).
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
        Logits materialised at most at a time per call, or one row of keys if
        that is longer.
    statistics : {"full", "max_logit"}, default "full"
        "full": every observable's Summary from the float64 logits.
        "max_logit": the light mode for QK-clip style control: per (module,
        head) the largest logit and the row count only, computed in the
        model's dtype on its device with no host synchronisation
        (:attr:`max_logits`); :attr:`summaries` is then empty.
    query_mask : torch.Tensor, optional
        (batch, queries) bool, True for a real token's query: the rows to
        summarise of every call whose batch and query count match it, for
        what the padding rule cannot see (a cross-attention decoder's padded
        queries, packed sequences).  Settable between forwards
        (``probe.query_mask = mask``).

    Attributes
    ----------
    summaries : dict
        ``(module, head) -> Summary`` merged over calls.
    calls : dict
        ``module -> number of attention calls summarised``.
    history : pandas.DataFrame
        The frames recorded by :meth:`snapshot`, with a ``step`` column.

    Raises
    ------
    ValueError, TypeError
        A bad argument (an unknown ``statistics``, ``every`` < 1, a query mask
        that is not a 2-d bool tensor, ...), before any forward runs.

    Notes
    -----
    Padding: in self-attention (as many queries as keys) a query whose own
    key is masked is padding (a real token always sees itself); padding rows
    count as ``skipped``, with any row whose every key is masked.  The same
    sequences give the same rows and statistics padded left or right, batched
    or one by one, in train mode or on eval's nested tensors.

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
    probe; calls from other threads are not seen.  Under ``torch.distributed``
    :meth:`snapshot` is a collective: every rank must call it.

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
                 chunk_logits: int = CHUNK_LOGITS, statistics: str = "full",
                 query_mask: torch.Tensor | None = None) -> None:
        if model is not None and not isinstance(model, nn.Module):
            raise TypeError(f"model must be a torch.nn.Module or None, got {type(model).__name__}")
        if statistics not in STATISTICS:
            raise ValueError(f"statistics must be one of {STATISTICS}, got {statistics!r}")
        self.model = _orig(model) if model is not None else None
        self.target = _check_target(target)
        self.thresholds = tuple(float(t) for t in check_thresholds(thresholds))
        self.every = check_samples(every, "every")
        self.backend = check_backend_name(backend)
        self.eager = bool(eager)
        self.chunk_logits = check_samples(chunk_logits, "chunk_logits")
        self.statistics = statistics
        self._query_mask: torch.Tensor | None = None
        self.query_mask = query_mask
        self._agg = self._new_aggregator()
        self._history: list = []
        self._forwards = 0
        self._unnamed = 0
        self._active = False
        self._skipping = False
        self._seen = 0              # attention calls summarised since the probe was made
        self._warned: set[str] = set()
        self._mode: _ic.ProbeMode | None = None
        self._pre_fn: Any = None
        self._post_fn: Any = None
        self._hook_ids: tuple[int, int] | None = None
        self._handles: list[tuple[Any, Any]] = []
        self._filter: Any = None

    def _new_aggregator(self) -> Aggregator:
        return Aggregator(self.target, self.thresholds, self.backend, self.chunk_logits,
                          self.statistics == "max_logit")

    @property
    def query_mask(self) -> torch.Tensor | None:
        """The explicit query mask, or None (the padding rule alone).

        A (batch, queries) bool tensor, True for a real token's query.

        Returns
        -------
        torch.Tensor or None
        """
        return self._query_mask

    @query_mask.setter
    def query_mask(self, mask: torch.Tensor | None) -> None:
        if mask is not None:
            if not isinstance(mask, torch.Tensor):
                raise TypeError(f"query_mask must be a torch.Tensor or None, got "
                                f"{type(mask).__name__}")
            if mask.dtype != torch.bool:
                raise TypeError(f"query_mask must be a bool tensor (True = a real token's "
                                f"query), got dtype {mask.dtype}")
            if mask.dim() != 2:
                raise ValueError(f"query_mask must have shape (batch, queries), got shape "
                                 f"{tuple(mask.shape)}")
            mask = mask.detach()
        self._query_mask = mask

    # ---------------------------------------------------------------- results
    @property
    def summaries(self) -> dict[tuple[str, int], Summary]:
        """The Summary of each (module, head), merged over its calls.

        Empty in the light mode.

        Returns
        -------
        dict of (str, int) to Summary
            Keys are (module name, head index).
        """
        return {k: v.summary for k, v in self._agg.stats.items() if v.summary is not None}

    @property
    def max_logits(self) -> dict[str, torch.Tensor]:
        """The largest logit of each head, per module: a (heads,) tensor.

        Light mode: in the model's dtype on its device, not synchronised;
        full mode: float64 on the CPU; -inf for a head with no finite logit.

        Returns
        -------
        dict of str to torch.Tensor

        Examples
        --------
        >>> import torch
        >>> import torch.nn.functional as F
        >>> from fastsoftmax.torch import AttentionProbe
        >>> q = torch.ones(1, 2, 3, 4)
        >>> with AttentionProbe(statistics="max_logit") as probe:
        ...     _ = F.scaled_dot_product_attention(q, q, q, scale=1.0)
        >>> probe.max_logits["call0"]
        tensor([4., 4.])
        """
        per: dict[str, dict[int, Any]] = {}
        for (module, head), st in self._agg.stats.items():
            per.setdefault(module, {})[head] = st.max_logit
        out = {}
        for module, heads in per.items():
            vals = [heads[h] for h in sorted(heads)]
            if all(isinstance(v, torch.Tensor) for v in vals):
                out[module] = torch.stack(vals)
            else:
                out[module] = torch.tensor([float(v) for v in vals], dtype=torch.float64)
        return out

    @property
    def calls(self) -> dict[str, int]:
        """The number of attention calls summarised per module.

        Returns
        -------
        dict of str to int
        """
        return dict(self._agg.calls)

    @property
    def peak_chunk_logits(self) -> int:
        """The largest chunk of logits materialised so far.

        Returns
        -------
        int
        """
        return self._agg.peak_chunk_logits

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
            calls merged), ``rows`` (rows summarised), ``skipped`` (padding
            rows, rows with every key masked, or with NaN/+inf logits),
            ``nonfinite`` (rows with NaN/+inf logits), ``max_logit`` (the
            largest finite logit: the figure of Wortsman et al. 2023), then
            ``Summary.record_columns`` (``<observable>_<statistic>``, as
            ``fastsoftmax.sweep`` names them: ``jac_diag_max_q0.5``,
            ``entropy_mean``, ``max_prob_below_1e-06``).  The light mode has
            ``module``, ``head``, ``calls``, ``rows``, ``max_logit`` only.

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
        self._flush()
        return pd.DataFrame(self._agg.records(by), columns=self._agg.columns(by))

    def log(self, writer: Any, step: int, *, prefix: str = "attention",
            histograms: bool = False) -> dict[str, float]:
        """Write the current figures to a SummaryWriter-like object.

        The same as :func:`fastsoftmax.torch.log_probe` of this probe: one
        ``writer.add_scalar(tag, value, step)`` per module and key scalar
        (largest logit, median log10 jac_diag_max, mean entropy, fraction of
        rows with jac_diag_max below 1e-6), tags ``<prefix>/<module>/<column>``.
        Call it before :meth:`snapshot`, which starts the figures afresh.

        Parameters
        ----------
        writer : object
            Anything with ``add_scalar(tag, value, step)`` (and
            ``add_histogram`` for ``histograms``).
        step : int
            The global step of the scalars.
        prefix : str, default "attention"
            The first part of every tag.
        histograms : bool, default False
            Also write histograms of log10 jac_diag_max per module.

        Returns
        -------
        dict of str to float
            The scalars written (empty when nothing was probed).

        Examples
        --------
        >>> import torch
        >>> from fastsoftmax.torch import AttentionProbe
        >>> class Writer:
        ...     def __init__(self):
        ...         self.tags = []
        ...     def add_scalar(self, tag, value, step):
        ...         self.tags.append(tag)
        >>> mha = torch.nn.MultiheadAttention(8, 2, batch_first=True)
        >>> x = torch.randn(2, 5, 8)
        >>> with AttentionProbe(mha) as probe:
        ...     _ = mha(x, x, x, need_weights=False)
        >>> w = Writer()
        >>> _ = probe.log(w, step=0)
        >>> w.tags[0]
        'attention/MultiheadAttention/max_logit'
        """
        return log_probe(self, writer, step, prefix=prefix, histograms=histograms)

    def snapshot(self, step: Any = None) -> Any:
        """Append the current figures to :attr:`history` and start afresh.

        Under ``torch.distributed`` (initialised, more than one rank) this is
        a collective: every rank sends its figures to every other, and every
        rank appends and returns the merge over ranks (Summaries merge
        exactly: the same as one process probing the whole batch).

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
        self._flush()
        dist = getattr(torch, "distributed", None)
        if dist is not None and dist.is_available() and dist.is_initialized() \
                and dist.get_world_size() > 1:
            states: list = [None] * dist.get_world_size()
            dist.all_gather_object(states, self._agg.to_state())
            merged = self._new_aggregator()
            for st in states:
                merged.add_state(st)
            self._agg = merged
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
        self._agg = self._new_aggregator()
        self._unnamed = 0

    def __repr__(self):
        state = "active" if self._active else "inactive"
        calls = self._agg.calls
        return (f"AttentionProbe({state}, {len(calls)} modules, "
                f"{sum(calls.values())} calls, every={self.every}, "
                f"statistics={self.statistics!r})")

    # ------------------------------------------------------ context manager
    def __enter__(self) -> AttentionProbe:
        if self._active:
            raise RuntimeError("this AttentionProbe is already active")
        if (self.every > 1 and self.model is not None
                and getattr(self.model, "_compiled_call_impl", None) is not None):
            raise ValueError(
                "every > 1 cannot count the forwards of a model compiled in place "
                "(model.compile() compiles its module hooks away): compile a wrapper "
                "instead, model_c = torch.compile(model), and call model_c under the probe")
        if self.statistics == "full":
            warm_kernels()
        self._thread = threading.get_ident()
        self._stack: list[_Frame] = []
        self._off_depth = 0
        self._skipping = False
        self._unnamed = 0
        self._names = None
        if self.model is not None:
            self._names = {id(m): n for n, m in self.model.named_modules()}
        self._root_names: dict[int, tuple[Any, dict]] = {}
        self._fused_ok = _ic.global_hooks_take_kwargs()
        self._entered_seen, self._entered_forwards = self._seen, self._forwards
        self._add_hooks()
        if self._mode is None:
            # one mode per probe: compiled graphs guard on the mode object, so a
            # new one at every entry would recompile every probed forward
            self._mode = _ic.ProbeMode(self._dispatch, self.eager)
            self._on_fused = torch.compiler.disable(self._on_fused_module)
        try:
            self._mode.__enter__()
        except BaseException:
            self._remove_hooks()
            raise
        warnings.filterwarnings("ignore", message=_HOOKS_MESSAGE, category=UserWarning)
        self._filter = warnings.filters[0]
        self._active = True
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self._active = False
        self._remove_hooks()
        if self._off_depth:
            # left from inside a module's forward while the mode was stepped aside
            self._off_depth = 0
        elif self._mode is not None:
            self._mode.__exit__(exc_type, exc, tb)
        self._stack = []
        self._skipping = False
        self._flush()
        if (exc_type is None and self.model is not None and self._seen == self._entered_seen
                and self._forwards == self._entered_forwards):
            # no forward of the model was recognised (hooks compiled away) and
            # no attention was seen: say so once
            self._no_attention(self.model)

    def _flush(self) -> None:
        mode = getattr(self, "_mode", None)
        if mode is not None and mode.pending:
            skipping, self._skipping = self._skipping, False
            try:
                mode.flush()
            finally:
                self._skipping = skipping

    def _no_attention(self, module) -> None:
        name = type(module).__name__ if module is not None else "the code in the probe"
        if name in self._warned:
            return
        self._warned.add(name)
        impl = getattr(getattr(module, "config", None), "_attn_implementation", None)
        if impl == "eager" and not self.eager:
            why = "its attention is eager (a softmax of scores): pass eager=True"
        elif impl is not None and "flash" in str(impl):
            why = (f"attn_implementation={impl!r} calls the flash_attn kernels directly, "
                   "which no torch-function mode can see: use 'sdpa' (or 'eager' with "
                   "eager=True) for the probed steps")
        else:
            why = ("it calls no scaled_dot_product_attention, flex_attention, "
                   "nn.MultiheadAttention or encoder layer (eager attention needs "
                   "eager=True; flash_attention_2 and other fused kernels called directly "
                   "cannot be seen, nor compiled nn.MultiheadAttention or encoder layers on "
                   "their fused fast path, in eval mode without grad)")
        warnings.warn(f"AttentionProbe saw no attention in a probed forward of {name}: {why}",
                      RuntimeWarning, stacklevel=3)

    def _add_hooks(self) -> None:
        """The global hooks, under the same ids at every entry: compiled graphs
        guard on the ids of the global hooks, so new ones would recompile
        every probed forward."""
        mm = nn.modules.module
        ids = self._hook_ids
        dicts = ("_global_forward_pre_hooks", "_global_forward_hooks",
                 "_global_forward_hooks_with_kwargs", "_global_forward_hooks_always_called")
        if ids is not None and all(isinstance(getattr(mm, d, None), dict) for d in dicts):
            pre_id, post_id = ids
            mm._global_forward_pre_hooks[pre_id] = self._pre_fn
            mm._global_forward_hooks[post_id] = self._post_fn
            if self._fused_ok:
                mm._global_forward_hooks_with_kwargs[post_id] = True
            mm._global_forward_hooks_always_called[post_id] = True
            self._handles = [(mm._global_forward_pre_hooks, pre_id),
                             (mm._global_forward_hooks, post_id)]
            return
        # bound once: the graphs guard on the hook objects too
        self._pre_fn, self._post_fn = self._pre_hook, self._post_hook
        hs = [mm.register_module_forward_pre_hook(self._pre_fn)]
        if self._fused_ok:
            hs.append(mm.register_module_forward_hook(
                self._post_fn, with_kwargs=True, always_call=True))
        else:
            hs.append(mm.register_module_forward_hook(self._post_fn, always_call=True))
        self._hook_ids = (hs[0].id, hs[1].id)
        self._handles = [(None, h) for h in hs]

    def _remove_hooks(self):
        mm = nn.modules.module
        for d, h in self._handles:
            if d is None:
                h.remove()
                hid = h.id
            else:
                d.pop(h, None)
                hid = h
            # torch's handle forgets the with_kwargs entry of a global hook
            # (a leftover makes torch.compile wrappers warn ever after)
            for extra in ("_global_forward_hooks_with_kwargs",
                          "_global_forward_hooks_always_called"):
                getattr(mm, extra, {}).pop(hid, None)
        self._handles = []
        filt = getattr(self, "_filter", None)
        filters: Any = warnings.filters
        if filt is not None and filt in filters:
            filters.remove(filt)
            warnings._filters_mutated()      # type: ignore[attr-defined]
        self._filter = None

    # ---------------------------------------------------- mode stepping aside
    def _suspend(self) -> bool:
        """Take the mode off the stack (nested: counted); False when another
        mode is above it (then it stays, and the module takes its slow path
        under the mode)."""
        if self._off_depth:
            self._off_depth += 1
            return True
        if _ic.current_mode() is not self._mode:
            return False
        self._mode.__exit__(None, None, None)
        self._off_depth = 1
        return True

    def _resume(self) -> None:
        self._off_depth -= 1
        if self._off_depth == 0 and self._mode is not None:
            self._mode.__enter__()

    # ------------------------------------------------------------ module hooks
    def _pre_hook(self, module, args):
        if torch.compiler.is_compiling():
            # inside a compiled region the hooks are compiled away (a Python
            # stack would recompile every call); calls are named from frames
            return None
        if threading.get_ident() != self._thread or isinstance(module, _GraphModule):
            return None
        st = self._stack
        fr = _Frame(module)
        fr.seen = self._seen
        if (not st if self.model is None
                else _orig(module) is self.model and not any(f.root for f in st)):
            # a forward (of the model, also inside a wrapper such as DataParallel
            # or torch.compile's)
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
                fr.fused = _ic.fused_kind(module)
                if fr.fused is not None and not fr.suspended:
                    fr.suspended = self._suspend()
        st.append(fr)
        return None

    def _post_hook(self, module, args, *rest):
        # (module, args, kwargs, output) normally; (module, args, output) when
        # the forward raised (always_call): then only the stack is unwound
        if torch.compiler.is_compiling():
            return None
        if threading.get_ident() != self._thread or isinstance(module, _GraphModule):
            return None
        st = self._stack
        if not st or st[-1].module is not module:
            return None         # entered mid-forward: this pre-hook was not seen
        fr = st[-1]
        try:
            if (len(rest) == 2 and fr.fused is not None and fr.suspended
                    and not self._skipping):
                self._on_fused(fr, args, rest[0])
        finally:
            st.pop()
            if fr.suspended:
                self._resume()
            if fr.root:
                if len(rest) == 2 and not self._skipping:
                    self._flush()
                    if self._seen == fr.seen and self.model is not None:
                        self._no_attention(_orig(module))
                self._skipping = False
        return None

    # ----------------------------------------------------------------- names
    def _qualname(self, module) -> str | None:
        """Qualified name of a module ('' for the root), None if unknown."""
        if self._names is not None:
            return self._names.get(id(module))
        if not self._stack:
            return None
        root = _orig(self._stack[0].module)
        hit = self._root_names.get(id(root))
        if hit is None or hit[0] is not root:
            hit = (root, {id(m): n for n, m in root.named_modules()})
            self._root_names[id(root)] = hit
        return hit[1].get(id(module))

    def _display(self, qual: str) -> str:
        if qual:
            return qual
        root = self.model if self.model is not None else _orig(self._stack[0].module)
        return type(root).__name__

    def _call_name(self, compiled: bool = False) -> str:
        if (compiled or len(self._stack) <= 1) and self._names is not None:
            # compiled code runs no module hooks: the stack holds the root at most
            q = _ic.innermost_module(lambda m: self._names.get(id(m)))  # type: ignore
            if q is not None:
                return self._display(q)
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
    def _dispatch(self, func, args, kwargs, compiled: bool) -> None:
        """One attention call has run (the mode is off the stack here)."""
        if self._skipping or threading.get_ident() != self._thread:
            return
        if func is _ic.SDPA:
            spec = _lg.sdpa_spec(args, kwargs)
        elif func is _ic.MHA_F:
            spec = _lg.mha_functional_spec(args, kwargs)
        elif func is _ic.FLEX:
            spec = _lg.flex_spec(args, kwargs)
        else:
            x = args[0] if args else kwargs.get("input")
            dim = kwargs.get("dim", args[1] if len(args) > 1 else None)
            if (not isinstance(x, torch.Tensor) or x.dim() != 4 or dim not in (-1, 3)
                    or not x.is_floating_point()):
                return
            spec = _lg.scores_spec(x)
        self._add(self._call_name(compiled), spec)

    def _add(self, name, spec, count=True):
        self._agg.add_call(name, spec, count, self._query_mask)
        self._seen += 1

    def _on_fused_module(self, fr, args, kwargs):
        # called as self._on_fused: disabled for Dynamo (made with the mode)
        m = fr.module
        if fr.fused == "mha":
            name = self._module_name(m)
            for i, spec in enumerate(_lg.mha_module_specs(m, args, kwargs)):
                self._add(name, spec, count=i == 0)
        elif fr.fused == "encoder_layer" and not fr.attn_ran:
            # the fused fast path ran: self_attn was never called
            name = self._module_name(m, "self_attn")
            for i, spec in enumerate(_lg.encoder_layer_specs(m, args, kwargs)):
                self._add(name, spec, count=i == 0)


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

