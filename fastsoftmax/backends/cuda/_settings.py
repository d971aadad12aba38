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
#: cap on the per-thread row scratch of generated rows (bytes)
SCRATCH_BYTES = 1 << 31
#: register cap per thread for the summary kernels (None: the compiler's
#: choice; ``python bench/gpu_compile.py`` prints it per kernel variant with
#: the resident blocks of 128 threads it allows: 4 at <= 128 registers, 3 above)
MAX_REGISTERS = None

# Compile options of every kernel: the one place fast math is decided (see
# the package docstring: it must stay off for the log-domain math).
JIT = dict(fastmath=False)
