"""A job's close counts, and the settled record the incremental layer carries for a job it leaves alone."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeAlias

from pyvolcano.api.job_info import JobInfo
from pyvolcano.api.types import COMPLETED, SCHEDULED, TaskStatus

if TYPE_CHECKING:
    from pyvolcano.framework.result import PodGroupStatus

#: Volcano's AllocatedStatus (api/helpers.go) besides Running: what a queue's ``status.allocated`` counts
HELD = (TaskStatus.Bound, TaskStatus.Binding, TaskStatus.Allocated)


class CloseCounts:
    """What ``Session.close`` reads of a job's tasks, counted once; carried between sessions while the job is
    unchanged (``carry.py``)."""

    __slots__ = ("completed", "failed", "held", "pending", "pipelined", "pods", "running", "scheduled",
                 "succeeded", "waiting")

    def __init__(self, job: JobInfo) -> None:
        index = job.index
        running, succeeded, failed = (index.get(TaskStatus.Running), index.get(TaskStatus.Succeeded),
                                      index.get(TaskStatus.Failed))
        self.pods = len(job.tasks)
        self.running = len(running) if running else 0
        self.succeeded = len(succeeded) if succeeded else 0
        self.failed = len(failed) if failed else 0
        # Volcano's getPodGroupPhase: scheduled tasks (api.ScheduledStatus) plus Releasing ones still on a node
        scheduled = job.count(SCHEDULED)
        releasing = index.get(TaskStatus.Releasing)
        if releasing:
            scheduled += sum(1 for t in releasing.values() if t.node_name)
        self.scheduled = scheduled
        self.completed = job.count(COMPLETED)
        held = self.running
        for s in HELD:
            b = index.get(s)
            if b:
                held += len(b)
        self.held = held
        pending = index.get(TaskStatus.Pending)
        self.pending = len(pending) if pending else 0
        #: pending pods that are not scheduling-gated (each gets a PodScheduled condition)
        self.waiting: tuple[str, ...] = tuple(t.uid for t in pending.values() if not t.sch_gated) if pending else ()
        pipelined = index.get(TaskStatus.Pipelined)
        self.pipelined: tuple[tuple[str, str], ...] = (
            tuple((t.uid, t.node_name) for t in pipelined.values()) if pipelined else ())


#: what the layer carries for a job left alone: the status close handed back for it and its counts
Record: TypeAlias = "tuple[PodGroupStatus, CloseCounts]"
