"""Statuses and well-known names shared by Volcano and pyvolcano."""

from __future__ import annotations

from enum import IntFlag, StrEnum


class TaskStatus(IntFlag):
    """Volcano's TaskStatus values (bit flags, so sets of statuses are cheap)."""

    Pending = 1
    Allocated = 2
    Pipelined = 4
    Binding = 8
    Bound = 16
    Running = 32
    Releasing = 64
    Succeeded = 128
    Failed = 256
    Unknown = 512

    def __str__(self) -> str:  # Python 3.11 IntFlag str() differs between versions; keep the name
        return self.name or repr(self)

    # Enum hashes a member by its name in Python code; statuses key every job's task index and are hashed on
    # every count and move, so hash them as the ints they are (C code, and consistent with IntFlag's equality).
    __hash__ = int.__hash__


#: ``AllocatedStatus``: the task holds node resources granted by the scheduler.
ALLOCATED = TaskStatus.Bound | TaskStatus.Binding | TaskStatus.Running | TaskStatus.Allocated
#: ``ReadyTaskNum`` counts these (allocated plus finished).
READY = ALLOCATED | TaskStatus.Succeeded
#: ``ValidTaskNum`` counts these.
VALID = READY | TaskStatus.Pipelined | TaskStatus.Pending
#: ``ScheduledStatus`` (Volcano api/helpers.go): the pod is on a node for good, or has finished there.
SCHEDULED = TaskStatus.Running | TaskStatus.Bound | TaskStatus.Failed | TaskStatus.Succeeded
#: ``CompletedStatus`` (Volcano api/helpers.go).
COMPLETED = TaskStatus.Failed | TaskStatus.Succeeded
#: statuses whose resources stay on a node.
ON_NODE = ALLOCATED | TaskStatus.Pipelined | TaskStatus.Releasing


class PodGroupPhase(StrEnum):
    Pending = "Pending"
    Inqueue = "Inqueue"
    Running = "Running"
    Unknown = "Unknown"
    Completed = "Completed"


class QueueState(StrEnum):
    Open = "Open"
    Closed = "Closed"
    Closing = "Closing"
    Unknown = "Unknown"


# Annotations and labels Volcano uses.
GROUP_NAME_ANNOTATION = "scheduling.k8s.io/group-name"
TASK_SPEC_ANNOTATION = "volcano.sh/task-spec"
QUEUE_NAME_ANNOTATION = "scheduling.volcano.sh/queue-name"
PREEMPTABLE_ANNOTATION = "volcano.sh/preemptable"
JOB_NAME_ANNOTATION = "volcano.sh/job-name"
SLA_WAITING_TIME = "sla-waiting-time"
NODEGROUP_LABEL = "volcano.sh/nodegroup-name"
#: a pod's own resource-strategy-fit scoring (``resource-strategy-fit``'s ``Score``): node scores read them, so they
#: are part of the pod's template key (``api/convert.py: constraints_key``)
RESOURCE_STRATEGY_TYPE = "volcano.sh/resource-strategy-scoring-type"
RESOURCE_STRATEGY_WEIGHT = "volcano.sh/resource-strategy-weight"
DEFAULT_QUEUE = "default"
DEFAULT_SCHEDULER = "volcano"
SYSTEM_CRITICAL = ("system-cluster-critical", "system-node-critical")
