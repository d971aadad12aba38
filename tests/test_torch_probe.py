"""fastsoftmax.torch.AttentionProbe: per-head Summaries equal to fs.summarize of
the logits materialised independently in float64, for SDPA (masks, causal,
GQA, scale), nn.MultiheadAttention and nn.TransformerEncoder(Layer) on their
fused fast paths, HF transformers (optional); outputs and gradients bitwise
those without the probe; bounded memory; names, every, snapshot; errors."""
import doctest
import math
import os
import subprocess
import sys
import threading
import time
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the attention-probe tests need torch: "
                                             "pip install torch (the CPU build is enough)")

import fastsoftmax as fs                                # noqa: E402
from helpers import REPO, subprocess_env               # noqa: E402
from torch import nn                                    # noqa: E402
from torch.nn import functional as F                    # noqa: E402
from torch.overrides import TorchFunctionMode           # noqa: E402

from fastsoftmax.torch import CHUNK_LOGITS, AttentionProbe   # noqa: E402

INF = math.inf
SDPA_RTOL = 1e-14
MHA_RTOL = 1e-13


# tiny tensors: one torch thread (conftest's one_torch_thread fixture)
pytestmark = pytest.mark.usefixtures("one_torch_thread")


# --------------------------------------------------------------------------
# independent references

