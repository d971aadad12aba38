"""The ``fastsoftmax`` command (also ``python -m fastsoftmax``).

    fastsoftmax verify [--samples N] [--seed S] [--backend B] [--out DIR] [--context]
                       [--json] [--quiet]
    fastsoftmax sweep --model dotproduct --grid d_k=1,16,256 --grid scaled=true,false
                      --set n=64 --samples 1e6 --out sweep.parquet [--resume] [--plot sweep.png]
                      [--theory [--theory-order 0|1]] [--scheduler ADDRESS | --workers N]
    fastsoftmax summarize FILE.npy [--axis A] [--target argmax|INT|labels.npy] [--json]
    fastsoftmax audit --impl torch|scipy|numpy-naive|jax|MODULE:FUNCTION [--kind K]
                      [--dtype D] [--case NAME] [--max-ulp U] [--out DIR]
    fastsoftmax info

Bad arguments exit with status 2 and one line on stderr saying what is
wrong (checked before any work starts); a failure while running exits 1 with
its message; an interrupted run exits 130; a completed run exits 0 (audit:
1 when a case fails its bound).
"""
import functools
import json
import math
import os
import re
import sys
from typing import Any

try:
    import click
except ImportError:      # the library needs only numpy and numba; the CLI needs more
    sys.stderr.write("fastsoftmax: the command line needs the [cli] extra: "
                     "pip install 'fastsoftmax[cli]'\n")
    raise SystemExit(2) from None

from . import audits as _audits
from ._inputs import NAN_POLICIES
from ._util import dumps, jsonable
from .registries import JAC_DIAG_MAX, backend_names

PROG = "fastsoftmax"


class UserError(click.UsageError):
    """A bad argument found after parsing (exit 2, one line)."""

    def __init__(self, message):
        super().__init__(message, ctx=click.get_current_context(silent=True))


# --------------------------------------------------------------------------
# value parsing

def parse_value(text):
    """A grid/--set value: true/false, an int, a float (1e6), else a string."""
    t = text.strip()
    low = t.lower()
    if low in ("true", "yes", "on"):
        return True
    if low in ("false", "no", "off"):
        return False
    try:
        return int(t)
    except ValueError:
        pass
    try:
        return float(t)
    except ValueError:
        pass
    return t


def parse_assignment(text, option, many):
    """'name=v1,v2' -> (name, [values]) (many) or (name, value)."""
    if "=" not in text:
        raise UserError(f"{option} {text!r}: expected NAME=VALUE"
                        + (",VALUE..." if many else ""))
    name, _, rhs = text.partition("=")
    name = name.strip()
    if not name.isidentifier():
        raise UserError(f"{option} {text!r}: {name!r} is not a parameter name")
    if not rhs.strip():
        raise UserError(f"{option} {text!r}: no value after '='")
    if not many:
        return name, parse_value(rhs)
    parts = rhs.split(",")
    if any(not p.strip() for p in parts):
        raise UserError(f"{option} {text!r}: empty value in the list")
    return name, [parse_value(p) for p in parts]


def _library_check(check, value, param, ctx, *args):
    """A library validator's verdict on ``value`` as click's: its message,
    without the argument's name (click prefixes the option's)."""
    try:
        return check(value, *args)
    except (TypeError, ValueError) as e:
        msg = str(e)
        for name in ("samples", "seed"):
            if msg.startswith(name + " "):
                msg = msg[len(name) + 1:]
        raise click.BadParameter(msg, ctx=ctx, param=param) from None


class Count(click.ParamType):
    """A positive integer, also written as 1e6 or 1_000_000 (the library's
    ``check_samples`` decides what is valid)."""
    name = "N"

    def convert(self, value, param, ctx):
        from ._inputs import check_samples
        if not (isinstance(value, int) and not isinstance(value, bool)):
            s = str(value).strip().replace("_", "")
            try:
                value = int(s)
            except ValueError:
                try:
                    f = float(s)
                except ValueError:
                    self.fail(f"{value!r} is not a number", param, ctx)
                if not (math.isfinite(f) and f.is_integer()):
                    self.fail(f"{value!r} is not a whole number", param, ctx)
                value = int(f)
        return _library_check(check_samples, value, param, ctx)


