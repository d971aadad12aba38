"""The light mode (statistics="max_logit"), never silent (a forward with no
attention warns once with the likely reason), bad arguments at construction,
snapshot() as a collective under torch.distributed (gloo, 2 processes), and
the logit builders without any hook."""
import math
import os
import socket
import warnings

import pytest

torch = pytest.importorskip("torch", reason="the attention probe needs PyTorch (the [torch] extra)")

from torch import nn                                    # noqa: E402
from torch.nn import functional as F                    # noqa: E402

from fastsoftmax.torch import AttentionProbe            # noqa: E402
from fastsoftmax.torch import _logits                   # noqa: E402

INF = math.inf


# tiny tensors: one torch thread (conftest's one_torch_thread fixture)
pytestmark = pytest.mark.usefixtures("one_torch_thread")


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


# --------------------------------------------------------------------------
# the builders, without any hook

def test_builders_match_references_without_hooks():
    g = gen()
    q, k, v = (torch.randn(2, 4, 5, 8, generator=g) for _ in range(3))
    mask = torch.rand(2, 1, 5, 5, generator=g) > 0.3
    got = _logits.materialize(_logits.sdpa_spec((q, k, v), {"attn_mask": mask, "scale": 0.5}))
    want = ((q.double() @ k.double().transpose(-2, -1)) * 0.5).masked_fill(~mask, -INF)
    # BLAS sums the E products in an order that depends on the shapes: an ulp
    torch.testing.assert_close(got, want, rtol=1e-14, atol=0)
    # GQA: query head h uses key head h // 2
    got = _logits.materialize(_logits.sdpa_spec((q, k[:, :2], v[:, :2]),
                                                {"enable_gqa": True, "is_causal": True}))
    kk = k[:, :2].double().repeat_interleave(2, 1)
    want = (q.double() @ kk.transpose(-2, -1)) / math.sqrt(8)
    want = want.masked_fill(~torch.ones(5, 5, dtype=torch.bool).tril(), -INF)
    torch.testing.assert_close(got, want, rtol=1e-14, atol=0)
    # nn.MultiheadAttention's functional call (L, N, E), cross-attention
    torch.manual_seed(0)
    mha = nn.MultiheadAttention(8, 2)
    xq, xk = torch.randn(3, 2, 8), torch.randn(4, 2, 8)
    spec = _logits.mha_functional_spec(
        (xq, xk, xk, 8, 2, mha.in_proj_weight, mha.in_proj_bias, None, None, False, 0.0,
         mha.out_proj.weight, mha.out_proj.bias), {})
    W, b = mha.in_proj_weight.double(), mha.in_proj_bias.double()
    qq = F.linear(xq.double(), W[:8], b[:8]).view(3, 2, 2, 4).permute(1, 2, 0, 3)
    kk = F.linear(xk.double(), W[8:16], b[8:16]).view(4, 2, 2, 4).permute(1, 2, 0, 3)
    want = (qq @ kk.transpose(-2, -1)) / 2.0
    torch.testing.assert_close(_logits.materialize(spec), want, rtol=1e-13, atol=0)
    # eager scores as given
    x = torch.randn(1, 2, 3, 4, generator=g)
    assert torch.equal(_logits.materialize(_logits.scores_spec(x)), x.double())


# --------------------------------------------------------------------------
# the light mode

@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_light_mode_max_logit_and_rows_in_the_models_dtype(dtype):
    g = gen(1)
    q, k, v = (torch.randn(3, 2, 6, 8, generator=g).to(dtype) for _ in range(3))
    mask = torch.ones(3, 1, 6, 6, dtype=torch.bool)
    mask[2, :, :, 4:] = False                       # right padding of sequence 2
    with AttentionProbe(statistics="max_logit") as p:
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=False)
    assert torch.equal(out, F.scaled_dot_product_attention(q, k, v, attn_mask=mask))
    ml = p.max_logits["call0"]
    assert ml.dtype == dtype and ml.device == q.device and ml.shape == (2,)
    s = ((q @ k.transpose(-2, -1)) * (1 / math.sqrt(8))).masked_fill(~mask, -INF)
    s[2, :, 4:] = -INF                              # padded queries
    want = s.amax(dim=(0, 2, 3))
    assert torch.equal(ml, want)
    df = p.to_frame()
    assert list(df.columns) == ["module", "head", "calls", "rows", "max_logit"]
    assert df.rows.eq(16).all() and p.summaries == {}


