"""Transposing 64-row groups (T[j, l] = x[r0 + l, j]); ns per row, one thread."""
import os, sys
import numpy as np
from numba import njit, prange
sys.path.insert(0, os.path.dirname(__file__))
from lanes import make_stack, w512, w256
from fastsoftmax._vmath import vexp

vw = w512 if os.environ.get("W") == "512" else w256
FM = {"nsz", "contract"}
GMAX = 64
ST = make_stack((256 * GMAX,), np.float32)


@njit(parallel=True, fastmath=FM, error_model="numpy")
def k_t(x, out, G, mode):
    rows, n = x.shape
    ng = rows // G
    for th in prange(1):
        vw()
        T = ST()
        for g in range(ng):
            r0 = g * G
            if mode == 0:
                for j in range(n):
                    for l in range(G):
                        T[j * G + l] = x[r0 + l, j]
            elif mode == 1:
                for l in range(G):
                    for j in range(n):
                        T[j * G + l] = x[r0 + l, j]
            elif mode == 2:
                for j0 in range(0, n, 8):
                    for l in range(G):
                        for jj in range(8):
                            T[(j0 + jj) * G + l] = x[r0 + l, j0 + jj]
            else:
                xf = x.reshape(rows * n)
                for j in range(n):
                    for l in range(G):
                        T[j * G + l] = xf[(r0 + l) * n + j]
            out[r0] = T[5]


@njit(parallel=True, fastmath={"nsz", "contract", "reassoc"}, error_model="numpy")
def k_expsum(x, out, G, mode):
    rows, n = x.shape
    for r in prange(rows):
        vw()
        xr = x[r]
        s = np.float32(0)
        for i in range(n):
            s += vexp(xr[i])
        out[r] = s


if __name__ == "__main__":
    from harness import measure, load
    import numba
    n = int(os.environ.get("N", 64))
    rows = (1 << 21) // n
    x = (np.random.default_rng(0).standard_normal((rows, n)) * 3).astype(np.float32)
    out = np.zeros(rows)
    c = {"expsum": (lambda: k_expsum(x, out, 64, 0), rows)}
    for mode, mn in enumerate(["gather j,l", "l,j", "blocked8", "flat gather"]):
        c[mn] = ((lambda m=mode: k_t(x, out, 64, m)), rows)
    r = measure(c)
    nth = numba.get_num_threads()
    print(load(), "W", os.environ.get("W"), "n", n, "threads", nth)
    for k, v in r.items():
        print(f"  {k:24s} {1e9 * nth / v:8.1f} ns/row/thread")


from tile import transpose16


@njit(parallel=True, fastmath=FM, error_model="numpy")
def k_t16(x, out, G, mode):
    rows, n = x.shape
    ng = rows // 16
    for th in prange(1):
        vw()
        T = ST()
        for g in range(ng):
            r0 = g * 16
            for c0 in range(0, n, 16):
                transpose16(x, r0, c0, T, c0)
            out[r0] = T[5]


if __name__ == "__main__":
    x = (np.random.default_rng(0).standard_normal((64, 64))).astype(np.float32)
    T = np.zeros(256 * 64, np.float32)

    @njit
    def one(x, T):
        transpose16(x, 16, 32, T, 0)
    one(x, T)
    assert np.array_equal(T[:256].reshape(16, 16), x[16:32, 32:48].T), "transpose wrong"
    c = {"expsum": (lambda: k_expsum(x2, out, 64, 0), rows), "t16": (lambda: k_t16(x2, out, 16, 0), rows)}
    n = int(os.environ.get("N", 64)); rows = (1 << 21) // n
    x2 = (np.random.default_rng(0).standard_normal((rows, n)) * 3).astype(np.float32); out = np.zeros(rows)
    r = measure(c)
    for k, v in r.items():
        print(f"  {k:24s} {1e9 / v:8.1f} ns/row/thread")