class Seed(click.ParamType):
    """An integer seed (the library's ``check_seed`` decides what is valid)."""
    name = "SEED"

    def convert(self, value, param, ctx):
        from ._inputs import check_seed
        try:
            v = int(str(value).strip())
        except ValueError:
            self.fail(f"{value!r} is not an integer", param, ctx)
        return _library_check(check_seed, v, param, ctx)


class BackendName(click.Choice):
    """"auto" or a registered backend's name: the registry's names when the
    command line is parsed (a backend registered at run time included)."""

    def __init__(self):
        super().__init__(self.choices)

    @property
    def choices(self):
        return ("auto",) + backend_names()

    @choices.setter
    def choices(self, value):
        pass                # always the registry's


# the choices the library accepts, from the lists the library checks against
BACKEND = BackendName()
NAN_POLICY = click.Choice(NAN_POLICIES)
BIG_FILE_LOGITS = 1 << 28      # summarize shows progress from here (a few seconds)


# --------------------------------------------------------------------------
# the group

def _print_version(ctx, param, value):
    if value and not ctx.resilient_parsing:
        from . import __version__
        click.echo(f"{PROG} {__version__}")
        ctx.exit()


@click.group(context_settings=dict(help_option_names=["-h", "--help"], max_content_width=100))
@click.option("--version", is_flag=True, expose_value=False, is_eager=True,
              callback=_print_version, help="Print the version and exit.")
def cli():
    """Exact, fast statistics of softmax and cross-entropy gradients.

    Start with `fastsoftmax verify`: the "Attention Is All You Need" claims,
    measured, with verdicts.
    """


def _fail(msg):
    raise UserError(msg)


# The library's messages name its Python arguments (nan_policy='omit',
# resume=True); the command line speaks in flags.  One table, applied to
# every library message that reaches the user (bad arguments and failures
# while running); the CLI's own messages are written in flags already.
FLAGS = {"nan_policy": "--nan-policy", "resume": "--resume", "theory": "--theory",
         "out": "--out", "target": "--target", "backend": "--backend", "dtype": "--dtype",
         "thresholds": "--threshold", "samples": "--samples", "seed": "--seed",
         "axis": "--axis", "model_factory": "--model", "grid": "--grid", "fixed": "--set",
         "progress": "--quiet", "framework": "--framework", "device": "--device",
         "max_ulp": "--max-ulp"}
# NAME=VALUE forms that are a flag alone (or its absence)
FLAG_VALUES = {"resume=True": "--resume", "theory=True": "--theory",
               "progress=False": "--quiet", "progress=True": "a progress bar (no --quiet)"}
_ASSIGNMENT = re.compile(r"(?<![\w.\-])(" + "|".join(FLAGS) +
                         r")=('[^']*'|\"[^\"]*\"|[^\s,;:)]+)")
# a message that starts with an argument's name ("thresholds must be ..."),
# for names that are no English word a message could start with
_LEADING = re.compile(r"^(nan_policy|target|backend|dtype|thresholds|samples|seed|axis)"
                      r"\b(?!=)")


def to_flags(message, names=None):
    """A library message in the command line's words: ``nan_policy='omit'``
    -> ``--nan-policy omit``, ``resume=True`` -> ``--resume``, a message
    starting with an argument's name -> its flag; ``names`` maps further
    names (default: the running command's, summarize's ``x`` -> its file).

    >>> to_flags("row 7 has NaN: pass nan_policy='omit'")
    'row 7 has NaN: pass --nan-policy omit'
    >>> to_flags("s.csv exists: pass resume=True to continue it")
    's.csv exists: pass --resume to continue it'
    >>> to_flags("row 7 of x contains NaN", {"x": "logits.npy"})
    'row 7 of logits.npy contains NaN'
    """
    def assignment(m):
        name, value = m.group(1), m.group(2)
        if f"{name}={value}" in FLAG_VALUES:
            return FLAG_VALUES[f"{name}={value}"]
        if value[:1] in "'\"" and value[-1:] == value[:1]:
            value = value[1:-1]
        return f"{FLAGS[name]} {value}"

    text = _LEADING.sub(lambda m: FLAGS[m.group(1)], _ASSIGNMENT.sub(assignment, message))
    names = _NAMES if names is None else names
    for name, words in names.items():      # "x is empty", "row 7 of x contains NaN"
        # (a function as the replacement: a path's backslashes stay as they are)
        text = re.sub(rf"(^|(?<=\bof )){re.escape(name)}\b(?![=\w])",
                      functools.partial(_literal, words), text)
    return text


