"""The probe in training loops: the transformers and Lightning callbacks, the
SummaryWriter logging, the short view and the history plot, each with the real
library and the event files read back."""
import glob
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the probe's integrations need torch")
pd = pytest.importorskip("pandas", reason="probe frames are pandas DataFrames")

from fastsoftmax.torch import AttentionProbe  # noqa: E402
from fastsoftmax import torch as tc  # noqa: E402
from fastsoftmax.torch._driver import Driver  # noqa: E402

KEYS = ("max_logit", "jac_diag_max_log10_q0.5", "entropy_mean", "jac_diag_max_below_1e-06")


# tiny tensors: one torch thread (conftest's one_torch_thread fixture)
pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _events(logdir):
    ea_mod = pytest.importorskip(
        "tensorboard.backend.event_processing.event_accumulator",
        reason="reading the event files back needs tensorboard")
    files = glob.glob(f"{logdir}/**/events.out.tfevents.*", recursive=True)
    assert files, f"no event file under {logdir}"
    out = {}
    for f in files:
        ea = ea_mod.EventAccumulator(f, size_guidance={"scalars": 0, "histograms": 0})
        ea.Reload()
        for tag in ea.Tags()["scalars"]:
            out.setdefault(tag, {}).update({e.step: e.value for e in ea.Scalars(tag)})
        for tag in ea.Tags()["histograms"]:
            out.setdefault(tag, {}).update({e.step: e.histogram_value
                                            for e in ea.Histograms(tag)})
    return out


def _check_modules_against_heads(cb):
    """The logged per-module values against the per-head history: the largest
    logit is the heads' largest; fractions and means are row-weighted means;
    the merged median lies between the heads' medians."""
    h, m = cb.history, cb.module_history
    assert len(h) and len(m)
    for (step, module), d in h.groupby(["step", "module"]):
        r = m[(m.step == step) & (m.module == module)]
        assert len(r) == 1
        r = r.iloc[0]
        assert r.heads == len(d)
        assert r.max_logit == d.max_logit.max()
        w = d.rows / d.rows.sum()
        assert r["jac_diag_max_below_1e-06"] == pytest.approx(
            (w * d["jac_diag_max_below_1e-06"]).sum(), rel=1e-12, abs=1e-15)
        assert r.entropy_mean == pytest.approx((w * d.entropy_mean).sum(), rel=1e-12)
        med = d["jac_diag_max_log10_q0.5"]
        assert med.min() - 1e-9 <= r["jac_diag_max_log10_q0.5"] <= med.max() + 1e-9


def _check_logged(cb, events, prefix):
    m = cb.module_history
    for rec in m.to_dict("records"):
        for k in KEYS:
            tag = f"{prefix}{rec['module']}/{k}"
            assert tag in events, (tag, sorted(events)[:20])
            got = events[tag][rec["step"]]
            assert got == pytest.approx(np.float32(rec[k]), rel=1e-6, abs=1e-7), (tag, rec["step"])
    logged = {t for t in events if t.startswith(prefix)}
    assert len(logged) == len(KEYS) * m.module.nunique()


# --------------------------------------------------------------------------
# transformers

def _tiny_gpt2():
    transformers = pytest.importorskip("transformers", reason="the Trainer callback needs it")
    pytest.importorskip("accelerate", reason="transformers' Trainer needs accelerate")
    cfg = transformers.GPT2Config(n_layer=2, n_head=2, n_embd=32, vocab_size=64,
                                  n_positions=32, attn_implementation="sdpa")
    torch.manual_seed(0)
    return transformers, transformers.GPT2LMHeadModel(cfg)


class _Tokens(torch.utils.data.Dataset):
    def __init__(self, n=32, length=16, vocab=64):
        g = torch.Generator().manual_seed(1)
        self.x = torch.randint(0, vocab, (n, length), generator=g)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return {"input_ids": self.x[i], "labels": self.x[i]}


