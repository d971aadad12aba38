"""Where the probe takes its numbers: a torch-function mode and module hooks.

The mode sees ``F.scaled_dot_product_attention``,
``F.multi_head_attention_forward``, ``torch.ops.higher_order.flex_attention``
and (eager attention) softmax; everything else passes straight through.

Under ``torch.compile`` Dynamo inlines the mode into the compiled graph
(its code is traceable), so what it does there must compile once:

* an SDPA / MHA call is handed to a ``torch.compiler.disable``'d function
  (one graph break after the call: the compiled kernels' outputs are
  computed before it, so they are bitwise those without the probe);
* a flex_attention call, which PyTorch itself compiles with
  ``fullgraph=True`` even in eager mode, is appended to a pending list (a
  side effect Dynamo replays after the graph), and summarised at the next
  eager call of the mode or when the probe leaves; the list is emptied
  there, so the graphs' guards see the same list every time.
"""
from __future__ import annotations

import inspect
import sys
from typing import Any, Callable

import torch
from torch import nn
from torch.nn import functional as F
from torch.overrides import TorchFunctionMode

__all__ = ["ProbeMode", "fused_kind", "global_hooks_take_kwargs", "current_mode",
           "innermost_module", "SDPA", "MHA_F", "FLEX", "SOFTMAXES"]

SDPA = F.scaled_dot_product_attention
MHA_F = F.multi_head_attention_forward
FLEX = getattr(getattr(torch.ops, "higher_order", None), "flex_attention", None)
SOFTMAXES = tuple(f for f in (F.softmax, torch.softmax, torch.Tensor.softmax,
                              getattr(torch.special, "softmax", None)) if f is not None)


def fused_kind(module: nn.Module) -> str | None:
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


def global_hooks_take_kwargs() -> bool:
    """Whether global forward hooks take keyword arguments (PyTorch >= 2.6)."""
    try:
        params = inspect.signature(nn.modules.module.register_module_forward_hook).parameters
    except (TypeError, ValueError):     # pragma: no cover
        return False
    return "with_kwargs" in params and "always_call" in params


def current_mode() -> Any:
    """The innermost active torch-function mode (None if none)."""
    get = getattr(torch.overrides, "_get_current_function_mode", None)
    return get() if get is not None else None


def innermost_module(names: Callable[[nn.Module], str | None]) -> str | None:
    """The name of the innermost module whose forward is on the Python stack
    (``self`` of a frame), for calls from compiled code, where module hooks
    do not run; None if no known module is found."""
    f: Any = sys._getframe(1)
    while f is not None:
        obj = f.f_locals.get("self") if "self" in f.f_code.co_varnames else None
        if isinstance(obj, nn.Module):
            name = names(obj)
            if name is not None:
                return name
        f = f.f_back
    return None


class ProbeMode(TorchFunctionMode):
    """Sees every torch function call while the probe is active; only the
    attention calls are looked at.

    Parameters
    ----------
    dispatch : callable
        ``dispatch(func, args, kwargs, compiled)``: called after an attention
        call has run, with the mode off the stack.
    eager : bool
        Also hand softmax calls to ``dispatch``.
    """

    def __init__(self, dispatch: Callable, eager: bool) -> None:
        super().__init__()
        # disabled on both roads: a frame called from a compiled region (after
        # a graph break) is itself handed to Dynamo unless it is disabled.
        # Wrapped here, not at class definition: torch.compiler.disable
        # imports Dynamo (seconds), which importing the probe need not do
        self._dispatch = torch.compiler.disable(dispatch)
        self.flush = torch.compiler.disable(self._flush)
        self._eager = eager
        self.pending: list = []     # flex_attention calls not summarised yet

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if kwargs is None:
            kwargs = {}
        out = func(*args, **kwargs)
        # identity tests only: Dynamo folds them (a test on a function's name
        # breaks fullgraph compiles)
        if func is FLEX and FLEX is not None:
            self.pending.append((args, kwargs))
        elif func is SDPA or func is MHA_F or (self._eager and _is_softmax(func)):
            self._dispatch(func, args, kwargs, torch.compiler.is_compiling())
        elif self.pending and not torch.compiler.is_compiling():
            self.flush()
        return out

    def _flush(self) -> None:
        """Summarise the pending flex_attention calls (``self.flush``, disabled)."""
        pending, self.pending[:] = list(self.pending), []
        for args, kwargs in pending:
            self._dispatch(FLEX, args, kwargs, False)


def _is_softmax(func) -> bool:
    for f in SOFTMAXES:
        if func is f:
            return True
    return False
