"""proportion (seed 000 §6.5, seed 004): share the cluster between queues by weight.

Each queue *deserves* a slice computed by Volcano's loop: hand out what remains by weight, cap each queue by
its real capability and by what it requests, raise it to its guarantee, and repeat until nothing changes.
``realCapability`` = min(capability, total - sum(guarantees) + own guarantee).  Queues with the smallest
share (allocated / deserved) go first; a queue is overused once allocated >= deserved in every resource;
a task fits its queue (allocatable; and, as in Volcano 1.11, the queue may reclaim for it: preemptive)
while its request fits deserved - allocated; a PodGroup is admitted while
minResources + allocated + inqueue - elastic fits realCapability; tasks beyond deserved may be reclaimed.

Where Volcano's design is weak (seed 004: deserved depends on who is asking right now, so guarantees are not
reservations and capability is not enforced against running work) this plugin does what Volcano does;
``docs/queues.md`` says what that means for users and what the capacity plugin does instead.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pyvolcano.api.job_info import JobInfo, TaskInfo
from pyvolcano.api.queue_info import QueueInfo
from pyvolcano.api.resource import EPS, less_equal, share
from pyvolcano.api.types import TaskStatus
from pyvolcano.framework.plugin import Plugin
from pyvolcano.framework.points import PERMIT, REJECT
from pyvolcano.framework.registry import register_plugin
from pyvolcano.framework.session import EventHandler, Session
from pyvolcano.plugins.overcommit import reservations


@dataclass
class QueueAttr:
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

    def update_share(self, mask: np.ndarray) -> None:
        """Volcano's updateShare: max of allocated/deserved over the resources the queue deserves (a resource it
        deserves none of does not count, so a queue that deserves nothing has share 0)."""
        self.share = share(self.allocated, self.deserved, mask & (self.deserved >= EPS))


def deserved_loop(attrs: dict[str, QueueAttr], total: np.ndarray, mask: np.ndarray) -> None:
    """Volcano's water-filling of ``deserved`` (see module docstring)."""
    remaining = total * mask
    meet: set[str] = set()
    while True:
        total_weight = sum(a.weight for a in attrs.values() if a.name not in meet)
        if total_weight == 0:
            break
        old_remaining = remaining.copy()
        increased = np.zeros_like(remaining)
        decreased = np.zeros_like(remaining)
        for a in attrs.values():
            if a.name in meet:
                continue
            old = a.deserved.copy()
            d = a.deserved + remaining * (a.weight / total_weight)
            d = np.minimum(d, a.real_capability)
            d = np.minimum(d, a.request)
            a.deserved = np.maximum(d, a.guarantee) * mask
            a.update_share(mask)
            if less_equal(a.request * mask, a.deserved) or np.allclose(a.deserved, old, rtol=0, atol=EPS):
                meet.add(a.name)
            increased += np.maximum(a.deserved - old, 0)
            decreased += np.maximum(old - a.deserved, 0)
        remaining = remaining - increased + decreased
        if not (remaining[mask] >= EPS).any() or np.allclose(remaining, old_remaining, rtol=0, atol=EPS):
            break


def build_attrs(ssn: Session) -> dict[str, QueueAttr]:
    """Per-queue allocated/request/inqueue/elastic from the session's jobs, capabilities from the specs."""
    res, mask = ssn.res, ssn.res.fair_mask
    total = ssn.total_resource * mask
    total_guarantee = res.zeros()
    for q in ssn.queues.values():
        if q.guarantee is not None:
            total_guarantee += q.guarantee * mask
    attrs: dict[str, QueueAttr] = {}
    order: dict[str, int] = {}
    qpos: list[int] = []
    jobs: list[JobInfo] = []
    for job in ssn.jobs.values():
        q = ssn.queues.get(job.queue)
        if q is None:
            continue
        if q.name not in attrs:
            attrs[q.name] = new_attr(q, res.zeros(), total, total_guarantee, mask)
            order[q.name] = len(order)
        qpos.append(order[q.name])
        jobs.append(job)
    if not jobs:
        return attrs
    # Per-queue sums of every job's vectors in one NumPy call each (a session opens on every cycle, over every
    # job of the cluster).  Jobs are added in the same order as one by one, and amounts are whole numbers.
    size = res.size
    qidx = np.array(qpos)
    held = np.array([j.allocated for j in jobs]).reshape(len(jobs), size)
    allocated = np.zeros((len(order), size))
    np.add.at(allocated, qidx, held)
    request = allocated.copy()
    for k, job in enumerate(jobs):
        pending = job.index.get(TaskStatus.Pending)
        if pending:
            for t in pending.values():
                request[qpos[k]] += t.resreq
    held_back, beyond = reservations(jobs, size)
    inqueue = np.zeros((len(order), size))
    np.add.at(inqueue, qidx, held_back)
    elastic = np.zeros((len(order), size))
    np.add.at(elastic, qidx, beyond)
    for name, k in order.items():
        a = attrs[name]
        a.allocated, a.request = allocated[k] * mask, request[k] * mask
        a.inqueue, a.elastic = inqueue[k] * mask, elastic[k] * mask
    return attrs


