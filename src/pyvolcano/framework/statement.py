"""Statement: tentative allocate/pipeline/evict operations that are committed or discarded together.

Gang scheduling needs "place these tasks only if enough of them fit": an action records operations in a
statement, and ``discard`` undoes them in reverse order so the session is exactly as before (node arrays,
job status buckets and plugin event handlers all see the undo).  ``commit`` turns evictions into evictions
and allocations into binds.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Protocol

from pyvolcano.api.job_info import TaskInfo
from pyvolcano.api.node_info import NodeArrays
from pyvolcano.api.types import TaskStatus


class StatementHost(Protocol):
    """The session as a statement sees it: the primitive state changes a statement is made of and undone by
    (Volcano's ``Statement`` calls the session's ``allocate``/``evict`` internals, framework/statement.go), and the
    bookkeeping its commit and discard keep.  ``Session`` implements it."""

    nodes: NodeArrays
    #: tasks pipelined after evictions made for them, with their job (``Session.evicted_for``)
    evicted_for: dict[str, str]
    #: a task's (status, node, eviction occurred, job) when a statement holding it was discarded
    last_tx: dict[str, tuple[TaskStatus, str, bool, str]]
    #: statements discarded (gang roll-backs)
    rollbacks: int

    def place(self, task: TaskInfo, i: int, status: TaskStatus) -> None:
        """Put the task on node ``i`` in ``status`` (Allocated or Pipelined); the event handlers see it."""

    def unplace(self, task: TaskInfo) -> None:
        """Take a placed task off its node, Pending again."""

    def start_eviction(self, task: TaskInfo) -> TaskStatus:
        """Mark a running task Releasing on its node; its old status returned."""

    def undo_eviction(self, task: TaskInfo, old: TaskStatus, *, hide: bool = True) -> None:
        """Give an evicted task its old status back (``hide``: the predicates' node view no longer counts it)."""

    def dispatch(self, task: TaskInfo) -> None:
        """Hand an allocated task to the binder."""

    def record_eviction(self, task: TaskInfo, reason: str) -> None:
        """Record an eviction decision for the result."""


class OpKind(enum.Enum):
    """What a statement's operation did to its task."""

    ALLOCATE = enum.auto()
    PIPELINE = enum.auto()
    EVICT = enum.auto()


@dataclass
class _Op:
    kind: OpKind
    task: TaskInfo
    reason: str = ""
    old: TaskStatus = TaskStatus.Running


class Statement:
    def __init__(self, ssn: StatementHost, *, simulated: bool = False) -> None:
        """``simulated``: stands for Volcano's ``SimulateRemoveTaskFn``/``SimulateAddTaskFn`` (preempt's
        topology-aware dry run), not a Volcano statement: undoing its evictions does not hide the pods from the
        predicates' node view (``Session.unevicted``)."""
        self.ssn = ssn
        self.simulated = simulated
        self.ops: list[_Op] = []

    def allocate(self, task: TaskInfo, node: int) -> None:
        self.ssn.place(task, node, TaskStatus.Allocated)
        self.ops.append(_Op(OpKind.ALLOCATE, task))

    def pipeline(self, task: TaskInfo, node: int, eviction_occurred: bool = False) -> None:
        """``eviction_occurred``: Volcano's ``Statement.Pipeline`` argument, true when evictions made room for the
        task (it is then nominated to the node: the pod's ``status.nominatedNodeName``, ``Session.close``)."""
        self.ssn.place(task, node, TaskStatus.Pipelined)
        if eviction_occurred:
            self.ssn.evicted_for[task.uid] = task.job
        elif self.ssn.evicted_for:
            self.ssn.evicted_for.pop(task.uid, None)
        self.ops.append(_Op(OpKind.PIPELINE, task))

    def evict(self, task: TaskInfo, reason: str) -> None:
        old = self.ssn.start_eviction(task)
        self.ops.append(_Op(OpKind.EVICT, task, reason, old))

    def restore(self, task: TaskInfo) -> None:
        """Undo this statement's eviction of ``task`` alone (preempt's dry run gives victims back one by one,
        Volcano's ``SelectVictimsOnNode`` reprieve)."""
        for k in range(len(self.ops) - 1, -1, -1):
            op = self.ops[k]
            if op.kind is OpKind.EVICT and op.task is task:
                self.ssn.undo_eviction(task, op.old, hide=not self.simulated)
                del self.ops[k]
                return
        raise ValueError(f"task {task.uid} was not evicted by this statement")

    def discard(self, rollback: bool = True) -> None:
        """Undo every operation, last first.  ``rollback=False`` for a trial (one node's evictions in preempt
        or reclaim, a dry run) that is not a gang rolled back and must not count in the simulator's report."""
        ssn = self.ssn
        if self.ops and rollback:  # a gang partly placed and rolled back: the simulator reports how often
            ssn.rollbacks += 1
        for op in reversed(self.ops):
            if op.kind is OpKind.EVICT:
                ssn.undo_eviction(op.task, op.old, hide=not self.simulated)
            else:
                # GenerateLastTxContext: the pod's condition (and nominated node) are then read from what it had
                # (kept only where it can matter: a task pipelined after evictions, or one that has an entry)
                t = op.task
                evicted = t.uid in ssn.evicted_for
                if evicted or t.uid in ssn.last_tx:
                    ssn.last_tx[t.uid] = (t.status, t.node_name, evicted, t.job)
                ssn.unplace(t)
        self.ops.clear()

    def commit(self) -> None:
        last = self.ssn.last_tx
        for op in self.ops:
            if last:
                last.pop(op.task.uid, None)  # ClearLastTxContext
            if op.kind is OpKind.EVICT:
                self.ssn.record_eviction(op.task, op.reason)
            elif op.kind is OpKind.ALLOCATE and op.task.status == TaskStatus.Allocated:
                self.ssn.dispatch(op.task)
        self.ops.clear()

    def merge(self, other: Statement) -> None:
        self.ops.extend(other.ops)
        other.ops.clear()
