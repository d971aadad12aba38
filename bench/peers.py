"""The statistics computed the way a user would without fastsoftmax:
vectorized NumPy / SciPy / JAX / PyTorch over batches of rows, every
observable per row, then mean, std, min and max of each.  Target: argmax.

What the peers compute is a subset of a ``Summary`` (``STATISTICS`` says it
in one line, for the tables): the nine observables' values per row (softmax
in the input's dtype, float64 only for the reductions) and, over the rows,
each value's mean, standard deviation, min and max.  They do not compute the
log10 of each value and its moments, the sketch (quantiles), the threshold
counts, the infinite/NaN bookkeeping or a reproducible summation order, which
``fastsoftmax.summarize`` does in the same call: a peer's time is a lower
bound for the work fastsoftmax does.

``candidates(x)``: {name: callable} of every peer installed, for a run that
interleaves them with fastsoftmax and the ceilings (``ceiling.interleaved``).
"""
import numpy as np

STATISTICS = ("peers compute: 9 values per row (argmax target), then mean, std, min, max of "
              "each; not the log10 moments, quantiles, threshold counts or non-finite counts "
              "that fastsoftmax also computes")

BATCH_LOGITS = 1 << 22


def _batches(x):
    step = max(1, BATCH_LOGITS // x.shape[1])
    for r0 in range(0, x.shape[0], step):
        yield x[r0:r0 + step]


def _reduce(parts):
    """parts: list of dicts name -> (sum, sumsq, min, max, count)."""
    out = {}
    for name in parts[0]:
        s = sum(p[name][0] for p in parts)
        ss = sum(p[name][1] for p in parts)
        n = sum(p[name][4] for p in parts)
        mean = s / n
        out[name] = (mean, np.sqrt(max(ss / n - mean * mean, 0.0)),
                     min(p[name][2] for p in parts), max(p[name][3] for p in parts))
    return out


def _top2_numpy(p):
    t = np.partition(p, -2, axis=-1)
    return t[..., -1], t[..., -2]


def _row_obs_numpy(x, xp=np, log=np.log, sqrt=np.sqrt, top2=_top2_numpy):
    m = x.max(axis=-1, keepdims=True)
    e = xp.exp(x - m)
    s = e.sum(axis=-1, keepdims=True)
    p = e / s
    p1, p2 = top2(p)
    sum2 = (p * p).sum(-1)
    out = {
        "max_prob": p1,
        "one_minus_max_prob": 1 - p1,
        "entropy": -(p * xp.where(p > 0, log(xp.where(p > 0, p, 1)), 0)).sum(-1),
        "jac_diag_max": (p * (1 - p)).max(-1),
        "jac_offdiag_max": p1 * p2,
        "jac_fro": sqrt(xp.maximum(((p * (1 - p)) ** 2).sum(-1) + sum2 * sum2
                                   - (p ** 4).sum(-1), 0)),
        "ce_loss": log(s[..., 0]),
        "ce_grad_norm": sqrt(xp.maximum(sum2 - p1 * p1 + (1 - p1) ** 2, 0)),
        "ce_grad_target": 1 - p1,
    }
    return out


def numpy_stats(x):
    parts = []
    for b in _batches(x):
        obs = _row_obs_numpy(b)
        parts.append({k: (float(v.sum(dtype=np.float64)), float((v.astype(np.float64) ** 2).sum()),
                          float(v.min()), float(v.max()), v.size) for k, v in obs.items()})
    return _reduce(parts)


def scipy_stats(x):
    from scipy import special
    parts = []
    for b in _batches(x):
        p = special.softmax(b, axis=-1)
        lse = special.logsumexp(b, axis=-1)
        p1, p2 = _top2_numpy(p)
        sum2 = (p * p).sum(-1)
        obs = {
            "max_prob": p1, "one_minus_max_prob": 1 - p1,
            "entropy": special.entr(p).sum(-1),
            "jac_diag_max": (p * (1 - p)).max(-1), "jac_offdiag_max": p1 * p2,
            "jac_fro": np.sqrt(np.maximum(((p * (1 - p)) ** 2).sum(-1) + sum2 ** 2
                                          - (p ** 4).sum(-1), 0)),
            "ce_loss": lse - b.max(-1),
            "ce_grad_norm": np.sqrt(np.maximum(sum2 - p1 * p1 + (1 - p1) ** 2, 0)),
            "ce_grad_target": 1 - p1,
        }
        parts.append({k: (float(v.sum(dtype=np.float64)), float((v.astype(np.float64) ** 2).sum()),
                          float(v.min()), float(v.max()), v.size) for k, v in obs.items()})
    return _reduce(parts)


def make_jax():
    import jax
    import jax.numpy as jnp

    @jax.jit
    def part(b):
        def top2(p):
            # argmax masking: exact with ties, and much faster than lax.top_k on XLA:CPU
            i = jnp.argmax(p, axis=-1)[..., None]
            p1 = jnp.take_along_axis(p, i, axis=-1)[..., 0]
            cols = jnp.arange(p.shape[-1])
            p2 = jnp.where(cols == i, -1.0, p).max(-1)
            return p1, p2

        obs = _row_obs_numpy(b, xp=jnp, log=jnp.log, sqrt=jnp.sqrt, top2=top2)
        return {k: (v.sum(), (v * v).sum(), v.min(), v.max()) for k, v in obs.items()}

    def run(x):
        parts = []
        step = max(1, BATCH_LOGITS // x.shape[1])
        for r0 in range(0, x.shape[0], step):
            b = x[r0:r0 + step]
            if b.shape[0] != step and x.shape[0] > step:
                b = x[-step:]      # keep one compiled shape (overlap is fine for timing)
            res = jax.device_get(part(b))
            parts.append({k: (float(a), float(c), float(d), float(e), b.shape[0])
                          for k, (a, c, d, e) in res.items()})
        return _reduce(parts)

    return run


def make_torch():
    import torch
    torch.set_num_threads(2)

    def run(x):
        parts = []
        for b in _batches(x):
            t = torch.from_numpy(np.ascontiguousarray(b))
            p = torch.softmax(t, dim=-1)
            top2 = torch.topk(p, 2, dim=-1).values
            p1, p2 = top2[..., 0], top2[..., 1]
            sum2 = (p * p).sum(-1)
            obs = {
                "max_prob": p1, "one_minus_max_prob": 1 - p1,
                "entropy": -torch.special.xlogy(p, p).sum(-1),
                "jac_diag_max": (p * (1 - p)).amax(-1), "jac_offdiag_max": p1 * p2,
                "jac_fro": torch.sqrt(torch.clamp(((p * (1 - p)) ** 2).sum(-1) + sum2 ** 2
                                                  - (p ** 4).sum(-1), min=0)),
                "ce_loss": torch.logsumexp(t, -1) - t.amax(-1),
                "ce_grad_norm": torch.sqrt(torch.clamp(sum2 - p1 * p1 + (1 - p1) ** 2, min=0)),
                "ce_grad_target": 1 - p1,
            }
            parts.append({k: (float(v.double().sum()), float((v.double() ** 2).sum()),
                              float(v.min()), float(v.max()), v.numel()) for k, v in obs.items()})
        return _reduce(parts)

    return run


def candidates(x):
    """{name: zero-argument callable} for every peer importable here, each
    warmed up (JAX compiled) on a slice of x."""
    out = {"numpy": lambda: numpy_stats(x), "scipy": lambda: scipy_stats(x)}
    for name, make in (("jax-jit", make_jax), ("pytorch", make_torch)):
        try:
            f = make()
        except ImportError:
            continue
        out[name] = (lambda f=f: f(x))
    return out
