"""The CPU the kernels are compiled for, read in one place: numba's target
(its LLVM name and features), the machine's model name, its vector units.

``_config`` picks the kernels' vector width from :func:`has_avx512`;
``fastsoftmax info`` and the benchmark header print :func:`model_name`,
:func:`target` and :func:`vector_units`, so a figure is never read without
its machine.
"""
from __future__ import annotations

import functools
import os
import platform
import subprocess
import sys
import warnings
from typing import Any, NamedTuple

__all__ = ["Target", "target", "has_avx512", "vector_bits", "vector_units", "vector_width",
           "model_name", "describe"]

# LLVM CPU names with AVX-512F: used only where numba's target is a CPU name
# whose features LLVM is left to choose (NUMBA_CPU_FEATURES="")
_AVX512_CPUS = ("skylake-avx512", "cascadelake", "cooperlake", "cannonlake", "icelake",
                "tigerlake", "rocketlake", "sapphirerapids", "emeraldrapids",
                "graniterapids", "diamondrapids", "znver4", "znver5", "x86-64-v4")
_AVX2_CPUS = ("haswell", "broadwell", "skylake", "kabylake", "coffeelake", "cometlake",
              "alderlake", "raptorlake", "meteorlake", "arrowlake", "lunarlake",
              "gracemont", "znver1", "znver2", "znver3", "x86-64-v3")

# the vector features a reader of a benchmark wants to see, in this order
_UNITS = (("sse4.2", "SSE4.2"), ("avx", "AVX"), ("avx2", "AVX2"), ("fma", "FMA"),
          ("avx512f", "AVX-512F"), ("avx512dq", "AVX-512DQ"), ("avx512bw", "AVX-512BW"),
          ("avx512vl", "AVX-512VL"), ("avx512vnni", "AVX-512VNNI"),
          ("avx512fp16", "AVX-512FP16"), ("neon", "NEON"), ("sve", "SVE"), ("sve2", "SVE2"))


class Target(NamedTuple):
    """numba's CPU target: the LLVM CPU name, its enabled features (without
    the ``+``) and where the features come from (``"host"``, ``"NUMBA_CPU_FEATURES"``,
    ``"the CPU name"``)."""

    name: str
    features: frozenset[str]
    source: str


def target() -> Target:
    """numba's CPU target, by numba's own rule: ``NUMBA_CPU_NAME`` or the
    host's name; ``NUMBA_CPU_FEATURES`` when set (empty: the CPU name's own
    features, as LLVM defines them) else the host's features, whatever the
    name.  Never raises: a broken llvmlite gives ``Target("unknown", {}, why)``."""
    try:
        import llvmlite.binding as llvm
        from numba.core import config
        cfg: Any = config               # its settings are set at runtime (untyped)
        name = str(cfg.CPU_NAME or llvm.get_host_cpu_name())
        feats = cfg.CPU_FEATURES
        source = "NUMBA_CPU_FEATURES"
        if feats is None:
            feats, source = llvm.get_host_cpu_features().flatten(), "host"
    except Exception as e:          # pragma: no cover - a broken llvmlite install
        return Target("unknown", frozenset(), f"unknown ({type(e).__name__}: {e})")
    if not str(feats).strip():
        return Target(name, _name_features(name), "the CPU name")
    return Target(name, frozenset(f[1:] for f in str(feats).split(",") if f.startswith("+")),
                  source)


def _name_features(name: str) -> frozenset[str]:
    """The vector features an LLVM CPU name implies (the ones this module
    reports; llvmlite does not list a named CPU's features)."""
    if name.startswith(_AVX512_CPUS):
        return frozenset({"sse4.2", "avx", "avx2", "fma", "avx512f", "avx512dq", "avx512bw",
                          "avx512vl"})
    if name.startswith(_AVX2_CPUS):
        return frozenset({"sse4.2", "avx", "avx2", "fma"})
    if name in ("x86-64", "generic", "x86-64-v2"):
        return frozenset({"sse4.2"} if name == "x86-64-v2" else set())
    return frozenset()


def has_avx512() -> bool:
    """Whether numba's CPU target has AVX-512F."""
    return "avx512f" in target().features


