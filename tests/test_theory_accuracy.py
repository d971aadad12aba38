"""The accuracy each law states (fastsoftmax.theory._accuracy): its steps,
and the entropy's at the edge of its domain against ``simulate``."""
import math

import numpy as np

from fastsoftmax import theory
from fastsoftmax.models import Gaussian
from fastsoftmax.theory import Law

from helpers import sim


def test_stated_accuracy_steps():
    """The stated accuracy of docs/theory.md, as the step functions it states."""
    sc = math.sqrt(2 * math.log(64))
    rel, ab = theory.stated_accuracy("fraction_below", 64, sc / np.array([0.1, 0.2, 0.4, 0.6]))
    np.testing.assert_array_equal(rel[:3], [0.005, 0.02, 0.15])
    assert np.isnan(rel[3]) and (ab == 0).all()
    rel0, _ = theory.stated_accuracy("fraction_below", 64, sc / np.array([0.1, 0.2, 0.4]),
                                     order=0)
    np.testing.assert_array_equal(rel0, [0.02, 0.10, 0.45])
    assert theory.stated_accuracy("fraction_below", 2, 0.5)[0] == 1e-9      # exact
    # the diffuse entropy: 5 c^2 with c the 1/n term, within the measured error
    rel, ab = theory.stated_accuracy("rem_entropy", [64, 256], 1.0)
    c = (math.e + 1.0) / (2.0 * np.array([64, 256]))
    np.testing.assert_allclose(ab, 5 * c ** 2)
    assert (rel == 0).all()
    assert np.isnan(theory.stated_accuracy("rem_entropy", 64, 2.0)[0])     # crossover
    assert theory.stated_accuracy("rem_entropy", 64, 6.0)[0] == 0.07         # frozen
    assert np.isnan(theory.stated_accuracy("rem_max_prob", 1024, 1.0)[0])   # diffuse: none
    assert theory.stated_accuracy("critical_scale", 64, 49.0)[0] == 0.002
    assert sorted(theory.ACCURACY) == ["critical_d_k", "critical_scale", "fraction_below",
                                       "rem_entropy", "rem_max_prob"]


def test_stated_entropy_accuracy_holds_at_its_edge():
    """At n = 64, sigma = 1 (c = 0.029) the diffuse entropy is 0.0032 off:
    inside the stated 5 c^2 = 0.0042."""
    s = sim(Gaussian(n=64, scale=1.0), 100_000, seed=8)["entropy"]
    pred = float(Law.gaussian(64, 1.0).rem["entropy"].mean())
    _, ab = theory.stated_accuracy("rem_entropy", 64, 1.0)
    assert abs(s.mean - pred) <= float(ab) + 4 * s.sem
