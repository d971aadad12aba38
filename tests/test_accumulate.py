"""The accumulator's parts, each a small value type with its own merge and dict form.

* For each part (moments, extremes, threshold counts, sketch): the merge of
  any split of the rows (pieces of 1, 2 and odd sizes) equals one pass, and
  one pass equals a NumPy reference over the rows; ``+`` and ``+=`` never
  change their argument; an empty side leaves the other's numbers; an
  incompatible merge raises naming the mismatch; the dict form round-trips
  through JSON.
* The sketch's mapping (bucket geometry) apart from its store (the counts).
* The JSON of summaries of fixed inputs is byte for byte that of 0.3.0
  (digests and a few whole texts in tests/data/accumulator-0.3.0.json,
  written by ``python tests/test_accumulate.py --write``); it differs from
  0.2.0's (tests/data/accumulator-0.2.0.json) only where 0.3.0 takes the
  observables' values from the row's numbers instead of exp(log): the
  values' min, max and moments, within 1e-14 relative; and 0.2.0's text
  reads back to the same text.
"""
import copy
import hashlib
import json
import os

import numpy as np
import pytest

import fastsoftmax as fs
from helpers import REPO, edge_rows
from fastsoftmax._kernels import sketch as _sketch
from fastsoftmax._kernels.row import NOBS
from fastsoftmax.accumulate import (NCH, Accumulator, Extremes, Moments, Sketch,
                                    ThresholdCounts)
from fastsoftmax.models import DotProduct, Gaussian, Shifted

SPLITS = [[1], [2], [3], [1, 2], [5, 6, 13], [2, 9, 10, 17]]   # cut points: pieces of 1, 2, odd


def _pieces(n, cuts):
    edges = [0] + [c for c in cuts if c < n] + [n]
    return list(zip(edges, edges[1:]))


def _values(rows=23, seed=0):
    """(rows, NCH) channel values down to 1e-400 (0 in float64), zeros and an +inf."""
    rng = np.random.default_rng(seed)
    v = np.abs(rng.normal(size=(rows, NCH))) * 10.0 ** rng.uniform(-400, 0, (rows, NCH))
    v[::5, 2] = 0.0
    v[3, 4] = np.inf
    v[:, NOBS:] = _log10(v[:, :NOBS])
    return v


def _log10(a):
    with np.errstate(divide="ignore"):
        return np.log10(a)


def _dicts_equal_json(a, b):
    return json.dumps(a.to_dict(), allow_nan=False) == json.dumps(b.to_dict(), allow_nan=False)


# --------------------------------------------------------------------------
# moments: a block's leaves, the tree, Chan's formula

BROWS = 4


