"""Do attention gradients vanish in a real network without 1/sqrt(d_k)?

Trains a small causal character-level transformer (torch.nn, head dimension
64) on text every Python installation has, the standard library's own source
files, twice from the same initialisation and the same batches: once with
SDPA's default scale 1/sqrt(d_k) ("scaled") and once with scale=1.0
("unscaled").  Every ``--every`` steps the training forward is probed with
``fastsoftmax.torch.AttentionProbe``, which summarises every head's exact
attention logits; the figures per layer (median jac_diag_max, mean entropy,
fraction of rows with jac_diag_max below 1e-6, largest logit) go to a CSV and
a PNG against step, scaled beside unscaled, with the training and validation
loss.

At step 0 the measured per-head figures are set beside ``fs.simulate`` of the
matching synthetic model: N(0, sigma^2) logits (``Gaussian``) with sigma the
head's measured within-row spread of the logits, and ``DotProduct`` with
q, k ~ N(0, I_64) (the paper's idealisation), both over the same mixture of
row lengths as the causal mask (query i sees i + 1 keys).

    python examples/attention_training.py --out docs          # ~7 min on 2 cores
    python examples/attention_training.py --quick --out /tmp  # seconds (the test)
    python examples/attention_training.py --replot --out docs # the PNG from the CSV
"""
import argparse
import copy
import math
import os
import sys
import time

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

import fastsoftmax as fs
from fastsoftmax.torch import AttentionProbe

# Files present in every CPython 3.10+ standard library, in this order; the
# text is their concatenation (those missing from an installation are
# skipped and named in the output).
STDLIB_FILES = sorted([
    "argparse.py", "ast.py", "calendar.py", "csv.py", "dataclasses.py", "difflib.py",
    "enum.py", "fractions.py", "functools.py", "heapq.py", "inspect.py", "os.py",
    "pickle.py", "pprint.py", "random.py", "shutil.py", "statistics.py", "string.py",
    "subprocess.py", "tarfile.py", "textwrap.py", "threading.py", "typing.py",
])
D_HEAD = 64
OBS_COLUMNS = {
    "jac_diag_max_q0.5": "jac_diag_max_median",
    "entropy_mean": "entropy_mean",
    "jac_diag_max_below_1e-06": "jac_diag_max_below_1e-06",
    "one_minus_max_prob_q0.5": "one_minus_max_prob_median",
    "max_prob_mean": "max_prob_mean",
}


def load_text(limit=None):
    root = os.path.dirname(os.__file__)
    parts, missing = [], []
    for name in STDLIB_FILES:
        path = os.path.join(root, name)
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                parts.append(f.read())
        else:
            missing.append(name)
    text = "\n".join(parts)
    # printable ASCII, tab and newline; anything else becomes one '?' class
    text = "".join(c if (32 <= ord(c) < 127 or c in "\n\t") else "?" for c in text)
    return (text[:limit] if limit else text), missing


class Attention(nn.Module):
    def __init__(self, d_model, n_heads, scale):
        super().__init__()
        self.h = n_heads
        self.scale = scale          # None: SDPA's 1/sqrt(d_k); 1.0: unscaled
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.capture = None         # a list: the (q, k) of each forward are kept

    def forward(self, x):
        B, L, D = x.shape
        q, k, v = self.qkv(x).view(B, L, 3, self.h, D // self.h).permute(2, 0, 3, 1, 4)
        if self.capture is not None:
            self.capture.append((q.detach(), k.detach()))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=self.scale)
        return self.proj(y.transpose(1, 2).reshape(B, L, D))


class Block(nn.Module):
    def __init__(self, d_model, n_heads, scale):
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model)
        self.attn = Attention(d_model, n_heads, scale)
        self.ln2 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(),
                                 nn.Linear(4 * d_model, d_model))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class CharTransformer(nn.Module):
    def __init__(self, vocab, context, layers, heads, scale):
        super().__init__()
        d = heads * D_HEAD
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(context, d)
        self.blocks = nn.ModuleList([Block(d, heads, scale) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab)

    def forward(self, idx):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1]))
        for b in self.blocks:
            x = b(x)
        return self.head(self.ln_f(x))

    def set_scale(self, scale):
        for b in self.blocks:
            b.attn.scale = scale


def batches(data, context, batch, seed):
    g = torch.Generator().manual_seed(seed)
    while True:
        i = torch.randint(0, len(data) - context - 1, (batch,), generator=g)
        x = torch.stack([data[j:j + context] for j in i.tolist()])
        y = torch.stack([data[j + 1:j + context + 1] for j in i.tolist()])
        yield x, y


