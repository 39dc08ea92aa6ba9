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

import numpy as np

from pyvolcano.api.job_info import JobInfo, TaskInfo
from pyvolcano.api.queue_info import QueueInfo
from pyvolcano.api.resource import less_equal
from pyvolcano.framework.incremental.contracts import Contract, VictimCondition
from pyvolcano.framework.plugin import Plugin
from pyvolcano.framework.points import PERMIT, REJECT, Vote
from pyvolcano.framework.registry import register_plugin
from pyvolcano.framework.session import EventHandler, Session
from pyvolcano.framework.state import PROPORTION_QUEUES
from pyvolcano.plugins._queue_res import PODS, le_with_dimension
from pyvolcano.plugins._shared import build_attrs, deserved_loop, queue_priority_cmp


def victim_class(job: JobInfo, _: TaskInfo) -> str:
    """A candidate's class for proportion's victim condition: its job's queue."""
    return job.queue


@register_plugin
class Proportion(Plugin):
    name = "proportion"
    queue_share = PROPORTION_QUEUES
    contracts = frozenset({Contract.FINGERPRINTED, Contract.ENQUEUE_VOTER, Contract.STATEFUL_PERMIT})

    def on_session_open(self, ssn: Session) -> None:
        attrs = build_attrs(ssn)
        deserved_loop(attrs, ssn.total_resource, values=ssn.carried_values())  # every queue's share too
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

        def admits(_: TaskInfo, cls: object, own: bool) -> bool:
            """proportion.go's reclaimable fn offers a task only while its queue's allocation (less the victims
            already taken from it) is not within the queue's deserved share: never one of a queue within it now."""
            a = attrs.get(str(cls))
            return a is not None and not less_equal(a.allocated, a.deserved)
        ssn.add_reclaimable_fn(self.name, reclaimable, VictimCondition(victim_class, admits))

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

        # per queue its (allocated, inqueue, elastic, realCapability) as plain floats, made at the first enqueue
        # vote that reads them and dropped when one changes (``change``, a permit): enqueue asks this of every
        # waiting job's turn, and a handful of float operations in Python cost less than NumPy's calls on them
        flat: dict[str, tuple[list[float], list[float], list[float], list[float]]] = {}

        def enqueueable(job: JobInfo) -> Vote:
            queue = ssn.queues.get(job.queue)
            if queue is not None and not queue.is_open():
                job.enqueue_reason = f"queue {job.queue} is {queue.state}, not Open"
                return REJECT
            a = attrs.get(job.queue)
            pg = job.podgroup
            if a is None or pg is None or pg.min_resources is None:  # ``has_min_resources``
                return PERMIT
            need = pg.min_resources
            f = flat.get(a.name)
            if f is None:
                f = flat[a.name] = (a.allocated.tolist(), a.inqueue.tolist(), a.elastic.tolist(),
                                    a.real_capability.tolist())
            # Volcano's ``LessEqualWithDimensionAndResourcesName(minReq + allocated + inqueue - elastic,
            # realCapability, minReq)`` (``_queue_res.le_with_dimension``): the same IEEE additions, left to right,
            # as NumPy's on the rows
            short = [i for i, (n, al, iq, el, rc) in enumerate(zip(need.tolist(), *f, strict=True))
                     if i != PODS and n > 0 and n + al + iq - el > rc]
            if not short:
                a.inqueue += need
                flat[a.name] = (f[0], a.inqueue.tolist(), f[2], f[3])
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
                flat.pop(a.name, None)
        ssn.add_event_handler(EventHandler(lambda t: change(t, 1.0), lambda t: change(t, -1.0)))