def test_light_mode_counts_like_the_full_mode_on_a_model():
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True)
    x = torch.randn(2, 7, 16)
    pad = torch.zeros(2, 7, dtype=torch.bool)
    pad[1, 5:] = True
    with AttentionProbe(layer, statistics="max_logit") as light:
        layer(x, src_key_padding_mask=pad)
    with AttentionProbe(layer) as full:
        layer(x, src_key_padding_mask=pad)
    a, b = light.to_frame(), full.to_frame()
    assert list(a.rows) == list(b.rows) == [12, 12]
    assert list(a.max_logit) == pytest.approx(list(b.max_logit), rel=1e-5)


# --------------------------------------------------------------------------
# never silent

def test_eager_attention_without_eager_warns_once():
    tr = pytest.importorskip("transformers")
    cfg = tr.GPT2Config(n_layer=1, n_head=2, n_embd=16, n_positions=16, vocab_size=20,
                        attn_implementation="eager")
    model = tr.GPT2LMHeadModel(cfg).eval()
    ids = torch.randint(0, 20, (1, 5))
    p = AttentionProbe(model)
    with pytest.warns(RuntimeWarning, match="pass eager=True"):
        with torch.no_grad(), p:
            model(ids)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with torch.no_grad(), p:                    # once
            model(ids)
    with torch.no_grad(), AttentionProbe(model, eager=True) as p2:
        model(ids)
    assert p2.to_frame().rows.eq(5).all()


def test_flash_attention_named_in_the_warning():
    class Flash(nn.Module):
        class config:                               # as HF models carry it
            _attn_implementation = "flash_attention_2"

        def forward(self, x):
            return x * 2
    with pytest.warns(RuntimeWarning, match="flash_attn kernels directly"):
        with AttentionProbe(Flash()) as p:
            p.model(torch.ones(2))


# --------------------------------------------------------------------------
# bad arguments

@pytest.mark.parametrize("kw,err,match", [
    (dict(statistics="mean"), ValueError, "statistics must be one of"),
    (dict(every=0), ValueError, "every must be >= 1"),
    (dict(query_mask=torch.ones(2, 3)), TypeError, "bool tensor"),
])
def test_bad_arguments_at_construction(kw, err, match):
    with pytest.raises(err, match=match):
        AttentionProbe(**kw)


# --------------------------------------------------------------------------
# data parallel: gloo, two processes on this machine

def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rank(rank, world, port, out):
    import datetime

    import torch.distributed as dist
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    # a rank whose peer died fails in minutes, not after gloo's 30
    dist.init_process_group("gloo", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=120))
    try:
        torch.manual_seed(0)
        net = nn.MultiheadAttention(8, 2, batch_first=True)
        x = torch.randn(4, 5, 8, generator=gen(3))
        part = x[rank * 2:(rank + 1) * 2]           # each rank half the batch
        p = AttentionProbe(net)
        with torch.no_grad(), p:
            net(part, part, part, need_weights=False)
        df = p.snapshot(7)
        torch.save({"frame": df.to_dict("list")}, os.path.join(out, f"rank{rank}.pt"))
    finally:
        dist.destroy_process_group()


def _peer_rank(i, world, port, out):
    """Rank 1 in a spawned process (``mp.spawn`` numbers its processes from 0)."""
    _rank(i + 1, world, port, out)


def test_snapshot_is_the_merge_over_ranks(tmp_path, monkeypatch):
    """Two ranks: rank 0 in this process (torch is loaded here already),
    rank 1 in a spawned one; each snapshot is the merge over both."""
    mp = pytest.importorskip("torch.multiprocessing")
    if not torch.distributed.is_available():
        pytest.skip("torch.distributed is not available")
    port = _free_port()
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")     # _rank sets them; restored after
    monkeypatch.setenv("MASTER_PORT", str(port))
    peer = mp.spawn(_peer_rank, args=(2, port, str(tmp_path)), nprocs=1, join=False)
    try:
        _rank(0, 2, port, str(tmp_path))
        while not peer.join():
            pass
    finally:
        for proc in peer.processes:
            if proc.is_alive():
                proc.terminate()
    torch.manual_seed(0)
    net = nn.MultiheadAttention(8, 2, batch_first=True)
    x = torch.randn(4, 5, 8, generator=gen(3))
    with torch.no_grad(), AttentionProbe(net) as whole:
        net(x, x, x, need_weights=False)
    want = whole.to_frame()
    for r in range(2):
        got = torch.load(tmp_path / f"rank{r}.pt")["frame"]
        assert got["step"] == [7, 7]
        assert got["rows"] == list(want.rows) == [20, 20]
        assert got["calls"] == [1, 1]
        for col in ("entropy_mean", "jac_diag_max_mean", "max_logit", "entropy_q0.5"):
            assert got[col] == pytest.approx(list(want[col]), rel=1e-12), col
        assert got["max_prob_below_0.001"] == list(want["max_prob_below_0.001"])
