"""Attention-logit growth at high learning rate, probed: Wortsman et al. (2023) at small scale.

Wortsman et al., "Small-scale proxies for large-scale Transformer training
instabilities" (arXiv 2309.14322), show that small transformers trained at a
high learning rate diverge the way large ones do: the first layer's largest
attention logit grows by orders of magnitude, the attention collapses onto one
key (entropy 0), and qk-layernorm (LayerNorm on queries and keys) prevents it.
This script reproduces their small-scale proxy and measures, with
``fastsoftmax.torch.AttentionProbe``, what that does to the softmax gradients:

* the model: pre-LayerNorm decoder-only transformer without biases, 2 layers,
  d_model 128, 4 heads of 32, context 64, SDPA with its default scale
  1/sqrt(32), qk-layernorm on or off;
* the training: AdamW (beta 0.9, 0.95, eps 1e-8), gradient clipping at 1.0,
  linear warm-up then cosine decay to 0, independent weight decay 1e-4 (the
  decay is 1e-4 times the schedule, not times the learning rate), batch 16,
  400 steps on bytes of the Python standard library's own source files;
* the sweep: learning rates from 3e-3 to 1, qk-layernorm on and off;
* every ``--every`` steps the training forward is probed (per head: the
  largest logit, the fraction of rows with jac_diag_max below 1e-6, the median
  log10 jac_diag_max, the mean entropy), and a second forward-backward on the
  same batch and weights, through an explicit (eager) attention, measures each
  head's within-row logit spread and the gradient that flows back through the
  softmax: its norm at the probabilities, dL/dp, and at the logits, dL/dx =
  J dL/dp with J the softmax Jacobian (the training step itself never runs the
  eager path);
* afterwards, per head and probed step, ``fastsoftmax.theory``'s saturation law
  for i.i.d. Gaussian logits with the measured spread, over the causal mask's
  row lengths 1..64, predicts the fraction of rows below 1e-6, set beside the
  probe's measurement; and per run, how many steps the saturation of the first
  layer precedes the loss blowing up.

Writes ``instability.csv`` (one row per run, probed step, module and head),
``instability_loss.csv`` (the training loss of every step of every run) and
``instability.png``.

    python examples/instability.py --out docs           # the full sweep (12 runs)
    python examples/instability.py --quick --out /tmp   # seconds (the test)
    python examples/instability.py --replot --out docs  # the PNG from the CSVs
"""
import argparse
import math
import os
import sys
import sysconfig
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from fastsoftmax import theory
from fastsoftmax.torch import AttentionProbe

LEVEL = 1e-6                 # "saturated": jac_diag_max below this
BELOW = f"jac_diag_max_below_{LEVEL:g}"
PROBE_COLUMNS = ["rows", "nonfinite", "max_logit", "entropy_mean", BELOW,
                 "jac_diag_max_log10_q0.5", "max_prob_mean"]
SATURATED = 0.1              # saturation onset: 10% of the first layer's rows below LEVEL
                             # (the floor is 1/context: query 0 sees one key)
BLOWUP = 0.5                 # the loss blows up when it is this many nats above its best


# --------------------------------------------------------------------------
# data

def load_bytes(limit):
    """The standard library's top-level ``*.py`` files, sorted by name, as one
    byte string of at most ``limit`` bytes (the files that fit whole)."""
    root = Path(sysconfig.get_paths()["stdlib"])
    parts, total, names = [], 0, []
    for path in sorted(root.glob("*.py")):
        b = path.read_bytes()
        if total + len(b) > limit:
            break
        parts.append(b)
        names.append(path.name)
        total += len(b)
    if not parts:
        raise RuntimeError(f"no standard-library source found under {root}")
    return b"\n".join(parts), names, root


def batches(data, context, batch, seed):
    g = torch.Generator().manual_seed(seed)
    while True:
        i = torch.randint(0, len(data) - context - 1, (batch,), generator=g)
        x = torch.stack([data[j:j + context] for j in i.tolist()])
        y = torch.stack([data[j + 1:j + context + 1] for j in i.tolist()])
        yield x, y