def _literal(words, match):
    return words


# names of the running command's arguments for messages (summarize's x is
# its FILE), set by the command, reset by main()
_NAMES: dict = {}


def _user_call(fn, *a, **kw):
    """Run a validation step (nothing computed yet); its ValueError/TypeError/
    OS errors are bad arguments (exit 2, one line, in flags: :func:`to_flags`).
    The work itself runs outside: its failures exit 1 (see :func:`main`)."""
    try:
        return fn(*a, **kw)
    except (ValueError, TypeError, FileExistsError, FileNotFoundError, IsADirectoryError,
            NotADirectoryError, ImportError, RuntimeError) as e:
        raise UserError(to_flags(str(e))) from None


class _NewFolders:
    """The missing parent folders of --out/--plot, made before the checks
    that need them and removed again when a check fails: a refused command
    leaves nothing behind."""

    def __init__(self):
        self.made = []

    def make(self, path, option):
        d = os.path.dirname(os.path.abspath(path))
        missing = []
        while not os.path.isdir(d):
            missing.append(d)
            d = os.path.dirname(d)
        try:
            for m in reversed(missing):
                os.mkdir(m)
                self.made.append(m)
        except OSError as e:
            self.undo()
            _fail(f"{option} {path}: cannot create its folder ({e.strerror}: {e.filename})")

    def undo(self):
        for m in reversed(self.made):
            try:
                os.rmdir(m)
            except OSError:
                pass
        self.made = []


# --------------------------------------------------------------------------
# verify

@cli.command()
@click.option("--samples", type=Count(), default=None,
              help="Logit vectors per point, everywhere (default: 500,000, and at the laws' "
                   "points the rows their claims need, planned and printed before running).")
@click.option("--seed", type=Seed(), default=0, show_default=True,
              help="One seed for every point (common random numbers).")
@click.option("--backend", type=BACKEND, default="auto", show_default=True)
@click.option("--out", type=click.Path(file_okay=False), default=None,
              help="Directory for tables (CSV, Parquet), summary.json and PNG plots.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON on stdout.")
@click.option("--quiet", "-q", is_flag=True,
              help="No progress bar; print one line per claim (its verdict) only.")
@click.option("--context", is_flag=True,
              help="Add the context-length axis: DotProduct d_k=64, n=16..65536, scaled and "
                   "unscaled, beside the laws of large n (about 10 s more).")
def verify(samples, seed, backend, out, as_json, quiet, context):
    """Run the paper's claims and the objections as experiments; print verdicts.

    Unscaled vs scaled dot products for d_k = 1..4096, the vector
    [100, 101, 99], offsets 0..1e6, cross-entropy with right and wrong
    targets, and a scale sweep; each verdict is computed from the
    measurements with the criteria printed under the table.  The
    saturation law's predictions are printed beside the measurements and
    judged within the accuracy it states (claims 8 and 9).
    """
    from . import verify as vmod
    if out is not None and os.path.exists(out) and not os.path.isdir(out):
        _fail(f"--out {out}: exists and is not a directory")
    _user_call(_require_module, "scipy", "verify (the laws of fastsoftmax.theory)", "theory")
    exp = _user_call(vmod.prepare, samples=samples, seed=seed, backend=backend, out=out,
                     context=context)
    if not quiet:
        click.echo(exp.describe_plan(), err=True)
    res = exp.run(progress=not quiet)
    if as_json:
        click.echo(res.to_json())
    elif quiet:
        click.echo(res.brief())
    else:
        click.echo(res.report(width=_width()))
        if out is not None:
            click.echo(f"\nwrote tables, summary.json and plots to {out}")


