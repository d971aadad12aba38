"""Knobs set in one place: compiler flags, block geometry, sketch geometry."""
import math

# fastmath without 'nnan'/'ninf': -inf logits are masks and NaN must still
# reach the sums so that bad rows are detected.  'reassoc' is what lets LLVM
# vectorize the float reductions.
FASTMATH = {"nsz", "arcp", "contract", "afn", "reassoc"}

# Rows are processed in fixed blocks.  The block size depends on n only (never
# on threads or chunking), so a block's accumulator depends only on its rows
# and the Summary is bitwise reproducible.
BLOCK_LOGITS = 1 << 16
MAX_BLOCK_ROWS = 1024


def block_rows(n):
    """Rows per block for vectors of length n: a power of two, ~65k logits."""
    b = 1
    while b < MAX_BLOCK_ROWS and 2 * b * n <= BLOCK_LOGITS:
        b *= 2
    return b


# Rows handed to one kernel call (a whole number of blocks, ~8M logits): the
# streaming granularity of summarize/simulate and the unit of progress bars.
CHUNK_LOGITS = 1 << 23


def chunk_rows(n, threads):
    b = block_rows(n)
    nblk = max(2 * threads, CHUNK_LOGITS // (b * n))
    return b * nblk


# Log-bucket sketch (DDSketch-style) over log10 of each observable.  Buckets
# of constant width W in log10 space guarantee a relative error <= ALPHA for
# the representative value; a little margin under 1% absorbs rounding of the
# bucket index at the edges.
SKETCH_ALPHA = 0.0099
SKETCH_GAMMA = (1 + SKETCH_ALPHA) / (1 - SKETCH_ALPHA)
SKETCH_W = math.log10(SKETCH_GAMMA)
SKETCH_LO = -350.0        # below every nonzero float64 (incl. subnormals)
SKETCH_HI = 310.0         # above the largest float64
# bucket 0 collects log10 < SKETCH_LO (and -inf), the last one log10 >= SKETCH_HI
SKETCH_NB = int(math.ceil((SKETCH_HI - SKETCH_LO) / SKETCH_W)) + 2

DEFAULT_THRESHOLDS = (1e-3, 1e-6, 1e-9)

# The quantiles every report shows (Stat.to_dict, sweep columns, plots).
QUANTILES = (0.01, 0.1, 0.5, 0.9, 0.99)
