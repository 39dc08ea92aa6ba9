"""Who displaced whom: one record per evicted pod, with the job it was evicted for.

Volcano does not say: ``Statement.Evict(task, "preempt")`` / ``"reclaim"`` (``pkg/scheduler/actions/preempt/
preempt.go``, ``actions/reclaim/reclaim.go``) gives the cache only a reason word, which becomes the PodGroup's
``Evict`` event (``SchedulerCache.Evict``, ``pkg/scheduler/cache/cache.go``), and ``SessionResult.evictions``
carries the same (victim task, reason).  But both actions evict on one node for one preemptor and then pipeline
that preemptor onto the node (``nodeStmt.Pipeline``): so the preemptor of an eviction is a pod the same session
left Pipelined on the victim's node (``SessionResult.pipelined``).  When the jobs of several such pods share the
node, all of them are named (the session's order among them is not in its result); an eviction without one (the
victimTasks plugins, a failed node) names none.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from pyvolcano.framework.result import SessionResult


@dataclass
class EvictionRecord:
    t: float
    pod: str
    job: str
    queue: str
    node: str
    #: "preempt", "reclaim" (the session's reason), "node failure", ...
    cause: str
    #: the jobs the eviction made room for (see the module docstring); empty when there is none
    by: list[str] = field(default_factory=list)
    #: resource-seconds (cpu, memory GiB, gpu) the pod held from its bind until it was deleted: thrown away
    lost: np.ndarray | None = None


@dataclass
class EvictionLog:
    records: list[EvictionRecord] = field(default_factory=list)
    _by: dict[str, list[str]] = field(default_factory=dict)
    _open: dict[str, EvictionRecord] = field(default_factory=dict)

    def on_session(self, result: SessionResult) -> None:
        """Before a session's result is applied: each evicted pod's preemptor jobs."""
        self._by = preemptors(result) if result.evictions else {}

    def evicted(self, t: float, pod: str, job: str, queue: str, node: str, cause: str) -> None:
        rec = EvictionRecord(t, pod, job, queue, node, cause, self._by.get(pod, []))
        self.records.append(rec)
        self._open[pod] = rec

    def cause(self, pod: str) -> str | None:
        """Why ``pod`` is being deleted (None: it was not evicted)."""
        rec = self._open.get(pod)
        return rec.cause if rec is not None else None

    def released(self, pod: str, spent: np.ndarray | None) -> None:
        rec = self._open.pop(pod, None)
        if rec is not None:
            rec.lost = spent


def preemptors(result: SessionResult) -> dict[str, list[str]]:
    """Victim pod -> the jobs of the pods ``result`` left Pipelined on the victim's node (sorted)."""
    on_node: dict[str, set[str]] = {}
    for pod, node in result.pipelined.items():
        job = result.pipelined_jobs.get(pod)
        if job:
            on_node.setdefault(node, set()).add(job)
    return {ev.task.uid: sorted(on_node.get(ev.task.node_name, ())) for ev in result.evictions}
