r"""The attention logits each kind of call defines, as pure functions.

Nothing here knows about hooks, modes or the probe: a builder takes the
arguments of one attention call and returns an :class:`AttentionSpec` (q, k,
masks, causality, scale, grouped-query heads, flex's ``score_mod`` and
``mask_mod``, the query rows that are padding); :class:`Blocks` fills rows of
one head's logits from a spec, block by block, exactly as the attention
defines them::

    logits = score_mod((q @ k.transpose(-2, -1)) * scale) + mask

(``score_mod`` for ``flex_attention`` only), in float64 (the full statistics)
or in the model's own dtype (the light mode's largest logit).

Padding.  A query row that is padding is filled with ``-inf`` (a row with
no finite logit: ``fs.summarize`` skips it).  The rule, for self-attention
(as many queries as keys): a real token always sees itself, so a key that no
query sees (its column of the masks masked in every row: False, ``-inf`` or
below half the mask dtype's lowest value, as HF's additive masks write it)
is a padding token, and its query is padding.  That covers right padding
(the padded queries still see the real keys before them through the causal
mask), left padding and key padding masks without any causal structure
(BERT, ``nn.TransformerEncoder``); a mask that hides a real token's own key
from it alone (a random mask) leaves its query in.  What no rule can see
(a cross-attention decoder's padded queries, packed sequences) is given as
an explicit query mask (``True`` = a real token's query).
"""
from __future__ import annotations

import inspect
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import torch
from torch import nn
from torch.nn import functional as F

__all__ = ["AttentionSpec", "Blocks", "sdpa_spec", "mha_functional_spec", "mha_module_specs",
           "encoder_layer_specs", "flex_spec", "scores_spec", "materialize", "MaskList"]

MaskList = list[tuple[torch.Tensor, bool]]

_SDPA_POSITIONAL = ("query", "key", "value", "attn_mask", "dropout_p", "is_causal")
_MHA_F_SIG = inspect.signature(F.multi_head_attention_forward)
_MHA_SIG = inspect.signature(nn.MultiheadAttention.forward)
_TEL_SIG = inspect.signature(nn.TransformerEncoderLayer.forward)


@dataclass
class AttentionSpec:
    """What one attention call defines, in SDPA's terms.

    ``q``: (..., Hq, L, E); ``k``: (..., Hk, S, E); ``masks``: (mask, is_bool)
    pairs broadcastable to (..., H, L, S), a bool mask True where a key is
    *seen*, a float mask added; ``causal``: key j > query i masked (top-left
    aligned); ``gqa``: query head h uses key head ``h // (Hq // Hk)``;
    ``score_mod`` / ``mask_mod``: flex_attention's functions of (score, b, h,
    q_idx, kv_idx) / (b, h, q_idx, kv_idx); ``scores``: an already built
    (B, H, L, S) score tensor (eager attention) instead of q and k;
    ``self_attention``: whether the padding rule applies (None: when L == S).
    """

    q: torch.Tensor | None
    k: torch.Tensor | None
    masks: MaskList = field(default_factory=list)
    causal: bool = False
    scale: float = 1.0
    gqa: bool = False
    score_mod: Callable | None = None
    mask_mod: Callable | None = None
    scores: torch.Tensor | None = None
    self_attention: bool | None = None


def sdpa_spec(args: tuple, kwargs: dict) -> AttentionSpec:
    """The spec of a ``F.scaled_dot_product_attention(*args, **kwargs)`` call.

    Parameters
    ----------
    args, kwargs : tuple, dict
        The call's arguments, as SDPA received them.

    Returns
    -------
    AttentionSpec
    """
    a = dict(zip(_SDPA_POSITIONAL, args))
    a.update(kwargs)
    q, k = a["query"], a["key"]
    mask = a.get("attn_mask")
    scale = a.get("scale")
    if scale is None:
        scale = 1.0 / math.sqrt(q.size(-1))
    masks = [] if mask is None else [(mask, mask.dtype == torch.bool)]
    return AttentionSpec(q, k, masks, bool(a.get("is_causal", False)), float(scale),
                         bool(a.get("enable_gqa", False)))


