"""What an audited function computes: the audit's kinds, in one place.

A kind names the function audited (softmax, log-softmax, the per-row
cross-entropy loss -log p_y, the gradient p - e_y of the summed loss), not
an observable of :mod:`fastsoftmax.registries`; every module of the audit
and the command line's ``--kind`` read them from here.
"""
from __future__ import annotations

from typing import Any

__all__ = ["SOFTMAX", "LOG_SOFTMAX", "CE_LOSS", "CE_GRAD", "KINDS", "CE_KINDS", "LOG_KINDS",
           "PROB_KINDS", "check_kind"]

SOFTMAX = "softmax"
LOG_SOFTMAX = "log_softmax"
CE_LOSS = "ce_loss"
CE_GRAD = "ce_grad"

#: What an audited function computes: softmax, log-softmax, the per-row CE
#: loss -log p_y, the gradient p - e_y of the summed CE loss.
KINDS = (SOFTMAX, LOG_SOFTMAX, CE_LOSS, CE_GRAD)
#: The kinds that take targets (``fn(x, y)``).
CE_KINDS = (CE_LOSS, CE_GRAD)
#: The kinds whose outputs are logarithms (judged in absolute units).
LOG_KINDS = (LOG_SOFTMAX, CE_LOSS)
#: The kinds whose rows sum to a known value (1 for softmax, 0 for the gradient).
PROB_KINDS = (SOFTMAX, CE_GRAD)


def check_kind(kind: Any) -> str:
    """``kind`` if it is one of :data:`KINDS`, else ValueError."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(map(repr, KINDS))}, got {kind!r}")
    return kind
