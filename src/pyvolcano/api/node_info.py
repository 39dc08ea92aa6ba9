"""Node state as a structure of arrays, plus a per-node view for scalar (per-node) plugins.

All nodes of a session live in ``NodeArrays``: one (nodes x resources) float64 array per quantity Volcano's
NodeInfo tracks (Allocatable, Capability, Idle, Used, Releasing, Pipelined), plus FutureIdle (idle + releasing -
pipelined) kept up to date on every change because node selection reads it for every pod.  Every change appends
the node's index to ``log``; per-template caches remember how far they have read it and recompute only those
nodes.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pyvolcano.api.job_info import TaskInfo
from pyvolcano.api.resource import ResourceIndex
from pyvolcano.api.types import TaskStatus


@dataclass
class NodeSpec:
    """What the cache knows of a Node object (static within a session)."""

    name: str
    allocatable: np.ndarray
    capacity: np.ndarray
    labels: dict[str, str] = field(default_factory=dict)
    taints: list[dict[str, Any]] = field(default_factory=list)
    unschedulable: bool = False
    ready: bool = True
    manifest: dict[str, Any] = field(default_factory=dict)


def _kind(status: TaskStatus) -> int:
    """How ``_account`` counts a status: releasing, pipelined, or holding the node's resources."""
    return 1 if status == TaskStatus.Releasing else (2 if status == TaskStatus.Pipelined else 0)


class NodeStatic:
    """What only a Node change changes: the specs, names, positions, allocatable, capacity and the unschedulable
    flags.  Built once per node set by the cache and shared, read-only, by every snapshot until a Node changes."""

    def __init__(self, res: ResourceIndex, specs: list[NodeSpec]) -> None:
        self.specs = specs
        self.names = [s.name for s in specs]
        self.pos = {n: i for i, n in enumerate(self.names)}
        n, r = len(specs), res.size
        self.allocatable = _frozen(np.array([s.allocatable for s in specs], dtype=float).reshape(n, r))
        self.capacity = _frozen(np.array([s.capacity for s in specs], dtype=float).reshape(n, r))
        self.unschedulable = _frozen(np.array([s.unschedulable for s in specs], dtype=bool))
        #: facts plugins derive from the specs alone (label columns, tainted nodes: ``plugins/_k8s.py``),
        #: computed once per static part rather than once per session; a new static part starts empty
        self.derived: dict[str, Any] = {}


