"""capacity (Volcano's ``pkg/scheduler/plugins/capacity/capacity.go``): each queue states what it deserves
instead of a weight.

Flat queues (``buildQueueAttrs``): ``deserved`` = max(min(spec.deserved, realCapability), guarantee);
``realCapability`` = min(capability, total - sum(guarantees) + own guarantee).

* queue order: ``spec.priority`` first (higher first), then the smaller share; on equal shares a queue with a
  deserved amount goes before one without (``compareShareWithDeserved``).  A queue whose deserved is empty is
  "best effort" and has share 1 whatever it holds (``updateQueueAttrShare``).
* allocatable: allocated + request within realCapability on the requested dimensions (the queue may run above
  deserved while the cluster is idle), for the queue and, with the hierarchy, every ancestor.
* preemptive (may reclaim): the queue is Open; allocated + request stays within realCapability on every
  requested dimension; and it is within deserved on at least one requested dimension, dimensions zero on both
  sides left out (``LessEqualPartlyWithDimensionZeroFiltered``).
* reclaimable: candidates are walked in victim order with a running tally of each queue's allocation.  One
  is skipped when it shares no non-zero dimension (pods aside) with the reclaimer's request, or when taking it
  would leave its queue below guarantee.  It is a victim when its queue's deserved names none of the
  resources it uses (``isImmediateVictim``), or when its queue exceeds deserved on a dimension the victim
  requests and deserved defines (``GreaterPartlyWithRelevantDimensions``).  So a queue that deserves only
  GPUs does not lose its CPU pods to a GPU reclaimer, and one that deserves only CPU loses its GPU pods.

With ``enableHierarchy: true`` (``buildHierarchicalQueueAttrs``) queues form a tree through ``spec.parent``
under the Queue named ``root``: a parent's allocated/request/inqueue/elastic are its subtree's sums; the
root's capability is its spec (unlimited when unset) and its deserved and guarantee are the sums of its
children's; every other queue's deserved is max(spec.deserved, guarantee); a child's capability takes its
parent's where unset; its realCapability is min(capability, parent's realCapability - all its siblings'
guarantees + own guarantee).  A child above its parent, or children whose deserved/guarantee add up to more
than their parent's, is only a warning (``checkHierarchicalQueue`` logs and goes on; ``pyvolcano queues``
lists them); only a missing root, a missing or cyclic parent, or a PodGroup in a non-leaf queue stops the
plugin from admitting, placing or reclaiming anything (Volcano's ``readyToSchedule``).

``ancestorReclaimLevel`` (argument, default 0; with the hierarchy): a queue that may not reclaim on its own
deserved may reclaim on an ancestor's, up to that many levels above it (root excluded); a victim must also
exceed the deserved of its own ancestors at those levels that are not the reclaimer's; and an immediate victim
is spared when it shares an ancestor within those levels with a reclaimer whose deserved names none of its
requested resources.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import numpy as np

from pyvolcano.api.job_info import JobInfo, TaskInfo
from pyvolcano.api.quantity import format_quantity
from pyvolcano.api.queue_info import QueueInfo
from pyvolcano.api.queue_validate import Problem, validate_parents
from pyvolcano.api.resource import EPS, ResourceIndex, is_empty, less_equal
from pyvolcano.framework.arguments import Arguments
from pyvolcano.framework.incremental.contracts import Contract
from pyvolcano.framework.plugin import Plugin
from pyvolcano.framework.points import GANG_PREEMPT, PERMIT, REJECT, EvictionContext, Vote
from pyvolcano.framework.registry import register_plugin
from pyvolcano.framework.session import EventHandler, Session
from pyvolcano.framework.state import CAPACITY_QUEUES, QUEUE_PROBLEMS, StateKey
from pyvolcano.framework.victims import victims_queue
from pyvolcano.plugins._queue_res import (
    PODS,
    deserved_share,
    gt_partly_relevant,
    intersects,
    le_partly_zero_filtered,
    le_with_dimension,
)
from pyvolcano.plugins._shared import (
    ROOT,
    QueueAttr,
    Tree,
    build_attrs,
    hierarchy_enabled,
    new_attr,
    queue_priority_cmp,
    queue_tree,
)

ANCESTOR_RECLAIM_LEVEL = "ancestorReclaimLevel"
log = logging.getLogger(__name__)


def ancestor_reclaim_level(args: Arguments) -> int:
    """Volcano's capacity ``parseArguments``: ``ancestorReclaimLevel`` defaults to 0, and a negative value
    falls back to 0 (Volcano logs a warning)."""
    level = args.get_int(ANCESTOR_RECLAIM_LEVEL, 0)
    if level < 0:
        log.warning("capacity: %s should be non-negative, got %d; using 0", ANCESTOR_RECLAIM_LEVEL, level)
        return 0
    return level


@dataclass
class CapacityAttr(QueueAttr):
    """capacity's ``queueAttr``: proportion's numbers plus which scalars ``deserved`` names (``present``; Volcano
    keeps a map, where a resource named with amount 0 differs from one not named) and the queue's place in
    the tree (``ancestors`` root first, as Volcano's list; ``children``)."""

    present: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    ancestors: list[str] = field(default_factory=list)
    children: list[str] = field(default_factory=list)

    def update_share(self, mask: np.ndarray | None = None) -> None:
        """capacity's updateQueueAttrShare: a queue whose deserved is empty (pods aside) is best effort and has
        share 1, so every queue with a deserved amount below it goes first; otherwise max of allocated /
        deserved over the resources deserved names."""
        self.share = 1.0 if is_empty(self.deserved) else deserved_share(self.allocated, self.deserved)

    def ancestor_at(self, depth: int) -> str | None:
        """Volcano's queueAncestorAtDepth: 1 is the parent, 2 the grandparent..."""
        if depth <= 0 or len(self.ancestors) < depth:
            return None
        return self.ancestors[len(self.ancestors) - depth]


def _present(q: QueueInfo | None, res: ResourceIndex) -> np.ndarray:
    """Scalars named by spec.deserved or spec.guarantee.resource (Volcano's ``helpers.Max(deserved,
    guarantee)`` keeps the keys of both maps)."""
    out = np.zeros(res.size, dtype=bool)
    if q is not None:
        for n in q.deserved_set | q.guarantee_set:
            i = res.pos.get(n)
            if i is not None:
                out[i] = True
    return out


def _attr(q: QueueInfo, res: ResourceIndex, total: np.ndarray, total_guarantee: np.ndarray,
          used: QueueAttr | None, flat: bool = False) -> CapacityAttr:
    """``flat``: ``total_guarantee`` is every queue's, as ``build_attrs`` sums it, so a queue with jobs takes the
    guarantee, capability and realCapability ``build_attrs`` made with the same ``new_attr`` (carried between
    sessions while the queue, the total and the guarantees are the same); nothing here changes them in place."""
    if flat and used is not None:
        g, cap, real = used.guarantee, used.capability, used.real_capability
    else:
        base = new_attr(q, res.zeros(), total, total_guarantee)
        g, cap, real = base.guarantee, base.capability, base.real_capability
    deserved = q.deserved.copy() if q.deserved is not None else res.zeros()
    if used is not None:
        a = CapacityAttr(q.name, max(q.weight, 0), deserved, used.allocated.copy(), used.request.copy(),
                         used.inqueue.copy(), used.elastic.copy(), g, cap, real)
    else:
        a = CapacityAttr(q.name, max(q.weight, 0), deserved, res.zeros(), res.zeros(), res.zeros(), res.zeros(),
                         g, cap, real)
    a.present = _present(q, res)
    return a


def build_capacity(ssn: Session, hierarchy: bool) -> tuple[dict[str, CapacityAttr], Tree | None, list[Problem],
                                                           list[Problem]]:
    """capacity's queue attributes for every queue (and, with the hierarchy, the tree with rolled-up sums),
    the reasons Volcano would refuse the hierarchy (then the plugin admits and places nothing), and the
    settings Volcano only warns about.  Allocated/request/inqueue/elastic come from proportion's
    ``build_attrs`` (one accounting for both)."""
    res = ssn.res
    total = ssn.total_resource.copy()
    used = build_attrs(ssn)
    if not hierarchy:
        total_guarantee = sum((q.guarantee for q in ssn.queues.values() if q.guarantee is not None), res.zeros())
        attrs = {}
        for q in ssn.queues.values():
            a = _attr(q, res, total, total_guarantee, used.get(q.name), flat=True)
            a.deserved = np.maximum(np.minimum(a.deserved, a.real_capability), a.guarantee)
            a.update_share()
            attrs[q.name] = a
        return attrs, None, [], []
    queues = dict(ssn.queues)
    fatal: list[Problem] = []
    if ROOT not in queues:
        fatal.append(Problem(ROOT, "metadata.name", "queue root does not exist; with enableHierarchy every queue "
                             "hangs under a Queue named root (Volcano's controller creates it)"))
        queues[ROOT] = QueueInfo(name=ROOT)
    fatal += validate_parents(ssn.queues)
    tree = queue_tree(queues)
    attrs = {name: _attr(q, res, total, res.zeros(), used.get(name)) for name, q in queues.items()}
    for name, a in attrs.items():
        a.children = list(tree.children.get(name, []))
        a.ancestors = tree.ancestors(name)[::-1] if name != ROOT else []
    for name in sorted({j.queue for j in ssn.jobs.values()}):
        if name in attrs and attrs[name].children:
            fatal.append(Problem(name, "spec.parent", f"queue {name} has child queues and also PodGroups; with "
                                 "enableHierarchy only leaf queues may hold jobs"))
    # usage rolls up to every ancestor, as Volcano adds each job's numbers to its queue's ancestors
    for name in [n for n in queues if n != ROOT]:
        src = used.get(name)
        if src is None:
            continue
        for anc in attrs[name].ancestors:
            b = attrs[anc]
            b.allocated, b.request = b.allocated + src.allocated, b.request + src.request
            b.inqueue, b.elastic = b.inqueue + src.inqueue, b.elastic + src.elastic
    root = attrs[ROOT]
    root_q = queues[ROOT]
    if root_q.capability is None or is_empty(np.where(np.isinf(root_q.capability), 0, root_q.capability)):
        root.capability = res.infinite()
    else:  # Volcano's NewResource: a resource the root does not name is 0 for the whole tree (children inherit
        # its cpu/memory and cannot get a scalar their parent lacks), not unlimited
        root.capability = np.where(np.isinf(root_q.capability), 0, root_q.capability)
    root.real_capability = root.capability.copy()
    warnings = _check_level(ROOT, attrs, res)
    for a in attrs.values():
        a.update_share()
    return attrs, tree, fatal, warnings


def _check_level(name: str, attrs: dict[str, CapacityAttr], res: ResourceIndex) -> list[Problem]:
    """Volcano's checkHierarchicalQueue for one parent, then its children (it only logs what it finds): each
    child's deserved becomes max(deserved, guarantee); a child takes its parent's capability where it sets
    none (cpu/memory <= 0, scalars not named); the root's guarantee and deserved are its children's sums;
    each child's realCapability is the parent's minus all its children's guarantees plus its own, capped by
    its capability.  A child's capability above its parent's and children's deserved/guarantee above their
    parent's are reported as warnings."""
    a = attrs[name]
    out: list[Problem] = []
    kid_guarantee, kid_deserved = res.zeros(), res.zeros()
    kid_present = np.zeros(res.size, dtype=bool)
    idx = np.arange(res.size)
    for k in a.children:
        c = attrs[k]
        c.deserved = np.maximum(c.deserved, c.guarantee)
        kid_deserved += c.deserved
        kid_guarantee += c.guarantee
        kid_present |= c.present
        unset = np.isinf(c.capability) | ((idx < PODS) & (c.capability <= 0))
        c.capability = np.where(unset, a.capability, c.capability)
        over = (c.capability > a.capability + EPS) & (idx != PODS)
        if over.any():
            mine, theirs = _dims(res, c.capability, over), _dims(res, a.capability, over)
            out.append(Problem(k, "spec.capability", f"queue {k}: capability {mine} is above its parent {name}'s "
                               f"{theirs} (Volcano only warns; the parent's limit still applies)"))
    if name == ROOT:
        a.guarantee, a.deserved, a.present = kid_guarantee.copy(), kid_deserved.copy(), kid_present
    for k in a.children:
        c = attrs[k]
        c.real_capability = np.minimum(np.maximum(a.real_capability - kid_guarantee, 0) + c.guarantee,
                                       c.capability)
    if a.children and (kid_deserved > a.deserved).any():
        own = res.format(a.deserved) if not is_empty(a.deserved) else "0 (spec.deserved unset)"
        out.append(Problem(name, "spec.deserved", f"queue {name}: its children's deserved add up to "
                           f"{res.format(kid_deserved)}, above its own deserved {own}"))
    if a.children and (kid_guarantee > a.guarantee).any():
        own = res.format(a.guarantee) if not is_empty(a.guarantee) else "0 (spec.guarantee unset)"
        out.append(Problem(name, "spec.guarantee", f"queue {name}: its children's guarantees add up to "
                           f"{res.format(kid_guarantee)}, above its own guarantee {own}"))
    for k in a.children:
        out += _check_level(k, attrs, res)
    return out


def _dims(res: ResourceIndex, v: np.ndarray, sel: np.ndarray) -> str:
    """``{cpu: 2, nvidia.com/gpu: 0}``: the selected dimensions of ``v``, zeros included."""
    return "{" + ", ".join(f"{res.names[i]}: {format_quantity(res.names[i], float(v[i]))}"
                           for i in np.nonzero(sel)[0]) + "}"


def compare_share_with_deserved(left: QueueAttr, right: QueueAttr) -> int:
    """Volcano's compareShareWithDeserved: the smaller share first; on equal shares a queue with a deserved
    amount before a best-effort one."""
    if left.share == right.share:
        lh, rh = not is_empty(left.deserved), not is_empty(right.deserved)
        if lh == rh:
            return 0
        return -1 if lh else 1
    return -1 if left.share < right.share else 1


#: the queue-tree problems that stop capacity from admitting or allocating anything this session
FATAL_PROBLEMS: StateKey[list[Problem]] = StateKey("capacity-fatal")


def queue_level(left: CapacityAttr, right: CapacityAttr) -> int:
    """Volcano's ``getQueueLevel`` (``plugins/capacity/capacity.go``): the index, in the root-first ancestor
    lists, of the two queues' last common ancestor (0, the root, when they share nothing else)."""
    level = 0
    for i in range(min(len(left.ancestors), len(right.ancestors))):
        if left.ancestors[i] != right.ancestors[i]:
            break
        level = i
    return level


@dataclass
class _Session:
    """What capacity's callbacks of one session share (Volcano keeps it on the plugin: ``queueOpts``, the
    hierarchy flag, ``ancestorReclaimLevel``): the queue attributes, the tree (None without the hierarchy),
    whether the hierarchy is usable (``readyToSchedule``) and why not."""

    attrs: dict[str, CapacityAttr]
    tree: Tree | None
    level: int
    ready: bool
    reason: str

    def chain(self, name: str) -> list[CapacityAttr]:
        """The queue and its ancestors (the queue first)."""
        a = self.attrs.get(name)
        if a is None:
            return []
        return [a] + [self.attrs[n] for n in reversed(a.ancestors)]

    def leaf(self, name: str) -> bool:
        """Volcano's isLeafQueue (a queue without attributes counts as a leaf)."""
        a = self.attrs.get(name)
        return a is None or not a.children

    def shares_ancestor(self, x: CapacityAttr, y: CapacityAttr) -> bool:
        """Volcano's sharesAnyNonRootAncestorWithinLevel."""
        xs = {x.ancestor_at(d) for d in range(1, self.level + 1)} - {None, ROOT}
        ys = {y.ancestor_at(d) for d in range(1, self.level + 1)}
        return bool(xs & ys)


def relevant(req: np.ndarray, deserved: np.ndarray) -> bool:
    """Volcano's hasRelevantDeserved: the task uses a resource (pods included) that deserved names."""
    return intersects(req, deserved, ignore_pods=False)


@register_plugin
class Capacity(Plugin):
    """In the shape of Volcano's ``capacity.go: OnSessionOpen``: build the queue attributes (``buildQueueAttrs``
    or ``buildHierarchicalQueueAttrs``, which also register the queue orders), then register each callback."""

    name = "capacity"
    queue_share = CAPACITY_QUEUES
    #: the same in both modes (docs/extending.md, "Contracts").  Its refusals (jobEnqueueable, allocatable) read the
    #: queue's and its ancestors' specs (state, capability, guarantee, the tree) and the cluster total, which move
    #: the cache's epochs, and ``allocated`` and ``allocated + inqueue - elastic`` of the queue and its ancestors,
    #: which only grow under what moves none (the sums are proportion's ``build_attrs``).  The hierarchy reads one
    #: more input: whether some PodGroup sits in a queue with children (``readyToSchedule``).  Such a PodGroup
    #: goes only by being deleted, which logs room on no node (``SchedulerCache._room``: every blocked job but
    #: the one-pod jobs refused by every node, never by the queue, is looked at again) and moves ``free_epoch``,
    #: or by moving to another queue, which moves ``alloc_epoch``.  Its permit counts what it admits (``inqueue``).
    contracts = frozenset({Contract.FINGERPRINTED, Contract.ENQUEUE_VOTER, Contract.STATEFUL_PERMIT})

    def on_session_open(self, ssn: Session) -> None:
        hierarchy = hierarchy_enabled(ssn, self.name)
        level = ancestor_reclaim_level(self.arguments)  # read (and checked) always, used only with the hierarchy
        if not hierarchy:
            level = 0
        attrs, tree, fatal, warnings = build_capacity(ssn, hierarchy)
        for w in warnings:  # Volcano logs these at every session open; pyvolcano queues lists them
            log.info("capacity: %s", w.message)
        ssn.state.write(CAPACITY_QUEUES, attrs)
        ssn.state.write(QUEUE_PROBLEMS, fatal + warnings)
        ssn.state.write(FATAL_PROBLEMS, fatal)
        self.attrs, self.tree, self.problems = attrs, tree, fatal + warnings
        cs = _Session(attrs, tree, level, not fatal, fatal[0].message if fatal else "")
        self._add_queue_order(ssn, cs)
        if tree is not None:
            self._add_victim_queue_order(ssn, cs)
        self._add_allocatable(ssn, cs)
        self._add_preemptive(ssn, cs)
        self._add_reclaimable(ssn, cs)
        self._add_unified_evictable(ssn, cs)
        self._add_enqueueable(ssn, cs)
        self._add_event_handler(ssn, cs)

    def _add_queue_order(self, ssn: Session, cs: _Session) -> None:
        """The queue order of ``buildQueueAttrs`` (flat) and ``buildHierarchicalQueueAttrs``."""
        attrs, tree = cs.attrs, cs.tree

        def queue_order(left: QueueInfo, right: QueueInfo) -> int:
            by_priority = queue_priority_cmp(left, right)
            if by_priority:
                return by_priority
            la, ra = attrs.get(left.name), attrs.get(right.name)
            if la is None or ra is None:
                return 0
            if tree is None:
                return compare_share_with_deserved(la, ra)
            ll, rl = not la.children, not ra.children
            if ll != rl:
                return -1 if ll else 1
            if not ll:
                return compare_share_with_deserved(la, ra)
            # compare the two subtrees just below the last common ancestor
            lev = queue_level(la, ra)
            lp = attrs[la.ancestors[lev + 1]] if lev + 1 < len(la.ancestors) else la
            rp = attrs[ra.ancestors[lev + 1]] if lev + 1 < len(ra.ancestors) else ra
            return compare_share_with_deserved(lp, rp)
        ssn.add_queue_order_fn(self.name, queue_order)

    def _add_victim_queue_order(self, ssn: Session, cs: _Session) -> None:
        attrs = cs.attrs

        def victim_queue_order(left: QueueInfo, right: QueueInfo, preemptor: QueueInfo) -> int:
            """Volcano's VictimQueueOrderFn, registered with the hierarchy only (``capacity.go:
            buildHierarchicalQueueAttrs``): victims of the queue whose last common ancestor with the
            preemptor's queue is deeper (the nearer relative) are evicted first; equal depth: no opinion
            (then the reverse of queue order)."""
            la, ra, pa = attrs.get(left.name), attrs.get(right.name), attrs.get(preemptor.name)
            if la is None or ra is None or pa is None:
                return 0
            ll, rl = queue_level(la, pa), queue_level(ra, pa)
            return 0 if ll == rl else (-1 if ll > rl else 1)
        ssn.add_victim_queue_order_fn(self.name, victim_queue_order)

    def _add_allocatable(self, ssn: Session, cs: _Session) -> None:
        """Volcano's AllocatableFn (``queueAllocatable``, ``checkQueueAllocatableHierarchically``)."""
        ready, leaf, chain = cs.ready, cs.leaf, cs.chain

        def allocatable(queue: QueueInfo, task: TaskInfo) -> bool:
            if not queue.is_open() or not ready or not leaf(queue.name):
                return False
            need = task.resreq
            return all(not le_with_dimension(a.allocated + need, a.real_capability, need)
                       for a in chain(queue.name))
        ssn.add_allocatable_fn(self.name, allocatable)

    def _add_preemptive(self, ssn: Session, cs: _Session) -> None:
        """Volcano's PreemptiveFn."""
        attrs, ready, level = cs.attrs, cs.ready, cs.level

        def preemptive(queue: QueueInfo, task: TaskInfo) -> bool:
            a = attrs.get(queue.name)
            if a is None or not ready or not queue.is_open():
                return False
            need = task.resreq
            future = a.allocated + need
            if le_with_dimension(future, a.real_capability, need):
                return False
            if le_partly_zero_filtered(future, a.deserved, need):
                return True
            for depth in range(1, level + 1):
                anc = a.ancestor_at(depth)
                if anc is None or anc == ROOT or anc not in attrs:
                    continue
                b = attrs[anc]
                if le_partly_zero_filtered(b.allocated + need, b.deserved, need):
                    return True
            return False
        ssn.add_preemptive_fn(self.name, preemptive)

    def _add_reclaimable(self, ssn: Session, cs: _Session) -> None:
        """Volcano's ReclaimableFn (with ``getReclaimeeAncestorToCheck`` for ``ancestorReclaimLevel``)."""
        attrs, tree, ready, level, shares_ancestor = cs.attrs, cs.tree, cs.ready, cs.level, cs.shares_ancestor

        def reclaimable(reclaimer: TaskInfo, reclaimees: list[TaskInfo]) -> tuple[list[TaskInfo], Vote]:
            if not ready:
                return [], REJECT
            rj = ssn.jobs.get(reclaimer.job)
            ra = attrs.get(rj.queue) if rj else None
            if ra is None:
                return [], REJECT
            tally: dict[str, np.ndarray] = {}
            out = []
            order = victims_queue(ssn, reclaimees, reclaimer)
            while not order.empty():
                t = order.pop()
                job = ssn.jobs.get(t.job)
                a = attrs.get(job.queue) if job else None
                if a is None:
                    continue
                if not intersects(t.resreq, reclaimer.init_resreq, ignore_pods=True):
                    continue
                alloc = tally.setdefault(a.name, a.allocated.copy())
                if not less_equal(a.guarantee, alloc - t.resreq):
                    continue
                if not relevant(t.resreq, a.deserved):
                    if level > 0 and tree is not None and shares_ancestor(ra, a) \
                            and not relevant(reclaimer.resreq, ra.deserved):
                        continue
                elif not gt_partly_relevant(alloc, a.deserved, t.resreq, a.present):
                    continue
                checked: list[np.ndarray] = []
                eligible = True
                for depth in range(1, level + 1):
                    anc = a.ancestor_at(depth)
                    if anc is None or anc == ROOT or ra.ancestor_at(depth) == anc:
                        continue
                    b = attrs.get(anc)
                    if b is None:
                        eligible = False
                        break
                    balloc = tally.setdefault(anc, b.allocated.copy())
                    checked.append(balloc)
                    if not relevant(t.resreq, b.deserved):
                        continue
                    if not gt_partly_relevant(balloc, b.deserved, t.resreq, b.present):
                        eligible = False
                        break
                if not eligible:
                    continue
                alloc -= t.resreq
                for balloc in checked:
                    balloc -= t.resreq
                out.append(t)
            return out, PERMIT
        ssn.add_reclaimable_fn(self.name, reclaimable)

    def _add_unified_evictable(self, ssn: Session, cs: _Session) -> None:
        attrs, ready = cs.attrs, cs.ready

        def unified(ctx: EvictionContext, candidates: list[TaskInfo]) -> tuple[list[TaskInfo], Vote]:
            """Volcano's capacity ``UnifiedEvictableFn``: gangpreempt passes every candidate; for gangreclaim the
            candidates are walked in the order given (bundle order) with a tally per queue: one is skipped when
            taking it leaves its queue below guarantee; it is a victim when its queue's deserved names none of
            the resources it uses, or when its queue exceeds deserved on a dimension it requests.  No ancestor
            levels and no "shares a resource with the reclaimer" test, unlike ``reclaimable``."""
            if ctx.kind == GANG_PREEMPT:
                return candidates, PERMIT
            if not ready:
                return [], REJECT
            tally: dict[str, np.ndarray] = {}
            out = []
            for t in candidates:
                job = ssn.jobs.get(t.job)
                a = attrs.get(job.queue) if job else None
                if a is None:
                    continue
                alloc = tally.setdefault(a.name, a.allocated.copy())
                if not less_equal(a.guarantee, alloc - t.resreq):
                    continue
                if relevant(t.resreq, a.deserved) and not gt_partly_relevant(alloc, a.deserved, t.resreq, a.present):
                    continue
                alloc -= t.resreq
                out.append(t)
            return out, PERMIT
        ssn.add_unified_evictable_fn(self.name, unified)

    def _add_enqueueable(self, ssn: Session, cs: _Session) -> None:
        """Volcano's JobEnqueueableFn (``jobEnqueueable``, ``checkJobEnqueueableHierarchically``)."""
        attrs, tree, ready, reason, leaf, chain = cs.attrs, cs.tree, cs.ready, cs.reason, cs.leaf, cs.chain

        def enqueueable(job: JobInfo) -> Vote:
            if not ready:
                job.enqueue_reason = f"queue hierarchy is invalid: {reason}"
                return REJECT
            if tree is not None and not leaf(job.queue):
                job.enqueue_reason = f"queue {job.queue} is not a leaf queue"
                return REJECT
            queue = ssn.queues.get(job.queue)
            if queue is not None and not queue.is_open():
                job.enqueue_reason = f"queue {job.queue} is {queue.state}, not Open"
                return REJECT
            if job.queue not in attrs or not job.has_min_resources():
                return PERMIT
            need = job.min_resources(ssn.res.size)
            for a in chain(job.queue):  # the queue first, then its ancestors up to the root
                r = need + a.allocated + a.inqueue - a.elastic
                short = le_with_dimension(r, a.real_capability, need)
                if short:
                    # Volcano's text (``util.FormatResourceNames`` in ``checkJobEnqueueableHierarchically``), with
                    # the queue's name: it names the short resources, not amounts (allocated and inqueue move with
                    # every bind), so a job refused again for the same reason keeps the very status of the last
                    # session instead of a new one, which would move its version and undo the blocked-job memo
                    job.enqueue_reason = f"queue {a.name} resource quota insufficient: " + ", ".join(
                        f"insufficient {ssn.res.names[i]}" for i in short)
                    return REJECT
            for a in chain(job.queue):
                a.inqueue += need
            return PERMIT
        ssn.add_job_enqueueable_fn(self.name, enqueueable)

    def _add_event_handler(self, ssn: Session, cs: _Session) -> None:
        attrs, tree = cs.attrs, cs.tree

        def change(task: TaskInfo, sign: float) -> None:
            """Volcano's event handlers: the leaf's allocated and share, and its ancestors' allocated (their
            share keeps its session-open value, as in Volcano)."""
            job = ssn.jobs.get(task.job)
            if job is None or job.queue not in attrs:
                return
            a = attrs[job.queue]
            a.allocated += sign * task.resreq
            a.update_share()
            if tree is not None:
                for n in a.ancestors:
                    attrs[n].allocated += sign * task.resreq
        ssn.add_event_handler(EventHandler(lambda t: change(t, 1.0), lambda t: change(t, -1.0)))
