"""The simulator's view of the cluster's gpushare GPUs, for the GPU metrics: per GPU the milli-GPU left, per node
the milli-cpu left, moved by every bind and every pod that stops holding its node (``engine.py``), and the
cluster's fragmentation as the FGD paper measures it (``api/gpufrag.py: node_frag`` under the workload's task
mix), recomputed only on the nodes that changed since it was last asked for.

A GPU's milli-GPU is its gpushare memory over the memory of one GPU x 1000 (the openb mapping gives each GPU 1000,
``sim/alibaba.py``).  A pod holds, on each GPU of its ``volcano.sh/gpu-index`` annotation (written by deviceshare
when it chose them), its ``volcano.sh/gpu-memory``, or the whole GPU for a ``volcano.sh/gpu-number`` pod; a pod
without the annotation (no deviceshare in the conf) is on no GPU here, and the fragmentation is then not known.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from pyvolcano.api import devices as dv
from pyvolcano.api import gpufrag
from pyvolcano.api.job_info import TaskInfo
from pyvolcano.api.quantity import parse_quantity
from pyvolcano.errors import QuantityError
from pyvolcano.framework.incremental import deltas

MILLI = gpufrag.MILLI
#: a float times this is an integer (the smallest positive double is 2**-1074): per-node fragmentation values are
#: summed exactly as integers in these units (``GpuLedger.frag``)
_EXACT = 1 << 1074


#: node states whose fragmentation ``GpuLedger.frag`` remembers before it starts again
_STATES = 1 << 16


def _exact(x: float) -> int:
    """``x`` (finite) in units of 2**-1074, exactly."""
    n, d = x.as_integer_ratio()
    return n * (_EXACT // d)


def _amount(alloc: dict[str, Any], name: str) -> int:
    try:
        return int(parse_quantity(alloc.get(name, 0)))
    except QuantityError:
        return 0


class GpuLedger:
    """Per-GPU milli-GPU left on the cluster's gpushare nodes, with the pods holding them."""

    def __init__(self, nodes: list[dict[str, Any]], mix: gpufrag.TaskMix | None) -> None:
        self.mix = mix
        names, gpus, each, cpu, models = [], [], [], [], []
        for n in nodes:
            alloc = (n.get("status") or {}).get("allocatable") or {}
            g = _amount(alloc, dv.GPU_NUMBER)
            names.append(n["metadata"]["name"])
            gpus.append(g)
            each.append(_amount(alloc, dv.GPU_MEMORY) // g if g > 0 else 0)
            try:
                cpu.append(int(parse_quantity(alloc.get("cpu", 0)) * 1000))
            except QuantityError:
                cpu.append(0)
            models.append(str(((n.get("metadata") or {}).get("labels") or {}).get(gpufrag.GPU_MODEL_LABEL, "")))
        self.pos = {name: i for i, name in enumerate(names)}
        self.count = np.array(gpus, dtype=np.int64)
        #: one GPU's memory per node (the milli-GPU of a share is its memory x 1000 / this)
        self.each = np.array(each, dtype=np.int64)
        width = int(self.count.max()) if len(self.count) else 0
        #: (nodes, GPUs): milli-GPU left; a node's columns past its GPU count stay 0
        self.left = np.where(np.arange(max(width, 1))[None, :] < self.count[:, None], MILLI, 0).astype(np.int64)
        self.cpu_left = np.array(cpu, dtype=np.int64)
        self.total = int(MILLI * self.count.sum())
        self.models = models
        #: pod -> (node, [(gpu, milli)], milli-cpu)
        self.held: dict[str, tuple[int, list[tuple[int, int]], int]] = {}
        self.frag_known = True
        self._frag = np.zeros(len(names))
        #: the exact sum of ``_frag`` in units of 2**-1074 (``_exact``), moved by the rows recomputed; None: not
        #: kept (a value was not finite), summed afresh with ``math.fsum``
        self._frag_sum: int | None = 0
        #: the cluster's fragmentation as last returned by ``frag`` (None: to compute)
        self._frag_out: float | None = None
        self._dirty: set[int] = set(range(len(names)))
        #: (GPU model, milli-cpu left, milli-GPU left per GPU as bytes) -> that node state's fragmentation
        self._states: dict[tuple[str, int, bytes], float] = {}
        self._access = mix.access(models) if mix is not None else None
        #: (time, milli-GPU allocated, fragmentation in GPUs or None) at every time the holdings changed
        #: (``record``): the exact step functions the GPU series and time averages are taken from
        self.series: list[tuple[float, int, float | None]] = []
        self._moved = True

    @property
    def allocated(self) -> int:
        """Milli-GPU held by the pods on the nodes."""
        return self.total - int(self.left.sum())

    def hold(self, task: TaskInfo, node: str) -> None:
        """``task`` was bound to ``node``: its GPUs (from the annotation deviceshare wrote) and cpu are taken."""
        i = self.pos.get(node)
        if i is None or task.uid in self.held:
            return
        cpu = int(task.resreq[0])
        parts: list[tuple[int, int]] = []
        if self.count[i] > 0 and self.each[i] > 0:
            mem, num = dv.gpushare_request(task.pod)
            idx = (task.pod_annotations or {}).get(dv.GPU_INDEX)
            if idx and (mem > 0 or num > 0):
                milli = mem * MILLI // int(self.each[i]) if mem > 0 else MILLI
                try:
                    ids = dv.parse_gpu_index(str(idx))
                except ValueError:
                    ids = []
                parts = [(g, milli) for g in ids if 0 <= g < self.count[i]]
            elif mem > 0 or num > 0:
                self.frag_known = False  # on the node's GPUs, but which is not known
        for g, milli in parts:
            self.left[i, g] -= milli
        self.cpu_left[i] -= cpu
        self.held[task.uid] = (i, parts, cpu)
        self._dirty.add(i)
        self._moved = True

    def release(self, uid: str) -> None:
        """The pod ``uid`` no longer holds its node (finished, deleted)."""
        got = self.held.pop(uid, None)
        if got is None:
            return
        i, parts, cpu = got
        for g, milli in parts:
            self.left[i, g] += milli
        self.cpu_left[i] += cpu
        self._dirty.add(i)
        self._moved = True

    def record(self, now: float) -> None:
        """A point of ``series`` at ``now`` if a pod was bound or left since the last one (several changes at one
        time make one point): the simulator calls it after each session and after each batch of events, so a pod
        finishing while no session runs still shows (the session samples alone missed those stretches)."""
        if not self._moved:
            return
        self._moved = False
        point = (now, self.allocated, self.frag())
        if self.series and self.series[-1][0] == now:
            self.series[-1] = point
        else:
            self.series.append(point)

    def frag(self) -> float | None:
        """The cluster's fragmentation in GPUs (FGD's measure, milli-GPU / 1000), None without a task mix or when a
        GPU pod's GPUs are not known; recomputed on the nodes changed since the last call."""
        if self.mix is None or self._access is None or not self.frag_known:
            return None
        if self._dirty:
            # a handful of nodes per call (the pods bound or gone since the last): read and written one by one
            rows = list(self._dirty)
            self._dirty.clear()
            frag, count = self._frag, self.count
            before = [float(frag[i]) for i in rows]
            has = [i for i in rows if count[i] > 0]
            for i in rows:
                frag[i] = 0.0
            if has:
                # a node's value depends on its GPU model and what it has left alone: a state seen before (a node
                # emptied, the same pod come and gone) gets the value worked out then, the others are worked out
                memo = self._states
                if len(memo) > _STATES:
                    memo.clear()
                keys = [(self.models[i], int(self.cpu_left[i]), self.left[i].tobytes()) for i in has]
                got = [memo.get(k) for k in keys]
                todo = [j for j, v in enumerate(got) if v is None]
                if todo:
                    rows_todo = np.array([has[j] for j in todo], dtype=np.int64)
                    fresh = gpufrag.node_frag(self.mix, self.cpu_left[rows_todo], self.left[rows_todo],
                                              self._access[rows_todo]).tolist()
                    for j, v in zip(todo, fresh, strict=True):
                        got[j] = memo[keys[j]] = v
                for i, v in zip(has, got, strict=True):
                    frag[i] = v
                if deltas.CHECK:
                    at = np.array(has, dtype=np.int64)
                    assert frag[at].tobytes() == gpufrag.node_frag(
                        self.mix, self.cpu_left[at], self.left[at], self._access[at]).tobytes(), \
                        "GpuLedger.frag: a remembered node state"
            self._frag_out = None
            total = self._frag_sum
            if total is not None:
                try:
                    for old, now in zip(before, [float(frag[i]) for i in rows], strict=True):
                        total += _exact(now) - _exact(old)
                except (OverflowError, ValueError):  # an infinite or NaN value: fsum from here on
                    total = None
                self._frag_sum = total
        if self._frag_out is None:
            # the correctly rounded sum of the nodes' values, what ``math.fsum`` over them all gives: kept as an
            # exact integer moved by the changed nodes (int / int is correctly rounded), so a call costs what
            # changed, not the cluster's 1,500 nodes (a zero: fsum's, signed as it signs it)
            total = self._frag_sum
            self._frag_out = (total / _EXACT if total else math.fsum(self._frag.tolist())) / MILLI
        if deltas.CHECK:
            want = math.fsum(self._frag.tolist()) / MILLI
            assert self._frag_out == want or math.isnan(want), "GpuLedger.frag moved by the changed nodes"
        return self._frag_out