def flex_spec(args: tuple, kwargs: dict) -> AttentionSpec:
    """The spec of a ``torch.ops.higher_order.flex_attention`` call: its
    ``score_mod`` and its block mask's ``mask_mod`` applied to every logit.

    Parameters
    ----------
    args, kwargs : tuple, dict
        (query, key, value, score_mod, block_mask tuple, scale, kernel_options, ...)
        as the higher-order operator receives them.

    Returns
    -------
    AttentionSpec
    """
    names = ("query", "key", "value", "score_mod", "block_mask", "scale")
    a = dict(zip(names, args))
    a.update(kwargs)
    bm = a.get("block_mask")
    mask_mod = bm[-1] if isinstance(bm, tuple) and bm and callable(bm[-1]) else None
    q = a["query"]
    scale = a.get("scale")
    if scale is None:
        scale = 1.0 / math.sqrt(q.size(-1))
    return AttentionSpec(q, a["key"], [], False, float(scale), q.size(-3) != a["key"].size(-3),
                         score_mod=a.get("score_mod"), mask_mod=mask_mod)


def scores_spec(x: torch.Tensor) -> AttentionSpec:
    """The spec of eager attention's softmax over a (B, H, L, S) score tensor.

    Parameters
    ----------
    x : torch.Tensor
        The scores, masks already added by the model.

    Returns
    -------
    AttentionSpec
    """
    return AttentionSpec(None, None, scores=x)


def _f64(t):
    return None if t is None else t.detach().to(torch.float64)


def mha_functional_spec(args: tuple, kwargs: dict) -> AttentionSpec:
    """The spec of a ``F.multi_head_attention_forward`` call (the slow path of
    ``nn.MultiheadAttention``).

    Parameters
    ----------
    args, kwargs : tuple, dict
        The call's arguments.

    Returns
    -------
    AttentionSpec
    """
    bound = _MHA_F_SIG.bind(*args, **kwargs)
    bound.apply_defaults()
    a: dict[str, Any] = bound.arguments
    return _mha_spec(
        a["query"], a["key"], a["num_heads"], a["in_proj_weight"], a["in_proj_bias"],
        a["bias_k"], a["add_zero_attn"], a["key_padding_mask"], a["need_weights"],
        a["attn_mask"], a["use_separate_proj_weight"], a["q_proj_weight"],
        a["k_proj_weight"], a["static_k"], a["is_causal"], a["query"] is a["key"])


def mha_module_specs(m: nn.MultiheadAttention, args: tuple,
                     kwargs: dict) -> Iterator[AttentionSpec]:
    """The specs of one ``nn.MultiheadAttention`` forward (its fast path):
    one, or one per sequence for nested inputs.

    Parameters
    ----------
    m : nn.MultiheadAttention
    args, kwargs : tuple, dict
        The forward's arguments.

    Yields
    ------
    AttentionSpec
    """
    bound = _MHA_SIG.bind(m, *args, **kwargs)
    bound.apply_defaults()
    a: dict[str, Any] = bound.arguments
    for query, key, kpm, am in _unnest(a["query"], a["key"], a["key_padding_mask"],
                                       a["attn_mask"]):
        selfattn = query is key
        if m.batch_first and query.dim() == 3:
            query, key = query.transpose(0, 1), key.transpose(0, 1)
        yield _mha_spec(query, key, m.num_heads, m.in_proj_weight, m.in_proj_bias, m.bias_k,
                        m.add_zero_attn, kpm, a["need_weights"], am,
                        m.in_proj_weight is None, m.q_proj_weight, m.k_proj_weight, None,
                        a["is_causal"], selfattn)


def encoder_layer_specs(m: nn.TransformerEncoderLayer, args: tuple,
                        kwargs: dict) -> Iterator[AttentionSpec]:
    """The specs of an ``nn.TransformerEncoderLayer`` forward on its fused
    path (``self_attn`` was never called): q and k from the layer's input,
    through ``norm1`` when ``norm_first``.

    Parameters
    ----------
    m : nn.TransformerEncoderLayer
    args, kwargs : tuple, dict
        The forward's arguments.

    Yields
    ------
    AttentionSpec
    """
    bound = _TEL_SIG.bind(m, *args, **kwargs)
    bound.apply_defaults()
    a: dict[str, Any] = bound.arguments
    attn = m.self_attn
    for src, _, kpm, am in _unnest(a["src"], a["src"], a["src_key_padding_mask"],
                                   a["src_mask"]):
        x = src.detach().to(torch.float64)
        if m.norm_first:
            n1 = m.norm1
            x = F.layer_norm(x, n1.normalized_shape, _f64(n1.weight), _f64(n1.bias), n1.eps)
        if attn.batch_first and x.dim() == 3:
            x = x.transpose(0, 1)
        yield _mha_spec(x, x, attn.num_heads, attn.in_proj_weight, attn.in_proj_bias,
                        attn.bias_k, attn.add_zero_attn, kpm, False, am,
                        attn.in_proj_weight is None, attn.q_proj_weight, attn.k_proj_weight,
                        None, a["is_causal"], True)


