"""proportion (Volcano's ``pkg/scheduler/plugins/proportion/proportion.go``): share the cluster between
queues by weight.

Each queue *deserves* a slice computed by Volcano's loop: hand out what remains by weight, cap each queue by
its real capability and by what it requests, raise it to its guarantee, and repeat until nothing changes.
``realCapability`` = min(capability, total - sum(guarantees) + own guarantee).  The pod count is a resource
like any other here, as in Volcano (every task requests one ``pods``; the cluster's total is the nodes'
allocatable pods), so it takes part in deserved, share, overused and reclaimable.

* queue order: ``spec.priority`` first (higher first), then the smaller share (allocated / deserved, max over
  the resources deserved names);
* overused: allocated >= deserved in every resource;
* allocatable / preemptive: allocated + request within deserved on the dimensions the task requests (pods
  not compared);
* enqueue: minResources + allocated + inqueue - elastic within realCapability, compared only on the
  dimensions the job's minResources names (a queue over its GPU capability does not block a CPU-only job);
* reclaimable: walking the candidates, one is a victim while its queue (with earlier victims taken away)
  holds more than it deserves in some resource.  There is no "the victim's queue must hold at least the
  reclaimer's request" test (Volcano 1.9 had one).

Where Volcano's design is weak (deserved depends on who is asking right now, so guarantees are not
reservations and capability is not enforced against running work) this plugin does what Volcano does;
``docs/queues.md`` says what that means for users and what the capacity plugin does instead.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from pyvolcano.api.job_info import JobInfo, TaskInfo
from pyvolcano.api.queue_info import QueueInfo
from pyvolcano.api.resource import EPS, is_empty, less_equal
from pyvolcano.framework.incremental.contracts import Contract
from pyvolcano.framework.incremental.state import CarryKey
from pyvolcano.framework.plugin import Plugin
from pyvolcano.framework.points import PERMIT, REJECT, Vote
from pyvolcano.framework.registry import register_plugin
from pyvolcano.framework.session import EventHandler, Session
from pyvolcano.framework.state import PROPORTION_QUEUES
from pyvolcano.plugins._queue_res import deserved_share, le_with_dimension
from pyvolcano.plugins.overcommit import session_sums


@dataclass
class QueueAttr:
    """One queue's numbers in a session (Volcano's ``queueAttr``); every vector has all dimensions, pods
    included."""

    name: str
    weight: int
    deserved: np.ndarray
    allocated: np.ndarray
    request: np.ndarray
    inqueue: np.ndarray
    elastic: np.ndarray
    guarantee: np.ndarray
    capability: np.ndarray
    real_capability: np.ndarray
    share: float = 0.0

    def update_share(self, mask: np.ndarray | None = None) -> None:
        """Volcano's updateQueueAttrShare: max of allocated/deserved over the resources the queue deserves
        (the pod count included; a resource it deserves none of does not count, so a queue that deserves
        nothing has share 0).  ``mask`` (optional) hides dimensions, for callers that leave some out."""
        d = self.deserved if mask is None else self.deserved * mask
        self.share = deserved_share(self.allocated, d)


#: A bound on deserved_loop's rounds, only against a pathological input: remaining shrinks geometrically, so
#: real inputs end (everything but pods below 0.1) within about 70 rounds; Volcano's loop has no bound.
_MAX_ROUNDS = 10_000


#: per queue, (its QueueInfo, the total and all guarantees' bytes, its guarantee, capability and realCapability):
#: carried from one session to the next while those are the same (``framework/incremental/state.py``)
_Static = dict[str, tuple[QueueInfo, tuple[bytes, bytes], tuple[np.ndarray, np.ndarray, np.ndarray]]]
_CARRIED_STATIC: CarryKey[_Static] = CarryKey("proportion-queues")

def deserved_loop(attrs: dict[str, QueueAttr], total: np.ndarray, mask: np.ndarray | None = None) -> None:
    """Volcano's water-filling of ``deserved`` in proportion's OnSessionOpen (see module docstring).  The pod
    count is handed out like any other resource, but, as Volcano's ``remaining.IsEmpty()`` ignores pods, the
    loop stops once everything but pods is handed out.  "Unchanged" is exact equality, as Volcano's
    ``equality.Semantic.DeepEqual``: a queue whose deserved still creeps up by fractions of a byte keeps its
    weight in the next round (ending early would hand the others a different split).  ``mask`` (optional)
    leaves dimensions out.

    Two implementations of the same arithmetic, chosen by size: ``_loop_lists`` (plain Python floats) for the
    few queues of most clusters, where one round is a few dozen float operations and NumPy's per-call overhead
    (some twenty calls a round) would dominate every session; ``_loop_arrays`` (NumPy, one queue a row) for
    many.  Both make every number the per-queue loop makes (``tests/test_deserved_loop.py`` checks them
    against each other bit for bit).  Every queue's share is then updated (``update_share``), whether a round
    ran or not."""
    queues = list(attrs.values())
    if not queues:
        return
    full = np.ones(total.shape, dtype=bool) if mask is None else mask
    done, rows = _loop_lists(queues, total, full) if len(queues) <= _LIST_QUEUES else (False, None)
    if not done:
        rows = _loop_arrays(queues, total, full)
    for k, a in enumerate(queues):
        if rows is not None:
            a.deserved = rows[k]
        a.update_share()


#: at most this many queues: ``_loop_lists``; more: ``_loop_arrays``
_LIST_QUEUES = 16


def _loop_arrays(queues: list[QueueAttr], total: np.ndarray, full: np.ndarray) -> list[np.ndarray] | None:
    """``deserved_loop`` over arrays: one round is a few NumPy operations over all the queues still unmet (a
    matrix, one queue a row, in ``attrs`` order), not a loop over them: each queue's new deserved depends only
    on its own numbers and the round's ``remaining``, so the element-wise operations are the per-queue ones;
    what the queues hand back and take (``increased``/``decreased``) is summed queue after queue in ``attrs``
    order (``np.cumsum`` along the queues is that sequence of additions), so every number is the one a
    per-queue loop gives.  The new deserved rows, or None when no round ran (no queue has weight)."""
    remaining = total * full
    weight = np.array([a.weight for a in queues], dtype=float)
    deserved = np.array([a.deserved for a in queues])
    real = np.array([a.real_capability for a in queues])
    request = np.array([a.request for a in queues])
    guarantee = np.array([a.guarantee for a in queues])
    wanted = request * full
    big = np.arange(total.shape[0]) >= 2  # ``fits``: from pods on, a zero request fits whatever is deserved
    active = np.ones(len(queues), dtype=bool)
    touched = False
    for _ in range(_MAX_ROUNDS):
        total_weight = int(weight[active].sum())  # whole numbers: the same sum in any order
        if total_weight == 0:
            break
        touched = True
        at = np.nonzero(active)[0]
        old = deserved[at]
        d = old + remaining * (weight[at] / total_weight)[:, None]
        d = np.minimum(d, real[at])
        d = np.minimum(d, request[at])
        new = np.maximum(d, guarantee[at]) * full
        deserved[at] = new
        want = wanted[at]
        met = ((want < new + EPS) | (big & (want == 0.0))).all(axis=1) | (new == old).all(axis=1)
        active[at[met]] = False
        increased = 0.0 + np.cumsum(np.maximum(new - old, 0), axis=0)[-1]
        decreased = 0.0 + np.cumsum(np.maximum(old - new, 0), axis=0)[-1]
        old_remaining = remaining
        remaining = np.maximum(remaining + decreased - increased, 0)
        if is_empty(remaining) or np.array_equal(remaining, old_remaining):
            break
    return [row.copy() for row in deserved] if touched else None


def _loop_lists(queues: list[QueueAttr], total: np.ndarray,
                full: np.ndarray) -> tuple[bool, list[np.ndarray] | None]:
    """``_loop_arrays`` in plain Python floats, operation for operation: ``np.minimum(a, b)`` is
    ``a if a < b else b`` and ``np.maximum(a, b)`` is ``a if a > b else b`` (NumPy picks the second operand on
    a tie, which decides the sign of a zero), a mask multiplies by 1.0 or 0.0, and what the queues take and
    hand back is added up queue after queue from 0.0 (``0.0 + cumsum``).  Those comparisons are NumPy's only
    without NaN, which cannot arise from finite inputs (realCapability may be infinite: unlimited); with a
    non-finite input it does nothing and says so (``(False, None)``), and ``_loop_arrays`` runs instead.
    Otherwise ``(True, rows)``, ``rows`` as ``_loop_arrays`` returns them."""
    dims = range(total.shape[0])
    fl = [1.0 if f else 0.0 for f in full.tolist()]
    tot = total.tolist()
    deserved = [a.deserved.tolist() for a in queues]
    real = [a.real_capability.tolist() for a in queues]
    request = [a.request.tolist() for a in queues]
    guarantee = [a.guarantee.tolist() for a in queues]
    # one sum is finite only if every term is (an infinity or NaN stays in a sum; an overflow only sends finite
    # inputs to the array rounds too), and a sum of realCapabilities is NaN if a term is (or +inf meets -inf)
    if not (math.isfinite(sum(tot) + sum(map(sum, deserved)) + sum(map(sum, request)) + sum(map(sum, guarantee)))
            and not math.isnan(sum(map(sum, real)))):
        return False, None
    remaining = [t * f for t, f in zip(tot, fl, strict=True)]
    weight = [float(a.weight) for a in queues]
    wanted = [[r * f for r, f in zip(row, fl, strict=True)] for row in request]
    active = [True] * len(queues)
    touched = False
    for _ in range(_MAX_ROUNDS):
        at = [k for k, on in enumerate(active) if on]
        total_weight = int(sum(weight[k] for k in at))  # whole numbers: the same sum in any order
        if total_weight == 0:
            break
        touched = True
        increased = [0.0] * len(fl)
        decreased = [0.0] * len(fl)
        for k in at:
            old = deserved[k]
            frac = weight[k] / total_weight
            re, rq, g, want = real[k], request[k], guarantee[k], wanted[k]
            new = []
            fits = same = True
            for j in dims:
                d = old[j] + remaining[j] * frac
                c = re[j]
                d = d if d < c else c
                c = rq[j]
                d = d if d < c else c
                c = g[j]
                v = (d if d > c else c) * fl[j]
                new.append(v)
                o = old[j]
                if v != o:  # an equal pair adds 0.0 to both sums, which changes neither
                    same = False
                    if v > o:
                        increased[j] += v - o
                    else:
                        decreased[j] += o - v
                w = want[j]
                if fits and not (w < v + EPS or (j >= 2 and w == 0.0)):
                    fits = False
            deserved[k] = new
            if fits or same:
                active[k] = False
        old_remaining = remaining
        remaining = [r + dec - inc for r, dec, inc in zip(remaining, decreased, increased, strict=True)]
        remaining = [r if r > 0.0 else 0.0 for r in remaining]
        if all(r < EPS for j, r in enumerate(remaining) if j != 2) or remaining == old_remaining:
            break
    return True, ([np.array(row, dtype=float) for row in deserved] if touched else None)


def build_attrs(ssn: Session) -> dict[str, QueueAttr]:
    """Per-queue allocated/request/inqueue/elastic from the session's jobs, capabilities from the specs
    (Volcano's OnSessionOpen: only queues that hold a job get attributes).  All dimensions, pods included."""
    res = ssn.res
    total = ssn.total_resource.copy()
    total_guarantee = res.zeros()
    for spec in ssn.queues.values():
        if spec.guarantee is not None:
            total_guarantee += spec.guarantee
    attrs: dict[str, QueueAttr] = {}
    sums = session_sums(ssn)
    queues = ssn.queues
    # Volcano makes a queue's attributes at its first job (``ssn.Jobs`` order here): the order deserved_loop walks
    names = [name for name in sums.queue_order if name in queues]
    if not names:
        return attrs
    # Per-queue sums of every job's rows (``overcommit.JobSums``, carried from the last session and changed only by
    # the jobs that changed): whole numbers, so the same sums as adding the jobs' rows up in any order.
    per_queue = sums.queue_sums if sums.exact else sums.ordered_sums(names)
    exact = sums.exact
    # a queue's guarantee, capability and realCapability depend on its spec (the cache replaces a QueueInfo on
    # every change), the total and all guarantees only: carried from the last session while those are the same
    values = ssn.carried_values()
    static: _Static = values.setdefault(_CARRIED_STATIC, dict) if values is not None else {}
    tkey = (total.tobytes(), total_guarantee.tobytes())
    for name in names:
        q = queues[name]
        rows = per_queue[name]
        request = rows[0] + rows[1] if exact else rows[1].copy()
        c = static.get(name)
        if c is not None and c[0] is q and c[1] == tkey:
            g, cap, real = c[2]
        else:
            base = new_attr(q, res.zeros(), total, total_guarantee)
            g, cap, real = base.guarantee, base.capability, base.real_capability
            static[name] = (q, tkey, (g, cap, real))
        attrs[name] = QueueAttr(q.name, max(q.weight, 0), res.zeros(), rows[0].copy(), request, rows[3].copy(),
                                rows[4].copy(), g, cap, real)
    return attrs


def new_attr(q: QueueInfo, zeros: np.ndarray, total: np.ndarray, total_guarantee: np.ndarray,
             mask: np.ndarray | None = None) -> QueueAttr:
    """realCapability = min(capability, max(total - all guarantees, 0) + own guarantee), per dimension; a
    capability dimension that is unset (or cpu/memory <= 0, as Volcano reads them) is unlimited."""
    full = np.ones(zeros.shape, dtype=bool) if mask is None else mask
    guarantee = (q.guarantee if q.guarantee is not None else zeros) * full
    capability = q.capability.copy() if q.capability is not None else np.full_like(zeros, np.inf)
    capability[:2] = np.where(capability[:2] <= 0, np.inf, capability[:2])
    real = np.minimum(np.maximum(total - total_guarantee, 0) + guarantee, capability)
    return QueueAttr(q.name, max(q.weight, 0), zeros.copy(), zeros.copy(), zeros.copy(), zeros.copy(),
                     zeros.copy(), guarantee, capability, real)


def queue_priority_cmp(left: QueueInfo, right: QueueInfo) -> int:
    """Volcano's proportion/capacity queueOrder, first key: the higher ``spec.priority`` goes first."""
    return right.priority - left.priority


@register_plugin
class Proportion(Plugin):
    name = "proportion"
    queue_share = PROPORTION_QUEUES
    contracts = frozenset({Contract.FINGERPRINTED, Contract.ENQUEUE_VOTER, Contract.STATEFUL_PERMIT})

    def on_session_open(self, ssn: Session) -> None:
        attrs = build_attrs(ssn)
        deserved_loop(attrs, ssn.total_resource)  # every queue's share too
        ssn.state.write(PROPORTION_QUEUES, attrs)
        self.attrs = attrs

        def queue_order(left: QueueInfo, right: QueueInfo) -> int:
            by_priority = queue_priority_cmp(left, right)
            if by_priority:
                return by_priority
            la, ra = attrs.get(left.name), attrs.get(right.name)
            ls, rs = (la.share if la else 0.0), (ra.share if ra else 0.0)
            return 0 if ls == rs else (-1 if ls < rs else 1)
        ssn.add_queue_order_fn(self.name, queue_order)

        def reclaimable(reclaimer: TaskInfo, reclaimees: list[TaskInfo]) -> tuple[list[TaskInfo], Vote]:
            out = []
            left: dict[str, np.ndarray] = {}
            for t in reclaimees:
                job = ssn.jobs.get(t.job)
                a = attrs.get(job.queue) if job else None
                if a is None:
                    continue
                if a.name not in left:
                    left[a.name] = a.allocated.copy()
                alloc = left[a.name]
                if not less_equal(alloc, a.deserved):
                    alloc -= t.resreq
                    out.append(t)
            return out, PERMIT
        ssn.add_reclaimable_fn(self.name, reclaimable)

        def overused(queue: QueueInfo) -> bool:
            a = attrs.get(queue.name)
            return a is not None and less_equal(a.deserved, a.allocated)
        ssn.add_overused_fn(self.name, overused)

        def allocatable(queue: QueueInfo, task: TaskInfo) -> bool:
            if not queue.is_open():
                return False
            a = attrs.get(queue.name)
            if a is None:
                return True
            return not le_with_dimension(a.allocated + task.resreq, a.deserved, task.resreq)
        ssn.add_allocatable_fn(self.name, allocatable)
        # Volcano 1.11+: a queue may reclaim for a task only while the task still fits its deserved share.
        ssn.add_preemptive_fn(self.name, allocatable)

        def enqueueable(job: JobInfo) -> Vote:
            queue = ssn.queues.get(job.queue)
            if queue is not None and not queue.is_open():
                job.enqueue_reason = f"queue {job.queue} is {queue.state}, not Open"
                return REJECT
            a = attrs.get(job.queue)
            if a is None or not job.has_min_resources():
                return PERMIT
            need = job.min_resources(ssn.res.size)
            r = need + a.allocated + a.inqueue - a.elastic
            short = le_with_dimension(r, a.real_capability, need)
            if not short:
                a.inqueue += need
                return PERMIT
            # Volcano's text (``util.FormatResourceNames`` in proportion's JobEnqueueableFn), with the queue's
            # name: it names the short resources, not amounts, so a job refused again for the same reason keeps
            # the very status of the last session (``Session.close``) instead of a new one at every bind
            job.enqueue_reason = f"queue {job.queue} resource quota insufficient: " + ", ".join(
                f"insufficient {ssn.res.names[i]}" for i in short)
            return REJECT
        ssn.add_job_enqueueable_fn(self.name, enqueueable)

        def change(task: TaskInfo, sign: float) -> None:
            job = ssn.jobs.get(task.job)
            a = attrs.get(job.queue) if job else None
            if a is not None:
                a.allocated += sign * task.resreq
                a.update_share()
        ssn.add_event_handler(EventHandler(lambda t: change(t, 1.0), lambda t: change(t, -1.0)))