def causal_logits(q, k, scale):
    """(B, H, L, L) float64 logits with the causal mask (the step-0 check)."""
    lg = (q.double() @ k.double().transpose(-2, -1)) * scale
    L = lg.shape[-1]
    return lg.masked_fill(~torch.ones(L, L, dtype=torch.bool).tril(), -math.inf)


def row_spread(lg):
    """Pooled within-row standard deviation of the finite logits (rows with
    at least two keys)."""
    fin = torch.isfinite(lg)
    n = fin.sum(-1, keepdim=True)
    x = torch.where(fin, lg, 0.0)
    mean = x.sum(-1, keepdim=True) / n
    var = (torch.where(fin, (lg - mean) ** 2, 0.0).sum(-1, keepdim=True) / (n - 1))
    keep = n[..., 0] > 1
    return float(var[..., 0][keep].mean().sqrt())


def mixture(model_of_n, L, rows_per_n, seed):
    """Summary over rows of 1..L keys (the causal mask's), rows_per_n each."""
    s = None
    for n in range(1, L + 1):
        one = fs.simulate(model_of_n(n), samples=rows_per_n, seed=seed + n, dtype="float64")
        s = one if s is None else s.merge(one)
    return s


def figures(s):
    j = s["jac_diag_max"]
    return {"jac_diag_max_median": float(j.median), "entropy_mean": s["entropy"].mean,
            "jac_diag_max_below_1e-06": j.fraction_below(1e-6),
            "one_minus_max_prob_median": float(s["one_minus_max_prob"].median),
            "max_prob_mean": s["max_prob"].mean}


def step0_comparison(model, run, x, scale, rows_per_n):
    """Measured per-head figures at initialisation beside the synthetic ones."""
    for b in model.blocks:
        b.attn.capture = []
    with torch.no_grad(), AttentionProbe(model) as probe:
        model(x)
    recs = []
    for li, b in enumerate(model.blocks):
        (q, k), = b.attn.capture
        b.attn.capture = None
        sc = 1 / math.sqrt(D_HEAD) if scale is None else scale
        lg = causal_logits(q, k, sc)
        L = lg.shape[-1]
        for h in range(q.shape[1]):
            sigma = row_spread(lg[:, h])
            s_meas = probe.summaries[f"blocks.{li}.attn", h]
            base = dict(run=run, layer=li, head=h, sigma=sigma)
            recs.append(dict(base, source="measured", rows=s_meas.samples, **figures(s_meas),
                             sigma_model=sigma))
            s_g = mixture(lambda n: fs.models.Gaussian(n, scale=sigma), L, rows_per_n, 0)
            recs.append(dict(base, source="gaussian", rows=s_g.samples, **figures(s_g),
                             sigma_model=sigma))
            s_d = mixture(lambda n: fs.models.DotProduct(n, d_k=D_HEAD, scaled=scale is None),
                          L, rows_per_n, 0)
            recs.append(dict(base, source="dotproduct", rows=s_d.samples, **figures(s_d),
                             sigma_model=1.0 if scale is None else math.sqrt(D_HEAD)))
    return recs


def train(run, model, data_tr, data_va, args, log):
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.1,
                            betas=(0.9, 0.95))
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / args.warmup)
        * 0.5 * (1 + math.cos(math.pi * min(s, args.steps) / args.steps)))
    probe = AttentionProbe(model, every=args.every)
    it = batches(data_tr, args.context, args.batch, args.seed)
    va = batches(data_va, args.context, args.batch, args.seed + 1)
    val_batches = [next(va) for _ in range(args.val_batches)]
    recs, losses = [], []
    t0 = time.perf_counter()
    fwd = {True: [], False: []}         # forward seconds, probed or not
    for step in range(args.steps + 1):
        x, y = next(it)
        model.train()
        probed = step % args.every == 0
        tp = time.perf_counter()
        with probe:
            logits = model(x)
        fwd[probed].append(time.perf_counter() - tp)
        if probed:
            frame = probe.to_frame(by="module")
            probe.snapshot(step)
        loss = F.cross_entropy(logits.view(-1, logits.shape[-1]), y.view(-1))
        losses.append(loss.item())
        if step < args.steps:
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
        if probed:
            model.eval()
            with torch.no_grad():
                vl = float(np.mean([float(F.cross_entropy(
                    model(vx).view(-1, logits.shape[-1]), vy.view(-1)))
                    for vx, vy in val_batches]))
            tl = float(np.mean(losses[-args.every:]))
            parts = []
            for r in frame.to_dict("records"):
                li = int(r["module"].split(".")[1])
                rec = dict(run=run, step=step, layer=li, train_loss=tl, val_loss=vl,
                           max_logit=r["max_logit"], rows=r["rows"])
                rec.update({new: r[col] for col, new in OBS_COLUMNS.items()})
                recs.append(rec)
                parts.append(f"L{li}: jdm {rec['jac_diag_max_median']:.2g} "
                             f"H {rec['entropy_mean']:.2f} max {rec['max_logit']:.1f}")
            log(f"  {run:>8} step {step:4d}  train {tl:.3f}  val {vl:.3f}  "
                + "  ".join(parts) + f"  [{time.perf_counter() - t0:.0f} s]")
    return recs, time.perf_counter() - t0, fwd


