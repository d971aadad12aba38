"""What both training-loop callbacks share: when to probe, the probe, the
key scalars it logs, and the views of its history.

``every`` is checked by the same validator as :class:`AttentionProbe`'s
own ``every`` (a TypeError for a non-integer, a ValueError below 1), once,
when the callback is made.
"""
from __future__ import annotations

from typing import Any

from .._inputs import check_samples
from ._logging import probe_scalars
from ._probe import AttentionProbe

__all__ = ["Driver", "DriverViews"]


def _check_options(options: dict[str, Any]) -> dict[str, Any]:
    for key in ("model", "every"):
        if key in options:
            raise TypeError(f"{key}= is the callback's own (the model is the trainer's); "
                            f"pass the other AttentionProbe options only")
    AttentionProbe(None, **options)          # bad options fail here, not mid-training
    return dict(options)


class Driver:
    """What both callbacks share: when to probe, the probe, its scalars."""

    def __init__(self, every: Any, prefix: str, options: dict[str, Any]) -> None:
        self.every = check_samples(every, "every")
        self.prefix = str(prefix)
        self.probe_options = _check_options(options)
        self.probe: AttentionProbe | None = None
        self._model: Any = None
        self._entered = False
        self._modules: list[Any] = []

    def start(self, model: Any) -> None:
        if self.probe is None or self._model is not model:
            self.probe = AttentionProbe(model, **self.probe_options)
            self._model = model

    def due(self, step: int) -> bool:
        return self.probe is not None and step % self.every == 0

    def enter(self) -> None:
        if self.probe is not None and not self._entered:
            self.probe.__enter__()
            self._entered = True

    def exit(self) -> None:
        if self._entered and self.probe is not None:
            self._entered = False
            self.probe.__exit__(None, None, None)

    def record(self, step: int) -> dict[str, float]:
        """Snapshot under ``step``; the key scalars per module ({} if none)."""
        self.exit()
        if self.probe is None or not self.probe.summaries:
            return {}
        frame = self.probe.to_frame(by="module")
        frame.insert(0, "step", int(step))
        self._modules.append(frame)
        self.probe.snapshot(int(step))
        return probe_scalars(frame, self.prefix)

    @property
    def history(self) -> Any:
        if self.probe is None:
            import pandas as pd
            return pd.DataFrame(columns=["step"])
        return self.probe.history

    @property
    def module_history(self) -> Any:
        import pandas as pd
        if not self._modules:
            return pd.DataFrame(columns=["step"])
        return pd.concat(self._modules, ignore_index=True)


class DriverViews:
    """What both callbacks show of their ``Driver``."""

    _driver: Driver

    @property
    def every(self) -> int:
        """Probe one training step in this many."""
        return self._driver.every

    @property
    def probe(self) -> AttentionProbe | None:
        """The AttentionProbe (None before training starts)."""
        return self._driver.probe

    @property
    def history(self) -> Any:
        """Every probed step's full frame, per head (``AttentionProbe.history``)."""
        return self._driver.history

    @property
    def module_history(self) -> Any:
        """Every probed step's frame by module: the values logged."""
        return self._driver.module_history