@pytest.mark.parametrize("how", ["attach", "callbacks"])
def test_trainer_callback_tensorboard(tmp_path, monkeypatch, how):
    pytest.importorskip("tensorboard", reason="report_to=['tensorboard'] needs tensorboard")
    transformers, model = _tiny_gpt2()
    logdir = tmp_path / "tb"
    monkeypatch.setenv("TENSORBOARD_LOGGING_DIR", str(logdir))
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path / "out"), max_steps=6, per_device_train_batch_size=4,
        learning_rate=1e-3, report_to=["tensorboard"], logging_steps=100,
        save_strategy="no", disable_tqdm=True, use_cpu=True, seed=0)
    cb = tc.ProbeCallback(every=2)
    # passed to the Trainer as any callback, or attached after it is made
    trainer = transformers.Trainer(model=model, args=args, train_dataset=_Tokens(),
                                   callbacks=[cb] if how == "callbacks" else None)
    if "logging_dir" in transformers.TrainingArguments.__dataclass_fields__:
        trainer.args.logging_dir = str(logdir)
    if how == "attach":
        assert cb.attach(trainer) is cb
    assert isinstance(cb, transformers.TrainerCallback)
    trainer.train()
    h = cb.history
    assert sorted(h.step.unique()) == [1, 3, 5]           # steps done: 0, 2, 4 probed
    assert set(h.module) == {"transformer.h.0.attn", "transformer.h.1.attn"}
    assert set(h["head"]) == {0, 1}
    assert (h.rows == 4 * 16).all()                        # one batch, every query
    assert len(h.columns) > 200                            # the full frame
    _check_modules_against_heads(cb)
    logged = [e for e in trainer.state.log_history if any(k.startswith("attention/") for k in e)]
    assert [e["step"] for e in logged] == [1, 3, 5]
    _check_logged(cb, _events(logdir), "train/attention/")


def test_trainer_callback_outside_a_trainer_says_attach():
    _tiny_gpt2()
    cb = tc.ProbeCallback()
    with pytest.raises(RuntimeError, match="attach"):
        cb.on_train_begin(None, None, None, model=torch.nn.Linear(2, 2))


def test_trainer_callback_outputs_untouched(tmp_path):
    """Training with the callback gives the weights training without it gives."""
    transformers, _ = _tiny_gpt2()

    def train(with_cb):
        _, model = _tiny_gpt2()
        args = transformers.TrainingArguments(
            output_dir=str(tmp_path / str(with_cb)), max_steps=3, per_device_train_batch_size=4,
            report_to=[], save_strategy="no", disable_tqdm=True, use_cpu=True, seed=0)
        trainer = transformers.Trainer(model=model, args=args, train_dataset=_Tokens())
        if with_cb:
            tc.ProbeCallback(every=1).attach(trainer)
        trainer.train()
        return [p.detach().clone() for p in model.parameters()]

    for a, b in zip(train(False), train(True)):
        assert torch.equal(a, b)


def test_callback_arguments():
    with pytest.raises(ValueError, match="every"):
        Driver(0, "attention", {})
    with pytest.raises(TypeError, match="every"):
        Driver(1, "attention", {"every": 3})
    with pytest.raises(TypeError, match="model"):
        Driver(1, "attention", {"model": None})
    with pytest.raises(ValueError):
        Driver(1, "attention", {"target": "random"})


@pytest.mark.parametrize("every, exc", [(0, ValueError), (-2, ValueError), (1.5, TypeError),
                                        ("3", TypeError), (True, TypeError)])
def test_every_is_checked_once_as_the_probe_checks_it(every, exc):
    """The callbacks' ``every`` and the probe's ``every`` fail alike: one
    validator, one exception type per fault, the same message."""
    with pytest.raises(exc, match="every") as by_callback:
        Driver(every, "attention", {})
    with pytest.raises(exc) as by_probe:
        AttentionProbe(None, every=every)
    assert str(by_callback.value) == str(by_probe.value)


def test_callbacks_are_plain_modules_and_the_old_module_warns():
    transformers = pytest.importorskip("transformers")
    from fastsoftmax.torch import ProbeCallback, hf
    assert ProbeCallback is hf.ProbeCallback and tc.ProbeCallback is hf.ProbeCallback
    assert issubclass(ProbeCallback, transformers.TrainerCallback)
    assert ProbeCallback.__module__ == "fastsoftmax.torch.hf"
    from fastsoftmax.torch import callbacks
    with pytest.warns(DeprecationWarning, match="removed in 0.4.0: use "
                                                "fastsoftmax.torch.ProbeCallback"):
        assert callbacks.ProbeCallback is ProbeCallback
    with pytest.raises(AttributeError, match="nothing"):
        callbacks.nothing
    pl = pytest.importorskip("lightning.pytorch")
    from fastsoftmax.torch import LightningProbeCallback, lightning
    assert LightningProbeCallback is lightning.LightningProbeCallback
    assert issubclass(LightningProbeCallback, pl.Callback)
    with pytest.warns(DeprecationWarning, match="fastsoftmax.torch.LightningProbeCallback"):
        assert callbacks.LightningProbeCallback is LightningProbeCallback


