"""capacity (seed 000 §6.9, Volcano 1.9): each queue states what it deserves instead of a weight.

``deserved`` comes from ``spec.deserved`` (cut to realCapability, raised to guarantee); ``realCapability`` is
min(capability, total - sum(guarantees) + own guarantee).  A task fits its queue while allocated + request
stays within realCapability (the queue may run above deserved when the cluster is idle); a queue may reclaim
(preemptive) while allocated + request stays within deserved; a running task may be reclaimed while its queue
holds more than it deserves and would keep at least its guarantee.  Queues with the smallest
allocated/deserved go first.

With ``enableHierarchy: true`` queues form a tree through ``spec.parent`` under ``root`` (an implicit root
owning the whole cluster when no Queue named root exists): a parent's numbers are the sums of its
subtree, a child's realCapability is bounded by its parent's realCapability minus its siblings' guarantees,
every ancestor must have room for a task, and reclaim keeps every ancestor of the victim at its guarantee.
A hierarchy that ``api.queue_validate`` rejects stops the plugin from admitting or placing anything, as
Volcano's ``readyToSchedule`` does.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from pyvolcano.api.job_info import JobInfo, TaskInfo
from pyvolcano.api.queue_info import QueueInfo
from pyvolcano.api.resource import EPS, less_equal, less_equal_with_dimension
from pyvolcano.framework.plugin import Plugin
from pyvolcano.framework.points import PERMIT, REJECT
from pyvolcano.framework.registry import register_plugin
from pyvolcano.framework.session import EventHandler, Session
from pyvolcano.plugins.proportion import QueueAttr, build_attrs, new_attr

ROOT = "root"


def hierarchy_enabled(ssn: Session, plugin: str) -> bool:
    """Volcano's HierarchyEnabled: off unless the plugin's option sets ``enableHierarchy: true``."""
    _, opt = ssn.options.get(plugin, (0, None))
    return bool(opt is not None and opt.flags.get("enableHierarchy", False))


@dataclass
class Tree:
    """The queue hierarchy: parent of each queue and its children (root first)."""

    parent: dict[str, str] = field(default_factory=dict)
    children: dict[str, list[str]] = field(default_factory=dict)

    def ancestors(self, name: str) -> list[str]:
        out, seen = [], {name}
        p = self.parent.get(name)
        while p and p not in seen:
            out.append(p)
            seen.add(p)
            p = self.parent.get(p)
        return out


def queue_tree(queues: dict[str, QueueInfo]) -> Tree:
    """Every queue under its ``spec.parent`` (``root`` when unset or unknown)."""
    tree = Tree(children={ROOT: []})
    for q in sorted(queues.values(), key=lambda q: q.name):
        if q.name == ROOT:
            continue
        parent = q.parent if q.parent and (q.parent in queues or q.parent == ROOT) else ROOT
        tree.parent[q.name] = parent
        tree.children.setdefault(parent, []).append(q.name)
        tree.children.setdefault(q.name, [])
    return tree


def build_capacity(ssn: Session, hierarchy: bool) -> tuple[dict[str, QueueAttr], Tree | None]:
    """Capacity's queue attributes for every queue (and, with hierarchy, the tree with rolled-up sums).

    Allocated/request/inqueue/elastic come from proportion's ``build_attrs`` (one accounting for both)."""
    res, mask = ssn.res, ssn.res.fair_mask
    total = ssn.total_resource * mask
    used = build_attrs(ssn)
    zeros = res.zeros()
    if not hierarchy:
        total_guarantee = sum((q.guarantee * mask for q in ssn.queues.values() if q.guarantee is not None),
                              zeros.copy())
        attrs = {}
        for q in ssn.queues.values():
            a = new_attr(q, zeros, total, total_guarantee, mask)
            _copy_usage(a, used.get(q.name))
            _set_deserved(a, q, mask)
            attrs[q.name] = a
        return attrs, None
    queues = dict(ssn.queues)
    if ROOT not in queues:
        queues[ROOT] = QueueInfo(name=ROOT, capability=total.copy(), deserved=total.copy(),
                                 deserved_set=frozenset(res.names))
    tree = queue_tree(queues)
    attrs = {}

    def build(name: str, real_parent: np.ndarray, sibling_guarantee: np.ndarray) -> None:
        q = queues[name]
        if name == ROOT:
            a = new_attr(q, zeros, total, zeros, mask)
            a.real_capability = np.minimum(a.capability, total)
        else:
            a = new_attr(q, zeros, real_parent, sibling_guarantee, mask)
        _copy_usage(a, used.get(name))
        attrs[name] = a
        kids = tree.children.get(name, [])
        kid_guarantee = sum((queues[k].guarantee * mask for k in kids if queues[k].guarantee is not None),
                            zeros.copy())
        for k in kids:
            build(k, a.real_capability, kid_guarantee)
            for f in ("allocated", "request", "inqueue", "elastic"):
                setattr(a, f, getattr(a, f) + getattr(attrs[k], f))
        if name != ROOT and not q.deserved_set and kids:
            q = _with_deserved(q, sum((attrs[k].deserved for k in kids), zeros.copy()))
        _set_deserved(a, q, mask)

    build(ROOT, total, zeros)
    return attrs, tree


def _with_deserved(q: QueueInfo, deserved: np.ndarray) -> QueueInfo:
    from dataclasses import replace
    return replace(q, deserved=deserved, deserved_set=frozenset({"*"}))


