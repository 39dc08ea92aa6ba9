"""capacity (``pkg/scheduler/plugins/capacity/capacity.go``): each queue states what it deserves instead of a weight.

``deserved`` comes from ``spec.deserved`` (cut to realCapability, raised to guarantee); ``realCapability`` is
min(capability, total - sum(guarantees) + own guarantee).  A task fits its queue while allocated + request
stays within realCapability (the queue may run above deserved when the cluster is idle); a queue may reclaim
(preemptive) while allocated + request stays within deserved; a running task may be reclaimed while its queue
holds more than it deserves and would keep at least its guarantee.  Queues with the smallest
allocated/deserved go first.

With ``enableHierarchy: true`` queues form a tree through ``spec.parent`` under ``root`` (an implicit root
owning the whole cluster when no Queue named root exists): a parent's allocated/request are its subtree's
sums, a child's realCapability is bounded by its parent's realCapability minus its siblings' guarantees,
every ancestor must have room for a task, and reclaim keeps every ancestor of the victim outside the
reclaimer's branch at its guarantee (pyvolcano's reading of "reclaim down to guarantee"; Volcano 1.12 checks
only the victim's own queue).
The hierarchy is checked as Volcano's ``checkHierarchicalQueue`` does (a child without a capability takes its
parent's, a parent's deserved is its own ``spec.deserved`` and must cover its children's, likewise guarantees;
only leaf queues may hold PodGroups; parents must exist); a hierarchy that fails stops the plugin from admitting,
placing or reclaiming anything, as Volcano's ``readyToSchedule`` does, and ``pyvolcano queues`` prints why.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from pyvolcano.api.job_info import JobInfo, TaskInfo
from pyvolcano.api.queue_info import QueueInfo
from pyvolcano.api.queue_validate import Problem, validate_parents
from pyvolcano.api.resource import EPS, ResourceIndex, less_equal, less_equal_with_dimension
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


def build_capacity(ssn: Session, hierarchy: bool) -> tuple[dict[str, QueueAttr], Tree | None, list[Problem]]:
    """Capacity's queue attributes for every queue (and, with hierarchy, the tree with rolled-up sums), plus the
    reasons Volcano would refuse the hierarchy (then the plugin admits and places nothing).

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
        return attrs, None, []
    queues = dict(ssn.queues)
    if ROOT not in queues:
        queues[ROOT] = QueueInfo(name=ROOT)
    tree = queue_tree(queues)
    attrs = {}
    for name, q in queues.items():
        a = new_attr(q, zeros, total, zeros, mask)
        _copy_usage(a, used.get(name))
        attrs[name] = a
    problems: list[Problem] = []
    for name in sorted({j.queue for j in ssn.jobs.values()}):
        if tree.children.get(name):
            problems.append(Problem(name, "spec.parent", f"queue {name} has child queues and also PodGroups; with "
                                    "enableHierarchy only leaf queues may hold jobs"))
    # usage rolls up to every ancestor, as Volcano adds each job to its queue's ancestors
    for name in [n for n in queues if n != ROOT]:
        for anc in tree.ancestors(name):
            for f in ("allocated", "request", "inqueue", "elastic"):
                setattr(attrs[anc], f, getattr(attrs[anc], f) + getattr(attrs[name], f))
    root = attrs[ROOT]
    root.capability, root.real_capability, root.deserved = total.copy(), total.copy(), total.copy()
    problems += _check_level(ROOT, tree, queues, attrs, mask, res)
    for a in attrs.values():
        a.update_share(mask)
    return attrs, tree, problems


def _check_level(name: str, tree: Tree, queues: dict[str, QueueInfo], attrs: dict[str, QueueAttr],
                 mask: np.ndarray, res: ResourceIndex) -> list[Problem]:
    """Volcano's checkHierarchicalQueue for one parent, then its children: a child without a capability takes
    its parent's; a child's capability may not exceed its parent's; each child's realCapability is the parent's
    minus all its children's guarantees plus its own (capped by its capability) and its deserved is
    max(min(spec.deserved, realCapability), guarantee); the children's deserved and guarantees must fit the
    parent's (the root's guarantee is the sum of its children's)."""
    a = attrs[name]
    kids = tree.children.get(name, [])
    out: list[Problem] = []
    for k in kids:
        c = attrs[k]
        c.capability = np.where(np.isinf(c.capability), a.capability, c.capability)
        over = (c.capability > a.capability + EPS) & mask
        if over.any():
            whose = "the root's (the whole cluster)" if name == ROOT else f"its parent {name}'s"
            out.append(Problem(k, "spec.capability", f"queue {k}: capability {res.format(c.capability * over)} is "
                               f"above {whose} {res.format(a.capability * over)}"))
    kid_guarantee = sum((attrs[k].guarantee for k in kids), np.zeros_like(a.guarantee))
    if name == ROOT:
        a.guarantee = kid_guarantee.copy()
    kid_deserved = np.zeros_like(a.deserved)
    for k in kids:
        c = attrs[k]
        c.real_capability = np.minimum(np.maximum(a.real_capability - kid_guarantee, 0) + c.guarantee, c.capability)
        _set_deserved(c, queues[k], mask)
        kid_deserved += c.deserved
    if kids and ((kid_deserved > a.deserved + EPS) & mask).any():
        own = res.format(a.deserved) if (a.deserved[mask] >= EPS).any() else "0 (spec.deserved unset)"
        out.append(Problem(name, "spec.deserved", f"queue {name}: its children's deserved add up to "
                           f"{res.format(kid_deserved)}, above its own deserved {own}"))
    if kids and ((kid_guarantee > a.guarantee + EPS) & mask).any():
        own = res.format(a.guarantee) if (a.guarantee[mask] >= EPS).any() else "0 (spec.guarantee unset)"
        out.append(Problem(name, "spec.guarantee", f"queue {name}: its children's guarantees add up to "
                           f"{res.format(kid_guarantee)}, above its own guarantee {own}"))
    for k in kids:
        out += _check_level(k, tree, queues, attrs, mask, res)
    return out


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
        attrs, tree, problems = build_capacity(ssn, hierarchy)
        if hierarchy:
            problems = validate_parents(ssn.queues) + problems
        ssn.state["capacity"] = attrs
        ssn.state["capacity-problems"] = problems
        self.attrs, self.tree, self.problems = attrs, tree, problems
        ready = not problems
        reason = problems[0].message if problems else ""

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
                job.enqueue_reason = f"queue hierarchy is invalid: {reason}"
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