def _unnest(query, key, kpm, attn_mask) -> Iterator[tuple]:
    """Nested (jagged) inputs of the fused fast paths, as one batch-1 input per
    sequence (they come without masks); plain inputs as they are."""
    if not query.is_nested:
        yield query, key, kpm, attn_mask
        return
    keys = key.unbind() if key is not query else None
    for i, qi in enumerate(query.unbind()):
        qi = qi.unsqueeze(0)
        ki = qi if keys is None else keys[i].unsqueeze(0)
        yield qi, ki, None, None


def _mha_spec(query, key, num_heads, in_proj_weight, in_proj_bias, bias_k, add_zero_attn,
              key_padding_mask, need_weights, attn_mask, use_separate_proj_weight,
              q_proj_weight, k_proj_weight, static_k, is_causal,
              self_attention) -> AttentionSpec:
    """An MHA call given in F.multi_head_attention_forward's layout ((L, N, E)
    or unbatched (L, E)) in SDPA's terms: q, k (N, H, L, head_dim) float64
    projections, masks bool True = attend or float added."""
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

    masks: MaskList = []
    if attn_mask is not None:
        am = attn_mask.detach()
        am = am.view(1, 1, L, S - extra) if am.dim() == 2 else am.view(N, H, L, S - extra)
        masks.append(_mha_mask(am, extra))
    if key_padding_mask is not None:
        kp = key_padding_mask.detach().view(N, 1, 1, S - extra)
        masks.append(_mha_mask(kp, extra))
    return AttentionSpec(q, k, masks, causal, 1.0 / math.sqrt(hd), False,
                         self_attention=bool(self_attention) and extra == 0)


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


def _masked_value(m: torch.Tensor) -> torch.Tensor:
    """Where a float mask masks: -inf, or at most half its dtype's lowest value
    (HF writes ``torch.finfo(dtype).min``)."""
    return m <= torch.finfo(m.dtype).min / 2