def _width():
    try:
        return max(80, min(120, os.get_terminal_size().columns))
    except OSError:
        return 100


# --------------------------------------------------------------------------
# sweep

@cli.command()
@click.option("--model", "-m", required=True, help="dotproduct, gaussian or shifted.")
@click.option("--grid", "-g", "grids", multiple=True, metavar="NAME=V1,V2,...",
              help="A grid axis (repeatable); the points are the cartesian product.")
@click.option("--set", "-s", "sets", multiple=True, metavar="NAME=VALUE",
              help="A parameter fixed for every point (repeatable).")
@click.option("--samples", type=Count(), required=True, help="Logit vectors per point (1e6 ok).")
@click.option("--seed", type=Seed(), default=0, show_default=True)
@click.option("--target", default="argmax", show_default=True,
              help="argmax, random, sampled or a class index.")
@click.option("--dtype", type=click.Choice(["float32", "float64"]), default="float32",
              show_default=True)
@click.option("--threshold", "thresholds", multiple=True, type=float, metavar="T",
              help="Thresholds for exact fractions below (repeatable; default 1e-3 1e-6 1e-9).")
@click.option("--backend", type=BACKEND, default="auto", show_default=True)
@click.option("--out", "-o", type=click.Path(dir_okay=False), default=None,
              help="Table written after every point (.csv or .parquet); its folder is "
                   "made if missing.")
@click.option("--resume", is_flag=True, help="Continue --out, skipping the points it holds.")
@click.option("--plot", type=click.Path(dir_okay=False), default=None,
              help="PNG of the median and quantile bands of --observable (its folder is "
                   "made if missing).")
@click.option("--observable", default=JAC_DIAG_MAX.name, show_default=True,
              help="What --plot and the printed table show.")
@click.option("--scheduler", default=None, metavar="ADDRESS",
              help="Run on a Dask cluster (tcp://host:8786).")
@click.option("--workers", type=Count(), default=None,
              help="Run on a local Dask cluster of N single-threaded workers.")
@click.option("--connect-timeout", type=float, default=5.0, show_default=True,
              metavar="SECONDS", help="How long to wait for --scheduler.")
@click.option("--theory", is_flag=True,
              help="Add the laws' prediction columns (<obs>_theory_...; needs SciPy).")
@click.option("--theory-order", type=click.Choice(["0", "1"]), default=None,
              help="The saturation law's order for --theory (default: 1, but 0 for "
                   "dotproduct, whose order 1 takes seconds per point).")
