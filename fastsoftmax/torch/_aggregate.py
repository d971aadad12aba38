"""The probe's figures: per (module, head) merged Summaries (full mode) or the
largest logit and the row count on the device (light mode), their frames
and their merge over calls, snapshots and data-parallel ranks."""
from __future__ import annotations

import itertools
import math
from typing import Any

import torch

from .. import api as _api
from ..summary import Summary
from ._logits import AttentionSpec, Blocks

# On the CPU a chunk is filled in blocks of about 1M logits (8 MiB): smaller
# blocks keep the scale/mask passes in cache but multiply the torch calls,
# each a parallel region that waits for every thread (measured 2.5x slower
# at 2**17 on two cores shared with other work); a GPU takes one block per
# chunk (fewer launches).
CPU_BLOCK_LOGITS = 1 << 20

BASE_COLUMNS = ["calls", "rows", "skipped", "nonfinite", "max_logit"]
LIGHT_COLUMNS = ["calls", "rows", "max_logit"]


# --------------------------------------------------------------------------
# every call into fastsoftmax goes through these two functions, so that the
# engine can later be swapped for a streaming accumulator in one place

def summarize_chunk(logits: torch.Tensor, target, thresholds, backend: str,
                    config: dict) -> Summary:
    """Summary of the rows of a 2-d float64 tensor of logits (CPU: a NumPy
    view, no copy; CUDA: the device tensor itself)."""
    if logits.device.type == "cuda":
        x = logits.cpu().numpy() if backend == "cpu" else logits
    else:
        x = logits.numpy()
    s = _api.summarize(x, target=target, thresholds=thresholds, nan_policy="omit",
                       backend=backend)
    # one fixed config, so that merged summaries keep it instead of nesting
    s.config = dict(config)
    return s


def merge(a: Summary | None, b: Summary | None) -> Summary | None:
    """``a.merge(b)``, either side possibly None."""
    if a is None or b is None:
        return b if a is None else a
    return a.merge(b)


class HeadStats:
    """What the probe keeps per (module, head): the merged Summary and what
    the Summary does not carry (light mode: device tensors only)."""

    __slots__ = ("summary", "calls", "max_logit", "nonfinite", "rows")

    def __init__(self) -> None:
        self.summary: Summary | None = None     # set by the first chunk
        self.calls = 0
        self.max_logit: Any = -math.inf         # light mode: a 0-d device tensor
        self.nonfinite = 0
        self.rows: Any = 0                      # light mode: a 0-d device tensor

    def to_state(self) -> dict:
        """A picklable copy (Summaries as dicts, tensors as numbers)."""
        return {"summary": None if self.summary is None else self.summary.to_dict(),
                "calls": self.calls, "max_logit": float(self.max_logit),
                "nonfinite": self.nonfinite, "rows": int(self.rows)}

    def add_state(self, d: dict) -> None:
        """Merge a :meth:`to_state` of another rank into this one."""
        s = None if d["summary"] is None else Summary.from_dict(d["summary"])
        self.summary = merge(self.summary, s)
        self.calls = max(self.calls, d["calls"])     # every rank runs the same calls
        self.max_logit = max(float(self.max_logit), d["max_logit"])
        self.nonfinite += d["nonfinite"]
        self.rows = int(self.rows) + d["rows"]


