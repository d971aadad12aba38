"""The package as a user imports it: importing compiles nothing and imports
no optional dependency; the public names are there."""
import subprocess
import sys

import fastsoftmax as fs
from helpers import subprocess_env

IMPORT_CLEAN = """
import sys
import fastsoftmax as fs
heavy = [m for m in ("fastsoftmax.backends.cpu", "fastsoftmax.backends.cuda._kernels",
                     "numba.cuda", "pandas", "torch", "dask", "matplotlib", "tqdm",
                     "click", "fastsoftmax.verify")
         if m in sys.modules]
assert not heavy, heavy
import fastsoftmax.sweeps, fastsoftmax.verify
import types
# fs.sweep is the plain function, never shadowed by its package; no module
# of the package is an instance of a replaced class
assert type(fastsoftmax.sweep) is types.FunctionType, fastsoftmax.sweep
assert fastsoftmax.sweep is fastsoftmax.sweeps.sweep
assert all(type(m) is types.ModuleType for k, m in sys.modules.items()
           if k.split(".")[0] == "fastsoftmax"), "a module with a replaced class"
assert isinstance(fastsoftmax.verify, types.ModuleType)
from fastsoftmax.backends import cpu
assert not cpu.observe_chunk.signatures, "compiled at import"
print("ok")
"""


def test_import_compiles_nothing_and_imports_no_extra():
    r = subprocess.run([sys.executable, "-c", IMPORT_CLEAN], capture_output=True, text=True,
                       env=subprocess_env())
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.strip() == "ok"


def test_public_names():
    import fastsoftmax.api as api
    for name in fs.__all__:
        assert hasattr(fs, name), name
    assert set(api.__all__) == {"softmax", "log_softmax", "observables", "summarize",
                                "simulate"}
    import importlib
    assert importlib.import_module("fastsoftmax.sweeps").sweep is fs.sweep
    assert fs.sweeps.__dict__["sweep"] is fs.sweep
