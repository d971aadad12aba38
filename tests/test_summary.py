"""Summary objects: an empty Summary, strict deserialisation (a ValueError
naming what is wrong), fraction_below's edges, and merges that refuse shared
random rows and keep configurations flat."""
import json

import numpy as np
import pytest

import fastsoftmax as fs
from fastsoftmax import _config
from fastsoftmax.models import Gaussian


def test_empty_summary_without_private_modules():
    s = fs.Summary()
    assert s.samples == 0 and s.thresholds == tuple(_config.DEFAULT_THRESHOLDS)
    a = fs.summarize(np.random.default_rng(0).normal(size=(50, 4)))
    assert s.merge(a).to_dict()["accumulator"] == a.to_dict()["accumulator"]
    assert fs.Summary(thresholds=(0.5,)).thresholds == (0.5,)
    with pytest.raises(ValueError, match="thresholds"):
        fs.Summary(thresholds=(-1.0,))


# --------------------------------------------------------------------------
# from_dict: ValueError naming what is wrong

def _good():
    return fs.summarize(np.random.default_rng(1).normal(size=(40, 5))).to_dict()


@pytest.mark.parametrize("mutate,match", [
    (lambda d: d.pop("accumulator"), "no 'accumulator'"),
    (lambda d: d["accumulator"].pop("count"), "no 'count'"),
    (lambda d: d["accumulator"].update(count=-3), "count must be an integer >= 0"),
    (lambda d: d["accumulator"].update(count="many"), "count must be an integer"),
    (lambda d: d["accumulator"]["sketch"]["windows"].__setitem__(0, [[-1, [1]]]),
     "outside"),
    (lambda d: d["accumulator"]["sketch"]["windows"].__setitem__(0, [[10**9, [1]]]),
     "outside"),
    (lambda d: d["accumulator"]["sketch"]["windows"].__setitem__(0, [[5, [-1]]]),
     "counts must be >= 0"),
    (lambda d: d["accumulator"]["sketch"]["windows"].__setitem__(0, [[5, [10**6]]]),
     "more rows than count"),
    (lambda d: d["accumulator"]["sketch"]["windows"].__setitem__(0, [["a", [1]]]),
     r"entries must be \[start"),
    (lambda d: d["accumulator"]["sketch"]["windows"].pop(), "list of 9"),
    (lambda d: d["accumulator"].update(moments=[[1, 2]]), "moments has 2 values"),
    (lambda d: d["accumulator"].update(min=["x"] * 18), "min must be numbers"),
    (lambda d: d["accumulator"]["sketch"].update(layout={"width": 0.5}), "sketch geometry"),
    (lambda d: d["accumulator"].update(below=[[1.5]]), "below must be integers"),
    (lambda d: d.update(config=[1]), "'config' must be an object"),
])
def test_from_dict_malformed_names_what(mutate, match):
    d = _good()
    mutate(d)
    with pytest.raises(ValueError, match=match):
        fs.Summary.from_dict(d)


def test_from_json_not_json():
    with pytest.raises(ValueError, match="not JSON"):
        fs.Summary.from_json("{nope")
    with pytest.raises(ValueError, match="expected an object"):
        fs.Summary.from_dict([1, 2])


# --------------------------------------------------------------------------
# fraction_below

def test_fraction_below_edges():
    x = np.random.default_rng(2).normal(size=(500, 8)) * 10
    s = fs.summarize(x, thresholds=(1e-3,))
    st = s["jac_diag_max"]
    assert st.fraction_below(np.inf) == 1.0
    assert st.fraction_below(0.0) == 0.0 and st.fraction_below(-1.0) == 0.0
    with pytest.raises(ValueError, match="nan"):
        st.fraction_below(np.nan)
    with pytest.warns(fs.ApproximationWarning, match="not a configured threshold"):
        approx = st.fraction_below(1e-2)
    lo, hi = st.fraction_below_bounds(1e-2)
    exact = np.mean(fs.observables(x)["jac_diag_max"] < 1e-2)
    assert lo <= exact <= hi and lo == approx and hi - lo < 0.05
    assert st.fraction_below_bounds(1e-3) == (st.fraction_below(1e-3),) * 2


# --------------------------------------------------------------------------
# merge

def test_merge_refuses_shared_random_rows():
    a = fs.simulate(Gaussian(n=4), 1000, seed=1)
    b = fs.simulate(Gaussian(n=4, scale=2.0), 1000, seed=1)      # same normals
    with pytest.raises(ValueError, match="same random rows"):
        a.merge(a)
    with pytest.raises(ValueError, match="same random rows"):
        a.merge(b)
    c = fs.simulate(Gaussian(n=4), 1000, seed=2)
    ac = a.merge(c)
    with pytest.raises(ValueError, match="same random rows"):
        ac.merge(fs.simulate(Gaussian(n=4), 10, seed=2))


def test_merged_configs_stay_flat_and_count_samples():
    parts = [fs.simulate(Gaussian(n=4), 100 + k, seed=k) for k in range(5)]
    m = parts[0]
    for p in parts[1:]:
        m = m.merge(p)
    assert m.config["source"] == "merged"
    assert [p["seed"] for p in m.config["parts"]] == [0, 1, 2, 3, 4]
    assert all(p["source"] == "simulate" for p in m.config["parts"])
    assert m.config["samples"] == m.samples == sum(100 + k for k in range(5))
    # merging merged summaries stays one level deep
    m2 = parts[0].merge(parts[1]).merge(parts[2].merge(parts[3]))
    assert len(m2.config["parts"]) == 4
    assert "merged" not in json.dumps([p for p in m2.config["parts"]])
