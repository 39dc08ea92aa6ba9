"""enqueue (``pkg/scheduler/actions/enqueue/enqueue.go``): admit Pending PodGroups to Inqueue when the plugins' vote
allows it.

Queues take turns in queue order; each turn admits (or skips) the queue's best Pending job, until every
queue has run out.  A job without ``minResources`` is always admitted, as in Volcano; so is every job when
no plugin votes.  A job in a queue that is not Open stays Pending.  A job refused under the same fingerprint as
in an earlier session is not pushed at all (``framework/incremental/memo.py``): a refusal changes nothing, so skipping
it changes no other job's turn.  Within one pass, a job with the same queue and minResources as one refused since the last
admission is refused without asking the plugins again (``_Refusals``), and each queue's jobs are sorted by
key rather than heap-compared when the jobOrder plugins allow it (``framework/order.py``).
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Callable
from typing import Any

from pyvolcano.api.job_info import JobInfo
from pyvolcano.api.queue_info import QueueInfo
from pyvolcano.api.types import PodGroupPhase
from pyvolcano.framework.action import Action
from pyvolcano.framework.incremental import deltas
from pyvolcano.framework.incremental.contracts import Contract
from pyvolcano.framework.order import job_order_key, ordered
from pyvolcano.framework.registry import register_action
from pyvolcano.framework.session import Session
from pyvolcano.framework.util import PriorityQueue


@register_action
class Enqueue(Action):
    name = "enqueue"
    contracts = frozenset({Contract.ADMITS, Contract.LEAVES_BLOCKED})

    def execute(self, ssn: Session) -> None:
        queues: PriorityQueue[QueueInfo] = PriorityQueue(ssn.queue_cmp)
        waiting: dict[str, list[JobInfo]] = {}
        memo = ssn.memo
        queues_of, waits = ssn.queues, PodGroupPhase.Pending
        # parked jobs under another epoch (room came back): checked group by group (``_ParkedGroup``); those of a
        # queue that is gone or not open are looked at one by one
        parked_groups: dict[str, list[_ParkedGroup]] = {}
        stale = ssn.plan.parked_groups() if ssn.plan.parked_stale else None
        if stale is not None:
            parked = ssn.plan.parked
            off: list[str] = []
            for (qname, mr, reason), keys in stale.items():
                q = queues_of.get(qname)
                if q is None or not q.is_open():
                    off.extend(k[-1] for k in keys if k[-1] in parked)
                else:
                    parked_groups.setdefault(qname, []).append(_ParkedGroup(keys, reason, (qname, mr)))
            ssn.plan.unpark(off)
        # every live job of every session but the settled ones (never Pending): the phase first (``is_pending``)
        for job in ssn.unsettled_jobs():
            pg = job.podgroup
            if pg is None or pg.phase != waits:
                continue
            q = queues_of.get(job.queue)
            if q is None:
                continue
            if not q.is_open():
                job.enqueue_reason = f"queue {q.name} is {q.state}"
                continue
            if memo is not None and memo.enqueue_blocked(job):  # refused under the same fingerprint
                continue
            got = waiting.get(q.name)
            if got is None:
                got = waiting[q.name] = []
                queues.push(q)
            got.append(job)
        for qname in parked_groups:
            if qname not in waiting:
                waiting[qname] = []
                queues.push(queues_of[qname])
        if not waiting:
            return
        # each queue's jobs in job order: sorted by key when every jobOrder function has one (framework/order.py;
        # admitting a job changes no other job's order), else a heap over the comparison
        key = job_order_key(ssn)
        # a refusal seen in this pass, per queue and minResources (see ``_Refusals``)
        refused = _Refusals() if memo is not None and memo.enqueue_ok else None
        if parked_groups:
            assert key is not None and refused is not None  # ``Plan.parked_groups``, the memo allows enqueue
            self._with_parked(ssn, queues, waiting, parked_groups, key, refused)
            return
        jobs: dict[str, list[JobInfo] | PriorityQueue[JobInfo]] = {
            name: ordered(lst, key) if key is not None else PriorityQueue(ssn.job_cmp, lst)
            for name, lst in waiting.items()}

        if len(jobs) == 1:  # one queue: the queue heap would hand it back after every job
            q = queues.pop()
            pending = jobs[q.name]
            if isinstance(pending, list):
                while pending:
                    _turn(ssn, q, pending.pop(), refused)
            else:
                while not pending.empty():
                    _turn(ssn, q, pending.pop(), refused)
            return
        while not queues.empty():
            q = queues.pop()
            pending = jobs[q.name]
            if (not pending) if isinstance(pending, list) else pending.empty():
                continue
            _turn(ssn, q, pending.pop(), refused)
            queues.push(q)

    @staticmethod
    def _with_parked(ssn: Session, queues: PriorityQueue[QueueInfo], waiting: dict[str, list[JobInfo]],
                     groups: dict[str, list[_ParkedGroup]], key: Callable[[JobInfo], tuple[Any, ...]],
                     refused: _Refusals) -> None:
        """The pass with parked groups: each queue's jobs in job order as a merge of its jobs looked at one by one
        and its parked groups (``_Stream``); only a group's check turns are real turns, the members it leaves
        refused are not looked at (``_ParkedGroup``)."""
        streams = {name: _Stream(lst, groups.get(name, []), key) for name, lst in waiting.items()}
        parked = ssn.plan.parked
        if len(streams) == 1:  # one queue: the queue heap would hand it back after every turn
            q = queues.pop()
            st = streams[q.name]
            got = st.next(ssn, parked)
            while got is not None:
                _group_turn(ssn, q, st, got, streams, refused, parked)
                got = st.next(ssn, parked)
            return
        while not queues.empty():
            q = queues.pop()
            st = streams[q.name]
            got = st.next(ssn, parked)
            if got is None:
                continue
            _group_turn(ssn, q, st, got, streams, refused, parked)
            queues.push(q)


def _group_turn(ssn: Session, q: QueueInfo, st: _Stream, got: tuple[JobInfo, _ParkedGroup | None],
                streams: dict[str, _Stream], refused: _Refusals, parked: dict[str, Any]) -> None:
    """One turn of a pass with parked groups (``Enqueue._with_parked``): the job ``_Stream.next`` gave, with
    its group if it is a group's check; then what the answer does to the groups."""
    job, group = got
    _turn(ssn, q, job, refused, group.shape if group is not None else None)
    assert job.podgroup is not None
    if job.podgroup.phase != PodGroupPhase.Pending:  # admitted: the votes read more now, check again
        for other in streams.values():
            other.rearm()
    elif group is not None and job.enqueue_reason != group.reason:
        # refused for another reason: its group's members after it are looked at one by one (their
        # statuses will say the new reason)
        st.dissolve(ssn, group, parked)
    elif group is not None:  # refused for its group's reason: parked again as it was
        assert st.held is not None and st.held[0] is job  # ``_Stream.next`` unparked it for this turn
        ssn.plan.repark(job, st.held[1], st.held[2])


