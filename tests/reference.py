"""Slow, readable references: the observables by definition at 60 digits.

Nothing here shares code with fastsoftmax: probabilities are computed by the
textbook formula in mpmath, 1 - p is the sum of the other probabilities, the
Jacobian is formed entry by entry.
"""
import math

import mpmath

from fastsoftmax import OBS_NAMES

DPS = 60


def observables_mp(row, y=None):
    """dict name -> mpf for one row (a sequence of floats, -inf allowed).
    y: target class index, None for the argmax (first maximum)."""
    with mpmath.workdps(DPS):
        n = len(row)
        finite = [mpmath.mpf(float(v)) for v in row if v != -math.inf]
        m = max(finite)
        w = [mpmath.exp(mpmath.mpf(float(v)) - m) if v != -math.inf else mpmath.mpf(0)
             for v in row]
        s = mpmath.fsum(w)
        p = [wi / s for wi in w]
        top = max(range(n), key=lambda i: (row[i], -i))
        if y is None:
            y = top
        order = sorted(range(n), key=lambda i: p[i], reverse=True)

        def others(i):
            return mpmath.fsum(p[j] for j in range(n) if j != i)

        one_minus = [others(i) for i in range(n)]
        out = {}
        out["max_prob"] = p[top]
        out["one_minus_max_prob"] = one_minus[top]
        # log p_i = (x_i - m) - log(1 + sum_{j != top} w_j): at 60 digits
        # p_top itself may round to 1, its log must not
        log_s = mpmath.log1p(mpmath.fsum(w[j] for j in range(n) if j != top))
        logp = [mpmath.mpf(float(v)) - m - log_s if v != -math.inf else None for v in row]
        out["entropy"] = -mpmath.fsum(p[i] * logp[i] for i in range(n) if p[i] > 0)
        out["jac_diag_max"] = max(p[i] * one_minus[i] for i in range(n))
        out["jac_offdiag_max"] = p[order[0]] * p[order[1]] if n > 1 else mpmath.mpf(0)
        fro2 = mpmath.fsum((p[i] * one_minus[i]) ** 2 for i in range(n)) + mpmath.fsum(
            (p[i] * p[j]) ** 2 for i in range(n) for j in range(n) if i != j)
        out["jac_fro"] = mpmath.sqrt(fro2)
        out["ce_loss"] = -logp[y] if logp[y] is not None else mpmath.inf
        out["ce_grad_target"] = one_minus[y]
        out["ce_grad_norm"] = mpmath.sqrt(
            mpmath.fsum(p[i] ** 2 for i in range(n) if i != y) + one_minus[y] ** 2)
        assert set(out) == set(OBS_NAMES)
        return out


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
