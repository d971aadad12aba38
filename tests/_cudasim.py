"""Device functions run as kernels under the CUDA simulator, as plain Python
on NumPy scalars, in the ``cudasim`` child of ``_children``
(``NUMBA_ENABLE_CUDASIM=1`` must be set before ``numba.cuda`` is first
imported, and importing it costs seconds: one child runs every job).  Each
job returns the kernel's output; the test modules compare it with their
references (test_vmath: NumPy's functions; test_rng: the CPU build)."""
import numpy as np

# ``numba.cuda``, bound by the first job (the test processes import this
# module for its constants without importing numba.cuda): the simulator
# gives a kernel its thread's ``cuda.grid`` by swapping the module it finds
# among the kernel's globals, so ``cuda`` must be a global, not a closure's
cuda = None

#: the seed of the rng kernel (test_rng draws its CPU reference with it)
RNG_SEED = 20240607
#: the arguments of the vmath kernel
VMATH_X = np.linspace(0.1, 3.0, 64).astype(np.float32)


def vmath_job():
    """[vexp, vlog, sin, cos, fmax(x, NaN), fmin(x, x)] of ``VMATH_X`` (float32),
    a device function called by a kernel."""
    global cuda
    from numba import cuda

    from fastsoftmax._kernels.vmath import fmax, fmin, vexp, vlog, vsincos

    @cuda.jit(device=True)
    def dev(v):
        s, c = vsincos(v)
        return vexp(v), vlog(v), s, c, fmax(v, np.float32(np.nan)), fmin(v, v)

    @cuda.jit
    def kern(x, out):
        i = cuda.grid(1)
        if i < x.size:
            r = dev(x[i])
            for j in range(6):
                out[j, i] = r[j]

    x = VMATH_X
    out = np.zeros((6, x.size), np.float32)
    kern[2, 32](x, out)
    return out.tolist()


def rng_job():
    """Rows 0 and 1 of ``RNG_SEED``: fill_normals (6 values, stream 0), then
    normal (index 3), uniform (stream 3), uniform_int (m = 1000) and chi2
    (k = 7.5) per row, from a kernel of one thread per row."""
    global cuda
    from numba import cuda

    from fastsoftmax._kernels import rng as R

    @cuda.jit
    def kern(z, out, seed):
        i = cuda.grid(1)
        if i < z.shape[0]:
            R.fill_normals(z[i], z.shape[1], seed, i, 0)
            out[i, 0] = R.normal(seed, i, 0, 3)
            out[i, 1] = R.uniform(seed, i, 3, 0)
            out[i, 2] = R.uniform_int(seed, i, 2, 1000)
            out[i, 3] = R.chi2(seed, i, 1, 7.5)

    z = np.zeros((2, 6))
    out = np.zeros((2, 4))
    kern[1, 2](z, out, np.uint64(RNG_SEED))
    return np.concatenate([z.ravel(), out.ravel()]).tolist()