def _turn(ssn: Session, q: QueueInfo, job: JobInfo, refused: _Refusals | None,
          shape: tuple[str, bytes] | None = None) -> None:
    """One job's turn: admitted if the votes allow it (or it has no minResources), else refused with a reason.
    ``shape``: the job's ``_Refusals.shape`` when the caller knows it (a parked group's)."""
    memo = ssn.memo
    if shape is None:
        shape = refused.shape(job) if refused is not None else None
    elif deltas.CHECK:
        assert refused is not None and shape == refused.shape(job), f"enqueue: {job.uid}'s group shape"
    reason = refused.seen.get(shape) if refused is not None and shape is not None else None
    if reason is not None:  # refused again, exactly as the plugins would refuse it
        job.enqueue_reason = reason
        if memo is not None:
            memo.record_enqueue(job)
    elif not job.has_min_resources() or ssn.job_enqueueable(job):
        ssn.job_enqueued(job)
        assert job.podgroup is not None
        job.podgroup.phase = PodGroupPhase.Inqueue
        job.enqueue_reason = ""
        if memo is not None:
            memo.admitted(job)
        if refused is not None:
            refused.seen.clear()
    else:
        if not job.enqueue_reason:
            job.enqueue_reason = (f"queue {q.name} resource quota insufficient: PodGroup minResources "
                                  f"{ssn.res.format(job.min_resources(ssn.res.size))} cannot be admitted")
        if refused is not None and shape is not None:
            refused.seen[shape] = job.enqueue_reason
        if memo is not None:
            memo.record_enqueue(job)


class _ParkedGroup:
    """Parked jobs of one queue with the same minResources and enqueue reason (``Plan.settled_jobs``), their
    job-order keys sorted (``ParkGroups.groups``: read, never changed here).

    Room came back since they were parked, so each may now be admitted.  But enqueue's votes (overcommit,
    proportion) read of a job only its queue and minResources, and of the session only what admissions add to
    (``_Refusals``): between two admissions, every job of the group gets the same answer with the same reason as
    the first of them to take its turn.  So the group is *armed* at its first member: that member takes a real
    turn; refused for the group's reason, the group is disarmed, and its later members keep their refusal and
    their status without a look until the next admission of the pass re-arms it at its first member after the
    queue's position (``_Stream.rearm``).  A member admitted is an admission like any other; a member refused for
    another reason dissolves the group (``_Stream.dissolve``).  A pass thus costs a few turns per group and
    admission, not one per waiting job.  Members are the keys' uids still parked in the session."""

    __slots__ = ("armed", "i", "keys", "reason", "shape")

    def __init__(self, keys: list[tuple[Any, ...]], reason: str, shape: tuple[str, bytes]) -> None:
        self.keys = keys
        self.reason = reason
        #: the members' queue and minResources (``_Refusals.shape``)
        self.shape = shape
        #: the index of the next member that may take a turn
        self.i = 0
        self.armed = True


