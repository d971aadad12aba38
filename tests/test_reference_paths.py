"""Every path of the row kernel against the mpmath reference: full 16-lane tiles,
a padded last tile, the float32 -> float64 flush every 256 logits, -inf masks
inside a tile, large-but-close values; fs.observables (value and log10 of
every observable, target argmax and a label) and fs.summarize's means."""
import math

import mpmath
import numpy as np
import pytest

import fastsoftmax as fs
from helpers import RTOL
from reference import log10_mp, observables_mp_targets

NS = [16, 17, 31, 255, 256, 257, 1024, 4097]
KINDS = ["gauss", "heavy", "masked", "close"]
DPS = 40


def make_rows(n, kind, dtype):
    rng = np.random.default_rng(n * 7 + KINDS.index(kind))
    rows = 2 if n < 255 else 1
    z = rng.standard_normal((rows, n))
    if kind == "gauss":
        x = z
    elif kind == "heavy":                        # top-2 gaps up to hundreds: saturated rows
        x = 40.0 * z
    elif kind == "masked":                       # a block of -inf inside the first tile
        x = 3.0 * z
        x[:, 2:10] = -np.inf
    else:                                        # large but close
        x = (1e6 if dtype == np.float64 else 1e3) + z
    return x.astype(dtype)


def _close(got, ref, rtol, what):
    v = float(ref)
    if v == 0.0 or math.isinf(v) or abs(v) < 1e-290:
        assert got == pytest.approx(v, rel=rtol, abs=1e-290), what
    else:
        assert got == pytest.approx(v, rel=rtol), what


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", NS)
def test_paths_match_mpmath(n, kind, dtype):
    x = make_rows(n, kind, dtype)
    rtol = RTOL[np.dtype(dtype)]
    label = n - 1                                # in the last (for odd n, padded) tile
    refs = {}
    for r, row in enumerate(x):
        both = observables_mp_targets([float(v) for v in row], [None, label], DPS)
        refs["argmax", r], refs[label, r] = both[None], both[label]
    for target in ("argmax", label):
        got = fs.observables(x, target=target)
        for r in range(len(x)):
            for name, v in refs[target, r].items():
                what = (n, kind, target, r, name)
                _close(float(got[name][r]), v, rtol, what)
                lref, gl = log10_mp(v), float(got["log10_" + name][r])
                if math.isinf(lref):
                    assert gl == lref, what
                else:
                    assert abs(gl - lref) <= rtol * max(abs(lref), 1 / math.log(10)), what
    # the summaries' means: of the values, and of their log10
    s = fs.summarize(x)
    for name in fs.OBS_NAMES:
        vals = [refs["argmax", r][name] for r in range(len(x))]
        with mpmath.workdps(DPS):
            mean = mpmath.fsum(vals) / len(vals)
        _close(float(s[name].mean), mean, rtol, (n, kind, name, "mean"))
        logs = [log10_mp(v) for v in vals]
        if all(math.isfinite(v) for v in logs):
            lm = math.fsum(logs) / len(logs)
            assert abs(s[name].log10_mean - lm) <= rtol * max(abs(lm), 1 / math.log(10)), \
                (n, kind, name, "log10_mean")
