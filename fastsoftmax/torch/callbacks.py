"""The attention probe in the training loops people use.

* :class:`ProbeCallback`: a ``transformers.TrainerCallback``;
* :class:`LightningProbeCallback`: a ``lightning.pytorch.Callback``;
* :func:`log_probe`: any SummaryWriter-like object (``add_scalar``, and
  ``add_histogram`` for the optional histograms);
* :data:`KEY_COLUMNS` and :func:`key_frame`: the short view of a probe frame
  or history (every column stays in the frame itself).

The key scalars, per module (layer): the largest logit ``max_logit``, the
median of log10 jac_diag_max ``jac_diag_max_log10_q0.5``, the mean entropy
``entropy_mean`` and the fraction of rows with jac_diag_max below 1e-6
``jac_diag_max_below_1e-06``, named ``<prefix>/<module>/<column>``.

The two callbacks subclass their library's callback class; the classes are
built on first access (``fastsoftmax.torch.ProbeCallback``), so
importing this module imports neither transformers nor lightning.
"""
from __future__ import annotations

import numbers
from typing import Any

from ._logging import probe_scalars
from ._probe import AttentionProbe

__all__ = ["ProbeCallback", "LightningProbeCallback"]

def _check_every(every: Any) -> int:
    if not isinstance(every, numbers.Integral) or isinstance(every, bool) or every < 1:
        raise ValueError(f"every must be an int >= 1, got {every!r}")
    return int(every)


def _check_options(options: dict[str, Any]) -> dict[str, Any]:
    for key in ("model", "every"):
        if key in options:
            raise TypeError(f"{key}= is the callback's own (the model is the trainer's); "
                            f"pass the other AttentionProbe options only")
    AttentionProbe(None, **options)          # bad options fail here, not mid-training
    return dict(options)


class _Driver:
    """What both callbacks share: when to probe, the probe, its scalars."""

    def __init__(self, every: Any, prefix: str, options: dict[str, Any]) -> None:
        self.every = _check_every(every)
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


_DOC_HF = """A transformers ``TrainerCallback`` that probes every k-th training step.

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
    ValueError
        ``every`` is not an int >= 1, or a probe option is invalid.
    TypeError
        ``model`` or an unknown option among the probe options.

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

_DOC_PL = """A Lightning ``Callback`` that probes every k-th training step.

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
    ValueError
        ``every`` is not an int >= 1, or a probe option is invalid.
    TypeError
        ``model`` or an unknown option among the probe options.

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


def _calling_trainer() -> Any:
    import sys
    import types

    from transformers import Trainer
    frame: types.FrameType | None = sys._getframe(1)
    while frame is not None:
        obj = frame.f_locals.get("self")
        if isinstance(obj, Trainer):
            return obj
        frame = frame.f_back
    return None


class _DriverViews:
    """What both callbacks show of their ``_Driver``."""

    _driver: _Driver

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


def _transformers_class() -> type:
    from transformers import TrainerCallback

    class ProbeCallback(_DriverViews, TrainerCallback):
        __doc__ = _DOC_HF

        def __init__(self, every: int = 1, *, prefix: str = "attention",
                     **probe_options: Any) -> None:
            self._driver = _Driver(every, prefix, probe_options)
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

    ProbeCallback.__module__ = __name__
    ProbeCallback.__qualname__ = "ProbeCallback"
    return ProbeCallback


def _lightning_class() -> type:
    from lightning.pytorch import Callback

    class LightningProbeCallback(_DriverViews, Callback):
        __doc__ = _DOC_PL

        def __init__(self, every: int = 1, *, prefix: str = "attention",
                     **probe_options: Any) -> None:
            self._driver = _Driver(every, prefix, probe_options)

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

    LightningProbeCallback.__module__ = __name__
    LightningProbeCallback.__qualname__ = "LightningProbeCallback"
    return LightningProbeCallback


_LAZY = {"ProbeCallback": _transformers_class, "LightningProbeCallback": _lightning_class}


def __getattr__(name: str) -> Any:
    # the callback classes subclass transformers' and lightning's: built on
    # first access, so that importing the probe imports neither library
    if name in _LAZY:
        cls = _LAZY[name]()
        globals()[name] = cls
        return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