# --------------------------------------------------------------------------
# Lightning

# lightning 2.6 itself uses torch's deprecated pytree LeafSpec, and warns that
# a 24-sample loader has few workers: the library's warnings, not the probe's
@pytest.mark.filterwarnings("ignore:.*LeafSpec.*:FutureWarning")
@pytest.mark.filterwarnings("ignore:.*does not have many workers.*")
@pytest.mark.filterwarnings("ignore:.*smaller than the logging interval.*")
def test_lightning_callback_tensorboard(tmp_path):
    pl = pytest.importorskip("lightning.pytorch", reason="the Lightning callback needs lightning")
    pytest.importorskip("tensorboard", reason="TensorBoardLogger needs tensorboard")
    from lightning.pytorch.loggers import TensorBoardLogger

    class Module(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.emb = torch.nn.Embedding(64, 32)
            layer = torch.nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True)
            self.enc = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
            self.out = torch.nn.Linear(32, 64)

        def training_step(self, batch, batch_idx):
            (x,) = batch
            mask = torch.nn.Transformer.generate_square_subsequent_mask(x.shape[1])
            y = self.out(self.enc(self.emb(x), mask=mask, is_causal=True))
            return torch.nn.functional.cross_entropy(y[:, :-1].reshape(-1, 64),
                                                     x[:, 1:].reshape(-1))

        def configure_optimizers(self):
            return torch.optim.AdamW(self.parameters(), lr=1e-3)

    torch.manual_seed(0)
    x = torch.randint(0, 64, (24, 16), generator=torch.Generator().manual_seed(2))
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x), batch_size=4)
    cb = tc.LightningProbeCallback(every=2)
    assert isinstance(cb, pl.Callback)
    logger = TensorBoardLogger(str(tmp_path), name="probe")
    trainer = pl.Trainer(max_steps=6, accelerator="cpu", devices=1, callbacks=[cb],
                         logger=logger, enable_checkpointing=False, enable_progress_bar=False,
                         enable_model_summary=False, log_every_n_steps=50)
    trainer.fit(Module(), loader)
    h = cb.history
    assert sorted(h.step.unique()) == [1, 3, 5]
    assert set(h.module) == {"enc.layers.0.self_attn", "enc.layers.1.self_attn"}
    assert (h.rows == 4 * 16).all()
    _check_modules_against_heads(cb)
    logger.experiment.flush()
    _check_logged(cb, _events(logger.log_dir), "attention/")


# --------------------------------------------------------------------------
# log_probe, key columns

def _probed():
    torch.manual_seed(3)
    mha = torch.nn.MultiheadAttention(16, 2, batch_first=True)
    x = 4 * torch.randn(3, 7, 16)
    probe = AttentionProbe(mha)
    with probe:
        mha(x, x, x, need_weights=False)
    return probe


class _FakeWriter:
    def __init__(self):
        self.scalars, self.hists = [], []

    def add_scalar(self, tag, value, step):
        self.scalars.append((tag, value, step))

    def add_histogram(self, tag, values, step):
        self.hists.append((tag, np.asarray(values), step))


def test_probe_log_method_is_log_probe():
    probe = _probed()
    w1, w2 = _FakeWriter(), _FakeWriter()
    assert probe.log(w1, 5, histograms=True) == tc.log_probe(probe, w2, 5, histograms=True)
    assert [(t, v, s) for t, v, s in w1.scalars] == [(t, v, s) for t, v, s in w2.scalars]
    assert len(w1.scalars) > 0 and len(w1.hists) == len(w2.hists) > 0