def _frozen(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


def _replaced(a: np.ndarray, i: int, row: Any) -> np.ndarray:
    out = a.copy()
    out[i] = row
    return _frozen(out)


#: ``used_total`` is kept change by change while a bound on every partial sum of whole amounts stays below this
_TOTAL_EXACT = float(2**52)
#: the bound of a total that is not known to be exact (kept only until an amount changes)
_TOTAL_INEXACT = float("inf")


class NodeArrays:
    """All nodes' resource state in NumPy arrays, indexed by position.

    ``static`` (specs, names, allocatable...) may be shared with other snapshots and is read-only; the amounts
    (idle, used, releasing, pipelined, future) and the per-node task maps belong to this one."""

    def __init__(self, res: ResourceIndex, specs: list[NodeSpec], static: NodeStatic | None = None) -> None:
        st = static if static is not None else NodeStatic(res, specs)
        self.res = res
        self.static = st
        self.specs = st.specs
        self.names = st.names
        self.pos = st.pos
        self.allocatable = st.allocatable
        self.capacity = st.capacity
        self.unschedulable = st.unschedulable
        n, r = len(st.specs), res.size
        self.idle = self.allocatable.copy()
        self.used = np.zeros((n, r))
        self.releasing = np.zeros((n, r))
        self.pipelined = np.zeros((n, r))
        self.future = self.allocatable.copy()
        self.tasks: list[dict[str, TaskInfo]] = [{} for _ in st.specs]
        #: the positions of the nodes whose task maps hold a pod with ``TaskInfo.k8s_extra`` (Kubernetes sees its
        #: requests differently) and with ``TaskInfo.uses_pod_constraints``; kept by every task added here, and
        #: handed over by the cache's snapshot from its own per-node counts.  Never smaller than the truth; None:
        #: not known (task maps filled some other way), so readers walk every map (``special_nodes``)
        self.extra_at: set[int] | None = set()
        self.constrained_at: set[int] | None = set()
        self.log: list[int] = []
        #: (the last snapshot's ``tasks`` list, the positions whose maps this one rebuilt from it): every other
        #: position holds the very same map object as that list; None: not known (every map may be new)
        self.rebuilt: tuple[list[dict[str, TaskInfo]], set[int]] | None = None
        self._views: NodeViews | None = None
        #: ``used`` summed over the nodes (``used_total``), and a bound on every column's sum of absolute amounts
        #: while every amount is a whole number (``_TOTAL_INEXACT`` otherwise): then the sum is kept exactly,
        #: change by change; None: to be summed
        self._used_total: np.ndarray | None = None
        self._total_bound = _TOTAL_INEXACT

    def copy_amounts(self) -> NodeArrays:
        """A new NodeArrays on the same static part with copies of this one's amounts and no tasks (the cache
        hands each snapshot such a copy of its own running totals: a few NumPy copies, no per-pod work)."""
        a = NodeArrays.__new__(NodeArrays)
        a.res, a.static, a.specs, a.names, a.pos = self.res, self.static, self.specs, self.names, self.pos
        a.allocatable, a.capacity, a.unschedulable = self.allocatable, self.capacity, self.unschedulable
        a.idle, a.used, a.releasing = self.idle.copy(), self.used.copy(), self.releasing.copy()
        a.pipelined, a.future = self.pipelined.copy(), self.future.copy()
        a.tasks = []
        a.extra_at = a.constrained_at = None  # the caller fills the task maps (and says where the special pods are)
        a.log = []
        a.rebuilt = None
        a._views = None
        if self._used_total is None:  # summed here once and kept from then on (the cache's running totals)
            self.used_total()
        a._used_total, a._total_bound = self._used_total, self._total_bound  # same amounts, same sum
        return a

    def replace_spec(self, i: int, spec: NodeSpec) -> None:
        """Node ``i`` was updated in place (same name, same position): a new static part with its new spec, and
        idle and future idle moved by the change of allocatable.  The old static part is left as it was, for the
        snapshots that share it."""
        st = self.static
        new = NodeStatic.__new__(NodeStatic)
        new.specs = list(st.specs)
        new.specs[i] = spec
        new.names, new.pos = st.names, st.pos
        new.allocatable, new.capacity, new.unschedulable = st.allocatable, st.capacity, st.unschedulable
        new.derived = {}
        delta = spec.allocatable - st.allocatable[i]
        if delta.any():
            new.allocatable = _replaced(st.allocatable, i, spec.allocatable)
            self.idle[i] += delta
            self.future[i] += delta
        if not np.array_equal(spec.capacity, st.capacity[i]):
            new.capacity = _replaced(st.capacity, i, spec.capacity)
        if bool(st.unschedulable[i]) != spec.unschedulable:
            new.unschedulable = _replaced(st.unschedulable, i, spec.unschedulable)
        self.static, self.specs = new, new.specs
        self.allocatable, self.capacity, self.unschedulable = new.allocatable, new.capacity, new.unschedulable
        self._views = None

    @property
    def views(self) -> NodeViews:
        """A ``NodeInfo`` per node, each made when first asked for (the vector engine asks for a few nodes')."""
        if self._views is None:
            self._views = NodeViews(self)
        return self._views

    def drop_views(self) -> None:
        """Forget the ``NodeInfo`` views: they and the arrays refer to each other, a cycle that only the cyclic
        collector frees (``Session.release`` drops them when a session ends)."""
        self._views = None

    def __len__(self) -> int:
        return len(self.names)

    def special_nodes(self, which: set[int] | None) -> list[int] | range:
        """The nodes to look at for pods of one special kind (``extra_at`` or ``constrained_at``), in node order:
        those listed, or every node when not known.  Session open reads the few pods Kubernetes' rules treat
        apart (nodeorder's request corrections, the pod-affinity state) without a walk over every placed pod."""
        return range(len(self.names)) if which is None else sorted(which)

    def _mark(self, i: int, task: TaskInfo) -> None:
        """Keep ``extra_at`` / ``constrained_at`` when ``task`` comes to node ``i``'s map."""
        if task.k8s_extra is not None and self.extra_at is not None:
            self.extra_at.add(i)
        if task.uses_pod_constraints and self.constrained_at is not None:
            self.constrained_at.add(i)

    def _account(self, i: int, task: TaskInfo, sign: float) -> None:
        self.account(i, task, sign)
        self.log.append(i)

    def account(self, i: int, task: TaskInfo, sign: float) -> None:
        """Add (``sign`` 1) or take away (-1) a task's request on node ``i`` by its status, with nothing logged
        (the cache's running totals use it directly)."""
        r = task.resreq * sign
        st = task.status
        if st != TaskStatus.Pipelined and self._used_total is not None:  # ``used`` changes by ``r``
            self._advance_total(r)
        if st == TaskStatus.Releasing:  # idle shrinks and releasing grows by the same amount: future unchanged
            self.idle[i] -= r
            self.releasing[i] += r
            self.used[i] += r
        elif st == TaskStatus.Pipelined:
            self.pipelined[i] += r
            self.future[i] -= r
        else:
            self.idle[i] -= r
            self.used[i] += r
            self.future[i] -= r

    def add_task(self, i: int, task: TaskInfo) -> None:
        """Volcano's NodeInfo.AddTask: account the task by its current status."""
        self.tasks[i][task.uid] = task
        if task.k8s_extra is not None or task.uses_pod_constraints:
            self._mark(i, task)
        self._account(i, task, 1.0)

    def add_tasks(self, placed: list[tuple[int, TaskInfo]], index: bool = True) -> None:
        """``add_task`` for many tasks at once (a rebuild places every pod of the cluster): the same amounts,
        added with NumPy instead of a few row operations per task, and nothing logged.  ``index``: False to
        account the amounts only, without adding the tasks to the per-node maps."""
        if not placed:
            return
        n = len(placed)
        idx = np.fromiter((i for i, _ in placed), np.int64, n)
        req = np.array([t.resreq for _, t in placed]).reshape(n, self.res.size)
        kind = np.fromiter((_kind(t.status) for _, t in placed), np.int8, n)
        if index:
            for i, t in placed:
                self.tasks[i][t.uid] = t
                if t.k8s_extra is not None or t.uses_pod_constraints:
                    self._mark(i, t)
        self._used_total = None
        held, rel, pip = kind == 0, kind == 1, kind == 2
        on = held | rel
        np.subtract.at(self.idle, idx[on], req[on])
        np.add.at(self.used, idx[on], req[on])
        np.add.at(self.releasing, idx[rel], req[rel])
        np.add.at(self.pipelined, idx[pip], req[pip])
        taken = held | pip
        np.subtract.at(self.future, idx[taken], req[taken])

    def remove_task(self, i: int, task: TaskInfo) -> None:
        t = self.tasks[i].pop(task.uid, None)
        if t is not None:
            self._account(i, t, -1.0)

    def update_task(self, i: int, task: TaskInfo, status: TaskStatus, job: Any = None) -> None:
        """Change a task's status on this node (remove with the old status, re-add with the new).

        When both statuses count the same way (Allocated -> Binding on commit, say) the node's amounts do not
        change, so nothing is re-accounted or logged and no cached node score goes stale."""
        same = _kind(task.status) == _kind(status) and task.uid in self.tasks[i]
        if not same:
            self.remove_task(i, task)
        if job is not None:
            job.update_task_status(task, status)
        else:
            task.status = status
        if same:
            self.tasks[i][task.uid] = task
            if task.k8s_extra is not None or task.uses_pod_constraints:
                self._mark(i, task)
        else:
            self.add_task(i, task)

    def future_idle(self, idx: np.ndarray | slice | int = slice(None)) -> np.ndarray:
        """Volcano's FutureIdle: what the node will have once releasing tasks are gone and pipelined ones
        have landed.  Amounts are whole numbers (millicores, bytes), so keeping it incrementally is exact.  A copy,
        so callers may change it; hot code reads ``future`` directly."""
        return self.future[idx].copy()

    def used_total(self) -> np.ndarray:
        """``used`` summed over the nodes (a copy: callers may change it).  The sum is remembered (a snapshot's
        copy inherits it) and, while every amount is a whole number (millicores, bytes, thousandths: a real
        cluster's), kept up to date change by change (``account``): sums of whole numbers whose every partial
        sum stays below 2**53 are exact in any order, so the kept total is bit for bit ``used.sum(axis=0)``,
        without summing the (nodes x resources) array, tens of microseconds at a thousand nodes, after every
        change (every session, twice).  Otherwise the very same sum is kept until an amount changes.  Amounts
        change only through ``account`` and ``add_tasks`` (a ``NodeInfo`` view's rows are for reading)."""
        total = self._used_total
        if total is None:
            used = self.used
            if not len(self):
                total, bound = self.res.zeros(), 0.0
            else:
                total = used.sum(axis=0)
                bound = float(np.abs(used).sum(axis=0).max()) if (used == np.rint(used)).all() else _TOTAL_INEXACT
            self._used_total, self._total_bound = total, bound if bound < _TOTAL_EXACT else _TOTAL_INEXACT
        return total.copy()

    def _advance_total(self, r: np.ndarray) -> None:
        """The kept ``used_total`` after ``used`` changed by ``r`` on some node: exact while ``r`` is whole and the
        bound on partial sums stays below ``_TOTAL_EXACT`` (the bound only grows: every column's sum of absolute
        amounts moves by at most ``|r|``), forgotten otherwise.  Never changed in place (snapshots share it)."""
        bound = self._total_bound
        if bound < _TOTAL_EXACT:
            row = r.tolist()
            bound += max(map(abs, row), default=0.0)
            if bound < _TOTAL_EXACT and all(x.is_integer() for x in row):
                self._used_total = self._used_total + r
                self._total_bound = bound
                return
        self._used_total = None

    def total_allocatable(self) -> np.ndarray:
        """The cluster's allocatable (a copy: callers may change it), summed once per static part: every session
        asks for it, and it depends on the specs alone."""
        derived = self.static.derived
        total = derived.get("total-allocatable")
        if total is None:
            total = derived["total-allocatable"] = self.allocatable.sum(axis=0) if len(self) else self.res.zeros()
        return total.copy()


class NodeViews:
    """``views[i]``: node ``i``'s ``NodeInfo``, made on first use and kept (a session used to make one per node,
    thousands, for the few its per-node plugin forms look at)."""

    __slots__ = ("arrays", "made")

    def __init__(self, arrays: NodeArrays) -> None:
        self.arrays = arrays
        self.made: dict[int, NodeInfo] = {}

    def __getitem__(self, i: int | np.integer[Any]) -> NodeInfo:
        v = self.made.get(i)  # type: ignore[arg-type]  # a NumPy integer hashes and compares as the int
        if v is None:
            n, k = len(self.arrays), int(i)
            if not -n <= k < n:
                raise IndexError(k)
            k %= n
            v = self.made.get(k)
            if v is None:
                v = self.made[k] = NodeInfo(self.arrays, k)
        return v

    def __len__(self) -> int:
        return len(self.arrays)

    def __iter__(self) -> Iterator[NodeInfo]:
        return (self[i] for i in range(len(self.arrays)))


class NodeInfo:
    """A view of one node, for per-node (scalar) plugin callbacks and user code."""

    __slots__ = ("arrays", "index")

    def __init__(self, arrays: NodeArrays, index: int) -> None:
        self.arrays = arrays
        self.index = index

    @property
    def name(self) -> str:
        return self.arrays.names[self.index]

    @property
    def spec(self) -> NodeSpec:
        return self.arrays.specs[self.index]

    @property
    def node(self) -> dict[str, Any]:
        return self.spec.manifest

    @property
    def labels(self) -> dict[str, str]:
        return self.spec.labels

    @property
    def taints(self) -> list[dict[str, Any]]:
        return self.spec.taints

    @property
    def idle(self) -> np.ndarray:
        return self.arrays.idle[self.index]

    @property
    def used(self) -> np.ndarray:
        return self.arrays.used[self.index]

    @property
    def releasing(self) -> np.ndarray:
        return self.arrays.releasing[self.index]

    @property
    def pipelined(self) -> np.ndarray:
        return self.arrays.pipelined[self.index]

    @property
    def allocatable(self) -> np.ndarray:
        return self.arrays.allocatable[self.index]

    @property
    def capability(self) -> np.ndarray:
        return self.arrays.capacity[self.index]

    def future_idle(self) -> np.ndarray:
        return self.arrays.future_idle(self.index)

    @property
    def tasks(self) -> dict[str, TaskInfo]:
        return self.arrays.tasks[self.index]

    @property
    def unschedulable(self) -> bool:
        return bool(self.arrays.unschedulable[self.index])

    def __repr__(self) -> str:
        return f"Node({self.name})"