@click.option("--json", "as_json", is_flag=True, help="Print the table as JSON records.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar, no table.")
def sweep(model, grids, sets, samples, seed, target, dtype, thresholds, backend, out, resume,
          plot, observable, scheduler, workers, connect_timeout, theory, theory_order, as_json,
          quiet):
    """Simulate every point of a parameter grid; one row per point.

    \b
    fastsoftmax sweep --model dotproduct --grid d_k=1,16,256,4096 \\
        --grid scaled=true,false --set n=64 --samples 1e6 --out sweep.parquet --resume
    """
    from . import _config
    from ._kernels.row import OBS_NAMES
    from .sweeps import plan as make_plan
    grid, fixed = {}, {}
    for g in grids:
        name, values = parse_assignment(g, "--grid", True)
        if name in grid:
            _fail(f"--grid {name} given twice")
        grid[name] = values
    for s in sets:
        name, value = parse_assignment(s, "--set", False)
        if name in fixed:
            _fail(f"--set {name} given twice")
        fixed[name] = value
    tgt = parse_value(target)
    if isinstance(tgt, bool) or isinstance(tgt, float):
        _fail(f"--target {target!r}: argmax, random, sampled or a class index")
    if observable not in OBS_NAMES:
        _fail(f"--observable {observable!r}: one of {', '.join(OBS_NAMES)}")
    if scheduler is not None and workers is not None:
        _fail("--scheduler and --workers exclude each other")
    if plot is not None and not plot.lower().endswith(".png"):
        _fail(f"--plot {plot}: give a .png file name")
    thr = tuple(thresholds) if thresholds else _config.DEFAULT_THRESHOLDS
    if theory_order is not None and not theory:
        _fail("--theory-order needs --theory")
    th = (int(theory_order) if theory_order is not None else True) if theory else False
    folders = _NewFolders()
    try:
        if out is not None:
            folders.make(out, "--out")
        if plot is not None:
            folders.make(plot, "--plot")
        p = _user_call(make_plan, model, grid, fixed=fixed, samples=samples, seed=seed,
                       target=tgt, dtype=dtype, thresholds=thr, out=out, resume=resume,
                       backend=backend, theory=th)
        if plot is not None:
            _user_call(_require_module, "matplotlib", "--plot", "plot")
    except click.UsageError:
        folders.undo()
        raise
    if not quiet and out is not None and resume and len(p.todo) < len(p.points):
        click.echo(f"resuming {out}: {len(p.points) - len(p.todo)} of {len(p.points)} points "
                   "done", err=True)
    with _dask_client(scheduler, workers, connect_timeout) as client:
        try:
            df = p.run(progress=not quiet, client=client)
        except KeyboardInterrupt:
            if out is not None:
                click.echo(f"\ninterrupted: the finished points are in {out}; "
                           "rerun with --resume to continue", err=True)
            raise
    if plot is not None:
        from .sweeps.plot import plot_sweep
        plot_sweep(df, plot, list(grid), observable=observable)
    if as_json:
        click.echo(dumps(_records(df)))
    elif not quiet:
        click.echo(format_sweep(df, list(grid) or p.param_order[:1], observable))
        if out is not None:
            click.echo(f"wrote {out}")
        if plot is not None:
            click.echo(f"wrote {plot}")


def _records(df):
    return jsonable(df.to_dict("records"))


def format_sweep(df, keys, obs=JAC_DIAG_MAX.name):
    """A compact text table: grid values, then median / mean ± sem /
    log10-mean / fraction below 1e-6 of one observable (with the laws'
    median and fraction beside them when the table has theory columns)."""
    below = [c for c in df.columns if c.startswith(f"{obs}_below_")]
    bcol = f"{obs}_below_1e-06" if f"{obs}_below_1e-06" in df.columns else \
        (below[0] if below else None)
    law = "theory_order" in df.columns
    tq, tb = f"{obs}_theory_q0.5", (bcol.replace("_below_", "_theory_below_") if bcol else None)
    head = [str(k) for k in keys] + ["median"] + (["law median"] if law else []) + \
        ["mean ± sem", "log10 mean",
         (bcol[len(obs) + 1:].replace("below_", "frac<") if bcol else "")] + \
        (["law frac"] if law and bcol else [])

    def num(v, spec):
        return "-" if v != v else format(v, spec)

    rows = []
    for _, r in df.iterrows():
        cells = [str(r[k]) for k in keys]
        cells.append(f"{r[f'{obs}_q0.5']:.4g}")
        if law:
            cells.append(num(r[tq], ".4g"))
        cells.append(f"{r[f'{obs}_mean']:.4g} ± {r[f'{obs}_sem']:.2g}")
        cells.append(f"{r[f'{obs}_log10_mean']:.4f}")
        cells.append(f"{r[bcol]:.4f}" if bcol else "")
        if law and bcol:
            cells.append(num(r[tb], ".4f"))
        rows.append(cells)
    widths = [max(len(h), *(len(c[i]) for c in rows)) for i, h in enumerate(head)]
    lines = [f"{obs} ({int(df['samples'].iloc[0]):,} samples per point, target "
             f"{df['target'].iloc[0]}, {df['dtype'].iloc[0]})"
             + (f"; law: fastsoftmax.theory, order "
                f"{'/'.join(str(int(v)) for v in sorted(set(df['theory_order'])))} "
                "(- where no law covers the point)" if law else "")]
    lines.append("  ".join(h.rjust(w) for h, w in zip(head, widths)))
    lines.extend("  ".join(c.rjust(w) for c, w in zip(cells, widths)) for cells in rows)
    return "\n".join(lines)


