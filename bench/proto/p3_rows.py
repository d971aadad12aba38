"""Rows across lanes for small n: groups of G rows, lane l = row r0 + l.
Passes over a transposed tile T[j, l]; lane loops with a runtime trip count
(G passed in) so LLVM does not fully unroll them before vectorizing."""
import os, sys
import numpy as np
from numba import njit, prange
sys.path.insert(0, os.path.dirname(__file__))
from lanes import make_stack, w512, w256
from fastsoftmax._vmath import vexp, fmax, fmin

FM = {"nsz", "contract"}
vw = w512 if os.environ.get("W") == "512" else w256
GMAX = 64
NMAX = 64
ST = make_stack((NMAX, GMAX), np.float32)
SA = make_stack((8, GMAX), np.float32)
SD = make_stack((4, GMAX), np.float64)


@njit(parallel=True, fastmath=FM, error_model="numpy")
def k_rows(x, out, G, mode):
    rows, n = x.shape
    nth = 2
    ng = rows // G
    for th in prange(nth):
        vw()
        T = ST()
        A = SA()
        D = SD()
        for g in range(th, ng, nth):
            r0 = g * G
            # transpose (gather)
            for j in range(n):
                for l in range(G):
                    T[j, l] = x[r0 + l, j]
            if mode == 0:
                for l in range(G):
                    out[r0 + l] = T[0, l]
                continue
            # m1
            for l in range(G):
                A[0, l] = -np.inf
                A[1, l] = -np.inf
                A[2, l] = 0
            for j in range(n):
                for l in range(G):
                    A[0, l] = fmax(A[0, l], T[j, l])
            if mode == 1:
                for l in range(G):
                    out[r0 + l] = A[0, l]
                continue
            # m2 and ties
            for j in range(n):
                for l in range(G):
                    v = T[j, l]
                    m = A[0, l]
                    A[1, l] = fmax(A[1, l], v if v < m else np.float32(-np.inf))
                    A[2, l] += np.float32(1) if v == m else np.float32(0)
            for l in range(G):
                A[1, l] = A[0, l] if A[2, l] > np.float32(1) else A[1, l]
            if mode == 2:
                for l in range(G):
                    out[r0 + l] = A[1, l] + A[2, l]
                continue
            # exp pass: f32 partials flushed every 16 columns
            for l in range(G):
                D[0, l] = 0.0; D[1, l] = 0.0; D[2, l] = 0.0; D[3, l] = 0.0
            for j0 in range(0, n, 16):
                for l in range(G):
                    A[3, l] = 0; A[4, l] = 0; A[5, l] = 0; A[6, l] = 0
                for j in range(j0, min(j0 + 16, n)):
                    for l in range(G):
                        d = T[j, l] - A[1, l]
                        d = np.float32(0) if d > np.float32(0) else d
                        small = d < np.float32(-29.0)
                        dc = np.float32(-29.0) if small else d
                        e = vexp(dc)
                        e = np.float32(0) if small else e
                        e2 = e * e
                        A[3, l] += e
                        A[4, l] += e2
                        A[5, l] += e2 * e
                        A[6, l] -= e * dc
                for l in range(G):
                    D[0, l] += np.float64(A[3, l]); D[1, l] += np.float64(A[4, l])
                    D[2, l] += np.float64(A[5, l]); D[3, l] += np.float64(A[6, l])
            for l in range(G):
                out[r0 + l] = D[0, l] + D[1, l] + D[2, l] + D[3, l]


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
    from harness import measure, load, table
    from lanes import regs
    rows, n = int(os.environ.get("ROWS", 64 * 1000)), 64
    x = (np.random.default_rng(0).standard_normal((rows, n)) * 3).astype(np.float32)
    out = np.zeros(rows)
    G = 64
    c = {"expsum": (lambda: k_expsum(x, out, G, 0), x.size)}
    for mode, nm in enumerate(["transpose", "+m1", "+m2/ties", "+exp (all)"]):
        c[nm] = ((lambda m=mode: k_rows(x, out, G, m)), x.size)
    print(load(), "W", os.environ.get("W"), rows, n)
    print(table(measure(c), ref="expsum"))
    print(regs(k_rows))
