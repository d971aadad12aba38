"""torch.compile under the probe (eager and inductor backends, compiled before
the probe or inside it, model.compile() in place): the same summaries as
uncompiled, compiled once, outputs and gradients bitwise those of the
compiled model without the probe; flex_attention with its score_mod and
block mask, eager and compiled."""
import math
import warnings

import pytest

torch = pytest.importorskip("torch", reason="the attention probe needs PyTorch (the [torch] extra)")

from torch import nn                                    # noqa: E402
from torch.nn import functional as F                    # noqa: E402

import fastsoftmax as fs                                # noqa: E402
from fastsoftmax.torch import AttentionProbe            # noqa: E402

INF = math.inf


# Dynamo looks at `.grad` of the tensors it wraps under a torch-function mode
# and hides torch's own non-leaf warning with a display filter, which pytest's
# "error" filter turns into an exception first: not a warning a user sees;
# tiny tensors: one torch thread (conftest's one_torch_thread fixture)
pytestmark = [pytest.mark.usefixtures("one_torch_thread"), pytest.mark.filterwarnings(
    "ignore:The .grad attribute of a Tensor that is not a leaf:UserWarning")]


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


class Block(nn.Module):
    def __init__(self, d=16, h=2):
        super().__init__()
        self.h = h
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)

    def forward(self, x):
        B, L, D = x.shape
        q, k, v = self.qkv(x).view(B, L, 3, self.h, D // self.h).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return x + self.out(y.transpose(1, 2).reshape(B, L, D))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(Block(), Block())

    def forward(self, x):
        return self.blocks(x).square().mean()


class Counting:
    """A backend that counts the graphs it compiles (Dynamo's eager backend)."""

    def __init__(self):
        self.graphs = 0

    def __call__(self, gm, example_inputs):
        self.graphs += 1
        return gm.forward


def same_summaries(a, b, rtol=1e-6):
    assert sorted(a) == sorted(b)
    for key in a:
        assert a[key].samples == b[key].samples and a[key].skipped == b[key].skipped
        for name in fs.OBS_NAMES:
            assert a[key][name].mean == pytest.approx(b[key][name].mean, rel=rtol), key


def run(model, x, probe=None, grad=False):
    x = x.clone().requires_grad_(grad)
    if probe is None:
        y = model(x)
    else:
        with probe:
            y = model(x)
    if not grad:
        return y.detach(), None
    y.backward()
    return y.detach(), x.grad


@pytest.mark.parametrize("where", ["before", "inside", "in place"])
def test_eager_backend_same_summaries_compiles_once_bitwise(where):
    torch.manual_seed(0)
    net = Net()
    x = torch.randn(2, 6, 16)
    ref = AttentionProbe(net)
    run(net, x, ref)
    backend = Counting()
    if where == "in place":
        net.compile(backend=backend)
        cm = net
    elif where == "before":
        cm = torch.compile(net, backend=backend)
    y0, g0 = (None, None) if where == "inside" else run(cm, x, grad=True)  # without the probe
    probe = AttentionProbe(cm if where == "before" else net)
    for i in range(3):
        if where == "inside":
            with probe:
                if i == 0:
                    cm = torch.compile(net, backend=backend)
                y1, g1 = cm(x).detach(), None
        else:
            y1, g1 = run(cm, x, probe, grad=True)
        assert torch.equal(y1, y0 if y0 is not None else run(cm, x)[0])
        if g1 is not None:
            assert torch.equal(g1, g0)
        if i == 0:
            graphs = backend.graphs
            same_summaries(probe.summaries, ref.summaries)
            assert list(probe.calls) == ["blocks.0", "blocks.1"]
        probe.snapshot(i)
    assert backend.graphs == graphs, "recompiled"
    assert len(probe.history) == 3 * 4


@pytest.mark.filterwarnings("ignore:`torch.jit.script_method` is deprecated:DeprecationWarning")
def test_inductor_compiled_before_probe():
    torch.manual_seed(0)
    net = Block()
    x = torch.randn(2, 6, 16)
    ref = AttentionProbe(net)
    with torch.no_grad():
        run(net, x, ref)
        cm = torch.compile(net)                 # inductor: the tensor's device, CPU here
        y0, _ = run(cm, x)
        probe = AttentionProbe(cm, every=2)
        for step in range(4):
            y1, _ = run(cm, x, probe)
            assert torch.equal(y1, y0)
            probe.snapshot(step)
    assert sorted(probe.history.step.unique()) == [0, 2]
    h = probe.history[probe.history.step == 0]
    assert list(h["rows"]) == [12, 12]
    want = ref.to_frame()
    for col in ("entropy_mean", "jac_diag_max_mean", "max_logit"):
        assert list(h[col]) == pytest.approx(list(want[col]), rel=1e-5)


def test_every_with_in_place_compile_is_a_clear_error():
    net = Net()
    net.compile(backend=Counting())
    with pytest.raises(ValueError, match="compiled in place"):
        with AttentionProbe(net, every=2):
            pass


# --------------------------------------------------------------------------
# flex_attention

def _flex():
    fa = pytest.importorskip("torch.nn.attention.flex_attention")
    return fa


def flex_ref(q, k, score_mod, mask_mod, scale):
    B, H, L, E = q.shape
    S = k.shape[-2]
    s = (q.double() @ k.double().transpose(-2, -1)) * scale
    b = torch.arange(B)[:, None, None, None]
    h = torch.arange(H)[None, :, None, None]
    qi = torch.arange(L)[None, None, :, None]
    ki = torch.arange(S)[None, None, None, :]
    s = score_mod(s, b, h, qi, ki)
    return s.masked_fill(~mask_mod(b, h, qi, ki).expand(B, H, L, S), -INF)


def _flex_case():
    fa = _flex()

    def causal(b, h, q_idx, kv_idx):
        return q_idx >= kv_idx

    def bias(score, b, h, q_idx, kv_idx):
        return score + 0.25 * (q_idx - kv_idx) + h

    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 2, 8, 16, generator=g) for _ in range(3))
    bm = fa.create_block_mask(causal, 2, 2, 8, 8, device="cpu", BLOCK_SIZE=4)
    return fa, q, k, v, bm, causal, bias