def _require_module(module, option, extra):
    try:
        __import__(module)
    except ImportError:
        raise ImportError(f"{option} needs {module}: pip install 'fastsoftmax[{extra}]'") \
            from None


class _dask_client:
    """Context manager: a distributed.Client for --scheduler/--workers, else None."""

    def __init__(self, scheduler, workers, timeout=5.0):
        self.scheduler, self.workers, self.timeout = scheduler, workers, timeout
        self.client = self.cluster = None

    def __enter__(self):
        if self.scheduler is None and self.workers is None:
            return None
        opt = "--scheduler" if self.scheduler is not None else "--workers"
        try:
            import distributed
        except ImportError:
            _fail(f"{opt} needs dask.distributed: pip install 'fastsoftmax[dask]'")
        if self.scheduler is not None:
            from .backends.dask import connect
            try:
                self.client = connect(self.scheduler, timeout=f"{self.timeout}s")
            except ValueError as e:
                _fail(f"--scheduler: {e}")
        else:
            self.cluster = distributed.LocalCluster(n_workers=self.workers,
                                                    threads_per_worker=1,
                                                    dashboard_address=":0")
            self.client = distributed.Client(self.cluster)
        return self.client

    def __exit__(self, *exc):
        if self.client is not None:
            self.client.close()
        if self.cluster is not None:
            self.cluster.close()
        return False


# --------------------------------------------------------------------------
# summarize

@cli.command()
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--axis", default="-1", show_default=True,
              help="The softmax axis: an int, or comma-separated ints.")
@click.option("--target", default="argmax", show_default=True,
              help="argmax, a class index, or a .npy file of integer labels.")
@click.option("--nan-policy", type=NAN_POLICY, default="raise",
              show_default=True, help="Rows with NaN/+inf: error, or skip and count.")
