"""Padding never enters a statistic: the same sequences give the same rows and
statistics padded right or left, in train mode or on eval's nested tensors,
and one by one unpadded (HF GPT-2, BERT, BART with cross-attention and an
explicit query mask; nn.TransformerEncoder); the logit builders' padding
rule tested without any hook."""
import math
import warnings

import pytest

torch = pytest.importorskip("torch", reason="the attention probe needs PyTorch (the [torch] extra)")

from torch import nn                                    # noqa: E402
from torch.nn import functional as F                    # noqa: E402

from fastsoftmax.torch import AttentionProbe            # noqa: E402
from fastsoftmax.torch import _logits                   # noqa: E402

INF = math.inf
LENS = [16, 9, 5]           # 30 real tokens in a batch of 3 x 16


# tiny tensors: one torch thread (conftest's one_torch_thread fixture)
pytestmark = pytest.mark.usefixtures("one_torch_thread")


def merged_one_by_one(run, seqs):
    """Per (module, head) the Summaries of each sequence probed alone, merged."""
    out = {}
    for s in seqs:
        for key, summ in run(s).items():
            out[key] = summ if key not in out else out[key].merge(summ)
    return out


def assert_same_rows_and_statistics(got, want, rtol=1e-4):
    """Rows exactly; every observable's mean to the rounding of the model's own
    float32 q and k (batched and unbatched projections round differently)."""
    assert sorted(got) == sorted(want)
    for key in want:
        a, b = got[key], want[key]
        assert a.samples == b.samples, key
        for name in ("entropy", "max_prob", "jac_diag_max"):
            assert a[name].mean == pytest.approx(b[name].mean, rel=rtol), (key, name)


def masks(lens, L, left):
    am = torch.zeros(len(lens), L, dtype=torch.long)
    for i, n in enumerate(lens):
        if left:
            am[i, L - n:] = 1
        else:
            am[i, :n] = 1
    return am


def pack(seqs, L, left, pad=0):
    ids = torch.full((len(seqs), L), pad, dtype=torch.long)
    for i, s in enumerate(seqs):
        if left:
            ids[i, L - len(s):] = s
        else:
            ids[i, :len(s)] = s
    return ids


# --------------------------------------------------------------------------
# the rule, without any hook

def test_builder_padding_rule_without_hooks():
    g = torch.Generator().manual_seed(0)
    q = torch.randn(2, 1, 4, 8, generator=g)
    # right padding with a causal structure: the padded query 3 still sees
    # keys 0-2, but no query sees key 3
    seen = torch.ones(4, 4, dtype=torch.bool).tril()
    seen[:, 3] = False
    spec = _logits.sdpa_spec((q, q, q, seen), {})
    lg = _logits.materialize(spec)
    assert torch.isinf(lg[:, 0, 3]).all() and torch.isfinite(lg[:, 0, 2, :3]).all()
    # a random mask that hides a real token's own key from it alone: kept
    own = torch.ones(4, 4, dtype=torch.bool)
    own[1, 1] = False
    lg = _logits.materialize(_logits.sdpa_spec((q, q, q, own), {}))
    assert torch.isfinite(lg[:, 0, 1, [0, 2, 3]]).all()
    # HF's additive masks: finfo.min, not -inf
    add = torch.zeros(4, 4)
    add[:, 2] = torch.finfo(torch.float32).min
    lg = _logits.materialize(_logits.sdpa_spec((q, q, q, add), {}))
    assert torch.isinf(lg[:, 0, 2]).all()
    # cross-attention (L != S): no rule; an explicit query mask
    k = torch.randn(2, 1, 6, 8, generator=g)
    qm = torch.tensor([[True, True, False, False], [True, True, True, True]])
    lg = _logits.materialize(_logits.sdpa_spec((q, k, k), {}), query_mask=qm)
    assert torch.isinf(lg[0, 0, 2:]).all() and torch.isfinite(lg[1]).all()


# --------------------------------------------------------------------------
# HF models from configs

def _tr():
    return pytest.importorskip("transformers")


def _gpt2():
    tr = _tr()
    cfg = tr.GPT2Config(n_layer=1, n_head=2, n_embd=32, n_positions=32, vocab_size=50,
                        bos_token_id=0, eos_token_id=0, attn_implementation="sdpa")
    torch.manual_seed(0)
    return tr.GPT2LMHeadModel(cfg).eval()


def test_gpt2_right_left_and_one_by_one():
    model = _gpt2()
    torch.manual_seed(1)
    seqs = [torch.randint(1, 50, (n,)) for n in LENS]

    def probe(ids, am=None, pos=None):
        with torch.no_grad(), AttentionProbe(model) as p:
            model(ids, attention_mask=am, position_ids=pos)
        return p

    alone = merged_one_by_one(lambda s: probe(s[None]).summaries, seqs)
    for left in (False, True):
        am = masks(LENS, 16, left)
        pos = (am.cumsum(1) - 1).clamp(min=0)
        p = probe(pack(seqs, 16, left), am, pos)
        df = p.to_frame()
        assert df.rows.eq(30).all() and df.skipped.eq(18).all(), left
        assert_same_rows_and_statistics(p.summaries, alone)