def test_flex_attention_eager_score_mod_and_block_mask():
    fa, q, k, v, bm, causal, bias = _flex_case()
    with warnings.catch_warnings():
        # torch's own note that eager flex_attention is unfused
        warnings.filterwarnings("ignore", message="flex_attention called without torch.compile")
        ref = fa.flex_attention(q, k, v, score_mod=bias, block_mask=bm)
        with AttentionProbe() as p:
            out = fa.flex_attention(q, k, v, score_mod=bias, block_mask=bm)
    assert torch.equal(out, ref)
    lg = flex_ref(q, k, bias, causal, 0.25)
    for h in range(2):
        want = fs.summarize(lg[:, h].reshape(-1, 8).numpy())
        got = p.summaries["call0", h]
        assert got.samples == want.samples == 16
        for name in fs.OBS_NAMES:
            assert got[name].mean == pytest.approx(want[name].mean, rel=1e-12)


def test_flex_attention_compiled():
    fa, q, k, v, bm, causal, bias = _flex_case()
    flex = torch.compile(fa.flex_attention, backend="eager")
    ref = flex(q, k, v, score_mod=bias, block_mask=bm)
    with AttentionProbe() as p:
        out = flex(q, k, v, score_mod=bias, block_mask=bm)
    assert torch.equal(out, ref)
    lg = flex_ref(q, k, bias, causal, 0.25)
    want = fs.summarize(lg[:, 1].reshape(-1, 8).numpy())
    assert p.summaries["call0", 1]["entropy"].mean == pytest.approx(want["entropy"].mean,
                                                                    rel=1e-12)


def test_compiled_encoder_layer_training_seen_and_named():
    """A compiled nn.TransformerEncoderLayer in train mode runs its slow path
    (F.multi_head_attention_forward under the mode): seen, named from the
    module frames, the same figures as eager, outputs bitwise."""
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True)
    x = torch.randn(2, 7, 16)
    with AttentionProbe(layer) as ref:
        layer(x)
    cm = torch.compile(layer, backend=Counting())
    y0 = cm(x)
    with AttentionProbe(cm) as p:
        y1 = cm(x)
    assert torch.equal(y0, y1)
    assert p.calls == ref.calls == {"self_attn": 1}
    same_summaries(p.summaries, ref.summaries, rtol=1e-12)
