"""The attention probe in a transformers ``Trainer``: :class:`ProbeCallback`.

Importing this module imports transformers; ``fastsoftmax.torch`` imports it
on first access to ``fastsoftmax.torch.ProbeCallback``.
"""
from __future__ import annotations

import sys
import types
from typing import Any

from transformers import Trainer, TrainerCallback

from ._driver import Driver, DriverViews

__all__ = ["ProbeCallback"]


def _calling_trainer() -> Any:
    """The Trainer whose method is on the call stack, else None."""
    frame: types.FrameType | None = sys._getframe(1)
    while frame is not None:
        obj = frame.f_locals.get("self")
        if isinstance(obj, Trainer):
            return obj
        frame = frame.f_back
    return None


class ProbeCallback(DriverViews, TrainerCallback):
    """A transformers ``TrainerCallback`` that probes every k-th training step.

    On a probed step the first training forward runs under an
    :class:`~fastsoftmax.torch.AttentionProbe` of the Trainer's model (entered
    at ``on_step_begin``, left by a forward hook that runs even when the
    forward raises); at ``on_step_end`` the probe's figures are recorded under
    ``state.global_step`` (the steps 1, 1 + every, 1 + 2 every, ...: the
    Trainer counts a step once done) and the key scalars of every module
    (``attention/<module>/max_logit``, ``.../jac_diag_max_log10_q0.5``,
    ``.../entropy_mean``, ``.../jac_diag_max_below_1e-06``) go through
    ``trainer.log``: into ``state.log_history`` and to every reporter the
    Trainer has (``report_to``: TensorBoard, W&B, ...; TensorBoard prefixes
    them with ``train/``).  The other steps run with no probe at all.

    Parameters
    ----------
    every : int, default 1
        Probe the training steps whose ``state.global_step`` (steps done
        before it) is a multiple of ``every``.
    prefix : str, default "attention"
        The first part of every logged name.
    **probe_options
        :class:`~fastsoftmax.torch.AttentionProbe` options (``target``,
        ``thresholds``, ``backend``, ``eager``, ``chunk_logits``); ``eager=True``
        for models with eager attention (HF ``attn_implementation="eager"``).

    Attributes
    ----------
    history : pandas.DataFrame
        Every probed step's full frame (per head, all columns, a ``step``
        column), :attr:`AttentionProbe.history`.
    module_history : pandas.DataFrame
        The same per module (its heads merged, ``to_frame(by="module")``):
        the values logged.
    probe : AttentionProbe or None
        The probe (made at ``on_train_begin``).
    trainer : transformers.Trainer or None
        The Trainer it logs through (:meth:`attach`).

    Raises
    ------
    TypeError
        ``every`` is not an integer; ``model``, ``every`` or an unknown option
        among the probe options.
    ValueError
        ``every`` < 1, or a probe option is invalid.

    Notes
    -----
    A ``TrainerCallback`` is given no handle on its Trainer, and callbacks
    passed to ``Trainer(callbacks=...)`` run after the reporters: so the
    callback logs its scalars through ``trainer.log``, which every reporter
    receives.  ``Trainer(callbacks=[ProbeCallback(every=10)])`` finds its
    Trainer when training begins (the Trainer's loop calls it);
    ``ProbeCallback(every=10).attach(trainer)`` names it explicitly (and adds
    the callback to it).  Under gradient accumulation the first micro-batch
    of a probed step is probed.

    Examples
    --------
    >>> from fastsoftmax.torch import ProbeCallback
    >>> cb = ProbeCallback(every=10, eager=True)
    >>> cb.every, len(cb.history)
    (10, 0)

    With a Trainer::

        trainer = Trainer(model, args, train_dataset=ds)   # report_to=["tensorboard"]
        cb = ProbeCallback(every=10).attach(trainer)
        trainer.train()
        cb.history                                         # every probed step, every head
    """

    def __init__(self, every: int = 1, *, prefix: str = "attention",
                 **probe_options: Any) -> None:
        self._driver = Driver(every, prefix, probe_options)
        self.trainer: Any = None
        self._hook: Any = None

    def attach(self, trainer: Any) -> Any:
        """Log through ``trainer`` (and add the callback to it if not there).

        Parameters
        ----------
        trainer : transformers.Trainer
            The Trainer whose ``log`` receives the key scalars.

        Returns
        -------
        ProbeCallback
            ``self``.
        """
        self.trainer = trainer
        if self not in trainer.callback_handler.callbacks:
            trainer.add_callback(self)
        return self

    def on_train_begin(self, args: Any, state: Any, control: Any, model: Any = None,
                       **kwargs: Any) -> None:
        """Make the probe and the hook that leaves it after the forward.

        Parameters
        ----------
        args : transformers.TrainingArguments
            The Trainer's arguments.
        state : transformers.TrainerState
            Its state.
        control : transformers.TrainerControl
            Its control flags (left as they are).
        model : torch.nn.Module
            The model trained (the probe names its submodules).
        **kwargs
            The Trainer's other objects.
        """
        if self.trainer is None:
            # Trainer(callbacks=[ProbeCallback()]): a TrainerCallback is handed
            # no Trainer, but this event is called from the Trainer's own
            # training loop, so the Trainer is ``self`` of a calling frame
            self.trainer = _calling_trainer()
        if self.trainer is None:
            raise RuntimeError("ProbeCallback logs through its Trainer: attach it with "
                               "ProbeCallback(every=...).attach(trainer) before training")
        self._driver.start(model)
        if self._hook is None:
            self._hook = model.register_forward_hook(
                lambda *a: self._driver.exit(), always_call=True)

    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        """Enter the probe on a probed step.

        Parameters
        ----------
        args : transformers.TrainingArguments
            The Trainer's arguments.
        state : transformers.TrainerState
            Its state (``global_step``).
        control : transformers.TrainerControl
            Its control flags (left as they are).
        **kwargs
            The Trainer's other objects (``model``, ``optimizer``, ...).
        """
        if self._driver.due(state.global_step):
            self._driver.enter()

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        """Record the step and log its key scalars through the Trainer.

        Parameters
        ----------
        args : transformers.TrainingArguments
            The Trainer's arguments.
        state : transformers.TrainerState
            Its state (``global_step``).
        control : transformers.TrainerControl
            Its control flags (left as they are).
        **kwargs
            The Trainer's other objects (``model``, ``optimizer``, ...).
        """
        scalars = self._driver.record(state.global_step)
        if scalars:
            self.trainer.log(dict(scalars))

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        """Leave the probe and remove the hook.

        Parameters
        ----------
        args : transformers.TrainingArguments
            The Trainer's arguments.
        state : transformers.TrainerState
            Its state (``global_step``).
        control : transformers.TrainerControl
            Its control flags (left as they are).
        **kwargs
            The Trainer's other objects (``model``, ``optimizer``, ...).
        """
        self._driver.exit()
        if self._hook is not None:
            self._hook.remove()
            self._hook = None