def vector_bits(t: Target | None = None) -> int | None:
    """The widest vector registers of the target: 512, 256, 128, or None
    where unknown."""
    t = target() if t is None else t
    if "avx512f" in t.features:
        return 512
    if {"avx2", "avx"} & t.features:
        return 256
    if {"sse2", "neon", "asimd"} & t.features or \
            t.name.startswith(("apple", "cortex", "neoverse", "x86-64", "generic")):
        return 128
    return None


def vector_units(t: Target | None = None) -> str:
    """The target's vector units in words: ``"SSE4.2, AVX, AVX2, FMA"``
    (with where the features come from unless they are the host's)."""
    t = target() if t is None else t
    units = [label for feat, label in _UNITS if feat in t.features]
    text = ", ".join(units) if units else "none known"
    if t.source != "host":
        text += f" (features from {t.source})"
    return text


def vector_width(t: Target | None = None) -> str:
    """The target's widest vectors in words: ``"256-bit SIMD: 8 float32 / 4
    float64 lanes"``."""
    t = target() if t is None else t
    w = vector_bits(t)
    if not w:
        return "unknown"
    text = f"{w}-bit SIMD: {w // 32} float32 / {w // 64} float64 lanes"
    if "avx512f" in t.features and "prefer-256-bit" in t.features:
        text += " (LLVM prefers 256-bit vectors on this CPU)"
    return text


def describe() -> str:
    """One line naming the machine: ``"AMD EPYC 9R45 (LLVM znver5): SSE4.2,
    AVX, AVX2, FMA, AVX-512F, ...; 512-bit"``."""
    t = target()
    w = vector_bits(t)
    return f"{model_name()} (LLVM {t.name}): {vector_units(t)}" + (f"; {w}-bit" if w else "")


@functools.lru_cache(maxsize=None)
def model_name() -> str:
    """The CPU's model as the system names it: ``model name`` of
    /proc/cpuinfo (Linux), ``machdep.cpu.brand_string`` (macOS), else
    :func:`platform.processor` or :func:`platform.machine`."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith(("model name", "Model", "Hardware")) and ":" in line:
                    text = line.split(":", 1)[1].strip()
                    if text:
                        return text
    except OSError:
        pass
    if sys.platform == "darwin":
        try:
            r = subprocess.run(["sysctl", "-n", "machdep.cpu.brand_string"],
                               capture_output=True, text=True, timeout=5, check=False)
            if r.stdout.strip():
                return r.stdout.strip()
        except (OSError, subprocess.SubprocessError):
            pass
    return platform.processor() or platform.machine() or os.environ.get(
        "PROCESSOR_IDENTIFIER", "unknown")


# Vector width of fastsoftmax's own kernels: FASTSOFTMAX_VECTOR_WIDTH =
# "auto" (default: 512-bit where the CPU has AVX-512F, else the compiler's
# choice), "512", "256" or "128" (xmm code on any x86-64 with AVX: the
# reproducibility test's narrow build).  Applied as an LLVM function attribute on the
# kernels only (``simd.vector_width``): numba's target for the user's other
# code is not changed.  LLVM prefers 256-bit vectors on Intel CPUs even with
# AVX-512; 512-bit measured +20-90% on the hot kernels.  The results are the
# same bits at any width.  ``fastsoftmax info`` reports the width the
# compiled kernels really use.
VECTOR_WIDTH_CHOICES = ("auto", "128", "256", "512")


def _resolve_vector_width(setting):
    if setting not in VECTOR_WIDTH_CHOICES:
        warnings.warn(f"FASTSOFTMAX_VECTOR_WIDTH={setting!r} is not one of "
                      f"{VECTOR_WIDTH_CHOICES}; using 'auto'", RuntimeWarning, stacklevel=2)
        setting = "auto"
    if setting in ("128", "256"):
        return setting, int(setting)
    if has_avx512():           # numba's target, by numba's rule (below)
        return setting, 512
    return setting, 0          # no AVX-512: the compiler's default (256-bit on AVX2)


VECTOR_WIDTH, KERNEL_VECTOR_WIDTH = _resolve_vector_width(
    os.environ.get("FASTSOFTMAX_VECTOR_WIDTH", "auto").strip().lower())
