"""fgd: Fragmentation Gradient Descent (Weng et al., USENIX ATC '23; ``pkg/simulator/plugin/fgd_score.go`` of
hkust-adsl/kubernetes-scheduler-simulator), pyvolcano's own plugin, not Volcano's.

A task goes where it increases the cluster's GPU fragmentation least.  A node's fragmentation is the milli-GPU
left on it that the workload's typical tasks cannot use, in expectation (``api/gpufrag.py``).  The score of a node
is ``100 x sigmoid((frag before - frag after) / 1000)``, truncated (``calculateGpuShareFragExtendScore``): for a
share of one GPU, the best over the node's GPUs that hold it (the first such GPU among equals is the one the task
gets, ``allocateGpuIdBasedOnFGDScore``); for whole GPUs or no GPU, after taking the free GPUs with the lowest ids
(``NodeResource.Sub``, ``AllocateExclusiveGpuId``).  A node whose GPU model the task excludes scores 0.

Arguments: ``fgd.taskMix`` (``workload``, the default: the mix the simulator knows, ``Snapshot.task_mix``, else
the snapshot's; ``snapshot``: always the mix of the snapshot's pending and running tasks), ``fgd.weight``,
``fgd.tieBreak``, ``fgd.seed`` (``_gpushare.py``).
"""

from __future__ import annotations

from collections.abc import Hashable

import numpy as np

from pyvolcano.api import gpufrag as gf
from pyvolcano.api.gpufrag import MILLI, TaskClass, TaskMix
from pyvolcano.api.job_info import TaskInfo
from pyvolcano.api.types import TaskStatus
from pyvolcano.errors import ConfigError
from pyvolcano.framework.incremental.state import CarryKey
from pyvolcano.framework.registry import register_plugin
from pyvolcano.framework.session import Session
from pyvolcano.plugins._gpushare import MAX_SCORE, MAX_SPEC_CPU, MAX_SPEC_GPU, GpuPolicy, Nodes

WORKLOAD, SNAPSHOT = "workload", "snapshot"
#: the tasks whose classes make a snapshot's mix: pending and placed ones (not those leaving)
_COUNTED = frozenset({TaskStatus.Pending, TaskStatus.Allocated, TaskStatus.Pipelined, TaskStatus.Binding,
                      TaskStatus.Bound, TaskStatus.Running})
#: the last mix learnt from a snapshot, and the class counts it was made from
LEARNT: CarryKey[tuple[dict[TaskClass, float], TaskMix]] = CarryKey("fgd-learnt-mix")


def snapshot_mix(ssn: Session, classes: dict[str, TaskClass]) -> TaskMix | None:
    """The mix of the session's pending and running tasks (``GetTypicalPods`` over them); None without tasks."""
    counts: dict[TaskClass, float] = {}
    for job in ssn.jobs.values():
        for t in job.tasks.values():
            if t.status in _COUNTED:
                c = classes.get(t.uid)
                if c is None:
                    c = classes[t.uid] = gf.task_class(t.pod)
                counts[c] = counts.get(c, 0.0) + 1.0
    if not counts:
        return None
    memory = ssn.snapshot.plugin_memory
    last = memory.get(LEARNT)
    if last is not None and last[0] == counts:
        return last[1]  # the same mix object: its scores stay cached
    mix = TaskMix.from_counts(counts)
    memory.put(LEARNT, (counts, mix))
    return mix


@register_plugin
class FGD(GpuPolicy):
    name = "fgd"

    def open(self, ssn: Session) -> None:
        key = f"{self.name}.taskMix"
        how = self.arguments.get_str(key, WORKLOAD)
        if how not in (WORKLOAD, SNAPSHOT):
            raise ConfigError(f"{self.name}: {key} must be {WORKLOAD} or {SNAPSHOT}, not {how!r}")
        given = ssn.snapshot.task_mix if how == WORKLOAD else None
        self.mix = given if given is not None else snapshot_mix(ssn, self.view.classes)
        self.mix_key: Hashable = None
        if self.mix is not None:
            self.mix_key = self.mix.key()
            self.access = self.view.mix_access(self.mix)

    def key(self, cls: TaskClass) -> Hashable:
        return (self.name, self.mix_key, cls)

    def sigmoid(self, before: np.ndarray, after: np.ndarray) -> np.ndarray:
        """``int64(sigmoid(delta / 1000) x 100)``, truncated as the Go code."""
        return gf.sigmoid_score(before, after)

    def scores(self, task: TaskInfo, idx: np.ndarray) -> np.ndarray:
        if not np.any(task.resreq > 0):  # ``PodRequestsAndLimits`` empty: MaxNodeScore everywhere
            return np.full(len(idx), MAX_SCORE * self.weight)
        if self.mix is None:
            return np.zeros(len(idx))
        return super().scores(task, idx)

    def _after_share(self, cls: TaskClass, at: Nodes) -> tuple[np.ndarray, np.ndarray]:
        """Per node and GPU: the score of the share on that GPU (-1 where it does not fit); and per node the
        fragmentation before."""
        mix = self.mix
        assert mix is not None
        acc = self.access[at.rows]
        before = gf.node_frag(mix, at.cpu_left, at.gpu_left, acc)
        after = gf.frag_after_share(mix, at.cpu_left, at.gpu_left, acc, cls.cpu, cls.milli)
        fits = ~np.isnan(after)
        s = self.sigmoid(before[:, None], np.where(fits, after, 0.0))
        return np.where(fits, s, -1.0), before

    def score(self, cls: TaskClass, at: Nodes) -> np.ndarray:
        mix = self.mix
        assert mix is not None
        ok = self.view.accessible(cls)[at.rows]
        if cls.gpus == 1 and cls.milli < MILLI:
            s, _ = self._after_share(cls, at)
            best = s.max(axis=1, initial=-1.0)
            return np.where(ok & (best >= 0), best, 0.0)
        acc = self.access[at.rows]
        before = gf.node_frag(mix, at.cpu_left, at.gpu_left, acc)
        after = gf.node_frag(mix, at.cpu_left - cls.cpu, gf.take_whole(at.gpu_left, cls.gpus, cls.milli), acc)
        return np.where(ok, self.sigmoid(before, after), 0.0)

    def choose(self, task: TaskInfo, cls: TaskClass, at: Nodes) -> list[int]:
        """``allocateGpuIdBasedOnFGDScore``: a share goes to the first GPU with the best score; whole GPUs to the
        first free ones."""
        if cls.gpus == 1 and cls.milli < MILLI and self.mix is not None:
            s, _ = self._after_share(cls, at)
            return [int(np.argmax(s[0]))] if s[0].max(initial=-1.0) >= 0 else []
        return super().choose(task, cls, at)


@register_plugin
class FGDBestFit(FGD):
    """``fgdpack``, pyvolcano's own policy beyond the paper: FGD, with the nodes FGD scores the same ordered by best
    fit (the least cpu and GPU left after the task, ``bestfit``'s measure) before the smallest name.  FGD's whole-number
    scores tie often (every empty node of a model scores the same); packing the ties keeps whole nodes free for the
    multi-GPU tasks of the mix.  Arguments as ``fgd`` under ``fgdpack.``."""

    name = "fgdpack"

    def score(self, cls: TaskClass, at: Nodes) -> np.ndarray:
        left = ((at.cpu_left - cls.cpu) / MAX_SPEC_CPU + (at.gpu_left.sum(axis=1) - cls.milli * cls.gpus) / MAX_SPEC_GPU) / 2
        return super().score(cls, at) + 0.5 * (1.0 - np.clip(left, 0.0, 1.0))

