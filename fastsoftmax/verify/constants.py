"""The numbers that define ``verify``: the experiments' grids and the statistics' settings.

One place for them: the experiments (:mod:`fastsoftmax.verify`), the laws'
predictions (:mod:`.predict`), the estimates (:mod:`.stats`), the judges and
the claims (:mod:`.paper`) all read them here.
"""
from __future__ import annotations

__all__ = ["DEFAULT_SAMPLES", "N", "D_K", "OFFSETS", "SCALES", "TARGETS", "LITERAL", "Z",
           "LEVEL", "SKETCH_REL", "CONTEXT_N", "CONTEXT_D_K", "CONTEXT_LOGITS", "EQUIV_REL",
           "EQUIV_DECADES"]

#: Logit vectors per point of a ``verify`` run (the least: a planned run gives
#: the laws' points the rows their stated accuracy needs).
DEFAULT_SAMPLES = 500_000
#: Logits per row (keys, for DotProduct) of every experiment.
N = 64
#: The d_k of the DotProduct sweeps (scaled and unscaled).
D_K = (1, 4, 16, 64, 256, 1024, 4096)
#: The offsets of the Shifted experiment (float64 logits).
OFFSETS = (0.0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6)
#: The scales sigma of the Gaussian sweep: 2**(k/2), 1 to 256.
SCALES = tuple(float(2.0 ** (k / 2)) for k in range(17))
#: The cross-entropy targets of the unscaled DotProduct sweep.
TARGETS = ("argmax", "random", "sampled")
#: The literal vector of the objection.
LITERAL = (100.0, 101.0, 99.0)
#: Standard errors each side of a measurement's interval (every verdict's rule).
Z = 4.0
#: The equivalence margin of "a common offset changes nothing" on the
#: observables' means: relative to offset 0's.
EQUIV_REL = 0.01
#: The equivalence margin on the observables' log10-means, in decades.
EQUIV_DECADES = 0.01
#: The level below which a gradient "vanishes" (a threshold of every Summary).
LEVEL = 1e-6
#: Relative resolution of the quantiles (the DDSketch-style sketch's 1%).
SKETCH_REL = 0.01
#: The context lengths n of ``verify --context`` (DotProduct, scaled and unscaled).
CONTEXT_N = (16, 64, 256, 1024, 4096, 16384, 65536)
#: The key dimension of the context-length experiment (the Transformer's d_k = 512 / 8 heads).
CONTEXT_D_K = 64
#: Logits per point of the context-length experiment: rows = min(samples, this / n).
CONTEXT_LOGITS = 2 ** 28