def new_attr(q: QueueInfo, zeros: np.ndarray, total: np.ndarray, total_guarantee: np.ndarray,
             mask: np.ndarray) -> QueueAttr:
    guarantee = (q.guarantee if q.guarantee is not None else zeros) * mask
    capability = q.capability if q.capability is not None else np.full_like(zeros, np.inf)
    real = np.minimum(np.maximum(total - total_guarantee, 0) + guarantee, capability)
    return QueueAttr(q.name, max(q.weight, 0), zeros.copy(), zeros.copy(), zeros.copy(), zeros.copy(),
                     zeros.copy(), guarantee, capability, real)


@register_plugin
class Proportion(Plugin):
    name = "proportion"

    def on_session_open(self, ssn: Session) -> None:
        mask = ssn.res.fair_mask
        attrs = build_attrs(ssn)
        deserved_loop(attrs, ssn.total_resource, mask)
        for a in attrs.values():
            a.update_share(mask)
        ssn.state["proportion"] = attrs
        self.attrs = attrs

        def queue_order(left: QueueInfo, right: QueueInfo) -> int:
            la, ra = attrs.get(left.name), attrs.get(right.name)
            ls, rs = (la.share if la else 0.0), (ra.share if ra else 0.0)
            return 0 if ls == rs else (-1 if ls < rs else 1)
        ssn.add_fn("queueOrder", self.name, queue_order)

        def reclaimable(reclaimer: TaskInfo, reclaimees: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
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
                # Volcano master has no "the queue must still hold the request" test (proportion.go)
                if not less_equal(alloc, a.deserved):
                    alloc -= t.resreq * mask
                    out.append(t)
            return out, PERMIT
        ssn.add_fn("reclaimable", self.name, reclaimable)

        def overused(queue: QueueInfo) -> bool:
            a = attrs.get(queue.name)
            return a is not None and less_equal(a.deserved, a.allocated)
        ssn.add_fn("overused", self.name, overused)

        def allocatable(queue: QueueInfo, task: TaskInfo) -> bool:
            a = attrs.get(queue.name)
            if a is None:
                return True
            free = np.maximum(a.deserved - a.allocated, 0)
            return less_equal(task.resreq * mask, free)
        ssn.add_fn("allocatable", self.name, allocatable)
        # Volcano 1.11+: a queue may reclaim for a task only while the task still fits its deserved share.
        ssn.add_fn("preemptive", self.name, allocatable)

        def enqueueable(job: JobInfo) -> int:
            a = attrs.get(job.queue)
            if a is None or not job.has_min_resources():
                return PERMIT
            need = job.min_resources(ssn.res.size) * mask
            r = need + a.allocated + a.inqueue - a.elastic
            cap = np.where((np.arange(len(r)) >= 3) & (r <= 0), np.inf, a.real_capability)
            if less_equal(r, cap):
                a.inqueue += need
                return PERMIT
            job.enqueue_reason = (f"queue {job.queue} resource quota insufficient: needs {ssn.res.format(r)}, "
                                  f"real capability {ssn.res.format(a.real_capability)}")
            return REJECT
        ssn.add_fn("jobEnqueueable", self.name, enqueueable)

        def change(task: TaskInfo, sign: float) -> None:
            job = ssn.jobs.get(task.job)
            a = attrs.get(job.queue) if job else None
            if a is not None:
                a.allocated += sign * task.resreq * mask
                a.update_share(mask)
        ssn.add_event_handler(EventHandler(lambda t: change(t, 1.0), lambda t: change(t, -1.0)))