def ref_logits(q, k, mask=None, is_causal=False, scale=None, enable_gqa=False):
    """SDPA's logits in float64, as its documented reference code builds them."""
    q64, k64 = q.detach().double(), k.detach().double()
    if enable_gqa:
        k64 = k64.repeat_interleave(q.size(-3) // k.size(-3), -3)
    sc = 1 / math.sqrt(q.size(-1)) if scale is None else scale
    s = (q64 @ k64.transpose(-2, -1)) * sc
    L, S = q.size(-2), k.size(-2)
    if is_causal:
        s = s.masked_fill(~torch.ones(L, S, dtype=torch.bool).tril(diagonal=0), -INF)
    if mask is not None:
        s = s.masked_fill(~mask, -INF) if mask.dtype == torch.bool else s + mask.double()
    return s


def mha_ref_logits(mha, xq, xk, key_padding_mask=None, attn_mask=None):
    """nn.MultiheadAttention's logits (batch_first inputs), float64; in
    self-attention the padded tokens' query rows -inf (skipped)."""
    N, L, E = xq.shape
    S = xk.shape[1]
    H = mha.num_heads
    hd = E // H
    W, b = mha.in_proj_weight.detach().double(), mha.in_proj_bias.detach().double()
    q = F.linear(xq.detach().double(), W[:E], b[:E]).view(N, L, H, hd).transpose(1, 2)
    k = F.linear(xk.detach().double(), W[E:2 * E], b[E:2 * E]).view(N, S, H, hd).transpose(1, 2)
    s = (q @ k.transpose(-2, -1)) * (1 / math.sqrt(hd))
    if key_padding_mask is not None:
        s = s.masked_fill(key_padding_mask[:, None, None, :], -INF)
        if xq is xk:
            # self-attention: a padded token's query is padding too (skipped)
            s = s.masked_fill(key_padding_mask[:, None, :, None], -INF)
    if attn_mask is not None:
        s = s.masked_fill(attn_mask, -INF) if attn_mask.dtype == torch.bool else s + attn_mask
    return s


def head_summaries(logits):
    """fs.summarize per head (dim -3) over the (batch..., query) rows."""
    lg = logits.movedim(-3, 0)
    H, S = lg.shape[0], lg.shape[-1]
    return [fs.summarize(lg[h].reshape(-1, S).numpy(), nan_policy="omit") for h in range(H)]


def assert_same_summary(got, want, extremes_rtol=0.0):
    """Integer parts and sketch exactly, extremes exactly (or to
    ``extremes_rtol``), moments to rounding."""
    a, b = got.to_dict()["accumulator"], want.to_dict()["accumulator"]
    for key in ("count", "skipped", "thresholds", "nonfinite", "below", "sketch"):
        assert a[key] == b[key], key
    for key in ("min", "max"):
        if extremes_rtol:
            np.testing.assert_allclose(np.array(a[key], dtype=float),
                                       np.array(b[key], dtype=float), rtol=extremes_rtol)
        else:
            assert a[key] == b[key], key
    ma = np.array([[float(v) for v in r] for r in a["moments"]])
    mb = np.array([[float(v) for v in r] for r in b["moments"]])
    np.testing.assert_array_equal(ma[:, 0], mb[:, 0])
    np.testing.assert_allclose(ma[:, 1], mb[:, 1], rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(ma[:, 2], mb[:, 2], rtol=1e-9, atol=1e-250)


def assert_probe_matches(probe, name, logits, rtol=SDPA_RTOL):
    """The probe's Summary and max logit of every head of ``name`` against
    fs.summarize of ``logits`` (batch..., heads, L, S).

    The extremes (and moments) to ``rtol``, not bit for bit: each float64 logit
    is a sum of E products, which BLAS adds in an order that depends on the
    shapes multiplied (the probe's chunk of rows against the reference's whole
    batch).  With float32 inputs the products are exact and the sums differ by
    an ulp at most (SDPA_RTOL); q, k that are float64 projections (MHA) carry
    the projections' rounding too (MHA_RTOL)."""
    want = head_summaries(logits)
    got = {h: s for (m, h), s in probe.summaries.items() if m == name}
    assert sorted(got) == list(range(len(want)))
    for h, w in enumerate(want):
        assert_same_summary(got[h], w, rtol)
    fin = logits.movedim(-3, 0).reshape(len(want), -1)
    df = probe.to_frame()
    df = df[df.module == name].set_index("head")
    for h in range(len(want)):
        f = fin[h][torch.isfinite(fin[h])]
        want_max = float(f.max()) if f.numel() else -INF
        assert df.loc[h, "max_logit"] == pytest.approx(want_max, rel=rtol, abs=0)


class Recorder(TorchFunctionMode):
    """An independent look at what SDPA receives (for the HF models)."""

    def __init__(self):
        super().__init__()
        self.calls = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is F.scaled_dot_product_attention:
            a = dict(zip(("query", "key", "value", "attn_mask", "dropout_p", "is_causal"), args))
            a.update(kwargs)
            self.calls.append(a)
        return func(*args, **kwargs)


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


# --------------------------------------------------------------------------
# SDPA: masks, causal, GQA, scale

def test_sdpa_plain_matches_and_output_bitwise():
    g = gen()
    q, k, v = (torch.randn(2, 3, 7, 16, generator=g) for _ in range(3))
    ref = F.scaled_dot_product_attention(q, k, v)
    with AttentionProbe() as p:
        out = F.scaled_dot_product_attention(q, k, v)
    assert torch.equal(out, ref)
    assert p.calls == {"call0": 1}
    assert_probe_matches(p, "call0", ref_logits(q, k))


def test_sdpa_bool_mask_with_fully_masked_rows():
    g = gen(1)
    q, k, v = (torch.randn(2, 2, 6, 8, generator=g) for _ in range(3))
    mask = torch.rand(2, 1, 6, 6, generator=g) > 0.4        # broadcast over heads
    mask[0, 0, 3] = False                                    # every key masked: skipped
    mask[1, 0, :, 2] = True
    with AttentionProbe() as p:
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    assert torch.equal(out, F.scaled_dot_product_attention(q, k, v, attn_mask=mask))
    lg = ref_logits(q, k, mask)
    assert_probe_matches(p, "call0", lg)
    s = p.summaries["call0", 0]
    assert s.skipped >= 1 and s.samples + s.skipped == 12
    assert p.to_frame()["nonfinite"].eq(0).all()


def test_sdpa_float_mask_added():
    g = gen(2)
    q, k, v = (torch.randn(1, 3, 5, 8, generator=g) for _ in range(3))
    mask = torch.randn(5, 5, generator=g) * 3                 # an additive bias (L, S)
    mask[2, 1:] = -INF
    mask[4, :] = -INF                                          # a fully masked row
    with AttentionProbe() as p:
        F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    assert_probe_matches(p, "call0", ref_logits(q, k, mask))
    assert p.summaries["call0", 1].skipped == 1


@pytest.mark.parametrize("L,S", [(6, 6), (4, 9), (9, 4)])
def test_sdpa_causal_top_left_aligned(L, S):
    g = gen(3)
    q = torch.randn(2, 2, L, 8, generator=g)
    k, v = (torch.randn(2, 2, S, 8, generator=g) for _ in range(2))
    with AttentionProbe() as p:
        F.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert_probe_matches(p, "call0", ref_logits(q, k, is_causal=True))


def test_sdpa_gqa_and_broadcast_key_heads():
    g = gen(4)
    q = torch.randn(2, 6, 5, 8, generator=g)
    k, v = (torch.randn(2, 2, 7, 8, generator=g) for _ in range(2))
    with AttentionProbe() as p:
        out = F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
        F.scaled_dot_product_attention(q, k[:, :1], v[:, :1])      # one key head, broadcast
    assert torch.equal(out, F.scaled_dot_product_attention(q, k, v, enable_gqa=True))
    assert_probe_matches(p, "call0", ref_logits(q, k, enable_gqa=True))
    assert_probe_matches(p, "call1", ref_logits(q, k[:, :1]))


def test_sdpa_scale_dtypes_and_3d_input():
    g = gen(5)
    q, k, v = (torch.randn(4, 5, 8, generator=g).to(torch.bfloat16) for _ in range(3))
    with AttentionProbe() as p:
        F.scaled_dot_product_attention(q, k, v, scale=1.0)     # 3-d: dim 0 is the head axis
        F.scaled_dot_product_attention(q.float(), k.float(), v.float(), None, 0.0, True)
    assert_probe_matches(p, "call0", ref_logits(q, k, scale=1.0))
    assert_probe_matches(p, "call1", ref_logits(q.float(), k.float(), is_causal=True))


def test_sdpa_nan_counted_not_raised():
    g = gen(6)
    q, k, v = (torch.randn(1, 2, 4, 8, generator=g) for _ in range(3))
    q[0, 1, 2, 3] = math.nan
    with AttentionProbe() as p:
        F.scaled_dot_product_attention(q, k, v)
    df = p.to_frame().set_index("head")
    assert df.loc[0, "nonfinite"] == 0 and df.loc[1, "nonfinite"] == 1
    assert df.loc[1, "skipped"] == 1 and df.loc[1, "rows"] == 3
    lg = ref_logits(q, k)
    assert df.loc[1, "max_logit"] == float(lg[0, 1][torch.isfinite(lg[0, 1])].max())


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("L", [5, 14])
def test_chunking_spans_rows_and_batches(causal, L):
    """Tiny chunks (3 rows of 11 keys): chunks cross batch boundaries and split
    sequences (the causal pattern of each block then starts mid-sequence)."""
    g = gen(7)
    q = torch.randn(3, 2, L, 4, generator=g)
    k, v = (torch.randn(3, 2, 11, 4, generator=g) for _ in range(2))
    mask = None if causal else torch.rand(3, 2, L, 11, generator=g) > 0.2
    with AttentionProbe(chunk_logits=33) as p:
        F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal)
    assert p.peak_chunk_logits == 33
    assert_probe_matches(p, "call0", ref_logits(q, k, mask, is_causal=causal))


def test_backward_bitwise_with_probe():
    def run(probe):
        torch.manual_seed(0)
        mha = nn.MultiheadAttention(16, 4, dropout=0.1, batch_first=True)
        x = torch.randn(2, 6, 16, requires_grad=True)
        if probe:
            with AttentionProbe(mha) as p:
                y, _ = mha(x, x, x, need_weights=False, is_causal=True,
                           attn_mask=nn.Transformer.generate_square_subsequent_mask(6))
            assert p.calls == {"MultiheadAttention": 1}
        else:
            y, _ = mha(x, x, x, need_weights=False, is_causal=True,
                       attn_mask=nn.Transformer.generate_square_subsequent_mask(6))
        y.square().sum().backward()
        return y.detach(), x.grad, [p.grad for p in mha.parameters()]
    y0, gx0, gp0 = run(False)
    y1, gx1, gp1 = run(True)
    assert torch.equal(y0, y1) and torch.equal(gx0, gx1)
    assert all(torch.equal(a, b) for a, b in zip(gp0, gp1))


# --------------------------------------------------------------------------
# nn modules, fused fast paths included

def fast_and_slow(module, *args, **kwargs):
    """The module's output on its fast path and, with the fast path disabled,
    on its slow path: they differ in the last bits for these inputs, which is
    what shows that the probe left the fast path in place."""
    with torch.no_grad():
        fast = module(*args, **kwargs)
        torch.backends.mha.set_fastpath_enabled(False)
        try:
            slow = module(*args, **kwargs)
        finally:
            torch.backends.mha.set_fastpath_enabled(True)
    return fast, slow


def first(out):
    return out[0] if isinstance(out, tuple) else out


def test_multihead_attention_fast_path():
    torch.manual_seed(0)
    mha = nn.MultiheadAttention(32, 4, batch_first=True).eval()
    x = torch.randn(3, 9, 32)
    pad = torch.zeros(3, 9, dtype=torch.bool)
    pad[1, 6:] = True
    fast, slow = fast_and_slow(mha, x, x, x, key_padding_mask=pad, need_weights=False)
    assert not torch.equal(first(fast), first(slow))
    with torch.no_grad(), AttentionProbe(mha) as p:
        out = mha(x, x, x, key_padding_mask=pad, need_weights=False)
    assert torch.equal(first(out), first(fast))
    assert_probe_matches(p, "MultiheadAttention", mha_ref_logits(mha, x, x, pad), MHA_RTOL)


def test_multihead_attention_slow_path_masks_training():
    """Training (slow path, dropout drawing random numbers), need_weights=True,
    a bool attn_mask (True = masked) and a padding mask; not batch_first."""
    def run(probe):
        torch.manual_seed(1)
        mha = nn.MultiheadAttention(16, 2, dropout=0.2)
        x = torch.randn(7, 2, 16)                              # (L, N, E)
        am = torch.rand(7, 7) > 0.7
        am.fill_diagonal_(False)
        kpm = torch.zeros(2, 7, dtype=torch.bool)
        kpm[0, 5:] = True
        if not probe:
            return mha(x, x, x, key_padding_mask=kpm, attn_mask=am), None, (mha, x, kpm, am)
        with AttentionProbe(mha) as p:
            out = mha(x, x, x, key_padding_mask=kpm, attn_mask=am)
        return out, p, (mha, x, kpm, am)
    (o0, w0), _, _ = run(False)
    (o1, w1), p, (mha, x, kpm, am) = run(True)
    assert torch.equal(o0, o1) and torch.equal(w0, w1)
    xb = x.transpose(0, 1)
    assert_probe_matches(p, "MultiheadAttention", mha_ref_logits(mha, xb, xb, kpm, am), MHA_RTOL)


def test_transformer_encoder_layer_padding_mask_fast_path():
    torch.manual_seed(2)
    layer = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True).eval()
    x = torch.randn(3, 8, 32)
    pad = torch.zeros(3, 8, dtype=torch.bool)
    pad[0, 5:] = True
    pad[2, 2:] = True
    fast, slow = fast_and_slow(layer, x, src_key_padding_mask=pad)
    assert not torch.equal(fast, slow)
    with torch.no_grad(), AttentionProbe(layer) as p:
        out = layer(x, src_key_padding_mask=pad)
    assert torch.equal(out, fast)
    assert p.calls == {"self_attn": 1}
    assert_probe_matches(p, "self_attn", mha_ref_logits(layer.self_attn, x, x, pad), MHA_RTOL)
    # and in training mode (slow path: the self_attn module is called)
    layer.train()
    with AttentionProbe(layer) as p:
        layer(x, src_key_padding_mask=pad)
    assert_probe_matches(p, "self_attn", mha_ref_logits(layer.self_attn, x, x, pad), MHA_RTOL)


