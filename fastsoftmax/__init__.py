"""fastsoftmax: exact, fast statistics of softmax and cross-entropy gradients.

>>> import fastsoftmax as fs
>>> obs = fs.observables([[100.0, 101.0, 99.0]])
>>> round(float(obs["max_prob"][0]), 4)
0.6652
"""
from ._math import OBS_NAMES
from . import models
from .api import log_softmax, observables, simulate, softmax, summarize
from .summary import Stat, Summary
from .sweep import sweep

__version__ = "0.1.0"

__all__ = ["OBS_NAMES", "Stat", "Summary", "log_softmax", "observables", "softmax",
           "simulate", "summarize", "sweep", "models", "__version__"]