def test_bert_key_padding():
    tr = _tr()
    cfg = tr.BertConfig(num_hidden_layers=1, num_attention_heads=2, hidden_size=32,
                        intermediate_size=32, vocab_size=50, max_position_embeddings=32,
                        attn_implementation="sdpa")
    torch.manual_seed(0)
    model = tr.BertModel(cfg, add_pooling_layer=False).eval()
    seqs = [torch.randint(1, 50, (n,)) for n in LENS]

    def probe(ids, am=None):
        with torch.no_grad(), AttentionProbe(model) as p:
            model(ids, attention_mask=am)
        return p

    alone = merged_one_by_one(lambda s: probe(s[None]).summaries, seqs)
    p = probe(pack(seqs, 16, False), masks(LENS, 16, False))
    assert p.to_frame().rows.eq(30).all()
    assert_same_rows_and_statistics(p.summaries, alone)


def test_bart_cross_attention_with_query_mask():
    """Encoder 16 positions, decoder 12: the decoder's padded queries in
    cross-attention are invisible to any rule; the query mask names them."""
    tr = _tr()
    cfg = tr.BartConfig(encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
                        decoder_attention_heads=2, d_model=32, encoder_ffn_dim=32,
                        decoder_ffn_dim=32, vocab_size=50, max_position_embeddings=32,
                        pad_token_id=1, bos_token_id=0, eos_token_id=2,
                        decoder_start_token_id=2, attn_implementation="sdpa")
    torch.manual_seed(0)
    model = tr.BartModel(cfg).eval()
    src = [torch.randint(3, 50, (n,)) for n in LENS]
    dlens = [12, 7, 3]
    tgt = [torch.randint(3, 50, (n,)) for n in dlens]

    def probe(ids, am, dids, dam):
        p = AttentionProbe(model, query_mask=None if dam is None else dam.bool())
        with torch.no_grad(), p:
            model(input_ids=ids, attention_mask=am, decoder_input_ids=dids,
                  decoder_attention_mask=dam)
        return p

    alone = merged_one_by_one(lambda st: probe(st[0][None], None, st[1][None], None).summaries,
                              list(zip(src, tgt)))
    p = probe(pack(src, 16, False, 1), masks(LENS, 16, False),
              pack(tgt, 12, False, 1), masks(dlens, 12, False))
    rows = p.to_frame().groupby("module").rows.first().to_dict()
    assert rows["encoder.layers.0.self_attn"] == 30
    assert rows["decoder.layers.0.self_attn"] == rows["decoder.layers.0.encoder_attn"] == 22
    assert_same_rows_and_statistics(p.summaries, alone)


# --------------------------------------------------------------------------
# nn.TransformerEncoder: train mode, eval (nested tensors), one by one

def test_transformer_encoder_train_eval_one_by_one():
    torch.manual_seed(0)
    enc = nn.TransformerEncoder(
        nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True), 1,
        enable_nested_tensor=True)
    x = torch.randn(3, 16, 16)
    pad = masks(LENS, 16, False).logical_not()

    def probe(xx, kpm, train):
        enc.train(train)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="The PyTorch API of nested tensors",
                                    category=UserWarning)
            with torch.no_grad(), AttentionProbe(enc) as p:
                enc(xx, src_key_padding_mask=kpm)
        return p

    alone = merged_one_by_one(lambda i: probe(x[i:i + 1, :LENS[i]], None, False).summaries,
                              range(3))
    for train in (True, False):
        p = probe(x, pad, train)
        assert p.to_frame().rows.eq(30).all(), train
        assert_same_rows_and_statistics(p.summaries, alone, rtol=1e-9)


# --------------------------------------------------------------------------
# the query mask's checks

@pytest.mark.parametrize("mask,err,match", [
    (torch.ones(2, 3), TypeError, "bool tensor"),
    (torch.ones(2, 3, 4, dtype=torch.bool), ValueError, r"\(batch, queries\)"),
    ([[True]], TypeError, "torch.Tensor"),
])
def test_bad_query_mask(mask, err, match):
    with pytest.raises(err, match=match):
        AttentionProbe(query_mask=mask)
    p = AttentionProbe()
    with pytest.raises(err, match=match):
        p.query_mask = mask


def test_query_mask_packed_sequences():
    """Packed sequences: a block-diagonal mask sees no padding, the query mask
    drops the filler at the end."""
    g = torch.Generator().manual_seed(3)
    q = torch.randn(1, 2, 6, 8, generator=g)
    qm = torch.tensor([[True] * 5 + [False]])
    with AttentionProbe(query_mask=qm) as p:
        F.scaled_dot_product_attention(q, q, q, is_causal=True)
    assert p.to_frame().rows.eq(5).all() and p.to_frame().skipped.eq(1).all()