def test_transformer_encoder_layer_norm_first_causal():
    torch.manual_seed(3)
    layer = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True,
                                       norm_first=True).eval()
    x = torch.randn(2, 6, 16)
    cm = nn.Transformer.generate_square_subsequent_mask(6)
    with torch.no_grad():
        ref = layer(x, src_mask=cm, is_causal=True)
        with AttentionProbe(layer) as p:
            out = layer(x, src_mask=cm, is_causal=True)
    assert torch.equal(out, ref)
    n1 = layer.norm1
    xn = F.layer_norm(x.double(), n1.normalized_shape, n1.weight.double(), n1.bias.double(),
                      n1.eps)
    want = mha_ref_logits(layer.self_attn, xn, xn, attn_mask=cm)
    assert_probe_matches(p, "self_attn", want, MHA_RTOL)


def test_transformer_encoder_nested_fast_path():
    """nn.TransformerEncoder in eval with padding runs its layers on nested
    tensors: only the real tokens are computed (and summarised)."""
    torch.manual_seed(4)
    enc = nn.TransformerEncoder(
        nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True), 2).eval()
    x = torch.randn(3, 7, 16)
    pad = torch.zeros(3, 7, dtype=torch.bool)
    pad[1, 4:] = True
    with warnings.catch_warnings():
        # torch's own note that nested tensors are a prototype
        warnings.filterwarnings("ignore", message="The PyTorch API of nested tensors",
                                category=UserWarning)
        with torch.no_grad():
            ref = enc(x, src_key_padding_mask=pad)
            with AttentionProbe(enc) as p:
                out = enc(x, src_key_padding_mask=pad)
    assert torch.equal(out, ref)
    assert p.calls == {"layers.0.self_attn": 1, "layers.1.self_attn": 1}
    lens = [7, 4, 7]
    parts = [mha_ref_logits(enc.layers[0].self_attn, x[i:i + 1, :n], x[i:i + 1, :n])
             for i, n in enumerate(lens)]
    for h in range(2):
        s = None
        for part in parts:
            one = fs.summarize(part[0, h].numpy())
            s = one if s is None else s.merge(one)
        assert_same_summary(p.summaries["layers.0.self_attn", h], s, MHA_RTOL)


