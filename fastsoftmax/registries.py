"""The package's registries: plain records that every layer reads.

Nothing here imports the rest of the package, so the compiled kernels, the
argument checks and the tools above them all derive their tables, choices
and constants from the same records.
"""
from __future__ import annotations

import enum

__all__ = ["TargetMode", "TARGET_ARGMAX", "TARGET_FIXED", "TARGET_LABELS", "TARGET_RANDOM",
           "TARGET_SAMPLED"]


# targets: one enum, shared by the kernels (as ints) and the Python layers

class TargetMode(enum.IntEnum):
    """Which class y a row's cross-entropy observables use."""
    ARGMAX = 0      #: the top class (a confidently right model)
    FIXED = 1       #: one class index for every row
    LABELS = 2      #: a label per row (an integer array)
    RANDOM = 3      #: a uniform label from the counter-based stream (Monte Carlo)
    SAMPLED = 4     #: y ~ Categorical(softmax(x)) (Monte Carlo: a calibrated model)


# plain ints for the compiled kernels (numba freezes module-level ints)
TARGET_ARGMAX = int(TargetMode.ARGMAX)
TARGET_FIXED = int(TargetMode.FIXED)
TARGET_LABELS = int(TargetMode.LABELS)
TARGET_RANDOM = int(TargetMode.RANDOM)
TARGET_SAMPLED = int(TargetMode.SAMPLED)