class Aggregator:
    """Runs one call's heads through the summaries and keeps the figures.

    Parameters
    ----------
    target, thresholds, backend : as for AttentionProbe
    chunk_logits : int
        Logits materialised at most at a time (or one row of keys).
    light : bool
        The light mode: the largest logit and the row count per head, in the
        model's dtype on its device, no Summary.
    """

    def __init__(self, target, thresholds, backend: str, chunk_logits: int,
                 light: bool) -> None:
        self.target, self.thresholds, self.backend = target, thresholds, backend
        self.chunk_logits, self.light = chunk_logits, light
        self.config = {"source": "fastsoftmax.torch", "target": target,
                       "thresholds": list(thresholds)}
        self.stats: dict[tuple[str, int], HeadStats] = {}
        self.calls: dict[str, int] = {}
        self.peak_chunk_logits = 0

    def device(self, t: torch.Tensor) -> torch.device:
        """Where a call's logits are built: the tensor's own device for CPU and
        CUDA tensors (never "is there a GPU on this machine"); in full mode
        other devices' tensors are built on the CPU (the kernels' targets)."""
        if t.device.type in ("cpu", "cuda") or self.light:
            return t.device
        if self.backend == "cuda":
            return torch.device("cuda")
        return torch.device("cpu")

    # --------------------------------------------------------------- a call
    def add_call(self, name: str, spec: AttentionSpec, count: bool = True,
                 query_mask: torch.Tensor | None = None) -> None:
        """Summarise one attention call into the figures of ``name``."""
        src = spec.scores if spec.scores is not None else spec.q
        assert src is not None
        with torch.no_grad():
            dev = self.device(src)
            dtype = src.dtype if self.light and src.is_floating_point() else torch.float64
            blocks = Blocks(spec, dev, dtype, query_mask)
            self.calls[name] = self.calls.get(name, 0) + int(count)
            if self.light:
                self._light(name, blocks, count)
            else:
                self._full(name, blocks, count)

    def _rows(self, blocks: Blocks):
        batches = list(itertools.product(*(range(n) for n in blocks.lead)))
        return batches, len(batches) * blocks.L

    def _full(self, name, blocks: Blocks, count):
        batches, nrows = self._rows(blocks)
        H, L, S = blocks.H, blocks.L, blocks.S
        if nrows == 0:
            return
        if isinstance(self.target, int) and self.target >= S:
            raise ValueError(f"target={self.target} is out of range for the {S} keys of "
                             f"the attention call {name!r}")
        if S == 0:
            # no key at all: every row is skipped, as a row whose keys are all masked
            empty = torch.full((nrows, 1), -math.inf, dtype=torch.float64)
            for h in range(H):
                s = summarize_chunk(empty, "argmax", self.thresholds, self.backend,
                                    self.config)
                self._add(name, h, s, -math.inf, 0, count)
            return
        dev = blocks.device
        cap = max(1, min(nrows, self.chunk_logits // S))
        blk = cap if dev.type == "cuda" else max(1, min(cap, CPU_BLOCK_LOGITS // S))
        buf = torch.empty((cap, S), dtype=torch.float64, device=dev)
        self.peak_chunk_logits = max(self.peak_chunk_logits, cap * S)
        for h in range(H):
            mx = -math.inf
            nonfinite = 0
            summary = None
            filled = 0
            for b in batches:
                l0 = 0
                while l0 < L:
                    n = min(L - l0, cap - filled, blk)
                    out = buf[filled:filled + n]
                    blocks.fill(out, b, h, l0, n)
                    m = float(out.amax())
                    if not m < math.inf:
                        # NaN or +inf somewhere (amax propagates NaN): count those
                        # rows (summarize skips them), take the largest finite logit
                        nonfinite += int((out.isnan() | out.isposinf()).any(dim=1).sum())
                        fin = out[torch.isfinite(out)]
                        m = float(fin.max()) if fin.numel() else -math.inf
                    mx = max(mx, m)
                    filled += n
                    l0 += n
                    if filled == cap:
                        summary = merge(summary, self._chunk(buf))
                        filled = 0
            if filled:
                summary = merge(summary, self._chunk(buf[:filled]))
            self._add(name, h, summary, mx, nonfinite, count)

    def _light(self, name, blocks: Blocks, count):
        """Per head the largest logit and the rows with a finite one, kept as
        device tensors: no host synchronisation in the forward."""
        batches, nrows = self._rows(blocks)
        H, L, S = blocks.H, blocks.L, blocks.S
        if nrows == 0 or S == 0:
            return
        if blocks.batched_ok():
            mx, rows = self._light_batched(blocks, batches)
            for h in range(H):
                st = self._head(name, h)
                st.max_logit = mx[h] if isinstance(st.max_logit, float) else torch.maximum(
                    st.max_logit, mx[h])
                st.rows = rows[h] if isinstance(st.rows, int) else st.rows + rows[h]
                st.calls += int(count)
            return
        cap = max(1, min(L, self.chunk_logits // S))
        buf = torch.empty((cap, S), dtype=blocks.dtype, device=blocks.device)
        self.peak_chunk_logits = max(self.peak_chunk_logits, cap * S)
        ninf = torch.tensor(-math.inf, dtype=blocks.dtype, device=blocks.device)
        for h in range(H):
            mx = ninf
            rows = torch.zeros((), dtype=torch.int64, device=blocks.device)
            for b in batches:
                for l0 in range(0, L, cap):
                    n = min(cap, L - l0)
                    out = buf[:n]
                    blocks.fill(out, b, h, l0, n)
                    rmax = out.amax(dim=1)
                    mx = torch.maximum(mx, rmax.amax())
                    rows += (rmax > -math.inf).sum()
            st = self._head(name, h)
            st.max_logit = mx if isinstance(st.max_logit, float) else torch.maximum(
                st.max_logit, mx)
            st.rows = rows if isinstance(st.rows, int) else st.rows + rows
            st.calls += int(count)

    def _light_batched(self, blocks: Blocks, batches):
        """The light mode a group of heads at a time (one matmul, one mask
        pass, one max per group): per head the largest logit and the rows."""
        H, L, S = blocks.H, blocks.L, blocks.S
        dev, dt = blocks.device, blocks.dtype
        hc = max(1, min(H, self.chunk_logits // max(1, L * S)))
        self.peak_chunk_logits = max(self.peak_chunk_logits, hc * L * S)
        mx = torch.full((H,), -math.inf, dtype=dt, device=dev)
        rows = torch.zeros((H,), dtype=torch.int64, device=dev)
        for b in batches:
            for h0 in range(0, H, hc):
                h1 = min(H, h0 + hc)
                rmax = blocks.row_max(b, h0, h1)          # (h1 - h0, L)
                mx[h0:h1] = torch.maximum(mx[h0:h1], rmax.amax(dim=1))
                rows[h0:h1] += (rmax > -math.inf).sum(dim=1)
        return mx, rows

    def _chunk(self, logits):
        return summarize_chunk(logits, self.target, self.thresholds, self.backend,
                               self.config)

    def _head(self, name, head) -> HeadStats:
        st = self.stats.get((name, head))
        if st is None:
            st = self.stats[(name, head)] = HeadStats()
        return st

    def _add(self, name, head, summary, max_logit, nonfinite, new_call):
        st = self._head(name, head)
        st.summary = merge(st.summary, summary)
        st.calls += int(new_call)
        st.max_logit = max(st.max_logit, max_logit)
        st.nonfinite += nonfinite

    # --------------------------------------------------------------- frames
    def records(self, by: str) -> list[dict]:
        """One flat record per (module, head) or per module (heads merged)."""
        groups: dict[Any, list[HeadStats]] = {}
        for (module, head), st in self.stats.items():
            groups.setdefault((module, head) if by == "head" else module, []).append(st)
        out = []
        for key, sts in groups.items():
            rec: dict[str, Any] = ({"module": key[0], "head": key[1]} if by == "head"
                                   else {"module": key, "heads": len(sts)})
            rec["calls"] = max(st.calls for st in sts)
            if self.light:
                rec["rows"] = sum(int(st.rows) for st in sts)
                rec["max_logit"] = max(float(st.max_logit) for st in sts)
            else:
                s = None
                for st in sts:
                    s = merge(s, st.summary)
                assert s is not None
                rec.update(rows=int(s.samples), skipped=int(s.skipped),
                           nonfinite=sum(st.nonfinite for st in sts),
                           max_logit=float(max(st.max_logit for st in sts)))
                rec.update(s.record())
            out.append(rec)
        return out

    def columns(self, by: str) -> list[str]:
        """The frame's columns: ``module``, ``head`` (or ``heads``), the base
        columns, then (full mode) ``Summary.record_columns``."""
        key = ["module", "head" if by == "head" else "heads"]
        if self.light:
            return key + LIGHT_COLUMNS
        return key + BASE_COLUMNS + Summary.record_columns(self.thresholds)

    def to_state(self) -> dict:
        """Everything, picklable: what one rank sends the others."""
        return {"stats": {k: v.to_state() for k, v in self.stats.items()},
                "calls": dict(self.calls)}

    def add_state(self, state: dict) -> None:
        """Merge another rank's :meth:`to_state` into these figures."""
        for key, d in state["stats"].items():
            self._head(*key).add_state(d)
        for name, c in state["calls"].items():
            self.calls[name] = max(self.calls.get(name, 0), c)