def test_without_keyword_global_hooks_slow_path_still_covered(monkeypatch):
    """Older PyTorch (global hooks without with_kwargs): the modules take their
    slow path under the mode, which sees F.multi_head_attention_forward."""
    import fastsoftmax.torch._intercept as fst
    monkeypatch.setattr(fst, "global_hooks_take_kwargs", lambda: False)
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True).eval()
    x = torch.randn(3, 8, 32)
    pad = torch.zeros(3, 8, dtype=torch.bool)
    pad[0, 5:] = True
    with torch.no_grad(), AttentionProbe(layer) as p:
        layer(x, src_key_padding_mask=pad)
    assert p.calls == {"self_attn": 1}
    assert_probe_matches(p, "self_attn", mha_ref_logits(layer.self_attn, x, x, pad), MHA_RTOL)


# --------------------------------------------------------------------------
# names, every, snapshot, frame

class Block(nn.Module):
    def __init__(self, d=16, h=2):
        super().__init__()
        self.h = h
        self.qkv = nn.Linear(d, 3 * d)

    def forward(self, x):
        B, L, D = x.shape
        q, k, v = self.qkv(x).view(B, L, 3, self.h, D // self.h).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return y.transpose(1, 2).reshape(B, L, D)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([Block(), Block()])

    def forward(self, x):
        for b in self.blocks:
            x = x + b(x)
        return F.scaled_dot_product_attention(x[:, None], x[:, None], x[:, None])[:, 0]


def test_names_every_snapshot_history():
    torch.manual_seed(5)
    net = Net()
    x = torch.randn(2, 5, 16)
    with AttentionProbe(net, every=2) as p:
        for step in range(5):
            net(x)
            p.snapshot(step)
    h = p.history
    assert sorted(h.step.unique()) == [0, 2, 4]
    assert set(h.module) == {"blocks.0", "blocks.1", "Net"}
    assert (h.groupby("step").size() == 5).all()        # 2 + 2 heads, 1 for the root
    assert h.rows.eq(10).all() and h.calls.eq(1).all()
    assert p.summaries == {} and "step" in h.columns


def test_names_without_model_and_outside_modules():
    net = Net()
    x = torch.randn(1, 4, 16)
    with AttentionProbe() as p:
        net(x)
        net(x)
        F.scaled_dot_product_attention(x[:, None], x[:, None], x[:, None])
        F.scaled_dot_product_attention(x[:, None], x[:, None], x[:, None])
        net.blocks[1](x)                 # a module called on its own is a root
    assert p.calls == {"blocks.0": 2, "blocks.1": 2, "Net": 2, "call0": 1, "call1": 1,
                       "Block": 1}
    df = p.to_frame(by="module")
    assert list(df.module) == ["blocks.0", "blocks.1", "Net", "call0", "call1", "Block"]
    assert list(df.heads) == [2, 2, 1, 1, 1, 2]
    both = p.summaries["blocks.0", 0].merge(p.summaries["blocks.0", 1])
    assert df.set_index("module").loc["blocks.0", "entropy_mean"] == both["entropy"].mean


def test_frame_columns_are_the_sweeps():
    from fastsoftmax.sweeps import stat_columns
    p = AttentionProbe(thresholds=(1e-2, 1e-6))
    x = torch.randn(1, 1, 3, 4)
    with p:
        F.scaled_dot_product_attention(x, x, x)
    df = p.to_frame()
    assert list(df.columns) == ["module", "head", "calls", "rows", "skipped", "nonfinite",
                                "max_logit"] + stat_columns((1e-2, 1e-6))
    assert list(AttentionProbe().to_frame().columns) == list(df.columns[:7]) + \
        stat_columns()
    s = p.summaries["call0", 0]
    assert df.loc[0, "jac_diag_max_q0.5"] == s["jac_diag_max"].median
    assert df.loc[0, "entropy_below_1e-06"] == s["entropy"].fraction_below(1e-6)


def test_eager_softmax_scores():
    g = gen(8)
    scores = torch.randn(2, 3, 4, 6, generator=g) * 4
    scores[0, 1, 2] = -INF
    with AttentionProbe(eager=True) as p:
        F.softmax(scores, dim=-1)
        scores.softmax(3)
        torch.softmax(scores, -1, dtype=torch.float32)
        F.softmax(scores, dim=1)                    # not over the keys: ignored
        F.softmax(scores[0], dim=-1)                # not 4-d: ignored
    assert p.calls == {"call0": 1, "call1": 1, "call2": 1}
    assert_probe_matches(p, "call0", scores.double())
    with AttentionProbe() as p:
        F.softmax(scores, dim=-1)
    assert p.calls == {}


def test_mode_inside_module_and_reentry():
    """The probe entered twice, and a user's own mode inside it: both see
    the calls; the probe keeps its figures across entries."""
    x = torch.randn(1, 2, 3, 4)
    p = AttentionProbe()
    with p:
        F.scaled_dot_product_attention(x, x, x)
    rec = Recorder()
    with p, rec:
        F.scaled_dot_product_attention(x, x, x)
    assert len(rec.calls) == 1 and p.calls == {"call0": 2}
    # a mode above the probe's: it cannot step aside, the module takes its slow
    # path and is summarised once, through F.multi_head_attention_forward
    mha = nn.MultiheadAttention(8, 2, batch_first=True).eval()
    y = torch.randn(2, 3, 8)
    p2 = AttentionProbe(mha)
    with torch.no_grad(), p2, Recorder():
        mha(y, y, y, need_weights=False)
    assert p2.calls == {"MultiheadAttention": 1}
    assert_probe_matches(p2, "MultiheadAttention", mha_ref_logits(mha, y, y), MHA_RTOL)
    with pytest.raises(RuntimeError, match="already active"):
        with p, p:
            pass
    assert not p._active


def test_hooks_and_mode_removed_after_exception():
    from torch.nn.modules import module as mm
    pre, post = len(mm._global_forward_pre_hooks), len(mm._global_forward_hooks)
    net = Net()
    with pytest.raises(RuntimeError):
        with AttentionProbe(net):
            net(torch.randn(1, 4, 15))              # wrong width: the model raises
    assert len(mm._global_forward_pre_hooks) == pre and len(mm._global_forward_hooks) == post
    assert not mm._has_any_global_hook()
    assert torch.overrides._get_current_function_mode() is None


def test_other_threads_not_seen():
    x = torch.randn(1, 1, 3, 4)
    with AttentionProbe() as p:
        t = threading.Thread(target=F.scaled_dot_product_attention, args=(x, x, x))
        t.start()
        t.join()
    assert p.calls == {}


# --------------------------------------------------------------------------
# memory, arguments, import

def test_long_sequence_stays_within_budget():
    """L = S = 4096 on one head: 128 MiB of float64 logits if materialised,
    summarised in chunks of 2**20 logits (8 MiB: 16 chunks)."""
    L, E = 4096, 64
    chunk = 1 << 20
    g = gen(9)
    q, k, v = (torch.randn(1, 1, L, E, generator=g) for _ in range(3))
    warm = AttentionProbe()
    with warm:
        F.scaled_dot_product_attention(q[..., :64, :], k[..., :64, :], v[..., :64, :])
    path = "/proc/self/statm"
    if not os.path.exists(path):
        pytest.skip("needs /proc to read the resident set size")
    page = os.sysconf("SC_PAGE_SIZE")

    def rss():
        with open(path) as f:
            return int(f.read().split()[1]) * page

    peak = [0]
    done = threading.Event()

    def sample():
        while not done.is_set():
            peak[0] = max(peak[0], rss())
            time.sleep(0.002)

    def peak_growth(f):
        base = rss()
        peak[0] = base
        done.clear()
        th = threading.Thread(target=sample)
        th.start()
        try:
            f()
        finally:
            done.set()
            th.join()
        return peak[0] - base

    # the sampler does see a materialised (L, S) float64 matrix
    assert peak_growth(lambda: torch.zeros(L, L, dtype=torch.float64)) > 100 * 2**20
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True)   # SDPA's own memory
    del out
    p = AttentionProbe(chunk_logits=chunk)

    def probed():
        with p:
            F.scaled_dot_product_attention(q, k, v, is_causal=True)

    grew = peak_growth(probed)
    assert p.peak_chunk_logits <= chunk < CHUNK_LOGITS
    assert p.summaries["call0", 0].samples == L
    # the chunk (8 MiB), q/k copies in float64 (4 MiB), SDPA's output and the
    # kernels' scratch; the logits in one piece would be 128 MiB
    print(f"resident set grew by {grew / 2**20:.0f} MiB")
    assert grew < 48 * 2**20, f"resident set grew by {grew / 2**20:.0f} MiB"