# --------------------------------------------------------------------------
# the model

class Attention(nn.Module):
    """Causal multi-head self-attention without biases, optional qk-layernorm.

    Training runs SDPA with its default scale.  With ``measure`` set, the same
    attention is computed explicitly (logits, softmax, weighted sum) and the
    logits and probabilities are kept in ``saved`` for torch.autograd.
    """

    def __init__(self, d_model, n_heads, qk_layernorm):
        super().__init__()
        self.h = n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=False)
        self.proj = nn.Linear(d_model, d_model, bias=False)
        d_head = d_model // n_heads
        self.q_ln = nn.LayerNorm(d_head, bias=False) if qk_layernorm else None
        self.k_ln = nn.LayerNorm(d_head, bias=False) if qk_layernorm else None
        self.measure = False
        self.saved = None

    def forward(self, x):
        B, L, D = x.shape
        q, k, v = self.qkv(x).view(B, L, 3, self.h, D // self.h).permute(2, 0, 3, 1, 4)
        if self.q_ln is not None:
            q, k = self.q_ln(q), self.k_ln(k)
        if self.measure:
            mask = torch.ones(L, L, dtype=torch.bool, device=x.device).tril()
            logits = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
            logits = logits.masked_fill(~mask, -math.inf)
            p = torch.softmax(logits, dim=-1)
            self.saved = (logits, p)
            y = p @ v
        else:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).reshape(B, L, D))


class Block(nn.Module):
    def __init__(self, d_model, n_heads, qk_layernorm):
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model, bias=False)
        self.attn = Attention(d_model, n_heads, qk_layernorm)
        self.ln2 = nn.LayerNorm(d_model, bias=False)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model, bias=False), nn.GELU(),
                                 nn.Linear(4 * d_model, d_model, bias=False))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class Decoder(nn.Module):
    """Pre-LN decoder-only byte-level transformer (no biases anywhere)."""

    def __init__(self, context, layers, d_model, heads, qk_layernorm, vocab=256):
        super().__init__()
        self.tok = nn.Embedding(vocab, d_model)
        self.pos = nn.Embedding(context, d_model)
        self.blocks = nn.ModuleList([Block(d_model, heads, qk_layernorm)
                                     for _ in range(layers)])
        self.ln_f = nn.LayerNorm(d_model, bias=False)
        self.head = nn.Linear(d_model, vocab, bias=False)

    def forward(self, idx):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))
        for b in self.blocks:
            x = b(x)
        return self.head(self.ln_f(x))


def ce(logits, y):
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))


# --------------------------------------------------------------------------
# the measurement pass: logit spread and the gradient through the softmax

def measure(model, x, y):
    """Per (layer, head): the within-row spread of the finite logits, and the
    norms of dL/dp and dL/dx (x the logits) over the batch, from one explicit
    forward-backward with the current weights (parameter gradients untouched)."""
    attns = [b.attn for b in model.blocks]
    for a in attns:
        a.measure = True
    try:
        loss = ce(model(x), y)
        saved = [a.saved for a in attns]
        tensors = [t for pair in saved for t in pair]
        grads = torch.autograd.grad(loss, tensors)
    finally:
        for a in attns:
            a.measure, a.saved = False, None
    out = {}
    with torch.no_grad():
        for li, (logits, _) in enumerate(saved):
            g_x, g_p = grads[2 * li], grads[2 * li + 1]
            lg = logits.double()
            fin = torch.isfinite(lg)
            n = fin.sum(-1, keepdim=True)
            xs = torch.where(fin, lg, 0.0)
            mean = xs.sum(-1, keepdim=True) / n
            var = torch.where(fin, (lg - mean) ** 2, 0.0).sum(-1) / (n[..., 0] - 1).clamp(min=1)
            keep = (n[..., 0] > 1)
            for h in range(lg.shape[1]):
                v = var[:, h][keep[:, h]]
                out[li, h] = dict(
                    logit_spread=float(v.mean().sqrt()),
                    grad_probs_norm=float(g_p[:, h].double().norm()),
                    grad_logits_norm=float(g_x[:, h].double().norm()))
    return out


