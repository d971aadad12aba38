"""Knobs set in one place: compiler flags, block geometry, sketch geometry
(the kernels' vector width is a CPU feature: ``_kernels.features``)."""
import os

# fastmath without 'nnan'/'ninf': -inf logits are masks and NaN must still
# reach the sums so that bad rows are detected.  Without 'reassoc' (and the
# value-changing 'arcp'/'afn'): LLVM may not reorder a float sum, so every
# summation order is the one written in the code (16 explicit lanes, a fixed
# tree: ``_simd``) and the bits are the same on every x86 CPU, whatever
# vector width the vectorizer picks.  'contract' (FMA) is kept: every x86-64
# target with AVX2 fuses the same way (a target without FMA, e.g.
# NUMBA_CPU_NAME=generic, rounds some products differently).
FASTMATH = {"nsz", "contract"}

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


# The tile path: rows of length n <= TILE_BOUND summarised a tile of 16 rows
# at a time, one row per SIMD lane (``_kernels.row``, "Summation order"): a
# fixed function of n, so the summation order (and the bits) never depends
# on the CPU.  It is off by default (TILE_MAX_N = 0: every row goes through
# the row-at-a-time path); FASTSOFTMAX_TILE=1 in the environment turns it on
# (other bits for n <= TILE_BOUND: the order of the sums differs).
TILE_BOUND = 256
TILE_MAX_N = TILE_BOUND if os.environ.get("FASTSOFTMAX_TILE", "0") == "1" else 0


# at most this many blocks a group (16 x 65k logits); the driver makes groups
# smaller where a chunk would otherwise give a thread fewer than two
MAX_GROUP_BLOCKS = 16


def group_blocks(n):
    """Blocks the kernels wrap up together (the per-row observables and the
    block reduction over up to MAX_BLOCK_ROWS rows at once; each block keeps
    its own moments): the fixed cost of those loops is paid once a group."""
    return max(1, min(MAX_BLOCK_ROWS // block_rows(n), MAX_GROUP_BLOCKS))


# Rows handed to one kernel call (a whole number of blocks, ~8M logits): the
# streaming granularity of summarize/simulate and the unit of progress bars.
CHUNK_LOGITS = 1 << 23


def chunk_rows(n, threads):
    b = block_rows(n)
    nblk = max(2 * threads, CHUNK_LOGITS // (b * n))
    return b * nblk


# Log-bucket sketch (DDSketch-style) over L = log10 of each observable, with
# no floor: the four numbers that set its geometry (``_sketch.BucketMapping``
# derives the buckets from them and says what they guarantee):
# * region A, SKETCH_A_LO <= L < SKETCH_A_HI: buckets of constant width in L,
#   so the representative value is within SKETCH_ALPHA (< 1%) of every value
#   in its bucket (a little margin under 1% absorbs rounding at the edges);
# * region B, L < SKETCH_A_LO: buckets of constant ratio SKETCH_B_RATIO of |L|,
#   so the representative log10 is within 0.095% of every log10 in its bucket.
SKETCH_ALPHA = 0.0099
SKETCH_A_LO = -1000.0
SKETCH_A_HI = 320.0
SKETCH_B_RATIO = 1.0019

DEFAULT_THRESHOLDS = (1e-3, 1e-6, 1e-9)

# The quantiles every report shows (Stat.to_dict, sweep columns, plots).
QUANTILES = (0.01, 0.1, 0.5, 0.9, 0.99)