@pytest.mark.parametrize("kw,err,match", [
    (dict(every=0), ValueError, "every must be >= 1"),
    (dict(every=1.5), TypeError, "every must be a positive integer"),
    (dict(target="random"), ValueError, "no labels"),
    (dict(target=-1), ValueError, "non-negative"),
    (dict(target=[1, 2]), TypeError, "target must be"),
    (dict(thresholds=(1e-3, -1)), ValueError, "positive finite"),
    (dict(backend="gpu"), ValueError, "backend must be one of"),
    (dict(chunk_logits=0), ValueError, "chunk_logits must be >= 1"),
    (dict(model="net"), TypeError, "torch.nn.Module"),
])
def test_bad_arguments_before_any_work(kw, err, match):
    model = kw.pop("model", None)
    with pytest.raises(err, match=match):
        AttentionProbe(model, **kw)


def test_target_key_index():
    x = torch.randn(1, 1, 3, 4)
    with AttentionProbe(target=2) as p:
        F.scaled_dot_product_attention(x, x, x)
    want = fs.summarize(ref_logits(x, x)[0, 0].numpy(), target=2)
    assert_same_summary(p.summaries["call0", 0], want)
    with pytest.raises(ValueError, match="out of range for the 3 keys"):
        with AttentionProbe(target=3):
            F.scaled_dot_product_attention(x, x, x)


