"""Does an explicit-lane loop vectorize without reassoc?  Variants of indexing."""
import os, sys, time
import numpy as np
from numba import njit, prange, uint64
sys.path.insert(0, os.path.dirname(__file__))
from lanes import make_stack, w512, w256, regs
from fastsoftmax._vmath import fmax, fmin

FM = {"nsz", "contract"}
L = 16
S = make_stack((16,), np.float32)
vw = w512 if os.environ.get("W") == "512" else w256


@njit(parallel=True, fastmath=FM, error_model="numpy")
def sum_idx(x, out):
    n = x.shape[1]
    for r in prange(x.shape[0]):
        vw()
        xr = x[r]
        a = S()
        for l in range(L):
            a[l] = 0
        for t in range(n // L):
            for l in range(L):
                a[l] += xr[t * L + l]
        s = np.float32(0)
        for l in range(L):
            s += a[l]
        out[r] = s


@njit(parallel=True, fastmath=FM, error_model="numpy")
def sum_tile(x, out):
    n = x.shape[1]
    for r in prange(x.shape[0]):
        vw()
        xr = x[r]
        a = S()
        for l in range(L):
            a[l] = 0
        for t in range(n // L):
            tl = xr[t * L:(t + 1) * L]
            for l in range(L):
                a[l] += tl[l]
        s = np.float32(0)
        for l in range(L):
            s += a[l]
        out[r] = s


@njit(parallel=True, fastmath=FM, error_model="numpy")
def sum_uint(x, out):
    n = x.shape[1]
    for r in prange(x.shape[0]):
        vw()
        xr = x[r]
        a = S()
        for l in range(L):
            a[l] = 0
        nt = uint64(n // L)
        for t in range(nt):
            b = t * uint64(L)
            for l in range(L):
                a[l] += xr[b + uint64(l)]
        s = np.float32(0)
        for l in range(L):
            s += a[l]
        out[r] = s


@njit(parallel=True, fastmath=FM, error_model="numpy")
def sum_2d(x, out):
    n = x.shape[1]
    for r in prange(x.shape[0]):
        vw()
        xr = x[r].reshape((n // L, L))
        a = S()
        for l in range(L):
            a[l] = 0
        for t in range(n // L):
            for l in range(L):
                a[l] += xr[t, l]
        s = np.float32(0)
        for l in range(L):
            s += a[l]
        out[r] = s


@njit(parallel=True, fastmath=FM, error_model="numpy")
def max2_uint(x, out):
    n = x.shape[1]
    for r in prange(x.shape[0]):
        vw()
        xr = x[r]
        a = S()
        b2 = S()
        for l in range(L):
            a[l] = -np.inf
            b2[l] = -np.inf
        nt = uint64(n // L)
        for t in range(nt):
            b = t * uint64(L)
            for l in range(L):
                v = xr[b + uint64(l)]
                m = a[l]
                b2[l] = fmax(b2[l], fmin(m, v))
                a[l] = fmax(m, v)
        s = np.float32(0)
        for l in range(L):
            s = fmax(s, a[l] + b2[l])
        out[r] = s


def best(f, *a, reps=5):
    f(*a)
    t = []
    for _ in range(reps):
        t0 = time.perf_counter(); f(*a); t.append(time.perf_counter() - t0)
    return min(t)


if __name__ == "__main__":
    rows, n = 100_000, 1024
    x = np.random.default_rng(0).standard_normal((rows, n)).astype(np.float32)
    out = np.zeros(rows)
    for k in [sum_idx, sum_tile, sum_uint, sum_2d, max2_uint]:
        k(x[:10], out)
        t = best(k, x, out)
        print(f"{k.__name__:10s} {rows*n/t:9.3g}/s regs {list(regs(k).values())[0]}")