@click.option("--backend", type=BACKEND, default="auto", show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the statistics as JSON.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
def summarize(file, axis, target, nan_policy, backend, as_json, quiet):
    """Statistics of softmax over the rows of your own logits (a .npy file).

    The file is memory-mapped, never loaded whole: it may exceed memory.
    """
    import numpy as np

    from . import api
    x = _load_npy(file, "FILE")
    try:
        ax = tuple(int(a) for a in axis.split(",")) if "," in axis else int(axis)
    except ValueError:
        _fail(f"--axis {axis!r}: an int or comma-separated ints")
    tgt = parse_value(target)
    if isinstance(tgt, str) and tgt != "argmax":
        if tgt in ("random", "sampled"):
            _fail(f"--target {tgt}: needs random numbers; give labels as a .npy file instead")
        tgt = np.asarray(_load_npy(tgt, "--target"))
    elif isinstance(tgt, (bool, float)):
        _fail(f"--target {target!r}: argmax, a class index or a .npy file of labels")
    # a bar on stderr for files that take seconds
    progress = x.size >= BIG_FILE_LOGITS and not quiet
    _NAMES["x"] = file
    call = _user_call(api.prepare_summarize, x, target=tgt, axis=ax, nan_policy=nan_policy,
                      backend=backend, progress=progress)
    s = call.run()
    if as_json:
        d = dict(file=os.path.abspath(file), shape=list(x.shape), dtype=str(x.dtype),
                 samples=s.samples, skipped=s.skipped,
                 observables={name: s[name].to_dict() for name in s.keys()},
                 summary=s.to_dict())
        click.echo(dumps(d))
    else:
        click.echo(f"{file}: shape {tuple(x.shape)}, {x.dtype}, softmax over axis {ax}, "
                   f"target {target}: {s.samples:,} rows" +
                   (f", {s.skipped:,} skipped (NaN/+inf or no finite logit)" if s.skipped else ""))
        click.echo("\n".join(repr(s).split("\n")[1:]))


def _load_npy(path, what):
    import numpy as np
    if not os.path.exists(path):
        _fail(f"{what} {path}: no such file")
    if os.path.isdir(path):
        _fail(f"{what} {path}: is a directory")
    try:
        with open(path, "rb") as f:
            magic = f.read(6)
    except OSError as e:
        _fail(f"{what} {path}: cannot be read ({e.strerror})")
    if magic[:4] == b"PK\x03\x04":
        _fail(f"{what} {path}: holds several arrays (.npz); give one .npy array")
    if magic != b"\x93NUMPY":
        ext = os.path.splitext(path)[1].lower()
        hint = (f"; convert a text table with numpy.save('x.npy', numpy.loadtxt({path!r}, "
                "delimiter=','))" if ext in (".csv", ".txt", ".tsv") else "")
        _fail(f"{what} {path}: a .npy file is expected (numpy.save writes one), "
              f"this is not one{hint}")
    try:
        a = np.load(path, mmap_mode="r", allow_pickle=False)
    except (ValueError, OSError, EOFError) as e:
        _fail(f"{what} {path}: not a readable .npy array ({str(e).splitlines()[0]})")
    if not isinstance(a, np.ndarray):
        _fail(f"{what} {path}: holds several arrays (.npz); give one .npy array")
    return a


# --------------------------------------------------------------------------
# audit

@cli.command()
@click.option("--impl", "-i", required=True, metavar="NAME|MODULE:FUNCTION",
              help="numpy-naive, scipy, torch, jax, or module:function.")
@click.option("--kind", "-k", type=click.Choice(_audits.KINDS), default="softmax",
              show_default=True)
@click.option("--dtype", type=click.Choice(_audits.DTYPES), default="float32",
              show_default=True)
@click.option("--framework", type=click.Choice(_audits.FRAMEWORKS), default=None,
              help="The array type the implementation receives (default: its own, or "
                   "inferred from a module:function).")
@click.option("--device", default=None, help="Where the framework puts the logits (cuda:0).")
@click.option("--case", "case_names", multiple=True, metavar="NAME",
              help="A case of the battery (repeatable; default: all).")
@click.option("--seed", type=Seed(), default=0, show_default=True)
@click.option("--max-ulp", type=float, default=_audits.DEFAULT_MAX_ULP, show_default=True,
              help="The pass bound, in units of the error bound.")
@click.option("--out", "-o", type=click.Path(file_okay=False), default=None,
              help="Directory for audit.csv, audit.parquet and audit.png (made if missing).")
def audit(impl, kind, dtype, framework, device, case_names, seed, max_ulp, out):
    """Audit a softmax, log-softmax or cross-entropy implementation against
    the exact values; exit 0 when every case passes, 1 when one does not.

    Errors are counted in units of the max-shifted algorithm's first-order
    bound u (1 + ceil(log2 n) + |x_j - m| + sum_i p_i |x_i - m|) (plus
    |log p_j| for log outputs), u the dtype's unit roundoff.
    """
    if not (max_ulp > 0 and math.isfinite(max_ulp)):
        _fail(f"--max-ulp {max_ulp}: a positive number")
    if out is not None and os.path.exists(out) and not os.path.isdir(out):
        _fail(f"--out {out}: exists and is not a directory")
    if out is not None:
        _user_call(_require_module, "pandas", "--out", "dataframe")
        _user_call(_require_module, "matplotlib", "--out", "plot")
    prepared = _user_call(_audits.prepare, impl, kind=kind, dtype=dtype, framework=framework,
                          device=device, cases=list(case_names) or None, seed=seed)
    rep = prepared.run()
    click.echo(rep.table(max_ulp=max_ulp))
    click.echo(f"implementation {rep.seconds_implementation:.2f} s, reference and figures "
               f"{rep.seconds_reference:.2f} s")
    if out is not None:
        os.makedirs(out, exist_ok=True)
        df = rep.to_frame(max_ulp=max_ulp)
        df.to_csv(os.path.join(out, "audit.csv"), index=False)
        written = ["audit.csv"]
        try:
            df.to_parquet(os.path.join(out, "audit.parquet"), index=False)
            written.append("audit.parquet")
        except ImportError:
            pass
        rep.plot(os.path.join(out, "audit.png"), max_ulp=max_ulp)
        written.append("audit.png")
        click.echo(f"wrote {', '.join(written)} to {out}")
    return 0 if rep.passed(max_ulp) else 1


# --------------------------------------------------------------------------
# info

@cli.command()
@click.option("--json", "as_json", is_flag=True)
def info(as_json):
    """Versions, threads, threading layer, the CPU (model, vector units, the
    kernels' vector width), CUDA and the compile cache."""
    d = collect_info()
    if as_json:
        click.echo(json.dumps(d, indent=1))
        return
    w = max(map(len, d))
    for k, v in d.items():
        click.echo(f"{k:<{w}}  {v}")


def collect_info():
    import platform

    import numba
    import numpy as np

    import fastsoftmax as fs

    from ._kernels import features as _cpu
    from .backends import cuda_status
    fs.softmax(np.zeros((4, 3)))          # a tiny parallel call: the threading layer starts
    layer: str
    try:
        layer = numba.threading_layer()
    except ValueError:
        layer = "not initialised"
    d = {"fastsoftmax": fs.__version__, "numba": numba.__version__, "numpy": np.__version__,
         "python": platform.python_version(), "threads": numba.get_num_threads(),
         "threading layer": layer}
    if layer == "workqueue":
        d["threading layer"] = ("workqueue (not safe for concurrent callers: calls are "
                                "serialised; install an OpenMP or TBB layer)")
    t = _cpu.target()
    d["cpu"] = _cpu.model_name()
    d["cpu target"] = f"{t.name} (numba's LLVM target; features from {t.source})"
    d["vector units"] = _cpu.vector_units(t)
    d["vector width"] = _cpu.vector_width(t)
    d["kernel vector width"] = _kernel_width()
    ok, why = cuda_status()                # never raises
    d["cuda"] = "available" if ok else "not available: " + " ".join(str(why).split())
    d["numba cache"] = _cache_dir()
    return d


def _kernel_width():
    """What fastsoftmax's compiled kernels use (their machine code), and the
    FASTSOFTMAX_VECTOR_WIDTH knob that chose it."""
    from ._kernels import features as _cpu
    try:
        from .backends import cpu
        bits, detail = cpu.kernel_vector_width()
    except Exception as e:                 # never break info
        return f"unknown ({type(e).__name__}: {e})"
    return (f"{bits}-bit (FASTSOFTMAX_VECTOR_WIDTH={_cpu.VECTOR_WIDTH}; "
            f"measured: {detail})")


def _cache_dir():
    import numba
    cfg: Any = numba.config                 # its settings are set at runtime (untyped)
    env = cfg.CACHE_DIR
    try:
        from .backends import cpu
        path = cpu.observe_chunk._cache._cache_path
        return path + (" (NUMBA_CACHE_DIR)" if env else "")
    except Exception:
        pass
    if env:
        return f"{env} (NUMBA_CACHE_DIR)"
    return "__pycache__ next to the fastsoftmax sources (or numba's user cache if read-only)"


# --------------------------------------------------------------------------
# entry point

def main(argv=None):
    """Console entry point; returns the exit status."""
    args = sys.argv[1:] if argv is None else list(argv)
    _NAMES.clear()
    try:
        rv = cli.main(args=args, prog_name=PROG, standalone_mode=False)
    except click.exceptions.Exit as e:
        return e.exit_code
    except click.ClickException as e:
        sub = getattr(getattr(e, "ctx", None), "command_path", PROG) or PROG
        msg = " ".join(e.format_message().split())
        click.echo(f"{sub}: error: {msg}", err=True)
        return e.exit_code
    except (click.exceptions.Abort, KeyboardInterrupt):
        click.echo(f"{PROG}: interrupted", err=True)
        return 130
    except Exception as e:     # a failure while running (arguments were checked before)
        sub = " ".join([PROG] + [a for a in args[:1] if not a.startswith("-")])
        msg = to_flags(" ".join(str(e).split())) or type(e).__name__
        click.echo(f"{sub}: error: {msg}", err=True)
        if os.environ.get("FASTSOFTMAX_TRACEBACK"):
            raise
        return 1
    # a closed stdout (fastsoftmax ... | head) needs nothing here: click turns
    # the EPIPE into exit status 1 and silences the final flush
    return rv if isinstance(rv, int) else 0
