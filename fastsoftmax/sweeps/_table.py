"""Sweep tables on disk: atomic rewrites, reading back, the writer's lock.

This module imports pandas lazily (only when a table is read or written) and
uses ``filelock`` for the lock (portable: an OS lock file on POSIX and
Windows, released when the process dies).
"""
from __future__ import annotations

import os
import secrets
from typing import TYPE_CHECKING, Any, Sequence

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["OUT_FORMATS", "frame", "read_table", "write_table", "remove_stale_tmp",
           "SweepLocked", "Lock", "require"]

OUT_FORMATS = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}


def require(module: str, what: str, extra: str = "dataframe") -> None:
    """ImportError with the pip command unless ``module`` can be imported."""
    try:
        __import__(module)
    except ImportError:
        raise ImportError(f"{what} needs {module}: pip install 'fastsoftmax[{extra}]'") \
            from None


def frame(records: Sequence[dict[str, Any]], columns: Sequence[str]) -> pd.DataFrame:
    """The DataFrame of a list of records (all frames are built this way, so
    fresh and resumed sweeps give identical dtypes)."""
    require("pandas", "fastsoftmax.sweep")
    import pandas as pd
    return pd.DataFrame.from_records(records, columns=columns)


def read_table(path: str | os.PathLike[str], str_columns: Sequence[str] = ()) -> pd.DataFrame:
    """A sweep table from disk, as :func:`write_table` wrote it.

    Parquet files are read as they are; CSV files with every float read back
    exactly (round-trip precision) and ``str_columns`` kept as strings (a
    ``method`` column of ``"1"`` stays ``"1"``).

    Parameters
    ----------
    path : str or path
        A ``.csv``, ``.parquet`` or ``.pq`` file.
    str_columns : sequence of str, default ()
        Columns to read as strings from a CSV file.

    Returns
    -------
    pandas.DataFrame
        The table.

    Raises
    ------
    FileNotFoundError
        No such file.
    ImportError
        pandas (or pyarrow, for Parquet) is not installed.

    See Also
    --------
    write_table

    Examples
    --------
    >>> import os, tempfile
    >>> from fastsoftmax.sweeps import read_table, write_table
    >>> with tempfile.TemporaryDirectory() as d:
    ...     path = os.path.join(d, "t.csv")
    ...     write_table([{"d_k": 1, "q": 0.1}], ["d_k", "q"], path)
    ...     read_table(path).values.tolist()
    [[1.0, 0.1]]
    """
    import pandas as pd
    fmt = OUT_FORMATS.get(os.path.splitext(path)[1].lower())
    if fmt == "parquet":
        return pd.read_parquet(path)
    kw: dict[str, Any] = {"dtype": {c: str for c in str_columns}} if str_columns else {}
    if int(pd.__version__.split(".")[0]) < 3:
        kw["float_precision"] = "round_trip"     # pandas 3 round-trips by default
    return pd.read_csv(path, **kw)


def write_table(records: Sequence[dict[str, Any]], columns: Sequence[str],
                path: str | os.PathLike[str], fmt: str | None = None) -> None:
    """Write a table atomically: a readable file at ``path`` at every moment.

    The table goes to a fresh temporary file in the same directory, is
    flushed to disk (``fsync``) and moved over ``path`` with ``os.replace``,
    which is atomic: a crash or SIGKILL at any moment leaves either the
    previous file or the new one, never a torn one.

    Parameters
    ----------
    records : sequence of dict
        The rows.
    columns : sequence of str
        The columns, in order (missing keys are left empty).
    path : str or path
        The file; its extension picks the format unless ``fmt`` is given.
    fmt : {"csv", "parquet"}, optional
        The format.

    Raises
    ------
    KeyError
        An unknown extension and no ``fmt``.
    ImportError
        pandas (or pyarrow, for Parquet) is not installed.
    OSError
        The directory cannot be written (the temporary file is removed).

    See Also
    --------
    read_table

    Examples
    --------
    >>> import os, tempfile
    >>> from fastsoftmax.sweeps import read_table, write_table
    >>> with tempfile.TemporaryDirectory() as d:
    ...     path = os.path.join(d, "t.csv")
    ...     write_table([{"a": 1, "b": "x"}, {"a": 2, "b": "y"}], ["a", "b"], path)
    ...     os.listdir(d), read_table(path, str_columns=["b"])["b"].tolist()
    (['t.csv'], ['x', 'y'])
    """
    fmt = fmt or OUT_FORMATS[os.path.splitext(path)[1].lower()]
    df = frame(records, columns)
    d, base = os.path.split(os.path.abspath(path))
    # O_EXCL with mode 0o666: a fresh name, permissions from the umask (as open())
    tmp = os.path.join(d, f".{base}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            if fmt == "parquet":
                df.to_parquet(f, index=False)
            else:
                df.to_csv(f, index=False)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _fsync_dir(d)


def _fsync_dir(d):
    try:
        fd = os.open(d, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def remove_stale_tmp(path: str) -> None:
    """Temporary files left by a writer that was killed (we hold the lock)."""
    d, base = os.path.split(path)
    for name in os.listdir(d):
        if name.startswith(f".{base}.") and name.endswith(".tmp"):
            try:
                os.unlink(os.path.join(d, name))
            except OSError:
                pass


class SweepLocked(RuntimeError):
    """Error: another process is writing the same output file.

    Raised by :func:`~fastsoftmax.sweeps.sweep` and :meth:`Plan.run` when the
    lock file ``.<name>.lock`` next to ``out`` is held: two sweeps never
    write one file at once.  The lock is the operating system's
    (``filelock``), released when its holder exits, SIGKILL included.

    Examples
    --------
    >>> import os, tempfile, filelock
    >>> from fastsoftmax.sweeps import SweepLocked, sweep
    >>> with tempfile.TemporaryDirectory() as d:
    ...     with filelock.FileLock(os.path.join(d, ".s.csv.lock")):   # another writer
    ...         try:
    ...             sweep("gaussian", {"n": [4]}, samples=10, out=os.path.join(d, "s.csv"),
    ...                   progress=False)
    ...         except SweepLocked as e:
    ...             print("locked:", isinstance(e, RuntimeError))
    locked: True
    """


class Lock:
    """An exclusive lock on ``.<name>.lock`` next to the output (``filelock``),
    so that two sweeps never write the same file.  Not re-entrant across
    processes; the OS drops it when the process dies, SIGKILL included."""

    def __init__(self, path: str) -> None:
        d, base = os.path.split(path)
        self.path = os.path.join(d, f".{base}.lock")
        self.target = path
        self._lock: Any = None

    def acquire(self) -> None:
        require("filelock", "writing a sweep table")
        import filelock
        lock = filelock.FileLock(self.path, timeout=0)
        try:
            lock.acquire()
        except filelock.Timeout:
            raise SweepLocked(f"another sweep is writing {self.target} "
                              f"(lock {self.path} is held)") from None
        self._lock = lock

    def release(self) -> None:
        if self._lock is not None:
            self._lock.release()
            self._lock = None
