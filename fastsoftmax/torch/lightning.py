"""The attention probe in a Lightning ``Trainer``: :class:`LightningProbeCallback`.

Importing this module imports lightning; ``fastsoftmax.torch`` imports it on
first access to ``fastsoftmax.torch.LightningProbeCallback``.
"""
from __future__ import annotations

from typing import Any

from lightning.pytorch import Callback

from ._driver import Driver, DriverViews

__all__ = ["LightningProbeCallback"]


class LightningProbeCallback(DriverViews, Callback):
    """A Lightning ``Callback`` that probes every k-th training step.

    On a probed step the training step's forward runs under an
    :class:`~fastsoftmax.torch.AttentionProbe` of the LightningModule (from
    ``on_train_batch_start`` to ``on_before_backward``; left at
    ``on_train_batch_end`` or ``on_exception`` otherwise); at
    ``on_train_batch_end`` its figures are recorded under
    ``trainer.global_step`` (the steps 1, 1 + every, ...: optimizer steps
    done) and the key scalars of every module
    (``attention/<module>/max_logit``, ``.../jac_diag_max_log10_q0.5``,
    ``.../entropy_mean``, ``.../jac_diag_max_below_1e-06``) go to every logger
    of the module (``pl_module.loggers``, ``log_metrics`` at that step,
    whatever ``log_every_n_steps`` says).  The other steps run with no probe.

    Parameters
    ----------
    every : int, default 1
        Probe the batches at which ``trainer.global_step`` is a multiple of
        ``every``.
    prefix : str, default "attention"
        The first part of every logged name.
    **probe_options
        :class:`~fastsoftmax.torch.AttentionProbe` options (``target``,
        ``thresholds``, ``backend``, ``eager``, ``chunk_logits``).

    Attributes
    ----------
    history : pandas.DataFrame
        Every probed step's full frame (per head, all columns, a ``step``
        column), :attr:`AttentionProbe.history`.
    module_history : pandas.DataFrame
        The same per module (its heads merged, ``to_frame(by="module")``):
        the values logged.
    probe : AttentionProbe or None
        The probe (made at ``on_fit_start``).

    Raises
    ------
    TypeError
        ``every`` is not an integer; ``model``, ``every`` or an unknown option
        among the probe options.
    ValueError
        ``every`` < 1, or a probe option is invalid.

    Examples
    --------
    >>> from fastsoftmax.torch import LightningProbeCallback
    >>> cb = LightningProbeCallback(every=5)
    >>> cb.every
    5

    With a Trainer::

        trainer = lightning.pytorch.Trainer(max_steps=1000, callbacks=[cb],
                                            logger=TensorBoardLogger("runs"))
        trainer.fit(module, loader)
        cb.history
    """

    def __init__(self, every: int = 1, *, prefix: str = "attention",
                 **probe_options: Any) -> None:
        self._driver = Driver(every, prefix, probe_options)

    def on_fit_start(self, trainer: Any, pl_module: Any) -> None:
        """Make the probe of the module.

        Parameters
        ----------
        trainer : lightning.pytorch.Trainer
            The Trainer (``global_step``).
        pl_module : lightning.pytorch.LightningModule
            The module trained.
        """
        self._driver.start(pl_module)

    def on_train_batch_start(self, trainer: Any, pl_module: Any, batch: Any,
                             batch_idx: int) -> None:
        """Enter the probe on a probed step.

        Parameters
        ----------
        trainer : lightning.pytorch.Trainer
            The Trainer (``global_step``).
        pl_module : lightning.pytorch.LightningModule
            The module trained.
        batch : object
            The batch.
        batch_idx : int
            Its index in the epoch.
        """
        if self._driver.due(trainer.global_step):
            self._driver.enter()

    def on_before_backward(self, trainer: Any, pl_module: Any, loss: Any) -> None:
        """Leave the probe: the forward is done.

        Parameters
        ----------
        trainer : lightning.pytorch.Trainer
            The Trainer (``global_step``).
        pl_module : lightning.pytorch.LightningModule
            The module trained.
        loss : torch.Tensor
            The loss about to be backpropagated.
        """
        self._driver.exit()

    def on_train_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any,
                           batch_idx: int) -> None:
        """Record the step and log its key scalars to the module's loggers.

        Parameters
        ----------
        trainer : lightning.pytorch.Trainer
            The Trainer (``global_step``).
        pl_module : lightning.pytorch.LightningModule
            The module trained.
        outputs : object
            What ``training_step`` returned.
        batch : object
            The batch.
        batch_idx : int
            Its index in the epoch.
        """
        scalars = self._driver.record(trainer.global_step)
        if scalars:
            for logger in pl_module.loggers:
                logger.log_metrics(scalars, step=trainer.global_step)

    def on_exception(self, trainer: Any, pl_module: Any, exception: BaseException) -> None:
        """Leave the probe.

        Parameters
        ----------
        trainer : lightning.pytorch.Trainer
            The Trainer (``global_step``).
        pl_module : lightning.pytorch.LightningModule
            The module trained.
        exception : BaseException
            What was raised.
        """
        self._driver.exit()

    def on_fit_end(self, trainer: Any, pl_module: Any) -> None:
        """Leave the probe.

        Parameters
        ----------
        trainer : lightning.pytorch.Trainer
            The Trainer (``global_step``).
        pl_module : lightning.pytorch.LightningModule
            The module trained.
        """
        self._driver.exit()