class _Stream:
    """One queue's jobs for a pass with parked groups, in job order: a heap over the keys of the jobs looked at
    one by one and of each armed group's next member."""

    def __init__(self, jobs: list[JobInfo], groups: list[_ParkedGroup], key: Callable[[JobInfo], tuple[Any, ...]]):
        self.groups = groups
        self.n = 0
        self.heap: list[tuple[tuple[Any, ...], int, JobInfo | _ParkedGroup]] = []
        for job in jobs:
            self._push(key(job), job)
        for g in groups:
            if g.keys:
                self._push(g.keys[0], g)
        #: the key of the last job that took a turn
        self.pos: tuple[Any, ...] | None = None
        #: the group member that last took a check turn, with its parked record and gang's message on its clone
        self.held: tuple[JobInfo, Any, str] | None = None

    def _push(self, k: tuple[Any, ...], x: JobInfo | _ParkedGroup) -> None:
        self.n += 1  # keys end with the uid; a job may still sit in a group's keys after it left the group
        heapq.heappush(self.heap, (k, self.n, x))

    def next(self, ssn: Session, parked: dict[str, Any]) -> tuple[JobInfo, _ParkedGroup | None] | None:
        """The next job to take a real turn (unparked if a group's), with its group; None when none is left."""
        heap = self.heap
        while heap:
            k, _, x = heapq.heappop(heap)
            if not isinstance(x, _ParkedGroup):
                self.pos = k
                return x, None
            g = x
            keys, i = g.keys, g.i
            while i < len(keys) and keys[i][-1] not in parked:  # left the group (unparked, changed, gone)
                i += 1
            if i == len(keys):
                g.i, g.armed = i, False
                continue
            if keys[i] != k:  # its next member comes later: back in the heap at its place
                g.i = i
                self._push(keys[i], g)
                continue
            uid = keys[i][-1]
            g.i, g.armed = i + 1, False
            self.pos = k
            job = ssn.jobs[uid]
            self.held = (job, parked[uid], job.job_fit_errors)  # to park it again if refused alike (``repark``)
            ssn.plan.unpark((uid,))
            return job, g
        return None

    def rearm(self) -> None:
        """After an admission: each disarmed group checks again at its first member after this queue's position."""
        for g in self.groups:
            if g.armed:
                continue
            keys = g.keys
            i = bisect.bisect_right(keys, self.pos, lo=g.i) if self.pos is not None else g.i
            g.i = i
            if i < len(keys):
                g.armed = True
                self._push(keys[i], g)

    def dissolve(self, ssn: Session, group: _ParkedGroup, parked: dict[str, Any]) -> None:
        """The group's members after its check, still parked, looked at one by one (each its own turn, at the key
        the group holds for it)."""
        rest = [k for k in group.keys[group.i:] if k[-1] in parked]
        group.i, group.armed = len(group.keys), True  # never armed again
        ssn.plan.unpark(k[-1] for k in rest)
        for k in rest:
            self._push(k, ssn.jobs[k[-1]])


class _Refusals:
    """The jobs refused since the last admission of this enqueue pass, by queue and minResources.

    Used only when the blocked-job memo allows the conf (``SessionMemo.enqueue_ok``: the only jobEnqueueable
    voters are overcommit and proportion, proportion last in its tier).  Their answers, and the reasons they write,
    read nothing of the job but its queue and its minResources, and of the session only what an admission changes
    (proportion's ``inqueue`` per queue, overcommit's ``inqueue``).  So, until the next admission, a job with the
    same queue and minResources as one refused gets the same "no" with the same reason, and asking the plugins again
    would be a no-op (a refusal changes no state, ``framework/incremental/memo.py``): a backlog of thousands of jobs of a
    few shapes costs a few votes per admission, not one per job."""

    __slots__ = ("seen",)

    def __init__(self) -> None:
        self.seen: dict[tuple[str, bytes], str] = {}

    @staticmethod
    def shape(job: JobInfo) -> tuple[str, bytes] | None:
        """What the votes read of the job: its queue and minResources (None: no minResources, always admitted)."""
        pg = job.podgroup
        if pg is None or pg.min_resources is None:
            return None
        return (job.queue, pg.min_resources.tobytes())
