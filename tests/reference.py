"""Slow, readable references: the observables by definition at 60 digits.

Nothing here shares code with fastsoftmax: probabilities are computed by the
textbook formula in mpmath, 1 - p is the sum of the other probabilities, the
Jacobian is formed entry by entry.
"""
import math

import mpmath

from fastsoftmax import OBS_NAMES

DPS = 60


def observables_mp(row, y=None, dps=DPS):
    """dict name -> mpf for one row (a sequence of floats, -inf allowed).
    y: target class index, None for the argmax (first maximum)."""
    return observables_mp_targets(row, [y], dps)[y]


def observables_mp_targets(row, ys, dps=DPS):
    """{y: observables_mp(row, y)} for several targets, the row's
    probabilities computed once.

    Linear in n (long rows are affordable): 1 - p_top is the sum of the other
    weights over the sum of all (no cancellation), 1 - p_i = (S - w_i) / S for
    i != top (S - w_i >= w_top >= S / n: no cancellation either), and the
    Jacobian's squared Frobenius norm is sum_i (p_i (1 - p_i))^2 +
    sum_i p_i^2 sum_{j != i} p_j^2."""
    with mpmath.workdps(dps):
        n = len(row)
        finite = [mpmath.mpf(float(v)) for v in row if v != -math.inf]
        m = max(finite)
        w = [mpmath.exp(mpmath.mpf(float(v)) - m) if v != -math.inf else mpmath.mpf(0)
             for v in row]
        s = mpmath.fsum(w)
        p = [wi / s for wi in w]
        top = max(range(n), key=lambda i: (row[i], -i))
        order = sorted(range(n), key=lambda i: p[i], reverse=True)
        rest = mpmath.fsum(w[j] for j in range(n) if j != top)     # the others' weight
        one_minus = [(s - w[i]) / s if i != top else rest / s for i in range(n)]
        out = {}
        out["max_prob"] = p[top]
        out["one_minus_max_prob"] = one_minus[top]
        # log p_i = (x_i - m) - log(1 + sum_{j != top} w_j): p_top itself may
        # round to 1, its log must not
        log_s = mpmath.log1p(rest)
        logp = [mpmath.mpf(float(v)) - m - log_s if v != -math.inf else None for v in row]
        out["entropy"] = -mpmath.fsum(p[i] * logp[i] for i in range(n) if p[i] > 0)
        out["jac_diag_max"] = max(p[i] * one_minus[i] for i in range(n))
        out["jac_offdiag_max"] = p[order[0]] * p[order[1]] if n > 1 else mpmath.mpf(0)
        # sum_{j != i} p_j^2: for the top from the others directly, else as
        # the total less p_i^2 (at least p_top^2 remains: no cancellation)
        sq = mpmath.fsum(pi ** 2 for pi in p)
        sq_rest = mpmath.fsum(p[j] ** 2 for j in range(n) if j != top)
        off = mpmath.fsum(p[i] ** 2 * (sq_rest if i == top else sq - p[i] ** 2)
                          for i in range(n))
        fro2 = mpmath.fsum((p[i] * one_minus[i]) ** 2 for i in range(n)) + off
        out["jac_fro"] = mpmath.sqrt(fro2)
        res = {}
        for target in ys:
            y = top if target is None else target
            res[target] = dict(out)
            res[target]["ce_loss"] = -logp[y] if logp[y] is not None else mpmath.inf
            res[target]["ce_grad_target"] = one_minus[y]
            # sum_{i != y} p_i^2 as for the Frobenius norm above
            rest_y = sq_rest if y == top else sq - p[y] ** 2
            res[target]["ce_grad_norm"] = mpmath.sqrt(rest_y + one_minus[y] ** 2)
            assert set(res[target]) == set(OBS_NAMES)
        return res


def log10_mp(v):
    with mpmath.workdps(DPS):
        if v == 0:
            return -math.inf
        if v == mpmath.inf:
            return math.inf
        return float(mpmath.log10(v))


def softmax_mp(row):
    with mpmath.workdps(DPS):
        finite = [mpmath.mpf(float(v)) for v in row if v != -math.inf]
        m = max(finite)
        w = [mpmath.exp(mpmath.mpf(float(v)) - m) if v != -math.inf else mpmath.mpf(0)
             for v in row]
        s = mpmath.fsum(w)
        return [wi / s for wi in w]