# --------------------------------------------------------------------------
# one run

def schedule(step, steps, warmup):
    """Linear warm-up over ``warmup`` steps, then cosine decay to 0."""
    if step < warmup:
        return (step + 1) / warmup
    return 0.5 * (1 + math.cos(math.pi * (step - warmup) / max(1, steps - warmup)))


def run(lr, qk_layernorm, data_tr, data_va, args, log=print):
    torch.manual_seed(args.seed)       # the same initialisation and batches for every run
    model = Decoder(args.context, args.layers, args.d_model, args.heads, qk_layernorm)
    # torch's AdamW decays by lr(t) * weight_decay: weight_decay = wd / lr makes the
    # decay wd * schedule(t), independent of the learning rate (Wortsman et al.)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.95), eps=1e-8,
                            weight_decay=args.weight_decay / lr)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: schedule(s, args.steps, args.warmup))
    probe = AttentionProbe(model)
    it = batches(data_tr, args.context, args.batch, args.seed)
    recs, losses = [], []
    t0 = time.perf_counter()
    for step in range(args.steps):
        x, y = next(it)
        probed = step % args.every == 0 or step == args.steps - 1
        if probed:
            with probe:
                logits = model(x)
        else:
            logits = model(x)
        loss = ce(logits, y)
        losses.append(float(loss.detach()))
        if probed:
            frame = probe.snapshot(step)
            meas = measure(model, x, y)
            for r in frame.to_dict("records"):
                li = int(r["module"].split(".")[1])
                rec = dict(lr=lr, qk_layernorm=qk_layernorm, step=step, loss=losses[-1],
                           module=r["module"], layer=li, head=int(r["head"]))
                rec.update({c: r[c] for c in PROBE_COLUMNS})
                rec.update(meas[li, int(r["head"])])
                recs.append(rec)
            l0 = frame[frame.module == "blocks.0.attn"]
            log(f"  lr {lr:<6g} qk-ln {'on ' if qk_layernorm else 'off'} step {step:4d}  "
                f"loss {losses[-1]:.3f}  layer 0: max logit {l0.max_logit.max():.3g}  "
                f"sat {l0[BELOW].mean():.3f}  H {l0.entropy_mean.mean():.2f}  "
                f"[{time.perf_counter() - t0:.0f} s]")
        if not math.isfinite(losses[-1]):
            log(f"  lr {lr:g} qk-ln {qk_layernorm}: non-finite loss at step {step}; stopped")
            break
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
    model.eval()
    va = batches(data_va, args.context, args.batch, args.seed + 1)
    with torch.no_grad():
        val = float(np.mean([float(ce(model(vx), vy))
                             for vx, vy in (next(va) for _ in range(args.val_batches))]))
    secs = time.perf_counter() - t0
    log(f"lr {lr:g} qk-ln {'on' if qk_layernorm else 'off'}: final train loss "
        f"{np.mean(losses[-20:]):.3f} (last 20 steps), validation {val:.3f}  [{secs:.0f} s]")
    loss_rows = [dict(lr=lr, qk_layernorm=qk_layernorm, step=s, loss=v)
                 for s, v in enumerate(losses)]
    for r in recs:
        r["val_loss"] = val
    return recs, loss_rows, secs


def set_threads(n):
    """torch's and numba's threads: the probe's calls here are small, and on a
    few shared cores one thread each is fastest (measured)."""
    import numba
    torch.set_num_threads(n)
    numba.set_num_threads(min(n, numba.config.NUMBA_NUM_THREADS))


def split_data(args):
    raw, names, root = load_bytes(args.max_bytes)
    data = torch.tensor(list(raw), dtype=torch.long)
    cut = int(0.9 * len(data))
    return data[:cut], data[cut:], (raw, names, root)