def test_import_fastsoftmax_never_imports_torch_and_extra_message():
    code = ("import sys, fastsoftmax; assert 'torch' not in sys.modules\n"
            "sys.modules['torch'] = None\n"
            "try:\n    import fastsoftmax.torch\n"
            "except ImportError as e:\n    print(e)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=subprocess_env(), cwd=REPO, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "pip install 'fastsoftmax[torch]'" in r.stdout


@pytest.mark.parametrize("module", ["fastsoftmax.torch", "fastsoftmax.torch._logits"])
def test_docstring_examples(module):
    import importlib
    fst = importlib.import_module(module)
    res = doctest.testmod(fst, optionflags=doctest.ELLIPSIS)
    assert res.failed == 0 and res.attempted > 0


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_tensors_summarised_on_the_device():
    pytest.importorskip("numba.cuda")
    g = torch.Generator(device="cuda").manual_seed(0)
    q, k, v = (torch.randn(2, 2, 64, 32, device="cuda", generator=g) for _ in range(3))
    mask = torch.rand(2, 1, 64, 64, device="cuda", generator=g) > 0.3
    with AttentionProbe() as p:
        F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    want = head_summaries(ref_logits(q.cpu(), k.cpu(), mask.cpu()))
    for h in range(2):
        a, b = p.summaries["call0", h], want[h]
        assert a.samples == b.samples and a.skipped == b.skipped
        for name in fs.OBS_NAMES:       # GPU kernels round differently (README)
            assert a[name].mean == pytest.approx(b[name].mean, rel=1e-12)


# --------------------------------------------------------------------------
# HF transformers (optional)

def _hf():
    return pytest.importorskip("transformers")


def test_hf_gpt2_sdpa_names_padding_and_exactness():
    tr = _hf()
    cfg = tr.GPT2Config(n_layer=2, n_head=2, n_embd=32, n_positions=32, vocab_size=40,
                        bos_token_id=0, eos_token_id=0, attn_implementation="sdpa")
    torch.manual_seed(0)
    model = tr.GPT2LMHeadModel(cfg).eval()
    ids = torch.randint(0, 40, (2, 9))
    am = torch.ones(2, 9, dtype=torch.long)
    am[1, :3] = 0                                          # left padding
    with torch.no_grad():
        ref = model(ids, attention_mask=am).logits
        rec = Recorder()
        with AttentionProbe(model) as p, rec:
            out = model(ids, attention_mask=am).logits
    assert torch.equal(out, ref)
    assert list(p.calls) == ["transformer.h.0.attn", "transformer.h.1.attn"]
    for name, c in zip(p.calls, rec.calls):
        lg = ref_logits(c["query"], c["key"], c.get("attn_mask"), c.get("is_causal", False),
                        c.get("scale"))
        assert_probe_matches(p, name, lg)
    assert p.summaries["transformer.h.0.attn", 0].skipped == 3   # padded queries


def test_hf_llama_gqa():
    tr = _hf()
    cfg = tr.LlamaConfig(num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=2,
                         hidden_size=64, intermediate_size=64, vocab_size=40,
                         max_position_embeddings=32, bos_token_id=0, eos_token_id=0,
                         attn_implementation="sdpa")
    torch.manual_seed(0)
    model = tr.LlamaForCausalLM(cfg).eval()
    ids = torch.randint(0, 40, (2, 7))
    with torch.no_grad():
        ref = model(ids).logits
        rec = Recorder()
        with AttentionProbe(model) as p, rec:
            out = model(ids).logits
    assert torch.equal(out, ref)
    (c,) = rec.calls
    lg = ref_logits(c["query"], c["key"], c.get("attn_mask"), c.get("is_causal", False),
                    c.get("scale"), c.get("enable_gqa", False))
    assert lg.shape[1] == 4
    assert_probe_matches(p, "model.layers.0.self_attn", lg)


# --------------------------------------------------------------------------
# the example

def test_example_quick(tmp_path, monkeypatch, capsys):
    """The example run as a script (``__main__``, its command line in
    sys.argv) in this process: torch and the kernels are loaded already."""
    import runpy
    script = os.path.join(REPO, "examples", "attention_training.py")
    monkeypatch.setattr(sys, "argv", [script, "--quick", "--out", str(tmp_path)])
    runpy.run_path(script, run_name="__main__")
    assert "wrote " in capsys.readouterr().out
    import pandas as pd
    df = pd.read_csv(tmp_path / "attention_training.csv")
    assert set(df.run) == {"scaled", "unscaled"}
    assert {"step", "layer", "train_loss", "jac_diag_max_median", "entropy_mean",
            "jac_diag_max_below_1e-06", "max_logit"} <= set(df.columns)
    assert (tmp_path / "attention_training.png").stat().st_size > 0
    s0 = pd.read_csv(tmp_path / "attention_training_step0.csv")
    assert {"measured", "gaussian"} <= set(s0.source)
