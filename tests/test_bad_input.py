"""Bad input: a clear error naming what is wrong, before any work starts."""
import threading

import numpy as np

AxisError = getattr(np, "exceptions", np).AxisError   # numpy < 1.25 has only np.AxisError
import pytest

import fastsoftmax as fs


@pytest.mark.parametrize("func", [fs.observables, fs.summarize])
@pytest.mark.parametrize("bad,what", [(np.nan, "NaN"), (np.inf, r"\+inf")])
def test_nonfinite_raises_naming_first_bad_row(func, bad, what):
    x = np.zeros((50, 4))
    x[17, 2] = bad
    x[30, 0] = np.nan
    with pytest.raises(ValueError, match=rf"row 17 of x contains {what}"):
        func(x)


@pytest.mark.parametrize("func", [fs.observables, fs.summarize])
def test_all_masked_row_raises(func):
    x = np.zeros((5, 3), dtype=np.float32)
    x[3] = -np.inf
    with pytest.raises(ValueError, match="row 3 of x has no finite logit"):
        func(x)


def test_bad_row_named_by_batch_index():
    x = np.zeros((2, 3, 4))
    x[1, 2, 0] = np.nan
    with pytest.raises(ValueError, match=r"row \(1, 2\)"):
        fs.summarize(x)


def test_nan_in_every_position_is_caught():
    """NaN at the max, at the second max, among the rest, and alone."""
    for row in ([np.nan, 1.0, 2.0], [3.0, np.nan, 1.0], [3.0, 2.0, np.nan],
                [np.nan, np.nan, np.nan], [np.nan], [-np.inf, np.nan, 1.0]):
        for dt in (np.float32, np.float64):
            with pytest.raises(ValueError, match="row 0"):
                fs.observables(np.array([row], dtype=dt))


def test_omit_skips_and_counts():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(100, 5))
    bad_rows = [3, 40, 41, 99]
    x[3, 1] = np.nan
    x[40, :] = -np.inf
    x[41, 4] = np.inf
    x[99, 0] = np.nan
    s = fs.summarize(x, nan_policy="omit")
    assert s.skipped == 4 and s.samples == 96
    good = np.delete(x, bad_rows, axis=0)
    ref = fs.summarize(good)
    for name in fs.OBS_NAMES:
        assert s[name].mean == pytest.approx(ref[name].mean, rel=1e-13)
        assert s[name].max == ref[name].max
    obs = fs.observables(x, nan_policy="omit")
    assert np.isnan(obs["entropy"][bad_rows]).all()
    assert np.isfinite(np.delete(obs["entropy"], bad_rows)).all()


def test_argument_errors_before_work():
    x = np.zeros((4, 3))
    with pytest.raises(ValueError, match="empty"):
        fs.summarize(np.empty((0, 3)))
    with pytest.raises(ValueError, match="empty"):
        fs.observables(np.empty((3, 0)))
    with pytest.raises(TypeError, match="complex"):
        fs.summarize(x.astype(complex))
    with pytest.raises(TypeError, match="object"):
        fs.observables(np.array([[1, None]], dtype=object))
    with pytest.raises(AxisError):
        fs.summarize(x, axis=-3)
    with pytest.raises(ValueError, match="nan_policy"):
        fs.summarize(x, nan_policy="propagate")
    with pytest.raises(ValueError, match="target=3 is out of range for 3 classes"):
        fs.summarize(x, target=3)
    with pytest.raises(ValueError, match="out of range"):
        fs.observables(x, target=-1)
    with pytest.raises(ValueError, match="unknown target"):
        fs.summarize(x, target="max")
    with pytest.raises(ValueError, match="random stream"):
        fs.summarize(x, target="random")
    with pytest.raises(ValueError, match=r"label 5 in row 2 is out of range"):
        fs.summarize(x, target=np.array([0, 1, 5, 7]))
    with pytest.raises(ValueError, match="shape"):
        fs.summarize(x, target=np.array([0, 1]))
    with pytest.raises(TypeError, match="integers"):
        fs.summarize(x, target=np.array([0.0, 1.0, 0.0, 1.0]))
    with pytest.raises(ValueError, match="thresholds"):
        fs.summarize(x, thresholds=(1e-3, -1.0))
    with pytest.raises(ValueError, match="thresholds"):
        fs.summarize(x, thresholds=(np.nan,))
    with pytest.raises(ValueError, match="quantile"):
        fs.summarize(x)["entropy"].quantile(1.5)


def test_concurrent_callers_are_safe():
    """Several Python threads in the parallel kernels at once (numba's OpenMP
    layer is safe; the workqueue layer would abort and is serialised)."""
    x = (np.random.default_rng(0).normal(size=(20000, 32)) * 4).astype(np.float32)
    ref = fs.summarize(x).to_dict()
    results, errors = [], []

    def work():
        try:
            for _ in range(3):
                results.append(fs.summarize(x).to_dict())
        except Exception as e:      # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(results) == 12 and all(r == ref for r in results)


WORKQUEUE = """
import threading, numpy as np, fastsoftmax as fs
from fastsoftmax import api
x = (np.random.default_rng(0).normal(size=(20000, 16)) * 4).astype(np.float32)
out, errs = [], []
def work():
    try:
        out.append(fs.summarize(x).to_dict())
    except Exception as e:
        errs.append(e)
ts = [threading.Thread(target=work) for _ in range(4)]
[t.start() for t in ts]
[t.join() for t in ts]
assert not errs and len(out) == 4 and all(o == out[0] for o in out)
print(api.threading_layer())
"""


def test_workqueue_layer_is_serialised_not_crashed():
    """numba's workqueue layer aborts on concurrent parallel calls; the first
    calls (before numba picks a layer) included, they are serialised."""
    import subprocess
    import sys

    from helpers import subprocess_env
    r = subprocess.run([sys.executable, "-c", WORKQUEUE], capture_output=True, text=True,
                       env=subprocess_env(NUMBA_THREADING_LAYER="workqueue"))
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip() == "workqueue"


def test_bad_progress_type_before_work():
    from fastsoftmax.models import Gaussian
    with pytest.raises(TypeError, match="progress must be"):
        fs.summarize(np.zeros((3, 4)), progress="yes")
    with pytest.raises(TypeError, match="progress must be"):
        fs.simulate(Gaussian(n=4), 10, progress=3)
