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
built on first access (``fastsoftmax.torch_callbacks.ProbeCallback``), so
importing this module imports neither transformers nor lightning.
"""
from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from .torch import AttentionProbe

__all__ = ["KEY_COLUMNS", "SCALAR_COLUMNS", "key_frame", "probe_scalars", "log_probe",
           "ProbeCallback", "LightningProbeCallback"]

LEVEL_COLUMN = "jac_diag_max_below_1e-06"
#: The columns of the short view (those a frame has, in this order).
KEY_COLUMNS = ("step", "module", "head", "heads", "calls", "rows", "max_logit",
               "jac_diag_max_log10_q0.5", "entropy_mean", LEVEL_COLUMN)
#: The columns that become logged scalars.
SCALAR_COLUMNS = ("max_logit", "jac_diag_max_log10_q0.5", "entropy_mean", LEVEL_COLUMN)
_HIST_QUANTILES = np.linspace(0.005, 0.995, 100)


def _key_columns(columns) -> list[str]:
    cols = [c for c in KEY_COLUMNS if c in columns]
    if LEVEL_COLUMN not in columns:      # the probe's thresholds leave out 1e-6
        cols += [c for c in columns if c.startswith("jac_diag_max_below_")]
    return cols


def key_frame(frame: Any) -> Any:
    """The short view of a probe frame or history: its key columns.

    Parameters
    ----------
    frame : pandas.DataFrame
        :meth:`AttentionProbe.to_frame` (by head or by module),
        :meth:`AttentionProbe.snapshot` or :attr:`AttentionProbe.history`.

    Returns
    -------
    pandas.DataFrame
        The columns of :data:`KEY_COLUMNS` that ``frame`` has, in that order
        (a copy); without a ``jac_diag_max_below_1e-06`` column (a probe whose
        thresholds leave out 1e-6), every ``jac_diag_max_below_<t>`` column.

    Examples
    --------
    >>> import torch
    >>> from fastsoftmax.torch import AttentionProbe
    >>> from fastsoftmax.torch_callbacks import key_frame
    >>> mha = torch.nn.MultiheadAttention(8, 2, batch_first=True)
    >>> x = torch.randn(2, 5, 8)
    >>> with AttentionProbe(mha) as probe:
    ...     _ = mha(x, x, x, need_weights=False)
    >>> list(key_frame(probe.to_frame()).columns)        # doctest: +NORMALIZE_WHITESPACE
    ['module', 'head', 'calls', 'rows', 'max_logit', 'jac_diag_max_log10_q0.5',
     'entropy_mean', 'jac_diag_max_below_1e-06']
    >>> len(probe.to_frame().columns)
    205
    """
    return frame[_key_columns(frame.columns)].copy()


def probe_scalars(frame: Any, prefix: str = "attention") -> dict[str, float]:
    """The key scalars of a probe frame, as ``{tag: value}``.

    Parameters
    ----------
    frame : pandas.DataFrame
        A frame of :meth:`AttentionProbe.to_frame`: by module (tags
        ``<prefix>/<module>/<column>``) or by head (tags
        ``<prefix>/<module>/<head>/<column>``).
    prefix : str, default "attention"
        The first part of every tag.

    Returns
    -------
    dict of str to float
        One entry per row of ``frame`` and column of :data:`SCALAR_COLUMNS`
        (or, without ``jac_diag_max_below_1e-06``, every
        ``jac_diag_max_below_<t>`` column).

    Examples
    --------
    >>> import pandas as pd
    >>> from fastsoftmax.torch_callbacks import probe_scalars
    >>> f = pd.DataFrame({"module": ["h.0.attn"], "heads": [4], "max_logit": [12.5],
    ...                   "jac_diag_max_log10_q0.5": [-1.2], "entropy_mean": [2.0],
    ...                   "jac_diag_max_below_1e-06": [0.016]})
    >>> probe_scalars(f)["attention/h.0.attn/max_logit"]
    12.5
    """
    cols = [c for c in _key_columns(frame.columns)
            if c in SCALAR_COLUMNS or c.startswith("jac_diag_max_below_")]
    by_head = "head" in frame.columns
    out: dict[str, float] = {}
    for rec in frame.to_dict("records"):
        name = f"{rec['module']}/{int(rec['head'])}" if by_head else str(rec["module"])
        for c in cols:
            out[f"{prefix}/{name}/{c}"] = float(rec[c])
    return out


def _module_summaries(probe: AttentionProbe) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for (module, _), s in probe.summaries.items():
        merged[module] = s if module not in merged else merged[module].merge(s)
    return merged


def log_probe(probe: AttentionProbe, writer: Any, step: int, *, prefix: str = "attention",
              histograms: bool = False) -> dict[str, float]:
    """Write a probe's current figures to a SummaryWriter-like object.

    One ``writer.add_scalar(tag, value, step)`` per module and key scalar
    (:func:`probe_scalars` of ``probe.to_frame(by="module")``); with
    ``histograms``, one ``writer.add_histogram(tag, values, step)`` per
    module of log10 jac_diag_max, drawn as the 100 quantiles at 0.5%, 1.5%,
    ..., 99.5% of the module's merged Summary (equal-mass points: their
    histogram follows the distribution to the sketch's accuracy; rows at
    jac_diag_max = 0, log10 -inf, are left out).

    The figures are those since the last :meth:`AttentionProbe.snapshot`:
    call it before ``snapshot``.

    Parameters
    ----------
    probe : AttentionProbe
        The probe.
    writer : object
        Anything with ``add_scalar(tag, value, step)`` (and
        ``add_histogram(tag, values, step)`` for ``histograms``):
        ``torch.utils.tensorboard.SummaryWriter``, tensorboardX, ...
    step : int
        The global step of the scalars.
    prefix : str, default "attention"
        The first part of every tag.
    histograms : bool, default False
        Also write histograms of log10 jac_diag_max (tag
        ``<prefix>/<module>/jac_diag_max_log10``).

    Returns
    -------
    dict of str to float
        The scalars written (empty when nothing was probed).

    Raises
    ------
    TypeError
        ``writer`` lacks ``add_scalar`` (or ``add_histogram`` with
        ``histograms``).

    Examples
    --------
    >>> import torch
    >>> from fastsoftmax.torch import AttentionProbe
    >>> from fastsoftmax.torch_callbacks import log_probe
    >>> class Writer:
    ...     def __init__(self):
    ...         self.calls = []
    ...     def add_scalar(self, tag, value, step):
    ...         self.calls.append((tag, step))
    >>> mha = torch.nn.MultiheadAttention(8, 2, batch_first=True)
    >>> x = torch.randn(2, 5, 8)
    >>> with AttentionProbe(mha) as probe:
    ...     _ = mha(x, x, x, need_weights=False)
    >>> w = Writer()
    >>> _ = log_probe(probe, w, step=3)
    >>> w.calls[0]
    ('attention/MultiheadAttention/max_logit', 3)
    """
    if not callable(getattr(writer, "add_scalar", None)):
        raise TypeError(f"writer must have an add_scalar(tag, value, step) method, got "
                        f"{type(writer).__name__}")
    if histograms and not callable(getattr(writer, "add_histogram", None)):
        raise TypeError(f"histograms=True needs writer.add_histogram(tag, values, step); "
                        f"{type(writer).__name__} has none")
    if not isinstance(step, numbers.Integral) or isinstance(step, bool):
        raise TypeError(f"step must be an int, got {step!r}")
    scalars = probe_scalars(probe.to_frame(by="module"), prefix)
    for tag, value in scalars.items():
        writer.add_scalar(tag, value, int(step))
    if histograms:
        for module, s in _module_summaries(probe).items():
            v = np.asarray(s["jac_diag_max"].log10_quantile(_HIST_QUANTILES), float)
            v = v[np.isfinite(v)]
            if v.size:
                writer.add_histogram(f"{prefix}/{module}/jac_diag_max_log10", v, int(step))
    return scalars


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
    callback logs through the Trainer it is attached to,
    ``ProbeCallback(every=10).attach(trainer)`` (which also adds it to the
    Trainer); training without it attached raises a RuntimeError at
    ``on_train_begin``.  Under gradient accumulation the first micro-batch of
    a probed step is probed.

    Examples
    --------
    >>> from fastsoftmax.torch_callbacks import ProbeCallback
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
    >>> from fastsoftmax.torch_callbacks import LightningProbeCallback
    >>> cb = LightningProbeCallback(every=5)
    >>> cb.every
    5

    With a Trainer::

        trainer = lightning.pytorch.Trainer(max_steps=1000, callbacks=[cb],
                                            logger=TensorBoardLogger("runs"))
        trainer.fit(module, loader)
        cb.history
    """


def _transformers_class() -> type:
    from transformers import TrainerCallback

    class ProbeCallback(TrainerCallback):
        __doc__ = _DOC_HF

        def __init__(self, every: int = 1, *, prefix: str = "attention",
                     **probe_options: Any) -> None:
            self._driver = _Driver(every, prefix, probe_options)
            self.trainer: Any = None
            self._hook: Any = None

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

    class LightningProbeCallback(Callback):
        __doc__ = _DOC_PL

        def __init__(self, every: int = 1, *, prefix: str = "attention",
                     **probe_options: Any) -> None:
            self._driver = _Driver(every, prefix, probe_options)

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