def _cache(args, lr, qk):
    return os.path.join(args.out, "runs", f"lr{lr:g}_qk{int(qk)}.pkl")


def cached_run(lr, qk, data_tr, data_va, args):
    """:func:`run`, its result kept in ``--out``/runs (``--resume`` reuses it)."""
    import pickle
    path = _cache(args, lr, qk)
    if args.resume and os.path.exists(path):
        with open(path, "rb") as f:
            return pickle.load(f)
    if data_tr is None:
        data_tr, data_va, _ = split_data(args)
    res = run(lr, qk, data_tr, data_va, args)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".tmp", "wb") as f:
        pickle.dump(res, f)
    os.replace(path + ".tmp", path)
    return res


def _run_job(a):
    lr, qk, args = a
    set_threads(args.threads)
    return cached_run(lr, qk, None, None, args)


# --------------------------------------------------------------------------
# the law beside the measurement, and the early warning

def law_below(spread, context, per_decade=16):
    """The saturation law's fraction of rows with jac_diag_max below LEVEL for
    i.i.d. N(0, spread^2) logits, averaged over the causal row lengths
    1..context (query i sees i + 1 keys).

    The law is evaluated on a grid of spreads, ``per_decade`` per decade
    (broadcast over the row lengths), and interpolated in log(spread): the
    fraction is smooth and increasing in the spread, and one evaluation per
    head and step would cost minutes."""
    spread = np.asarray(spread, float)
    out = np.full(spread.shape, np.nan)
    ok = np.isfinite(spread) & (spread > 0)
    if not ok.any():
        return out
    lo, hi = np.log10(spread[ok].min()), np.log10(spread[ok].max())
    grid = np.logspace(lo, hi, max(2, int(np.ceil((hi - lo) * per_decade)) + 1))
    n = np.arange(1, context + 1)[:, None]
    f = theory.Law.gaussian(n, grid[None, :])["jac_diag_max"].cdf(LEVEL).mean(axis=0)
    out[ok] = np.exp(np.interp(np.log10(spread[ok]), np.log10(grid), np.log(f)))
    return out


def add_law(df, context):
    """Column ``law_below``: :func:`law_below` of each head's measured spread."""
    df["law_below"] = law_below(df["logit_spread"].to_numpy(float), context)
    return df


def warnings_table(df, losses):
    """Per run: the first probed step at which ``SATURATED`` of the first
    layer's rows are below LEVEL, the first step at which the loss (mean of 10 steps) is
    ``BLOWUP`` nats above its best so far, and the lead in steps."""
    import pandas as pd
    rows = []
    for (lr, qk), d in df[df.layer == 0].groupby(["lr", "qk_layernorm"]):
        per = d.groupby("step").agg(max_logit=("max_logit", "max"), sat=(BELOW, "mean"),
                                    entropy=("entropy_mean", "mean"),
                                    jdm=("jac_diag_max_log10_q0.5", "median"),
                                    law=("law_below", "mean"))
        sat = per.index[per.sat >= SATURATED]
        ls = losses[(losses.lr == lr) & (losses.qk_layernorm == qk)].sort_values("step")
        sm = ls.loss.rolling(10, min_periods=1).mean().to_numpy()
        best = np.minimum.accumulate(sm)
        up = np.nonzero(sm > best + BLOWUP)[0]
        sat_step = int(sat[0]) if len(sat) else None
        blow_step = int(ls.step.to_numpy()[up[0]]) if len(up) else None
        last = per.iloc[-1]
        rows.append(dict(
            lr=lr, qk_layernorm=qk, final_loss=float(np.mean(ls.loss.to_numpy()[-20:])),
            val_loss=float(d.val_loss.iloc[0]), max_logit_peak=float(per.max_logit.max()),
            max_logit_final=float(last.max_logit), saturated_final=float(last.sat),
            saturated_peak=float(per.sat.max()), law_final=float(last.law),
            entropy_final=float(last.entropy), saturated_step=sat_step, blowup_step=blow_step,
            lead_steps=(blow_step - sat_step) if sat_step is not None and blow_step is not None
            else None))
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------
# the figure