def test_log_probe_fake_writer():
    probe = _probed()
    frame = probe.to_frame(by="module")
    w = _FakeWriter()
    out = tc.log_probe(probe, w, 7, histograms=True)
    r = frame.iloc[0]
    assert [(t, s) for t, _, s in w.scalars] == [
        (f"attention/MultiheadAttention/{k}", 7) for k in KEYS]
    assert [v for _, v, _ in w.scalars] == [float(r[k]) for k in KEYS]
    assert out == {t: v for t, v, _ in w.scalars}
    (tag, values, step), = w.hists
    assert tag == "attention/MultiheadAttention/jac_diag_max_log10" and step == 7
    assert np.isfinite(values).all() and len(values) == 100
    # the equal-mass points reproduce the merged Summary's quantiles
    s = probe.summaries["MultiheadAttention", 0].merge(probe.summaries["MultiheadAttention", 1])
    assert np.median(values) == pytest.approx(s["jac_diag_max"].log10_median, abs=0.05)
    assert values.min() >= s["jac_diag_max"].log10_min - 1e-9
    # nothing probed: nothing written
    probe.snapshot(0)
    w2 = _FakeWriter()
    assert tc.log_probe(probe, w2, 8) == {} and w2.scalars == []


def test_log_probe_errors():
    probe = _probed()
    with pytest.raises(TypeError, match="add_scalar"):
        tc.log_probe(probe, object(), 0)

    class OnlyScalars:
        def add_scalar(self, *a):
            pass

    with pytest.raises(TypeError, match="add_histogram"):
        tc.log_probe(probe, OnlyScalars(), 0, histograms=True)
    with pytest.raises(TypeError, match="step"):
        tc.log_probe(probe, OnlyScalars(), 1.5)


def test_log_probe_summary_writer(tmp_path):
    pytest.importorskip("tensorboard", reason="SummaryWriter needs tensorboard")
    from torch.utils.tensorboard import SummaryWriter
    probe = _probed()
    frame = probe.to_frame(by="module")
    with SummaryWriter(str(tmp_path)) as w:
        tc.log_probe(probe, w, 4, histograms=True)
    ev = _events(tmp_path)
    for k in KEYS:
        assert ev[f"attention/MultiheadAttention/{k}"][4] == pytest.approx(
            np.float32(frame.iloc[0][k]), rel=1e-6)
    hist = ev["attention/MultiheadAttention/jac_diag_max_log10"][4]
    assert hist.num == 100


def test_key_frame():
    probe = _probed()
    full = probe.to_frame()
    short = tc.key_frame(full)
    assert list(short.columns) == ["module", "head", "calls", "rows", *KEYS]
    assert short.equals(full[short.columns])
    probe.snapshot(5)
    hist = tc.key_frame(probe.history)
    assert list(hist.columns) == ["step", "module", "head", "calls", "rows", *KEYS]
    assert len(probe.history.columns) == 206                 # every column stays
    by_mod = tc.key_frame(_probed().to_frame(by="module"))
    assert list(by_mod.columns)[:2] == ["module", "heads"]
    # thresholds without 1e-6: every fraction the probe has
    torch.manual_seed(3)
    mha = torch.nn.MultiheadAttention(16, 2, batch_first=True)
    x = torch.randn(2, 5, 16)
    with AttentionProbe(mha, thresholds=(1e-2, 1e-4)) as p:
        mha(x, x, x, need_weights=False)
    cols = list(tc.key_frame(p.to_frame()).columns)
    assert cols[-2:] == ["jac_diag_max_below_0.01", "jac_diag_max_below_0.0001"]
    assert "jac_diag_max_below_0.01" in "".join(tc.probe_scalars(p.to_frame()))


def test_probe_scalars_by_head():
    probe = _probed()
    full = probe.to_frame()
    sc = tc.probe_scalars(full, prefix="p")
    assert len(sc) == 2 * len(KEYS)
    assert sc["p/MultiheadAttention/1/max_logit"] == float(full.max_logit[full["head"] == 1].iloc[0])


def test_lazy_classes_import_nothing():
    import subprocess
    import sys
    code = ("import sys, fastsoftmax.torch as tc, fastsoftmax.torch.callbacks as tcb, "
            "fastsoftmax.torch.plot; "
            "assert 'transformers' not in sys.modules and 'lightning' not in sys.modules; "
            "assert 'matplotlib' not in sys.modules; "
            "tc.key_frame; tcb.__name__; print('ok')")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-2000:]
    with pytest.raises(AttributeError, match="nothing"):
        tc.nothing


