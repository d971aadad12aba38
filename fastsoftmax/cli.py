"""Command line (placeholder until the verify job lands): summarise a demo."""
import sys


def main(argv=None):
    import numpy as np

    import fastsoftmax as fs

    argv = sys.argv[1:] if argv is None else argv
    rng = np.random.default_rng(0)
    for d_k in (1, 64, 4096):
        x = (rng.standard_normal((20000, 64)) * np.sqrt(d_k)).astype(np.float32)
        s = fs.summarize(x)
        print(f"unscaled dot products, d_k={d_k}: median jac_diag_max = "
              f"{s['jac_diag_max'].median:.3g}, fraction below 1e-6 = "
              f"{s['jac_diag_max'].fraction_below(1e-6):.3f}")
    return 0