def _copy_usage(a: QueueAttr, src: QueueAttr | None) -> None:
    if src is not None:
        a.allocated, a.request = src.allocated.copy(), src.request.copy()
        a.inqueue, a.elastic = src.inqueue.copy(), src.elastic.copy()


def _set_deserved(a: QueueAttr, q: QueueInfo, mask: np.ndarray) -> None:
    """deserved = max(min(spec.deserved, realCapability), guarantee); unset dimensions are 0 as in Volcano."""
    d = q.deserved * mask if q.deserved is not None else np.zeros_like(a.guarantee)
    a.deserved = np.maximum(np.minimum(d, a.real_capability), a.guarantee) * mask
    a.update_share(mask)


@register_plugin
class Capacity(Plugin):
    name = "capacity"

    def on_session_open(self, ssn: Session) -> None:
        mask = ssn.res.fair_mask
        hierarchy = hierarchy_enabled(ssn, self.name)
        attrs, tree = build_capacity(ssn, hierarchy)
        ssn.state["capacity"] = attrs
        self.attrs, self.tree = attrs, tree
        problems: list[str] = []
        if hierarchy:
            from pyvolcano.api.queue_validate import validate_hierarchy
            problems = [p.message for p in validate_hierarchy(ssn.queues, ssn.total_resource, ssn.res)]
        ready = not problems

        def chain(name: str) -> list[QueueAttr]:
            names = [name] + (tree.ancestors(name) if tree else [])
            return [attrs[n] for n in names if n in attrs]

        def queue_order(left: QueueInfo, right: QueueInfo) -> int:
            la, ra = attrs.get(left.name), attrs.get(right.name)
            if tree is not None and la is not None and ra is not None:
                lp, rp = [left.name, *tree.ancestors(left.name)][::-1], [right.name, *tree.ancestors(right.name)][::-1]
                for lname, rname in zip(lp, rp, strict=False):
                    if lname != rname:
                        la, ra = attrs[lname], attrs[rname]
                        break
            ls, rs = (la.share if la else 0.0), (ra.share if ra else 0.0)
            return 0 if ls == rs else (-1 if ls < rs else 1)
        ssn.add_fn("queueOrder", self.name, queue_order)

        def allocatable(queue: QueueInfo, task: TaskInfo) -> bool:
            if not ready:
                return False
            need = task.resreq * mask
            return all(less_equal_with_dimension(a.allocated + need, a.real_capability, need)
                       for a in chain(queue.name))
        ssn.add_fn("allocatable", self.name, allocatable)

        def preemptive(queue: QueueInfo, task: TaskInfo) -> bool:
            a = attrs.get(queue.name)
            if a is None or not ready:
                return False
            need = task.resreq * mask
            return less_equal_with_dimension(a.allocated + need, a.deserved, need)
        ssn.add_fn("preemptive", self.name, preemptive)

        def reclaimable(reclaimer: TaskInfo, reclaimees: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
            if not ready:
                return [], REJECT
            rj = ssn.jobs.get(reclaimer.job)
            shared = set([rj.queue, *(tree.ancestors(rj.queue) if tree else [])]) if rj else set()
            left: dict[str, np.ndarray] = {}
            out = []
            for t in reclaimees:
                job = ssn.jobs.get(t.job)
                if job is None or job.queue not in attrs:
                    continue
                names = [job.queue] + [n for n in (tree.ancestors(job.queue) if tree else []) if n not in shared]
                for n in names:
                    left.setdefault(n, attrs[n].allocated.copy())
                leaf = attrs[job.queue]
                alloc = left[job.queue]
                if (alloc + EPS < reclaimer.resreq * mask).any():  # LessPartly: too little left to give back
                    continue
                if less_equal(alloc, leaf.deserved):
                    continue
                rest = t.resreq * mask
                if not all(less_equal(attrs[n].guarantee, left[n] - rest) for n in names):
                    continue
                for n in names:
                    left[n] -= rest
                out.append(t)
            return out, PERMIT
        ssn.add_fn("reclaimable", self.name, reclaimable)

        def enqueueable(job: JobInfo) -> int:
            if not ready:
                job.enqueue_reason = f"queue hierarchy is invalid: {problems[0]}"
                return REJECT
            if job.queue not in attrs or not job.has_min_resources():
                return PERMIT
            need = job.min_resources(ssn.res.size) * mask
            for a in chain(job.queue):
                r = need + a.allocated + a.inqueue - a.elastic
                if not less_equal_with_dimension(r, a.real_capability, need):
                    job.enqueue_reason = (f"queue {a.name} capacity insufficient: needs {ssn.res.format(r)}, "
                                          f"realCapability {ssn.res.format(a.real_capability)}")
                    return REJECT
            for a in chain(job.queue):
                a.inqueue += need
            return PERMIT
        ssn.add_fn("jobEnqueueable", self.name, enqueueable)

        def change(task: TaskInfo, sign: float) -> None:
            job = ssn.jobs.get(task.job)
            if job is None or job.queue not in attrs:
                return
            for a in chain(job.queue):
                a.allocated += sign * task.resreq * mask
                a.update_share(mask)
        ssn.add_event_handler(EventHandler(lambda t: change(t, 1.0), lambda t: change(t, -1.0)))