def plot(df, losses, table, path, context):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import LogNorm
    from matplotlib.ticker import MaxNLocator
    lrs = sorted(df.lr.unique())
    cmap = plt.get_cmap("viridis")
    norm = LogNorm(min(lrs), max(lrs)) if len(lrs) > 1 else None

    def color(lr):
        return cmap(norm(lr) * 0.9) if norm else "C0"

    ls_of = {False: "-", True: "--"}
    fig, axes = plt.subplots(3, 3, figsize=(15, 12.5), layout="constrained")
    # (a) final loss against the learning rate
    ax = axes[0, 0]
    for qk, mk in ((False, "o"), (True, "s")):
        t = table[table.qk_layernorm == qk].sort_values("lr")
        ax.plot(t.lr, t.final_loss, marker=mk, ls=ls_of[qk], color="k",
                label=f"qk-layernorm {'on' if qk else 'off'}")
    ax.set_xscale("log")
    ax.set_xlabel("learning rate")
    ax.set_ylabel("final training loss (nats/byte, last 20 steps)")
    ax.set_title("(a) final loss against learning rate")
    ax.legend(fontsize=8)
    # loss curves
    ax = axes[0, 1]
    for (lr, qk), d in losses.groupby(["lr", "qk_layernorm"]):
        sm = d.sort_values("step").loss.rolling(5, min_periods=1).mean()
        ax.plot(d.sort_values("step").step, sm, color=color(lr), ls=ls_of[qk], lw=1)
    ax.set_ylabel("training loss (mean of 5 steps)")
    ax.set_title("training loss (solid: qk-ln off, dashed: on)")
    l0 = df[df.layer == 0]
    per = l0.groupby(["lr", "qk_layernorm", "step"]).agg(
        max_logit=("max_logit", "max"), sat=(BELOW, "mean"), entropy=("entropy_mean", "mean"),
        jdm=("jac_diag_max_log10_q0.5", "median"), law=("law_below", "mean"),
        grad=("grad_logits_norm", lambda v: float(np.sqrt((v ** 2).sum()))),
        gradp=("grad_probs_norm", lambda v: float(np.sqrt((v ** 2).sum())))).reset_index()
    panels = [(axes[0, 2], "max_logit", "(b) layer 0: largest attention logit", True),
              (axes[1, 0], "sat", f"(b) layer 0: fraction of rows, jac_diag_max < {LEVEL:g}",
               False),
              (axes[1, 1], "jdm", "(b) layer 0: median log10 jac_diag_max (over heads)", False),
              (axes[1, 2], "entropy", "(b) layer 0: mean attention entropy (nats)", False),
              (axes[2, 1], "grad", "(d) layer 0: |dL/dx| at the attention logits", True),
              (axes[2, 2], "ratio", "(d) layer 0: |dL/dx| / |dL/dp| (through the softmax)",
               True)]
    per["ratio"] = per.grad / per.gradp
    for ax, col, title, logy in panels:
        for (lr, qk), d in per.groupby(["lr", "qk_layernorm"]):
            ax.plot(d.step, d[col], color=color(lr), ls=ls_of[qk], lw=1.2, marker=".", ms=3)
        ax.set_title(title, fontsize=10)
        if logy:
            ax.set_yscale("log")
        if col == "jdm":             # -1 to -1e4 and beyond once saturated
            ax.set_yscale("symlog", linthresh=1.0)
    axes[1, 0].axhline(1 / context, color="gray", ls=":", lw=1)
    axes[1, 0].annotate(f"1/{context}: query 0 sees one key", (0, 1 / context),
                        xytext=(4, 4), textcoords="offset points", fontsize=7, color="gray")
    # (c) the law beside the measurement
    ax = axes[2, 0]
    for qk, mk in ((False, "o"), (True, "s")):
        d = df[df.qk_layernorm == qk]
        ax.scatter(d.law_below, d[BELOW], c=[color(v) for v in d.lr], marker=mk, s=9,
                   alpha=0.6, label=f"qk-ln {'on' if qk else 'off'} (per head, probed step)")
    ax.plot([0, 1], [0, 1], color="gray", lw=0.8)
    ax.set_xlabel(f"law: Gaussian logits of the head's spread, P(jac_diag_max < {LEVEL:g})")
    ax.set_ylabel("measured fraction")
    ax.set_title("(c) saturation law vs measurement, every head", fontsize=10)
    ax.legend(fontsize=7, loc="upper left")
    lines = []
    for r in table.itertuples():
        if r.saturated_step is not None and not (isinstance(r.saturated_step, float)
                                                 and math.isnan(r.saturated_step)):
            b = ("no blow-up" if r.blowup_step is None or (isinstance(r.blowup_step, float)
                                                           and math.isnan(r.blowup_step))
                 else f"loss up at {int(r.blowup_step)}")
            lines.append(f"lr {r.lr:g}{' qk-ln' if r.qk_layernorm else ''}: "
                         f"saturated at {int(r.saturated_step)}, {b}")
    if lines:
        ax.text(0.98, 0.02, "\n".join(lines), transform=ax.transAxes, ha="right", va="bottom",
                fontsize=6.5, family="monospace")
    for ax in list(axes.flat[1:]):
        if ax is not axes[2, 0]:
            ax.set_xlabel("training step")
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(alpha=0.3)
    axes[0, 0].grid(alpha=0.3)
    if norm:
        sm = plt.cm.ScalarMappable(norm=norm, cmap=cmap)
        fig.colorbar(sm, ax=axes[:, 2], label="learning rate (solid: qk-ln off, dashed: on)",
                     shrink=0.5)
    fig.savefig(path, dpi=100)
    plt.close(fig)