class Blocks:
    """One call's logits, filled a block of rows of one head at a time.

    Parameters
    ----------
    spec : AttentionSpec
    device : torch.device
        Where the logits are built.
    dtype : torch.dtype, default torch.float64
        The logits' dtype (float64: exact for float16/bfloat16/float32 products).
    query_mask : torch.Tensor, optional
        (batch, L) bool, True for a real token's query: overrides the padding
        rule for a call whose batch and query count it matches.

    Attributes
    ----------
    lead : tuple of int
        The batch dimensions; ``H``, ``L``, ``S``: heads, queries, keys.
    """

    def __init__(self, spec: AttentionSpec, device: torch.device,
                 dtype: torch.dtype = torch.float64,
                 query_mask: torch.Tensor | None = None) -> None:
        self.spec, self.device, self.dtype = spec, device, dtype
        self._kcache: dict[str, Any] = {}
        self._tri: torch.Tensor | None = None
        self._padkey: Any = None
        self._padcols: torch.Tensor | None = None
        if spec.scores is not None:
            x = spec.scores.detach()
            B, H, L, S = x.shape
            self.lead, self.H, self.L, self.S = (B,), H, L, S
            self._x = x
            self._rep = 1
            self._me: MaskList = []
        else:
            q, k = spec.q.detach(), spec.k.detach()      # type: ignore[union-attr]
            while q.dim() < 3:
                q = q.unsqueeze(0)
            while k.dim() < 3:
                k = k.unsqueeze(0)
            L, E = q.shape[-2], q.shape[-1]
            S = k.shape[-2]
            hq, hk = q.shape[-3], k.shape[-3]
            rep = hq // hk if spec.gqa and hk != hq and hk > 0 else 1
            k_shape = k.shape[:-3] + (hk * rep,) + k.shape[-2:]
            masks = [(m.detach(), b) for m, b in spec.masks]
            bh = torch.broadcast_shapes(q.shape[:-2], k_shape[:-2],
                                        *(m.shape[:-2] for m, _ in masks))
            self.lead, self.H, self.L, self.S = tuple(bh[:-1]), bh[-1], L, S
            self._qe = q.expand(self.lead + (self.H, L, E))
            self._ke = k.expand(self.lead + (hk if rep > 1 else self.H, S, k.shape[-1]))
            self._me = [(m.expand(self.lead + (self.H, L, S)), b) for m, b in masks]
            self._rep = rep
        self._qmask = None
        if (query_mask is not None and len(self.lead) == 1
                and tuple(query_mask.shape) == (self.lead[0], self.L)):
            self._qmask = query_mask.to(device)
        selfattn = spec.self_attention
        self._rule = self.L == self.S if selfattn is None else (selfattn and self.L == self.S)

    def fill(self, out: torch.Tensor, b: tuple, h: int, l0: int, n: int) -> None:
        """Rows ``l0 .. l0 + n`` of batch index ``b``, head ``h`` into ``out``
        (n, S); padding rows filled with -inf.

        Parameters
        ----------
        out : torch.Tensor
            (n, S), of the blocks' dtype on their device.
        b : tuple of int
            The batch index (one int per batch dimension).
        h : int
            The head.
        l0, n : int
            The first query row and the number of rows.
        """
        spec = self.spec
        if spec.scores is not None:
            out.copy_(self._x[b[0], h, l0:l0 + n])
            self._pad(out, b, h, l0, n)
            return
        dev, dt = self.device, self.dtype
        kv = h // self._rep if self._rep > 1 else h
        if self._kcache.get("key") != (b, kv):
            # contiguous copies: a cast that keeps a strided layout (q, k are
            # often permuted views of one projection) is up to 100x slower
            # with several threads, and BLAS wants plain rows anyway
            self._kcache["key"] = (b, kv)
            self._kcache["kT"] = self._ke[b][kv].to(device=dev, dtype=dt,
                                                    memory_format=torch.contiguous_format).t()
        qb = self._qe[b][h][l0:l0 + n].to(device=dev, dtype=dt,
                                           memory_format=torch.contiguous_format)
        torch.matmul(qb, self._kcache["kT"], out=out)
        out.mul_(spec.scale)
        if spec.score_mod is not None or spec.mask_mod is not None:
            self._flex(out, b, h, l0, n)
        for m, is_bool in self._me:
            mb = m[b][h][l0:l0 + n].to(dev)
            if is_bool:
                out.masked_fill_(mb.logical_not(), -math.inf)
            else:
                out.add_(mb.to(dt))
        S = self.S
        if spec.causal:
            # query l0 + i sees keys j <= l0 + i: keys from l0 + n on are masked
            # for every row of the block, keys in [l0, l0 + n) by a strict upper
            # triangle, keys before l0 for none
            if l0 + n < S:
                out[:, l0 + n:].fill_(-math.inf)
            if l0 < S:
                w = min(n, S - l0)
                out[:, l0:l0 + w].masked_fill_(self._triangle(n, w), -math.inf)
        self._pad(out, b, h, l0, n)

    def batched_ok(self) -> bool:
        """Whether :meth:`row_max` applies (q and k given, no flex functions).

        Returns
        -------
        bool
        """
        sp = self.spec
        return sp.scores is None and sp.score_mod is None and sp.mask_mod is None

    def row_max(self, b: tuple, h0: int, h1: int) -> torch.Tensor:
        """The largest logit of every query row of heads ``h0 .. h1`` of batch
        index ``b``, (h1 - h0, L), in the blocks' dtype; -inf for padding rows
        and rows with every key masked (the light mode's one pass).

        Parameters
        ----------
        b : tuple of int
        h0, h1 : int

        Returns
        -------
        torch.Tensor
        """
        dev, dt, spec = self.device, self.dtype, self.spec
        q = self._qe[b][h0:h1].to(device=dev, dtype=dt)
        if self._rep > 1:
            k = self._ke[b].to(device=dev, dtype=dt).repeat_interleave(self._rep, 0)[h0:h1]
        else:
            k = self._ke[b][h0:h1].to(device=dev, dtype=dt)
        s = torch.matmul(q, k.transpose(-2, -1))
        s.mul_(spec.scale)
        for m, is_bool in self._me:
            mb = m[b][h0:h1].to(dev)
            if is_bool:
                s.masked_fill_(mb.logical_not(), -math.inf)
            else:
                s.add_(mb.to(dt))
        if spec.causal:
            s.masked_fill_(self._triangle(self.L, self.S), -math.inf)
        rmax = s.amax(dim=-1)
        for i, h in enumerate(range(h0, h1)):
            if self._qmask is not None:
                rmax[i].masked_fill_(self._qmask[b[0]].logical_not(), -math.inf)
            elif self._rule:
                pad = self.padding_keys(b, h)
                if pad is not None:
                    rmax[i].masked_fill_(pad, -math.inf)
        return rmax

    def _pad(self, out, b, h, l0, n):
        pad: torch.Tensor | None
        if self._qmask is not None:
            pad = self._qmask[b[0], l0:l0 + n].logical_not()
        elif self._rule:
            pad = self.padding_keys(b, h)
            pad = None if pad is None else pad[l0:l0 + n]
        else:
            pad = None
        if pad is not None:
            out.masked_fill_(pad[:, None], -math.inf)

    def padding_keys(self, b: tuple, h: int) -> torch.Tensor | None:
        """The keys no query sees, (S,) bool, of batch index ``b``, head ``h``
        (None: no mask): in self-attention they are padding tokens, and so are
        their queries (a real token always sees itself).

        Parameters
        ----------
        b : tuple of int
        h : int

        Returns
        -------
        torch.Tensor or None
        """
        key = (b, h)
        if self._padkey == key:
            return self._padcols
        spec, dev = self.spec, self.device
        seen = None
        if spec.scores is not None:
            seen = self._x[b[0], h].isfinite() & ~_masked_value(self._x[b[0], h])
            seen = seen.any(0)
        else:
            for m, is_bool in self._me:
                mb = m[b][h]
                s = (mb if is_bool else ~_masked_value(mb)).any(0).to(dev)
                seen = s if seen is None else seen & s
            if spec.mask_mod is not None:
                bi, hi = torch.tensor(b[0] if b else 0, device=dev), torch.tensor(h, device=dev)
                qi = torch.arange(self.L, device=dev)[:, None]
                ki = torch.arange(self.S, device=dev)[None, :]
                s = torch.broadcast_to(spec.mask_mod(bi, hi, qi, ki), (self.L, self.S)).any(0)
                seen = s if seen is None else seen & s
        self._padkey, self._padcols = key, None if seen is None else seen.logical_not()
        return self._padcols

    def _flex(self, out, b, h, l0, n) -> None:
        """score_mod and mask_mod on the block, broadcast over (rows, keys)."""
        dev = out.device
        bi = torch.tensor(b[0] if b else 0, device=dev)
        hi = torch.tensor(h, device=dev)
        qi = torch.arange(l0, l0 + n, device=dev)[:, None]
        ki = torch.arange(self.S, device=dev)[None, :]
        spec = self.spec
        if spec.score_mod is not None:
            out.copy_(torch.broadcast_to(spec.score_mod(out, bi, hi, qi, ki), out.shape))
        if spec.mask_mod is not None:
            keep = torch.broadcast_to(spec.mask_mod(bi, hi, qi, ki), out.shape)
            out.masked_fill_(keep.logical_not(), -math.inf)

    def _triangle(self, n, w):
        t = self._tri
        if t is None or t.shape[0] < n or t.shape[1] < w:
            shape = (n, w) if t is None else (max(n, t.shape[0]), max(w, t.shape[1]))
            t = self._tri = torch.ones(shape, dtype=torch.bool, device=self.device).triu_(1)
        return t[:n, :w]


