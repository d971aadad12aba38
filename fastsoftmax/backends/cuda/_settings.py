"""Knobs of the CUDA backend, read at launch time (tests patch them small:
the simulator runs every thread as a Python thread).  Powers of two where it
says so."""


#: threads per CUDA block: 32, 64, 128 or 256
THREADS_PER_BLOCK = 128
#: array rows: about this many logits per thread of a row's group (power of two)
VALUES_PER_THREAD = 16
#: resident blocks aimed at per multiprocessor (the grid is grid-stride)
BLOCKS_PER_SM = 8
#: override of the grid size (tests); None: multiprocessors * BLOCKS_PER_SM
MAX_GRID = None
#: logits per kernel launch (the host folds a launch while the next one runs)
LAUNCH_LOGITS = 1 << 29
#: per-thread row scratch of generated rows, both streams (bytes): at least
#: this much, and more where it would leave fewer than SCRATCH_BLOCKS_PER_SM
#: blocks per multiprocessor (n = 16,384: a 128-thread block's scratch is
#: 8 MiB in float32, 16 MiB in float64), up to SCRATCH_FRACTION of the
#: device's memory (an H200: 2 blocks per SM up to n = 32,768 in float64)
SCRATCH_BYTES = 1 << 31
SCRATCH_BLOCKS_PER_SM = 2
SCRATCH_FRACTION = 0.125
#: register cap per thread of every kernel (None: the compiler's choice).
#: Measured by ``python bench/gpu_compile.py`` (which compiles with this
#: setting): without a cap every summary kernel takes 120-128 registers on
#: sm_90 and sm_80, so 4 blocks of 128 threads are resident per
#: multiprocessor (above 128, 3), with no spill.  A cap of 128 is not set:
#: with it ptxas spilled the generated rows' kernel on sm_80 (84 bytes),
#: which takes 124 registers without one
MAX_REGISTERS = None

# Compile options of every kernel: the one place fast math is decided (see
# the package docstring: it must stay off for the log-domain math).
JIT = dict(fastmath=False)