# --------------------------------------------------------------------------

QUICK = dict(steps=10, every=5, warmup=4, batch=8, val_batches=1, lrs=[1.0],
             max_bytes=200_000)


PROGRESS_HELP = f"""\
progress lines: 'lr <lr> qk-ln <on|off> step <s>  loss <l>  layer 0: max logit <x>  sat <f>
H <h>  [<sec> s]', with l the training loss of step s (nats per byte); for the
first layer: x its largest attention logit, f the fraction of its attention
rows with jac_diag_max = max_i p_i (1 - p_i) below {LEVEL:g} (saturated rows,
mean over heads), h the mean attention entropy in nats; sec the seconds since
the run started."""


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter,
                     argparse.RawDescriptionHelpFormatter):
    """Defaults in the help, and the epilog's lines kept as written."""


def parse(argv=None):
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], epilog=PROGRESS_HELP,
        formatter_class=_HelpFormatter)
    ap.add_argument("--lrs", type=float, nargs="+",
                    default=[3e-3, 1e-2, 3e-2, 1e-1, 3e-1, 1.0],
                    help="peak learning rates; each runs with qk-layernorm off and on")
    ap.add_argument("--steps", type=int, default=400, help="training steps per run")
    ap.add_argument("--warmup", type=int, default=40, help="linear warm-up steps")
    ap.add_argument("--every", type=int, default=5,
                    help="probe one training step in k (and the last)")
    ap.add_argument("--layers", type=int, default=2, help="transformer blocks")
    ap.add_argument("--d-model", type=int, default=128, help="model width")
    ap.add_argument("--heads", type=int, default=4, help="attention heads (d_model / heads each)")
    ap.add_argument("--context", type=int, default=64, help="sequence length in bytes")
    ap.add_argument("--batch", type=int, default=16, help="sequences per step")
    ap.add_argument("--weight-decay", type=float, default=1e-4,
                    help="independent weight decay (times the schedule, not the learning rate)")
    ap.add_argument("--val-batches", type=int, default=8,
                    help="held-out batches for the final validation loss")
    ap.add_argument("--max-bytes", type=int, default=4_000_000,
                    help="bytes of standard-library source to train on (whole files)")
    ap.add_argument("--seed", type=int, default=0, help="initialisation and batch order")
    ap.add_argument("--threads", type=int, default=1, help="torch threads per run")
    ap.add_argument("--jobs", type=int, default=1, help="runs at a time (processes)")
    ap.add_argument("--out", default=".", help="directory for the CSVs and the PNG")
    ap.add_argument("--quick", action="store_true",
                    help=f"a small sweep for the tests: {QUICK}")
    ap.add_argument("--resume", action="store_true",
                    help="reuse the runs already done (kept in --out/runs)")
    ap.add_argument("--replot", action="store_true",
                    help="only redraw the PNG (and the table) from the CSVs in --out")
    args = ap.parse_args(argv)
    if args.quick:
        for k, v in QUICK.items():
            setattr(args, k, v)
    for name in ("steps", "every", "warmup", "layers", "d_model", "heads", "context", "batch",
                 "val_batches", "threads", "jobs"):
        if getattr(args, name) < 1:
            ap.error(f"--{name.replace('_', '-')} must be >= 1")
    if args.d_model % args.heads:
        ap.error("--d-model must be a multiple of --heads")
    if any(not (lr > 0) for lr in args.lrs):
        ap.error("--lrs must be positive")
    return args


