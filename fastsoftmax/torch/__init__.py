r"""Exact statistics of a real model's attention, per head, while it runs.

:class:`AttentionProbe` is a context manager.  While it is active it sees
every call of ``torch.nn.functional.scaled_dot_product_attention`` (through a
:class:`torch.overrides.TorchFunctionMode`: users' own code, HF transformers'
``sdpa`` attention, ``nn.MultiheadAttention``'s slow path) and every
``nn.MultiheadAttention`` / ``nn.TransformerEncoderLayer`` forward, fused fast
paths included (through module hooks), ``flex_attention`` (its ``score_mod``
and block mask re-applied), and, with ``eager=True``, softmax over the last
axis of a 4-d score tensor; eager or under ``torch.compile``.  For each call it summarises, per head
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

Only the query rows of real tokens are summarised: in self-attention (as
many queries as keys) a query whose own key is masked is padding (a real
token always sees itself); ``query_mask=`` names the real queries where no
rule can see them (a cross-attention decoder's padding, packed sequences).
Padding rows and rows whose every key is masked have no finite logit: they are
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

The package: ``_intercept`` (the torch-function mode, compile-safe, and
what the module hooks need), ``_logits`` (the logit builders, pure functions
of a call's arguments), ``_aggregate`` (per-head figures, frames, the merge
over ranks), ``_probe`` (:class:`AttentionProbe`: naming, ``every``,
snapshots); the training loops' callbacks in ``hf`` (transformers) and
``lightning`` (both over ``_driver``), the history's figure in ``plot``.
"""
from __future__ import annotations

try:
    import torch as _torch  # noqa: F401
except ImportError as exc:     # pragma: no cover - exercised in a subprocess
    raise ImportError(
        "fastsoftmax.torch needs PyTorch: pip install 'fastsoftmax[torch]'") from exc

from typing import Any

from ._logging import KEY_COLUMNS, SCALAR_COLUMNS, key_frame, log_probe, probe_scalars
from ._probe import CHUNK_LOGITS, STATISTICS, AttentionProbe  # noqa: F401

# documented (and doctested) where users import them from
AttentionProbe.__module__ = __name__
for _f in (key_frame, log_probe, probe_scalars):
    _f.__module__ = __name__

# ProbeCallback (fastsoftmax.torch.hf) and LightningProbeCallback
# (fastsoftmax.torch.lightning) are reached as attributes too, imported on
# first access
__all__ = ["AttentionProbe", "CHUNK_LOGITS", "KEY_COLUMNS", "SCALAR_COLUMNS", "key_frame",
           "log_probe", "probe_scalars"]

# the callbacks subclass transformers' and lightning's classes: their modules
# are imported on first access, so that importing the probe imports neither
_CALLBACKS = {"ProbeCallback": "hf", "LightningProbeCallback": "lightning"}


def __getattr__(name: str) -> Any:
    if name in _CALLBACKS:
        import importlib
        return getattr(importlib.import_module(f"{__name__}.{_CALLBACKS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