# --------------------------------------------------------------------------
# plot_history

def test_plot_history(tmp_path):
    pytest.importorskip("matplotlib", reason="plots need matplotlib")
    from fastsoftmax.torch.plot import plot_history
    probe = AttentionProbe(None)
    torch.manual_seed(0)
    q = torch.randn(2, 3, 6, 8)
    for step, scale in ((0, 1.0), (10, 30.0), (20, 300.0)):
        with probe:
            torch.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True,
                                                             scale=scale)
        probe.snapshot(step)
    h = probe.history
    path = tmp_path / "h.png"
    fig = plot_history(h, path)
    assert path.stat().st_size > 1000
    with open(path, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    axes = fig.axes
    assert len(axes) == 4
    merged = {"max_logit": h.groupby("step").max_logit.max()}
    w = h.rows / h.groupby("step").rows.transform("sum")
    merged["jac_diag_max_below_1e-06"] = (w * h["jac_diag_max_below_1e-06"]).groupby(h.step).sum()
    merged["entropy_mean"] = (w * h.entropy_mean).groupby(h.step).sum()
    for ax, col in zip(axes, ["max_logit", "jac_diag_max_log10_q0.5", "entropy_mean",
                              "jac_diag_max_below_1e-06"]):
        (line,) = ax.get_lines()
        x, y = line.get_data()
        assert list(x) == [0, 10, 20]
        assert all(float(t).is_integer() for t in ax.get_xticks())
        if col in merged:
            np.testing.assert_allclose(y, merged[col].to_numpy(), rtol=1e-12)
        else:   # the median over the heads of the per-head medians
            np.testing.assert_allclose(
                y, h.groupby("step")[col].median().to_numpy(), rtol=1e-12)
    assert axes[0].get_yscale() == "log"
    # per head: one line per (module, head)
    fig2 = plot_history(h, by="head")
    assert len(fig2.axes[0].get_lines()) == 3
    x, y = fig2.axes[0].get_lines()[1].get_data()
    np.testing.assert_array_equal(y, h[h["head"] == 1].max_logit.to_numpy())
    with pytest.raises(ValueError, match="by"):
        plot_history(h, by="layer")
    with pytest.raises(ValueError, match="step"):
        plot_history(h.drop(columns="step"))
    with pytest.raises(ValueError, match="empty"):
        plot_history(h.iloc[:0])


def test_plot_history_nonfinite_logit():
    pytest.importorskip("matplotlib", reason="plots need matplotlib")
    from fastsoftmax.torch.plot import plot_history
    h = pd.DataFrame({"step": [0, 1], "module": ["a", "a"], "head": [0, 0], "rows": [4, 4],
                      "max_logit": [1.0, -math.inf], "jac_diag_max_log10_q0.5": [-1, -2],
                      "entropy_mean": [1.0, 0.5], "jac_diag_max_below_1e-06": [0.0, 0.5]})
    fig = plot_history(h)
    assert len(fig.axes[0].get_lines()) == 1


def test_plot_module_is_a_deprecated_alias():
    """``fastsoftmax.plot``'s names reach each figure's home with a
    DeprecationWarning; importing the alias alone warns of nothing."""
    pytest.importorskip("matplotlib", reason="plots need matplotlib")
    import fastsoftmax.plot as old
    from fastsoftmax.sweeps import plot as sweep_plot
    from fastsoftmax.torch import plot as torch_plot
    from fastsoftmax.verify import _plot as verify_plot
    homes = {"plot_history": torch_plot, "HISTORY_PANELS": torch_plot,
             "plot_sweep": sweep_plot, "quantile_bands": sweep_plot, "QCOLS": sweep_plot,
             "FLOOR": sweep_plot, "verify_plots": verify_plot, "context_plot": verify_plot}
    assert set(old.__all__) <= set(homes)
    for name, home in homes.items():
        with pytest.warns(DeprecationWarning, match=f"fastsoftmax.plot.{name} is deprecated "
                                                    "and will be removed in 0.4.0"):
            assert getattr(old, name) is getattr(home, name)
    with pytest.warns(DeprecationWarning):
        from fastsoftmax.plot import plot_history
    assert plot_history is torch_plot.plot_history
    with pytest.raises(AttributeError, match="nothing"):
        old.nothing
