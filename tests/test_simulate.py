"""Monte Carlo engine: closed forms (n = 2, fastsoftmax.theory) within 4 standard
errors, exact vs explicit DotProduct, offset invariance, determinism across
threads / chunking, parameter validation before any work."""
import json
import math
import subprocess
import sys

import pytest

import _children
import fastsoftmax as fs
from helpers import subprocess_env
from fastsoftmax.models import DotProduct, Gaussian, Shifted
from fastsoftmax.theory import Law

N_MC = 40_000


def within(stat, expected, k=4.0):
    assert abs(stat.mean - expected) <= k * stat.sem, (stat.mean, expected, stat.sem)


@pytest.mark.parametrize("sigma", [0.3, 2.0, 15.0])
def test_gaussian_n2_closed_forms(sigma):
    """n = 2: every observable is a function of the gap |x1 - x2| ~ |N(0, 2 sigma^2)|
    (fastsoftmax.theory; tests/test_theory_two.py checks those laws)."""
    s = fs.simulate(Gaussian(n=2, scale=sigma), N_MC, seed=1, dtype="float64", backend="cpu")
    law = Law.gaussian(2, sigma)
    for name in ("jac_diag_max", "max_prob", "entropy"):
        within(s[name], float(law[name].mean()))
    # softmax of two logits is a sigmoid of the gap: jac_offdiag_max == jac_diag_max
    assert s["jac_offdiag_max"].mean == pytest.approx(s["jac_diag_max"].mean, rel=1e-12)


def test_temperature_divides_logits():
    a = fs.simulate(Gaussian(n=2, scale=4.0, temperature=2.0), 5000, seed=3, dtype="float64",
                    backend="cpu")
    b = fs.simulate(Gaussian(n=2, scale=2.0), 5000, seed=3, dtype="float64", backend="cpu")
    assert a["entropy"].mean == pytest.approx(b["entropy"].mean, rel=1e-12)


@pytest.mark.parametrize("d_k,scaled", [(1, False), (3, True), (16, False), (64, True)])
def test_dotproduct_n2_closed_form(d_k, scaled):
    """D | c ~ N(0, 2 c b^2), c = |q|^2 ~ chi^2(d_k), b = 1/sqrt(d_k) if scaled."""
    s = fs.simulate(DotProduct(n=2, d_k=d_k, scaled=scaled), N_MC, seed=2, dtype="float64",
                    backend="cpu")
    law = Law.dot_product(2, d_k, scaled)
    within(s["jac_diag_max"], float(law["jac_diag_max"].mean()))
    within(s["max_prob"], float(law["max_prob"].mean()))


@pytest.mark.parametrize("n", [2, 5, 64])
def test_random_target_mean_gradient(n):
    """With a uniform label, E[1 - p_y] = 1 - 1/n exactly for any model."""
    s = fs.simulate(Gaussian(n=n, scale=3.0), 20_000, seed=4, target="random", backend="cpu")
    within(s["ce_grad_target"], 1 - 1 / n)


def test_sampled_target_n2():
    """y ~ Categorical(p): E[1 - p_y] = 1 - E[p1^2 + p2^2] = 2 E[s(D) s(-D)]."""
    sigma = 1.5
    s = fs.simulate(Gaussian(n=2, scale=sigma), N_MC, seed=5, target="sampled",
                    dtype="float64", backend="cpu")
    within(s["ce_grad_target"], 2 * float(Law.gaussian(2, sigma)["jac_diag_max"].mean()))


def test_fixed_int_target():
    s = fs.simulate(Gaussian(n=4, scale=2.0), 20_000, seed=6, target=1, backend="cpu")
    # by symmetry class 1 is the argmax a quarter of the time; E[p_y] = 1/4
    within(s["ce_grad_target"], 0.75)


@pytest.mark.parametrize("d_k,scaled", [(4, False), (32, True)])
def test_exact_matches_explicit(d_k, scaled):
    m = 20_000
    ex = fs.simulate(DotProduct(n=8, d_k=d_k, scaled=scaled), m, seed=7, backend="cpu")
    ix = fs.simulate(DotProduct(n=8, d_k=d_k, scaled=scaled, method="explicit"), m, seed=8,
                     backend="cpu")
    for name in ("jac_diag_max", "max_prob", "entropy", "ce_grad_norm"):
        a, b = ex[name], ix[name]
        assert abs(a.mean - b.mean) <= 4 * math.hypot(a.sem, b.sem), name
        assert abs(a.log10_mean - b.log10_mean) <= 4 * math.hypot(a.log10_sem, b.log10_sem)