def report(table, log=print):
    show = table.copy()
    log(show.to_string(index=False, float_format=lambda v: f"{v:.4g}"))


def main(argv=None):
    args = parse(argv)
    import pandas as pd
    os.makedirs(args.out, exist_ok=True)
    csv = os.path.join(args.out, "instability.csv")
    loss_csv = os.path.join(args.out, "instability_loss.csv")
    png = os.path.join(args.out, "instability.png")
    if args.replot:
        df, losses = pd.read_csv(csv), pd.read_csv(loss_csv)
        table = warnings_table(df, losses)
        plot(df, losses, table, png, args.context)
        report(table)
        return table
    set_threads(args.threads)
    data_tr, data_va, (raw, names, root) = split_data(args)
    print(f"text: {len(names)} files from {root} ({names[0]} .. {names[-1]}), "
          f"{len(raw):,} bytes; Python {sys.version.split()[0]}, torch {torch.__version__}, "
          f"{args.threads} thread(s) x {args.jobs} job(s)")
    print(f"model: {args.layers} layers, d_model {args.d_model}, {args.heads} heads of "
          f"{args.d_model // args.heads}, context {args.context}; batch {args.batch}, "
          f"{args.steps} steps (warm-up {args.warmup}), probed every {args.every}")
    print(PROGRESS_HELP.replace("\n", " "))
    todo = [(lr, qk, args) for lr in args.lrs for qk in (False, True)]
    t0 = time.perf_counter()
    if args.jobs > 1:
        import multiprocessing as mp
        with mp.get_context("spawn").Pool(args.jobs) as pool:
            results = pool.map(_run_job, todo, chunksize=1)
    else:
        results = [cached_run(lr, qk, data_tr, data_va, args) for lr, qk, _ in todo]
    recs = [r for res in results for r in res[0]]
    loss_rows = [r for res in results for r in res[1]]
    df = add_law(pd.DataFrame(recs), args.context)
    losses = pd.DataFrame(loss_rows)
    df.to_csv(csv, index=False, float_format="%.6g")
    losses.to_csv(loss_csv, index=False, float_format="%.6g")
    table = warnings_table(df, losses)
    plot(df, losses, table, png, args.context)
    print(f"\n{len(todo)} runs in {time.perf_counter() - t0:.0f} s "
          f"(per run: {', '.join(f'{r[2]:.0f}' for r in results)} s)")
    report(table)
    print(f"wrote {csv}, {loss_csv} and {png}")
    return table


if __name__ == "__main__":
    main()
