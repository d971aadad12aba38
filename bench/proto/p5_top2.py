"""top-2 (with multiplicity) variants; ns per row, one thread."""
import os, sys
import numpy as np
from numba import njit, prange
sys.path.insert(0, os.path.dirname(__file__))
from lanes import w512, w256
from fastsoftmax._vmath import fmax, fmin, vexp

vw = w512 if os.environ.get("W") == "512" else w256
NINF = np.float32(-np.inf)


def mk(fm):
    @njit(fastmath=fm, error_model="numpy", inline="always")
    def m1pass(xr, n):
        m1 = NINF
        for i in range(n):
            m1 = fmax(m1, xr[i])
        return m1

    @njit(fastmath=fm, error_model="numpy", inline="always")
    def m2pass(xr, n, m1):
        m2 = NINF
        for i in range(n):
            v = xr[i]
            m2 = fmax(m2, v if v < m1 else NINF)
        return m2

    @njit(fastmath=fm, error_model="numpy", inline="always")
    def tiepass(xr, n, m1):
        t = np.int32(0)
        for i in range(n):
            t = np.int32(t + (np.int32(1) if xr[i] == m1 else np.int32(0)))
        return t

    @njit(fastmath=fm, error_model="numpy", inline="always")
    def m2tiepass(xr, n, m1):
        m2 = NINF
        t = np.int32(0)
        for i in range(n):
            v = xr[i]
            m2 = fmax(m2, v if v < m1 else NINF)
            t = np.int32(t + (np.int32(1) if v == m1 else np.int32(0)))
        return m2, t

    @njit(fastmath=fm, error_model="numpy", inline="always")
    def imaxpass(xr, n, m1):
        # first index of the max (int min reduction)
        k = n
        for i in range(n):
            k = min(k, i if xr[i] == m1 else n)
        return k

    @njit(fastmath=fm, error_model="numpy", inline="always")
    def m2idx(xr, n, k):
        m2 = NINF
        for i in range(n):
            m2 = fmax(m2, xr[i] if i != k else NINF)
        return m2

    @njit(parallel=True, fastmath=fm, error_model="numpy")
    def kern(x, out, mode):
        rows, n = x.shape
        for r in prange(rows):
            vw()
            xr = x[r]
            m1 = m1pass(xr, n)
            if mode == 0:
                out[r] = m1
            elif mode == 1:
                m2 = m2pass(xr, n, m1)
                t = tiepass(xr, n, m1)
                out[r] = m1 if t > 1 else m2
            elif mode == 2:
                m2, t = m2tiepass(xr, n, m1)
                out[r] = m1 if t > 1 else m2
            else:
                k = imaxpass(xr, n, m1)
                out[r] = m2idx(xr, n, k)
    return kern


k_plain = mk({"nsz", "contract"})
k_nnan = mk({"nsz", "contract", "nnan"})


@njit(parallel=True, fastmath={"nsz", "contract", "reassoc"}, error_model="numpy")
def k_expsum(x, out):
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
    c = {"expsum": (lambda: k_expsum(x, out), rows)}
    for nm, k in [("plain", k_plain), ("nnan", k_nnan)]:
        for mode, mn in enumerate(["m1", "m1+m2+ties", "m1+fused", "m1+idx+m2"]):
            c[f"{nm} {mn}"] = ((lambda k=k, m=mode: k(x, out, m)), rows)
    r = measure(c)
    nth = numba.get_num_threads()
    print(load(), "W", os.environ.get("W"), "n", n, "threads", nth)
    for k, v in r.items():
        print(f"  {k:24s} {1e9 * nth / v:8.1f} ns/row/thread")