def plot(df, path, context=None):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    panels = [("loss", None), ("jac_diag_max_median", "median jac_diag_max (log)"),
              ("entropy_mean", "mean attention entropy (nats)"),
              ("jac_diag_max_below_1e-06", "fraction of rows with jac_diag_max < 1e-6"),
              ("max_logit", "largest attention logit")]
    runs = ["scaled", "unscaled"]
    fig, axes = plt.subplots(len(panels), 2, figsize=(11, 13), sharex=True, sharey="row")
    layers = sorted(df.layer.unique())
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for c, run in enumerate(runs):
        d = df[df.run == run]
        for r, (col, title) in enumerate(panels):
            ax = axes[r, c]
            if col == "loss":
                one = d[d.layer == layers[0]]
                ax.plot(one.step, one.train_loss, label="train", color="k")
                ax.plot(one.step, one.val_loss, label="validation", color="k", ls="--")
                ax.set_title(f"{run}: {'1/sqrt(d_k)' if run == 'scaled' else 'scale = 1'}"
                             " — cross-entropy (nats/char)")
                ax.legend(fontsize=8)
            else:
                for li in layers:
                    dl = d[d.layer == li]
                    ax.plot(dl.step, dl[col], label=f"layer {li}", color=colors[li % 10],
                            marker=".")
                ax.set_title(title, fontsize=10)
                if col == "jac_diag_max_median":
                    ax.set_yscale("log")
                if col == "jac_diag_max_below_1e-06" and context:
                    # query 0 sees one key: p = 1, jac_diag_max = 0, in every sequence
                    ax.axhline(1 / context, color="gray", ls=":", lw=1)
                    ax.annotate(f"1/{context}: the first query sees one key", (0, 1 / context),
                                xytext=(4, 4), textcoords="offset points", fontsize=7,
                                color="gray")
                if r == 1:
                    ax.legend(fontsize=8)
            ax.grid(alpha=0.3)
    from matplotlib.ticker import MaxNLocator
    for ax in axes[-1]:
        ax.set_xlabel("training step")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


PROGRESS_HELP = """\
progress lines: '<run> step <s>  train <t>  val <v>  L<i>: jdm <m> H <h> max <x>  [<sec> s]'
with t the training loss (mean over the last --every steps) and v the validation
loss, in nats per character; per layer i: jdm the median jac_diag_max =
max_i p_i (1 - p_i) over the layer's attention rows, H their mean entropy in
nats, max the largest attention logit; sec the seconds since the run started."""


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter,
                     argparse.RawDescriptionHelpFormatter):
    """Defaults in the help, and the epilog's lines kept as written."""


