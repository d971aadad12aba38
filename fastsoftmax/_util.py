"""Small helpers with no numerical content: the one JSON encoder, the one
progress-bar helper and the one figure canvas of the package."""
from __future__ import annotations

import contextlib
import dataclasses
import json
import math
from typing import Any, Iterator

import numpy as np

__all__ = ["jsonable", "dumps", "progress_bar", "Progress", "numba_threads", "figure",
           "save_figure"]


def jsonable(obj: Any) -> Any:
    """``obj`` made of plain JSON types: numpy scalars and arrays become
    Python numbers and lists, dataclasses dicts, and non-finite floats the
    strings ``"inf"``, ``"-inf"``, ``"nan"`` (so the JSON is strict: no
    ``NaN``/``Infinity`` tokens).  Anything else that JSON cannot hold is
    written as its ``repr``."""
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return jsonable(obj.tolist())
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return jsonable(dataclasses.asdict(obj))
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else repr(obj)
    if isinstance(obj, (str, int, bool)) or obj is None:
        return obj
    return repr(obj)


def dumps(obj: Any, **kw: Any) -> str:
    """Strict JSON text of ``jsonable(obj)``."""
    return json.dumps(jsonable(obj), allow_nan=False, **kw)


# what a bar of ours says until the first chunk returns: that chunk compiles
# the kernels (tens of seconds on a fresh install), and an ETA from it would
# be minutes too long
COMPILING = "compiling kernels (first call, cached afterwards)"


class Progress:
    """What the package updates while it works: ``update(rows)`` and
    ``close()``.  Wraps a tqdm bar it made (and closes it) or a caller's
    object with an ``update`` method (which it never closes).

    A bar it made says :data:`COMPILING` until the first update; then it
    takes its description ``desc`` and restarts its clock, so that its rate
    and ETA count the work, not the compilation."""

    def __init__(self, bar: Any, owned: bool, desc: str | None = None) -> None:
        self._bar = bar
        self._owned = owned
        self._desc = desc
        self._warm = not owned

    def update(self, k: int) -> None:
        if self._warm:
            self._bar.update(k)
            return
        self._warm = True
        bar = self._bar
        bar.reset()                          # the clock and the rate's averages
        bar.initial = bar.n = bar.last_print_n = k   # k rows done, none of them timed
        bar.set_description_str(self._desc or "", refresh=False)
        bar.refresh()

    def set_postfix_str(self, text: str, refresh: bool = False) -> None:
        f = getattr(self._bar, "set_postfix_str", None)
        if f is not None:
            try:
                f(text, refresh=refresh)
            except TypeError:                         # a caller's bar without refresh=
                f(text)

    def close(self) -> None:
        if self._owned:
            self._bar.close()

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def check_progress(progress: Any) -> None:
    """``progress`` must be a bool, None or an object with ``update(rows)``."""
    if progress is None or isinstance(progress, (bool, np.bool_)):
        return
    if not callable(getattr(progress, "update", None)):
        raise TypeError(f"progress must be True, False or an object with an update(rows) "
                        f"method (a tqdm bar), got {progress!r}")


def progress_bar(progress: Any, total: int, desc: str | None = None) -> Progress | None:
    """None (``progress`` false), a new tqdm bar over ``total`` rows
    (``progress=True``), or the caller's own object (one bar shared by the
    points of a sweep, say), wrapped in :class:`Progress`."""
    check_progress(progress)
    if not progress:
        return None
    if isinstance(progress, Progress):               # shared: never closed by the callee
        return Progress(progress, owned=False)
    if progress is not True and not isinstance(progress, np.bool_):
        return Progress(progress, owned=False)
    try:
        from tqdm.auto import tqdm
    except ImportError:
        raise ImportError("progress=True needs tqdm: pip install 'fastsoftmax[progress]' "
                          "(or pass progress=False)") from None
    return Progress(tqdm(total=total, desc=f"{desc}: {COMPILING}" if desc else COMPILING,
                         unit="rows", unit_scale=True, smoothing=0.1, dynamic_ncols=True),
                    owned=True, desc=desc)


@contextlib.contextmanager
def numba_threads(n: int) -> Iterator[None]:
    """numba's thread count for the calling thread (numba keeps it per
    thread) set to ``n`` inside the block, restored afterwards."""
    import numba
    old = numba.get_num_threads()
    if n == old:
        yield
        return
    numba.set_num_threads(n)
    try:
        yield
    finally:
        numba.set_num_threads(old)


# --------------------------------------------------------------------------
# figures: matplotlib's Figure on an Agg canvas (no pyplot, no global backend
# switch, nothing shown); matplotlib is imported only when a figure is made

def figure(w: float, h: float, nrows: int = 1, ncols: int = 1) -> tuple[Any, Any]:
    """A ``w`` x ``h`` inch figure and its ``nrows`` x ``ncols`` axes (a 2-d
    array); an ImportError naming the extra without matplotlib."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise ImportError("plots need matplotlib: pip install 'fastsoftmax[plot]'") from None
    fig = Figure(figsize=(w, h), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(nrows, ncols, squeeze=False)
    return fig, axes


def save_figure(fig: Any, path: Any) -> Any:
    """Write ``fig`` as a PNG to ``path``; returns ``path``."""
    fig.savefig(path, dpi=110)
    return path
