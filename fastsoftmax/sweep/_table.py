"""Sweep tables on disk: atomic rewrites, reading back, the writer's lock.

This module imports pandas lazily (only when a table is read or written) and
uses ``filelock`` for the lock (portable: an OS lock file on POSIX and
Windows, released when the process dies).
"""
from __future__ import annotations

import os
import secrets

__all__ = ["OUT_FORMATS", "frame", "read_table", "write_table", "remove_stale_tmp",
           "SweepLocked", "Lock", "require"]

OUT_FORMATS = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}


def require(module, what, extra="dataframe"):
    try:
        __import__(module)
    except ImportError:
        raise ImportError(f"{what} needs {module}: pip install 'fastsoftmax[{extra}]'") \
            from None


def frame(records, columns):
    """The DataFrame of a list of records (all frames are built this way, so
    fresh and resumed sweeps give identical dtypes)."""
    require("pandas", "fastsoftmax.sweep")
    import pandas as pd
    return pd.DataFrame.from_records(records, columns=columns)


def read_table(path, str_columns=()):
    """A sweep table from disk (``str_columns`` are read as strings from CSV)."""
    import pandas as pd
    fmt = OUT_FORMATS.get(os.path.splitext(path)[1].lower())
    if fmt == "parquet":
        return pd.read_parquet(path)
    kw = {"dtype": {c: str for c in str_columns}} if str_columns else {}
    if int(pd.__version__.split(".")[0]) < 3:
        kw["float_precision"] = "round_trip"     # pandas 3 round-trips by default
    return pd.read_csv(path, **kw)


def write_table(records, columns, path, fmt=None):
    """Write the table atomically: a temporary file in the same directory,
    flushed to disk, then ``os.replace`` over ``path``."""
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


def remove_stale_tmp(path):
    """Temporary files left by a writer that was killed (we hold the lock)."""
    d, base = os.path.split(path)
    for name in os.listdir(d):
        if name.startswith(f".{base}.") and name.endswith(".tmp"):
            try:
                os.unlink(os.path.join(d, name))
            except OSError:
                pass


class SweepLocked(RuntimeError):
    """Another process is writing the same output file."""


class Lock:
    """An exclusive lock on ``.<name>.lock`` next to the output (``filelock``),
    so that two sweeps never write the same file.  Not re-entrant across
    processes; the OS drops it when the process dies, SIGKILL included."""

    def __init__(self, path):
        d, base = os.path.split(path)
        self.path = os.path.join(d, f".{base}.lock")
        self.target = path
        self._lock = None

    def acquire(self):
        require("filelock", "writing a sweep table")
        import filelock
        lock = filelock.FileLock(self.path, timeout=0)
        try:
            lock.acquire()
        except filelock.Timeout:
            raise SweepLocked(f"another sweep is writing {self.target} "
                              f"(lock {self.path} is held)") from None
        self._lock = lock

    def release(self):
        if self._lock is not None:
            self._lock.release()
            self._lock = None