def test_shifted_statistics_do_not_depend_on_offset():
    ref = fs.simulate(Shifted(n=16, offset=0.0, spread=1.0), 20_000, seed=9, dtype="float64",
                      backend="cpu")
    for off in (100.0, 1e3, 1e6):
        s = fs.simulate(Shifted(n=16, offset=off, spread=1.0), 20_000, seed=9,
                        dtype="float64", backend="cpu")
        for name in fs.OBS_NAMES:
            assert s[name].mean == pytest.approx(ref[name].mean, rel=1e-8), (off, name)
            assert s[name].fraction_below(1e-3) == ref[name].fraction_below(1e-3)


def test_common_random_numbers():
    """Gaussian(scale=s) and Shifted(offset, spread=s) draw the same normals."""
    a = fs.simulate(Gaussian(n=8, scale=2.0), 3000, seed=11, dtype="float64", backend="cpu")
    b = fs.simulate(Shifted(n=8, offset=5.0, spread=2.0), 3000, seed=11, dtype="float64",
                    backend="cpu")
    assert a["entropy"].mean == pytest.approx(b["entropy"].mean, rel=1e-12)
    c = fs.simulate(Gaussian(n=8, scale=2.0), 3000, seed=12, dtype="float64", backend="cpu")
    assert c["entropy"].mean != a["entropy"].mean


def test_chunking_does_not_change_the_result():
    model = DotProduct(n=24, d_k=64, scaled=False)
    ref = fs.simulate(model, 70_000, seed=13, target="sampled", backend="cpu").to_dict()
    for chunk in (1024, 3 * 1024 + 5, 65_536):
        s = fs.simulate(model, 70_000, seed=13, target="sampled", backend="cpu", chunk=chunk)
        assert s.to_dict() == ref


SCRIPT = """
import json, fastsoftmax as fs
m = fs.models.DotProduct(n=20, d_k=128, scaled=False)
# 98 blocks of 1,024 rows for the threads to split (a block's sums do not
# depend on which thread took it)
print(json.dumps(fs.simulate(m, 100_000, seed=5, target="random", backend="cpu").to_dict()))
"""


def test_one_thread_equals_two_threads():
    outs = _children.at_threads(SCRIPT)
    assert outs[0] == outs[1]
    assert json.loads(outs[0])["accumulator"]["count"] == 100_000


def test_config_records_the_run():
    s = fs.simulate(Gaussian(n=3), 10, seed=2, backend="cpu")
    c = s.config
    assert c["model"] == "gaussian" and c["params"]["n"] == 3 and c["samples"] == 10
    assert c["seed"] == 2 and c["dtype"] == "float32" and c["backend"] == "cpu"
    assert c["version"] == fs.__version__
    assert fs.Summary.from_json(s.to_json()) == s


@pytest.mark.parametrize("make,err", [
    (lambda: Gaussian(n=0), ValueError),
    (lambda: Gaussian(n=2.5), TypeError),
    (lambda: Gaussian(n=4, scale=-1.0), ValueError),
    (lambda: Gaussian(n=4, scale=float("nan")), ValueError),
    (lambda: Gaussian(n=4, temperature=0.0), ValueError),
    (lambda: Shifted(n=4, offset=float("inf")), ValueError),
    (lambda: DotProduct(n=4, d_k=0), ValueError),
    (lambda: DotProduct(n=4, d_k=8, method="fast"), ValueError),
    (lambda: DotProduct(n=4, d_k=8, scaled="yes"), TypeError),
])
def test_bad_model_parameters(make, err):
    with pytest.raises(err):
        make()


BEFORE_WORK = """
import fastsoftmax as fs, fastsoftmax.backends.cpu as cpu
m = fs.models.Gaussian(n=4)
bad = [dict(samples=0), dict(samples=-3), dict(samples=2.5), dict(samples=10, seed=-1),
       dict(samples=10, dtype="int32"), dict(samples=10, target="foo"),
       dict(samples=10, target=4), dict(samples=10, backend="tpu"),
       dict(samples=10, thresholds=(0.0,))]
for kw in bad:
    try:
        fs.simulate(m, **kw)
    except (ValueError, TypeError) as e:
        print(type(e).__name__, e)
    else:
        raise SystemExit(f"no error for {kw}")
try:
    fs.simulate("gaussian", 10)
except TypeError as e:
    print("TypeError", e)
assert not cpu.observe_chunk.signatures, "compiled before validation"
print("ok")
"""


def test_bad_arguments_rejected_before_any_compilation():
    out = subprocess.run([sys.executable, "-c", BEFORE_WORK], capture_output=True, text=True,
                         env=subprocess_env())
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().endswith("ok")
    assert "samples must be >= 1" in out.stdout
    assert "seed must lie in [0, 2**64)" in out.stdout