def _block_moments(v):
    """(blocks, NCH, 3): count, mean, M2 of the finite values of each block (NumPy, two passes)."""
    nblk = -(-v.shape[0] // BROWS)
    out = np.zeros((nblk, NCH, 3))
    for b in range(nblk):
        blk = v[b * BROWS:(b + 1) * BROWS]
        for c in range(NCH):
            f = blk[:, c][np.isfinite(blk[:, c])]
            if f.size:
                out[b, c] = f.size, f.mean(), ((f - f.mean()) ** 2).sum()
    return out


def _moments(mom, b0, b1):
    m = Moments(block0=b0)
    m.tree.push_blocks(mom[b0:b1], b1 - b0, b0)
    return m


@pytest.mark.parametrize("cuts", SPLITS)
def test_moments_pieces_concat_to_the_bits_of_one_pass_and_add_to_it(cuts):
    v = _values(rows=77)
    mom = _block_moments(v)
    nblk = mom.shape[0]
    whole = _moments(mom, 0, nblk)
    pieces = [_moments(mom, a, b) for a, b in _pieces(nblk, cuts)]
    joined = pieces[0]
    for p in pieces[1:]:
        joined = joined.concat(p)
    assert np.array_equal(joined.total, whole.total)          # bits of one pass
    added = pieces[0]
    for p in pieces[1:]:
        added = added + p
    assert added.tree is None
    np.testing.assert_array_equal(added.total[:, 0], whole.total[:, 0])
    np.testing.assert_allclose(added.total[:, 1:], whole.total[:, 1:], rtol=1e-12, atol=1e-300)
    # one pass against NumPy over all the rows
    for c in range(NCH):
        f = v[:, c][np.isfinite(v[:, c])]
        assert whole.total[c, 0] == f.size
        assert whole.total[c, 1] == pytest.approx(f.mean(), rel=1e-12, abs=1e-300)
        assert whole.total[c, 2] == pytest.approx(((f - f.mean()) ** 2).sum(), rel=1e-10,
                                                  abs=1e-300)


def test_moments_merge_never_changes_its_argument_and_keeps_an_empty_side():
    mom = _block_moments(_values(rows=40, seed=1))
    a, b = _moments(mom, 0, 3), _moments(mom, 3, 10)
    a0, b0 = a.total.copy(), b.total.copy()
    c = a + b
    assert np.array_equal(a.total, a0) and np.array_equal(b.total, b0)
    a += b
    assert np.array_equal(b.total, b0) and a == c and a.tree is None
    assert b.tree is not None                                # the argument keeps its tree
    empty = Moments()
    assert np.array_equal((empty + b).total, b0) and np.array_equal((b + empty).total, b0)


def test_moments_incompatible_merges_say_why():
    mom = _block_moments(_values(rows=40, seed=2))
    a, b = _moments(mom, 0, 3), _moments(mom, 4, 10)
    with pytest.raises(ValueError, match="follow on"):
        a.concat(b)
    with pytest.raises(ValueError, match="one run"):
        (a + b).concat(_moments(mom, 10, 10))
    with pytest.raises(TypeError, match="Moments with Extremes"):
        a + Extremes()
    with pytest.raises(ValueError, match="must follow on"):
        a.tree.push_blocks(mom[5:6], 1, 5)


def test_moments_dict_round_trip():
    m = _moments(_block_moments(_values(rows=30, seed=3)), 0, 8)
    back = Moments.from_dict(json.loads(json.dumps(m.to_dict(), allow_nan=False)))
    assert back == m and back.tree is None and _dicts_equal_json(back, m)
    assert Moments.from_dict(Moments().to_dict()) == Moments()


# --------------------------------------------------------------------------
# extremes

def _extremes(v):
    return Extremes(v.min(axis=0, initial=np.inf), v.max(axis=0, initial=-np.inf),
                    np.isinf(v).sum(axis=0))


@pytest.mark.parametrize("cuts", SPLITS)
def test_extremes_any_split_adds_to_one_pass(cuts):
    v = _values(rows=19, seed=4)
    whole = _extremes(v)
    acc = Extremes()
    for a, b in _pieces(v.shape[0], cuts):
        acc = acc + _extremes(v[a:b])
    assert acc == whole
    np.testing.assert_array_equal(whole.vmin, np.min(v, axis=0))
    assert whole.nonfinite[NOBS + 2] == np.count_nonzero(v[:, 2] == 0) >= 4   # log10(0) = -inf
    assert whole.nonfinite[4] == 1


def test_extremes_merge_never_changes_its_argument():
    v = _values(rows=10, seed=5)
    a, b = _extremes(v[:4]), _extremes(v[4:])
    before = copy.deepcopy(b.to_dict())
    a2 = a.copy()
    c = a + b
    assert a == a2 and b.to_dict() == before
    a += b
    assert a == c and b.to_dict() == before
    assert Extremes() + b == b and b + Extremes() == b


def test_extremes_incompatible_and_round_trip():
    a = _extremes(_values(rows=6, seed=6))
    with pytest.raises(ValueError, match="3 channels"):
        a + Extremes(np.zeros(3), np.zeros(3), np.zeros(3))
    with pytest.raises(TypeError, match="Extremes with int"):
        a + 1
    back = Extremes.from_dict(json.loads(json.dumps(a.to_dict(), allow_nan=False)))
    assert back == a and _dicts_equal_json(back, a)
    assert Extremes.from_dict(Extremes().to_dict()) == Extremes()


# --------------------------------------------------------------------------
# threshold counts

THR = np.array([1e-3, 1e-6, 0.5])


def _below(v, thr=THR):
    return ThresholdCounts(thr, (v[:, :NOBS, None] < thr).sum(axis=0))


@pytest.mark.parametrize("cuts", SPLITS)
def test_threshold_counts_any_split_adds_to_one_pass(cuts):
    v = _values(rows=21, seed=7)
    whole = _below(v)
    acc = ThresholdCounts(THR)
    for a, b in _pieces(v.shape[0], cuts):
        acc += _below(v[a:b])
    assert acc == whole
    assert whole.below[0, 2] == np.count_nonzero(v[:, 0] < 0.5)


def test_threshold_counts_never_change_the_argument_and_refuse_other_thresholds():
    v = _values(rows=12, seed=8)
    a, b = _below(v[:5]), _below(v[5:])
    b0 = b.below.copy()
    c = a + b
    assert np.array_equal(b.below, b0) and not np.array_equal(a.below, c.below)
    a += b
    assert a == c and np.array_equal(b.below, b0)
    assert ThresholdCounts(THR) + b == b
    with pytest.raises(ValueError, match=r"different thresholds \(\[0.001, 1e-06, 0.5\] "
                                         r"vs \[0.25\]\)"):
        a + _below(v, np.array([0.25]))
    with pytest.raises(TypeError):
        a += Extremes()
    back = ThresholdCounts.from_dict(json.loads(json.dumps(a.to_dict())))
    assert back == a and _dicts_equal_json(back, a)


# --------------------------------------------------------------------------
# the sketch: mapping and store

def _sketch_of(v):
    sk = Sketch(NOBS)
    for k in range(NOBS):
        keys = np.array([_sketch.MAPPING.key(x) for x in v[:, NOBS + k]], dtype=np.int64)
        for i in np.unique(keys):
            sk.add(k, int(i), np.array([np.count_nonzero(keys == i)], dtype=np.int64))
    return sk


@pytest.mark.parametrize("cuts", SPLITS)
def test_sketch_any_split_adds_to_one_pass(cuts):
    v = _values(rows=25, seed=9)
    whole = _sketch_of(v)
    acc = Sketch(NOBS)
    for a, b in _pieces(v.shape[0], cuts):
        acc = acc + _sketch_of(v[a:b])
    assert acc == whole
    # the windows themselves are canonical: a function of the counts alone
    for st_a, st_w in zip(acc.stores, whole.stores):
        assert [s for s, _ in st_a.windows] == [s for s, _ in st_w.windows]
    for k in range(NOBS):
        idx, cnt = whole.sparse(k)
        ref = np.unique([_sketch.bucket_of(x) for x in v[:, NOBS + k]], return_counts=True)
        assert np.array_equal(idx, ref[0]) and np.array_equal(cnt, ref[1])
        assert whole.total(k) == v.shape[0]


def test_sketch_merge_never_changes_its_argument_and_refuses_other_observables():
    v = _values(rows=14, seed=10)
    a, b = _sketch_of(v[:6]), _sketch_of(v[6:])
    before = json.dumps(b.to_dict())
    c = a + b
    assert json.dumps(b.to_dict()) == before and a != c
    a += b
    assert a == c and json.dumps(b.to_dict()) == before
    assert Sketch() + b == b and b + Sketch() == b
    with pytest.raises(ValueError, match=r"different observables \(9 vs 3\)"):
        a + Sketch(3)
    with pytest.raises(TypeError, match="Sketch with"):
        a + Moments()
    back = Sketch.from_dict(json.loads(json.dumps(a.to_dict())))
    assert back == a and _dicts_equal_json(back, a)


def test_store_is_canonical_whatever_the_order_of_additions():
    rng = np.random.default_rng(11)
    adds = [(int(s), rng.integers(0, 3, size=int(n)).astype(np.int64))
            for s, n in zip(rng.integers(1, 2000, 40), rng.integers(1, 30, 40))]
    one = _sketch.WindowStore()
    for s, c in adds:
        one.add(s, c)
    other = _sketch.WindowStore()
    for s, c in reversed(adds):
        other += _sketch.WindowStore([(s, c)])
    assert [(s, c.tolist()) for s, c in one.windows] == \
        [(s, c.tolist()) for s, c in other.windows]
    dense = np.zeros(2100, dtype=np.int64)
    for s, c in adds:
        dense[s:s + c.size] += c
    idx, cnt = one.sparse()
    assert np.array_equal(idx, np.flatnonzero(dense)) and np.array_equal(cnt, dense[idx])
    assert one.total() == dense.sum()
    for (s0, c0), (s1, _) in zip(one.windows, one.windows[1:]):
        assert s1 - (s0 + c0.size) >= _sketch.GAP and c0[0] and c0[-1]


def test_mapping_is_the_0_2_0_geometry():
    m = _sketch.MAPPING
    assert m == _sketch.BucketMapping() and hash(m) == hash(_sketch.BucketMapping())
    old = json.loads(_golden(GOLDEN_0_2_0)["accumulator"]["empty"])["sketch"]["layout"]
    assert m.to_dict() == old
    assert m.key(-np.inf) == m.i_neginf == _sketch.I_NEGINF
    assert m.key(np.inf) == m.i_posinf == m.ntot - 1 == _sketch.NTOT - 1
    assert m.key_of_value(0.0) == m.i_neginf and m.key_of_value(np.nan) == -1
    assert m.key_of_value(0.5) == m.key(np.log10(0.5))
    lo, hi = m.edges(m.key_of_value(0.5))
    assert lo <= np.log10(0.5) < hi and hi - lo == pytest.approx(m.width)
    assert m.window_start(np.float32) > m.window_start(np.float64) >= 1


# --------------------------------------------------------------------------
# the accumulator: the parts side by side

def test_accumulator_is_its_parts_and_the_backends_arrays_are_theirs():
    acc = fs.summarize(np.random.default_rng(12).normal(size=(50, 6)))._acc
    assert acc.vmin is acc.extremes.vmin and acc.below is acc.threshold_counts.below
    assert acc.tree is acc.moments.tree and acc.mom is acc.moments.total
    acc.vmin = np.zeros(NCH)
    assert acc.extremes.vmin is acc.vmin
    with pytest.raises(ValueError, match="no moment tree"):
        (acc + acc).tree


def test_accumulator_add_in_place_never_changes_the_argument():
    x = np.random.default_rng(13).normal(size=(90, 7)) * 5
    a, b = fs.summarize(x[:31])._acc, fs.summarize(x[31:])._acc
    b_json, a_json = json.dumps(b.to_dict()), json.dumps(a.to_dict())
    c = a + b
    assert json.dumps(a.to_dict()) == a_json and json.dumps(b.to_dict()) == b_json
    a += b
    assert a == c and json.dumps(b.to_dict()) == b_json
    whole = fs.summarize(x)._acc
    assert (c.count, c.extremes, c.threshold_counts, c.sketch) == \
        (whole.count, whole.extremes, whole.threshold_counts, whole.sketch)
    np.testing.assert_allclose(c.mom, whole.mom, rtol=1e-12, atol=1e-300)
    with pytest.raises(ValueError, match="different thresholds"):
        a += Accumulator((0.5,))
    with pytest.raises(TypeError, match="Accumulator with"):
        a + 1


# --------------------------------------------------------------------------
# JSON byte for byte that of 0.2.0


def golden_summaries():
    """Small summaries of fixed inputs: each kind of input and each model."""
    out = {}
    for dt in ("float32", "float64"):
        x = edge_rows(60, 16, dt, seed=0)
        out[f"summarize {dt}"] = fs.summarize(x)
        out[f"summarize {dt} thresholds class 3"] = fs.summarize(x, thresholds=(0.5, 1e-4),
                                                                target=3)
        lab = np.random.default_rng(1).integers(0, 16, size=60)
        out[f"summarize {dt} labels"] = fs.summarize(x, target=lab)
        xb = edge_rows(40, 8, dt, seed=3)
        xb[17, 2] = np.nan
        xb[30, :] = -np.inf
        xb[31, 0] = np.inf
        out[f"summarize {dt} nan omit"] = fs.summarize(xb, nan_policy="omit")
        out[f"summarize {dt} saturated x300"] = fs.summarize(edge_rows(30, 8, dt, seed=2) * 300)
    out["simulate gaussian"] = fs.simulate(Gaussian(n=16, scale=3.0), 300, seed=3,
                                           backend="cpu")
    out["simulate dotproduct exact"] = fs.simulate(DotProduct(n=16, d_k=4096, scaled=False),
                                                   100, seed=4, target="random", backend="cpu")
    out["simulate dotproduct explicit"] = fs.simulate(
        DotProduct(n=8, d_k=32, scaled=True, method="explicit"), 100, seed=5,
        target="sampled", backend="cpu")
    out["simulate shifted"] = fs.simulate(Shifted(n=16, offset=100.0, spread=1.0), 200,
                                          seed=6, backend="cpu")
    out["merge"] = out["simulate gaussian"].merge(
        fs.simulate(Gaussian(n=16, scale=3.0), 100, seed=7, backend="cpu"))
    out["merge arrays"] = out["summarize float32"] + out["summarize float64 nan omit"]
    out["empty"] = fs.Summary(thresholds=(0.25,))
    return out


GOLDEN = os.path.join(REPO, "tests", "data", "accumulator-0.3.0.json")
GOLDEN_0_2_0 = os.path.join(REPO, "tests", "data", "accumulator-0.2.0.json")
# the whole texts kept beside the digests (one of each kind of input)
GOLDEN_TEXTS = ("empty", "simulate dotproduct explicit", "simulate shifted",
                "summarize float64 saturated x300")


def _golden(path=GOLDEN):
    with open(path) as f:
        return json.load(f)


def _texts():
    return {k: json.dumps(s.to_dict()["accumulator"], allow_nan=False)
            for k, s in golden_summaries().items()}


def write_golden(path=GOLDEN):
    """Write the digests and whole texts of ``golden_summaries`` (run only
    where the summation order or a formula changes on purpose, in a commit
    that says why)."""
    got = _texts()
    gold = {"accumulator": {k: got[k] for k in GOLDEN_TEXTS},
            "sha256": {k: hashlib.sha256(t.encode()).hexdigest() for k, t in got.items()}}
    with open(path, "w") as f:
        json.dump(gold, f, indent=1, sort_keys=True)
        f.write("\n")


def test_json_is_byte_for_byte_that_of_0_3_0():
    gold = _golden()
    got = _texts()
    assert got.keys() == gold["sha256"].keys()
    diff = [k for k, text in got.items()
            if hashlib.sha256(text.encode()).hexdigest() != gold["sha256"][k]]
    assert not diff, f"JSON differs from 0.3.0's for: {diff}"
    for k, text in gold["accumulator"].items():
        assert got[k] == text, k


def _close(a, b, path, rtol, moved):
    """a == b, floats within rtol relative; the paths of floats that moved."""
    assert type(a) is type(b), path
    if isinstance(a, dict):
        assert a.keys() == b.keys(), path
        for k in a:
            _close(a[k], b[k], f"{path}.{k}", rtol, moved)
    elif isinstance(a, list):
        assert len(a) == len(b), path
        for i, (u, v) in enumerate(zip(a, b)):
            _close(u, v, f"{path}[{i}]", rtol, moved)
    elif isinstance(a, float) and a != b:
        assert abs(a - b) <= rtol * max(abs(a), abs(b)), (path, a, b)
        moved.append(path)
    else:
        assert a == b, path


def test_0_3_0_differs_from_0_2_0_only_in_the_values_last_bits():
    old = _golden(GOLDEN_0_2_0)["accumulator"]
    got = _texts()
    for k, text in old.items():
        a, b = json.loads(text), json.loads(got[k])
        for part in ("count", "skipped", "thresholds", "nonfinite", "below", "sketch"):
            assert a[part] == b[part], (k, part)    # counts, thresholds, the sketch: same
        moved = []
        _close(a, b, k, 1e-14, moved)
        # only the values' channels move (the first NOBS channels of min, max
        # and the moments); the log10 channels keep their bits
        for path in moved:
            channel = int(path.split("[")[1].split("]")[0])
            assert channel < NOBS, path


def test_0_2_0_json_reads_back_to_the_same_text():
    for k, text in _golden(GOLDEN_0_2_0)["accumulator"].items():
        acc = Accumulator.from_dict(json.loads(text))
        assert json.dumps(acc.to_dict(), allow_nan=False) == text, k
        s = fs.Summary.from_json(json.dumps({"config": {}, "accumulator": json.loads(text)}))
        assert s._acc == acc


if __name__ == "__main__":
    import sys
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python tests/test_accumulate.py --write  (rewrites " + GOLDEN + ")")
    write_golden()