def main(argv=None):
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog=PROGRESS_HELP, formatter_class=_HelpFormatter)
    ap.add_argument("--steps", type=int, default=300, help="training steps per run")
    ap.add_argument("--every", type=int, default=10,
                    help="probe one training step in k (and validate then)")
    ap.add_argument("--layers", type=int, default=2, help="transformer blocks")
    ap.add_argument("--heads", type=int, default=2, help=f"attention heads of {D_HEAD} dimensions")
    ap.add_argument("--context", type=int, default=128, help="sequence length in characters")
    ap.add_argument("--batch", type=int, default=32, help="sequences per training step")
    ap.add_argument("--lr", type=float, default=1e-3, help="peak AdamW learning rate")
    ap.add_argument("--warmup", type=int, default=40,
                    help="linear warm-up steps before the cosine decay")
    ap.add_argument("--val-batches", type=int, default=2,
                    help="validation batches per probed step")
    ap.add_argument("--rows-per-n", type=int, default=2000,
                    help="synthetic rows per key count for the step-0 comparison")
    ap.add_argument("--seed", type=int, default=0, help="initialisation and batch order")
    ap.add_argument("--threads", type=int, default=None,
                    help="torch threads; None: torch's own choice (all cores)")
    ap.add_argument("--out", default=".", help="directory for the CSVs and the PNG")
    ap.add_argument("--quick", action="store_true",
                    help="a few tiny steps (the test suite): 4 steps, context 16, batch 4")
    ap.add_argument("--replot", action="store_true",
                    help="only redraw the PNG from the CSV in --out")
    args = ap.parse_args(argv)
    if args.replot:
        import pandas as pd
        df = pd.read_csv(os.path.join(args.out, "attention_training.csv"))
        plot(df, os.path.join(args.out, "attention_training.png"), args.context)
        return
    if args.quick:
        args.steps, args.every, args.layers, args.context, args.batch = 4, 2, 2, 16, 4
        args.val_batches, args.rows_per_n, args.warmup = 1, 20, 2
    if args.steps < 1 or args.every < 1:
        ap.error("--steps and --every must be >= 1")
    if args.threads:
        torch.set_num_threads(args.threads)
    os.makedirs(args.out, exist_ok=True)
    log = print

    text, missing = load_text(200_000 if args.quick else None)
    chars = sorted(set(text))
    stoi = {c: i for i, c in enumerate(chars)}
    data = torch.tensor([stoi[c] for c in text], dtype=torch.long)
    cut = int(0.9 * len(data))
    data_tr, data_va = data[:cut], data[cut:]
    log(f"text: {len(STDLIB_FILES) - len(missing)} standard-library files of Python "
        f"{sys.version.split()[0]}, {len(text):,} characters, vocabulary {len(chars)}"
        + (f" (missing: {', '.join(missing)})" if missing else ""))

    torch.manual_seed(args.seed)
    init = CharTransformer(len(chars), args.context, args.layers, args.heads, None)
    nparam = sum(p.numel() for p in init.parameters())
    log(f"model: {args.layers} layers, {args.heads} heads x d_k {D_HEAD}, context "
        f"{args.context}, {nparam:,} parameters; batch {args.batch}, {args.steps} steps, "
        f"probe every {args.every}; torch {torch.__version__}, {torch.get_num_threads()} threads")

    log(PROGRESS_HELP.replace("\n", " "))
    import pandas as pd
    x0 = next(batches(data_tr, args.context, args.batch, args.seed))[0]
    recs, step0 = [], []
    timing = {}
    for run, scale in (("scaled", None), ("unscaled", 1.0)):
        model = copy.deepcopy(init)            # the same initialisation for both runs
        model.set_scale(scale)
        step0 += step0_comparison(model, run, x0, scale, args.rows_per_n)
        r, secs, fwd = train(run, model, data_tr, data_va, args, log)
        recs += r
        timing[run] = (secs, fwd)
    df = pd.DataFrame(recs)
    s0 = pd.DataFrame(step0)
    csv = os.path.join(args.out, "attention_training.csv")
    df.to_csv(csv, index=False, float_format="%.6g")
    s0.to_csv(os.path.join(args.out, "attention_training_step0.csv"), index=False,
              float_format="%.6g")
    plot(df, os.path.join(args.out, "attention_training.png"), args.context)

    log("\nstep 0, per head: measured vs synthetic (same causal row lengths)")
    show = ["run", "layer", "head", "source", "sigma_model", "jac_diag_max_median", "entropy_mean",
            "jac_diag_max_below_1e-06", "max_prob_mean"]
    log(s0[show].to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    last = df[df.step == df.step.max()]
    log("\nlast step, per layer:")
    log(last[["run", "layer", "train_loss", "val_loss", "jac_diag_max_median", "entropy_mean",
              "jac_diag_max_below_1e-06", "max_logit"]].to_string(
        index=False, float_format=lambda v: f"{v:.4g}"))
    for run, (secs, fwd) in timing.items():
        pr, un = fwd[True], fwd[False]
        line = (f"{run}: {secs:.0f} s in all; forward {np.median(pr) * 1e3:.0f} ms probed "
                f"({len(pr)}x, median)")
        if un:
            line += (f", {np.median(un) * 1e3:.0f} ms not probed ({len(un)}x): ratio "
                     f"{np.median(pr) / np.median(un):.2f}")
        log(line)
    log(f"wrote {csv}, attention_training_step0.csv and attention_training.png "
        f"to {args.out}")


if __name__ == "__main__":
    main()
