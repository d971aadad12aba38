"""docs/theory.png.  Left: the saturation law P(jac_diag_max < 1e-6) against
the logit scale sigma for n = 64, 1,024 and 16,384 (two-logit law dashed,
order 1 solid) with ``fastsoftmax.simulate`` points (4 standard errors as
bars) and the freezing scale sigma_c = sqrt(2 ln n) dotted.  Right: the
departure law / simulate - 1 at t = 1e-3 against m = sigma_c / sigma, for
order 0 (open) and order 1 (filled), and the random-energy-model limit of
the order-0 departure, pi m / sin(pi m) - 1 (grey).

    python docs/make_theory_figure.py        # about 20 s on two cores
"""
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import fastsoftmax as fs  # noqa: E402
from fastsoftmax import theory  # noqa: E402

T, T_DEP = 1e-6, 1e-3
CASES = [(64, 400_000, "C0"), (1024, 40_000, "C1"), (16384, 4_000, "C2")]
SIGMA_MC = np.array([6.0, 9.0, 12.0, 25.0, 50.0, 100.0, 200.0, 400.0])


def main(out=os.path.join(os.path.dirname(os.path.abspath(__file__)), "theory.png")):
    sigma = np.geomspace(4.0, 600.0, 80)
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(12, 4.6), gridspec_kw=dict(width_ratios=[3, 2]))
    for n, rows, color in CASES:
        law = theory.Law.gaussian(n, sigma)
        ax.plot(sigma, law.observable("jac_diag_max", order=0).cdf(T), "--", color=color, lw=1)
        ax.plot(sigma, law["jac_diag_max"].cdf(T), "-", color=color, lw=1.5,
                label=f"n = {n:,}")
        stats = [fs.simulate(fs.models.Gaussian(n=n, scale=s), rows, seed=0,
                             thresholds=(T_DEP, T), dtype="float64", backend="cpu")
                 ["jac_diag_max"] for s in SIGMA_MC]
        mc = np.array([st.fraction_below(T) for st in stats])
        se = np.sqrt(np.maximum(mc * (1 - mc), 1.0 / rows) / rows)
        ax.errorbar(SIGMA_MC, mc, yerr=4 * se, fmt="o", ms=4, color=color, capsize=2)
        ax.axvline(float(theory.freezing_scale(n)), color=color, ls=":", lw=1)
        # departures at t = 1e-3, where the fractions are large enough to see them
        mc = np.array([st.fraction_below(T_DEP) for st in stats])
        se = np.sqrt(np.maximum(mc * (1 - mc), 1.0 / rows) / rows)
        m = float(theory.freezing_scale(n)) / SIGMA_MC
        at = theory.Law.gaussian(n, SIGMA_MC)
        for order, face in ((0, "none"), (1, color)):
            p = at.observable("jac_diag_max", order=order).cdf(T_DEP)
            bx.errorbar(m, p / mc - 1, yerr=4 * se * p / mc ** 2, fmt="o", ms=5, mfc=face,
                        color=color, capsize=2)
    ax.set_xscale("log")
    ax.set_xlabel(r"logit scale $\sigma$ (unscaled dot products: $\sigma \approx \sqrt{d_k}$)")
    ax.set_ylabel(r"P(jac_diag_max < $10^{-6}$)")
    ax.set_title("order 1 (solid), two-logit law (dashed), simulate (points)", fontsize=10)
    ax.axhline(0.5, color="0.7", lw=0.8)
    ax.legend(loc="upper left", frameon=False)
    mm = np.geomspace(0.005, 0.75, 100)
    bx.plot(mm, 1 / np.sinc(mm) - 1, color="0.6", lw=1)
    bx.axhline(0.0, color="0.7", lw=0.8)
    bx.set_xscale("log")
    bx.set_ylim(-0.35, 0.75)
    bx.set_xlabel(r"$m = \sigma_c / \sigma$,  $\sigma_c = \sqrt{2 \ln n}$")
    bx.set_ylabel(r"law / simulate $-$ 1   (t = $10^{-3}$)")
    bx.set_title("order 0 (open), order 1 (filled), REM limit of order 0 (grey)", fontsize=10)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print("wrote", out)


if __name__ == "__main__":
    main()