def materialize(spec: AttentionSpec, dtype: torch.dtype = torch.float64,
                query_mask: torch.Tensor | None = None) -> torch.Tensor:
    """Every logit of a call in one piece, (batch..., H, L, S), padding rows
    -inf: what the probe summarises, for tests and small calls.

    Parameters
    ----------
    spec : AttentionSpec
    dtype : torch.dtype, default torch.float64
    query_mask : torch.Tensor, optional
        As for :class:`Blocks`.

    Returns
    -------
    torch.Tensor

    Examples
    --------
    >>> import torch
    >>> from fastsoftmax.torch._logits import sdpa_spec, materialize
    >>> q = torch.ones(1, 1, 2, 4)
    >>> materialize(sdpa_spec((q, q, q), {"is_causal": True}))[0, 0].tolist()
    [[2.0, -inf], [2.0, 2.0]]
    """
    dev = (spec.scores if spec.scores is not None else spec.q).device  # type: ignore[union-attr]
    with torch.no_grad():
        blk = Blocks(spec, dev, dtype, query_mask)
        out = torch.empty(blk.lead + (blk.H, blk.L, blk.S), dtype=dtype, device=dev)
        import itertools
        for b in itertools.product(*(range(n) for n in blk.lead)):
            for h in range(blk.H):
                blk.fill(out[b][h], b, h, 0, blk.L)
    return out
