"""One session's plan: the jobs it leaves alone (settled, parked, blocked) and those it schedules (issue 15).

A *settled* job closed the last session it was in with nothing pending or pipelined, no fit error, enqueue reason,
objection or topology reason, the ready condition as its only condition and a quiet status (the very object of the
session before); it is settled in this session if its clone is the one reused from the last snapshot (same cache
version), its PodGroup phase is the same and the conf's registration is the same object (a reloaded conf settles
nothing); the snapshot finds them as it reuses the clones (``SchedulerCache.snapshot``,
``IncrementalState.settled_record``).  For such a job every action's answer is known without asking: enqueue looks
only at Pending PodGroups; allocate and backfill would find it valid (its jobValid is a function of the job's
version, ``Contract.VALID_BY_VERSION``) with nothing to place; the ready condition's plugin would give it that
condition at close; and close would hand back the carried status.  So ``unsettled_jobs`` and the close hooks skip
it and close takes the carried status and counts -- as long as the session did not change its clone (an eviction
by preempt or reclaim moves the clone's version, and such a job is treated as any other from then on).

*Parked* jobs are left alone the same way: a Pending job that enqueue refused in the last session it was in, under
the blocked-job memo's fingerprint of that session (``memo.py``: the same ``free_epoch``, the same job version),
with the Unschedulable condition as its only condition, no pod holding anything, no topology constraint and the
carried waiting status.  While no room came back (the snapshot's ``free_epoch`` is the one it was parked under)
and the job is unchanged, enqueue would skip it as blocked and restore the same reason, allocate and backfill skip
Pending jobs when enqueue is configured, close would give it the same condition (but for the transition id, which
no writer compares: Volcano's ``isPodGroupStatusUpdated``) and the same status; so no pass looks at it.  Only with
an action that admits (``Contract.ADMITS``) and enqueue's memo allowed (``SessionMemo.enqueue_ok``).

*Blocked* jobs are settled jobs with pods pending: an admitted (Inqueue) job holding nothing, with no best-effort
or pipelined pod, no topology constraint and no sub-groups, whose allocate turn in the last session it was in was
skipped by the blocked-job memo or failed and was recorded there (``blocked_now``), with the Unschedulable
condition as its only condition and the carried waiting status.  Its answer hangs on allocate's memo check alone
(``SessionMemo.allocate_blocked``), so allocate makes that check for each of ``blocked`` before any turn and looks
at the others again (``unblock``); preempt and reclaim read them (``blocked_jobs``) and skip their turns only when
every turn, theirs included, is proved idle, else they look at them as at any other job (``release``) before the
turns.  Only when every action of the conf declares ``Contract.LEAVES_BLOCKED``, one declares
``Contract.CHECKS_BLOCKED`` and allocate's memo is allowed.

Only when every jobValid callback comes from a plugin declaring ``Contract.VALID_BY_VERSION`` and a plugin
declaring ``Contract.READY_CONDITION`` is configured; never with ``--full-sessions``.  ``tests/test_settled.py``
compares sessions with and without it, ``tests/test_waiting_status_carry.py`` checks each parked and blocked job's
status, ``tests/sim/test_snapshot.py`` each left-alone clone against a fresh one.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, MutableMapping
from typing import TYPE_CHECKING, Any

import numpy as np

from pyvolcano.api.job_info import JobInfo
from pyvolcano.api.types import PodGroupPhase
from pyvolcano.framework.incremental import deltas
from pyvolcano.framework.incremental.contracts import Contract, Contracts
from pyvolcano.framework.incremental.deltas import Lender
from pyvolcano.framework.incremental.memo import SessionMemo
from pyvolcano.framework.incremental.records import CloseCounts, Record
from pyvolcano.framework.incremental.state import Handover, SnapshotCarry

if TYPE_CHECKING:
    from pyvolcano.conf.registration import Registration
    from pyvolcano.framework.result import PodGroupStatus

#: a job-order key function (``framework/order.py: job_order_key``), or None when the job order is not a key
OrderKey = Callable[[JobInfo], tuple[Any, ...]]

#: from this many settled jobs on, close keeps their sums between sessions (``SettledSums``); below it the sets
#: and sums cost more than adding the few jobs one by one (the bundled trace's sessions)
SUMS_FROM = 64
#: below this every partial sum of whole numbers is exact in a float64
EXACT = float(2**53)


class Plan:
    """What one session leaves alone and what it looks at; made at open (``open``), changed by the actions
    (``unpark``, ``unblock``, ``repark``), read by close, which hands the next session its part (``hand_over``)."""

    def __init__(self, jobs: dict[str, JobInfo], carry: SnapshotCarry | None, touched: set[str]) -> None:
        self.jobs = jobs
        self.carry = carry
        #: jobs one of whose tasks was evicted (or its eviction undone) in this session: the only change a settled
        #: job can see in a session (the session's own set)
        self.touched = touched
        #: jobs this session leaves alone, with what close carries for them
        self.settled: MutableMapping[str, Record] = {}
        self.can_settle = False
        #: the jobs of ``settled`` that are parked, and whether this session may park jobs for the next one
        self.parked: dict[str, Record] = {}
        self.can_park = False
        #: the parked jobs were parked under another epoch (room came back since): enqueue checks them again,
        #: group by group (``actions/enqueue.py``), unparking (``unpark``) those it looks at
        self.parked_stale = False
        #: the parked jobs unparked since ``_unsettled`` was made, and every job unparked in this session (close
        #: moves the settled sums and parked groups by them)
        self._unparked: list[JobInfo] = []
        self.unparked_uids: list[str] = []
        #: the jobs that are not settled, in ``jobs`` order (``unsettled_jobs``)
        self._unsettled: list[JobInfo] = []
        #: the settled jobs that are *blocked*: allocate checks each against the memo before its first turn and
        #: looks again at those it cannot keep blocked (``unblock``); an ordered set
        self.blocked: dict[str, None] = {}
        #: whether this session may leave blocked jobs for the next one, and the jobs allocate found blocked in it
        #: (its memo skipped their turn or recorded their failed one: ``actions/allocate.py``)
        self.can_block = False
        self.blocked_now: set[str] = set()
        #: allocate has checked ``blocked`` against its memo in this session (``actions/allocate.py``): the clones of
        #: those still blocked hold what its memo hands back, as a turn skipped by the memo leaves a job (``release``)
        self.blocked_checked = False
        self.reg: Registration | None = None
        self._first_admits = False
        self._order_key: Callable[[], OrderKey | None] = _no_key

    # --- open ----------------------------------------------------------------------------------------------
    def open(self, reg: Registration, carry: bool, memo: SessionMemo | None, settle_ok: bool,
             actions: list[Contracts], order_key: Callable[[], OrderKey | None]) -> None:
        """Make the plan: ``carry``: the session carries values (``Session.carry``); ``settle_ok``: its plugins
        allow settled jobs (the contracts above); ``actions``: the conf's actions' contracts in order;
        ``order_key``: the job-order key once the plugins have registered."""
        self.reg, self._order_key = reg, order_key
        self._first_admits = bool(actions) and Contract.ADMITS in actions[0]
        snap = self.carry
        settled = self.settled = self.settled_jobs(carry, memo, settle_ok, actions)
        if not settled or snap is None:
            return
        self._unsettled = snap.unsettled
        self.parked = parked = snap.parked
        if parked and snap.parked_epoch != snap.free_epoch:
            # room came back since they were parked: enqueue checks them group by group when it goes first and
            # has the groups of the last session (``parked_groups``), else every one is looked at again
            if self.parked_groups() is None:
                self.unpark(list(parked))
            else:
                self.parked_stale = True
        elif parked and memo is not None:  # enqueue does not even look at them: skipped as blocked
            memo.memo.skipped += len(parked)
        if snap.blocked:  # (the snapshot lists only jobs of its ``settled``)
            self.blocked = dict.fromkeys(snap.blocked)
            if not self.can_block:  # (never under the registration that left them: looked at like any job)
                self.unblock(list(self.blocked))
        if deltas.CHECK:
            assert all(uid in self.blocked or uid in parked or not rec[1].pending for uid, rec in settled.items()), \
                "a settled job with pods pending that no pass checks"

    def settled_jobs(self, carry: bool, memo: SessionMemo | None, settle_ok: bool,
                     actions: list[Contracts]) -> MutableMapping[str, Record]:
        """The jobs this session can leave alone (the module docstring), with the status and counts close
        carries for them; sets whether it may settle, park and leave blocked jobs for the next one."""
        self.can_settle = False
        snap = self.carry
        state = snap.state if snap is not None else None
        if state is not None:
            state.settled_reg = None
        if not carry or not settle_ok:
            return {}
        self.can_settle = True
        # parking needs enqueue's memo: enqueue records the refusals that make a job parked, and without enqueue
        # allocate would promote a Pending job instead of leaving it alone
        self.can_park = memo is not None and memo.enqueue_ok and any(Contract.ADMITS in c for c in actions)
        # blocked jobs: the actions that would look at them are allocate, which checks them against its memo,
        # backfill, which has nothing for them, and preempt and reclaim, which prove their turns idle or ``release``
        # them before any turn; other actions may read anything
        self.can_block = memo is not None and memo.allocate_ok and any(Contract.CHECKS_BLOCKED in c for c in actions) \
            and all(Contract.LEAVES_BLOCKED in c for c in actions)
        if state is not None:
            state.settled_reg = self.reg  # what this session records is under its registration
        return snap.settled if snap is not None and snap.settled_reg is self.reg else {}

    def parked_groups(self) -> dict[tuple[Any, ...], list[tuple[Any, ...]]] | None:
        """The last session's parked jobs by queue, minResources and enqueue reason, each group's job-order keys
        sorted (``ParkGroups``, kept by close), when enqueue can check this session's stale parked jobs with them:
        it is the first action (nothing before it changes what its votes read) and the job order is a key
        (``framework/order.py``); else None."""
        snap = self.carry
        if snap is None:
            return None
        park = snap.state.park
        if park.groups is None or park.seq != snap.seq - 1 or park.reg is not self.reg:
            return None
        if not self._first_admits or self._order_key() is None:
            return None
        return park.groups

    # --- the actions' side ---------------------------------------------------------------------------------
    def unpark(self, uids: Iterable[str]) -> None:
        """Look at these parked jobs in this session as at any other job: out of ``settled`` and ``parked``, their
        clones put back as a fresh clone has them (the last session left enqueue's reason and the Unschedulable
        message on them; nothing else of a parked job is written), and into ``unsettled_jobs``."""
        parked = self.parked
        for uid in uids:
            if parked.pop(uid, None) is None:  # ``settled`` is a ``SettledView`` over ``parked``: out of both
                continue
            self._look_again(uid)

    def _look_again(self, uid: str) -> JobInfo:
        """A job left alone until now, taken out of ``settled`` by ``unpark`` or ``unblock``: into
        ``unsettled_jobs`` (and ``unparked_uids``, by which close moves its sums), its clone without the enqueue
        reason and the message the sessions that left it alone wrote on it."""
        self.unparked_uids.append(uid)
        job = self.jobs[uid]
        job.enqueue_reason = ""
        job.job_fit_errors = ""
        self._unparked.append(job)
        return job

    def unblock(self, uids: Iterable[str]) -> None:
        """Look at these blocked jobs in this session as at any other job: out of ``settled`` and ``blocked``,
        their clones put back as ``JobInfo.reuse`` makes them (the sessions that kept them blocked wrote the memo's
        fit errors and failed roles and the Unschedulable message on them, nothing else), their settled record
        dropped (only a new close parks them again), and into ``unsettled_jobs``."""
        settled, blocked = self.settled, self.blocked
        for uid in uids:
            blocked.pop(uid, None)
            if settled.pop(uid, None) is None:
                continue
            job = self._look_again(uid)
            job.nodes_fit_errors = {}
            job.fit_failed_roles = set()
            job.derived.pop("settled", None)

    def release(self, uids: Iterable[str]) -> None:
        """Look at these blocked jobs from now on as at any other job, as an action that reads them without the memo
        does before its turns change anything (preempt's and reclaim's turns, when they are not all proved idle:
        ``actions/preempt.py``).  Before allocate's memo check (``blocked_checked``) that is ``unblock``.  After it,
        a still-blocked job's clone holds what the memo check handed back (``SessionMemo.still_blocked``): the fit
        errors and failed roles a skipped allocate turn leaves on a job looked at, so they are kept, and only what
        the sessions that left it alone wrote besides (the Unschedulable message, the settled record) goes; the
        job stays in ``blocked_now``, so close may leave it blocked again."""
        if not self.blocked_checked:
            self.unblock(uids)
            return
        settled, blocked = self.settled, self.blocked
        for uid in uids:
            blocked.pop(uid, None)
            if settled.pop(uid, None) is None:
                continue
            self._look_again(uid).derived.pop("settled", None)

    def blocked_jobs(self) -> list[JobInfo]:
        """The blocked jobs the session leaves alone so far (``blocked``), for an action that reads them without the
        memo (``Contract.LEAVES_BLOCKED``: preempt, reclaim)."""
        jobs = self.jobs
        return [jobs[uid] for uid in self.blocked]

    def made_again(self) -> set[str] | None:
        """The jobs whose clone the snapshot made again (or reused through ``JobInfo.reuse``, which clears what
        the sessions wrote on it) rather than took over as the last session left it: ``SnapshotCarry.redone``;
        None when it does not say (the snapshot walked every job)."""
        return self.carry.redone if self.carry is not None else None

    def repark(self, job: JobInfo, record: Record, fit_errors: str) -> None:
        """Undo ``unpark`` for a job whose check turn refused it again for the reason it was parked with
        (enqueue's group checks, ``actions/enqueue.py``): its parked record stands as it stood, so it goes back to
        ``parked`` with the Unschedulable message on its clone, and out of the jobs looked at."""
        self.parked[job.uid] = record  # into ``settled`` too: a ``SettledView`` over ``parked``
        job.job_fit_errors = fit_errors
        unparked = self._unparked
        if unparked and unparked[-1] is job:  # unparked for this very turn (``_Stream.next``)
            unparked.pop()
        else:
            self._unparked = [j for j in unparked if j is not job]
            self._unsettled = [j for j in self._unsettled if j is not job]

    def unsettled_jobs(self) -> Iterable[JobInfo]:
        """The jobs a pass over the session's jobs must look at, in ``jobs`` order: all of them but the settled
        jobs the session has not changed.  A settled job changes in a session only by an eviction (the session
        notes it in ``touched``); after one, the list is made again."""
        settled = self.settled
        if not settled:
            return self.jobs.values()
        if self.touched and any(uid in settled for uid in self.touched):  # not ``isdisjoint``: it walks ``settled``
            return [job for uid, job in self.jobs.items()
                    if not (uid in settled and job.version == job.cloned_from)]
        if self._unparked:  # parked jobs enqueue looked at (``unpark``): put in, in ``jobs`` order
            pos = self.carry.pos if self.carry is not None else None
            if pos is not None:
                self._unsettled = sorted([*self._unsettled, *self._unparked], key=lambda j: pos[j.uid])
            else:
                self._unsettled = [job for uid, job in self.jobs.items() if uid not in settled]
            self._unparked = []
        return self._unsettled

    # --- close's side --------------------------------------------------------------------------------------
    def closer(self, memo: SessionMemo | None) -> Closer:
        return Closer(self, memo)

    def settled_sums(self, out_of: set[str]) -> SettledSums:
        """The sums of the settled jobs this session leaves alone (``settled`` but ``out_of``): those of the last
        session moved by the jobs that joined or left the set, and by those the snapshot handed over again (their
        record may be new), when the last session made them under this conf and every amount is whole; else
        summed afresh."""
        settled, snap, jobs = self.settled, self.carry, self.jobs
        prev = snap.state.sums if snap is not None else None
        redone, changed = (snap.redone, snap.changed) if snap is not None else (None, None)
        if (snap is not None and prev is not None and prev.seq == snap.seq - 1 and prev.reg is self.reg
                and prev.whole and redone is not None and changed is not None):
            # the members were the last session's settled jobs but its ``out_of``; only these can have joined,
            # left or got a new record since: those the snapshot handed over again or that changed in the cache,
            # those parked after a look in the last session, those unparked in this one, and this one's ``out_of``
            sums = prev
            if sums.lender.borrowed():  # a result still reads the last maps handed out: they are its now
                sums.statuses, sums.said = dict(sums.statuses), dict(sums.said)
                sums.lender.returned()
            members = sums.members
            for uid in {*redone, *changed, *out_of, *sums.joining, *self.unparked_uids}:
                kept = uid in settled and uid not in out_of
                was = uid in members
                if was and (not kept or uid in redone):
                    sums.remove(uid)
                if kept and (not was or uid in redone):
                    sums.add(uid, jobs[uid], settled[uid])
            if deltas.CHECK:
                keep = settled.keys() - out_of
                assert members.keys() == keep and all(members[uid][5] is settled[uid] for uid in keep), \
                    "SettledSums moved by deltas"
        else:
            sums = SettledSums()
            for uid in settled:
                if uid not in out_of:
                    sums.add(uid, jobs[uid], settled[uid])
        sums.joining = []
        sums.seq, sums.reg = snap.seq if snap is not None else 0, self.reg
        if snap is not None:
            snap.state.sums = sums
        return sums

    def keep_park_groups(self, parked: dict[str, Record], looked_at: list[str], leavers: list[str] | None) -> None:
        """Bring the parked groups (``ParkGroups``) to the jobs this session parks: those of the last session's
        groups that left taken out, those it parked after a look (new, or maybe under another reason) put in their
        group, each at its place in job order.  Kept only with a job-order key (``framework/order.py``).
        ``leavers``: the only jobs that can have left since the last session's groups (None: found by comparing
        the maps); then only ``looked_at`` can have joined."""
        snap = self.carry
        assert snap is not None
        park = snap.state.park
        key = self._order_key()
        if key is None:
            park.groups, park.where = None, {}
            return
        groups, where = park.groups, park.where
        if groups is None or park.seq != snap.seq - 1 or park.reg is not self.reg:
            groups, where = {}, {}
            leavers = None

        def leave(uid: str) -> None:
            g, k = where.pop(uid)
            lst = groups[g]
            del lst[bisect.bisect_left(lst, k)]
            if not lst:
                del groups[g]
        if leavers is None:
            for uid in where.keys() - parked.keys():
                leave(uid)
            joiners = dict.fromkeys((*looked_at, *(parked.keys() - where.keys())))
        else:
            for uid in dict.fromkeys(leavers):
                if uid in where and uid not in parked:
                    leave(uid)
            joiners = dict.fromkeys(looked_at)
        jobs = self.jobs
        for uid in joiners:
            if uid in where:
                leave(uid)
            job = jobs[uid]
            pg = job.podgroup
            assert pg is not None and pg.min_resources is not None  # refused by enqueue: it has minResources
            g = (job.queue, pg.min_resources.tobytes(), job.enqueue_reason)
            k = key(job)
            bisect.insort(groups.setdefault(g, []), k)
            where[uid] = (g, k)
        if deltas.CHECK:
            assert where.keys() == parked.keys(), "ParkGroups.where moved by deltas"
        park.groups, park.where, park.seq, park.reg = groups, where, snap.seq, self.reg


class Closer:
    """Close's part of the plan: which jobs the next session may leave alone (``note`` for each job close looks
    at), then what to hand over (``hand_over``)."""

    def __init__(self, plan: Plan, memo: SessionMemo | None) -> None:
        self.plan = plan
        self.settle = plan.can_settle
        self.park = plan.can_park
        self.block = plan.can_block
        self.reg = plan.reg
        #: the jobs parked after a look in this session, uid -> record, in that order (their group may be new)
        self.parked_now: dict[str, Record] = {}
        self.looked_at: list[str] = []
        self.free_epoch = memo.free_epoch if memo is not None else -1
        self.refusals = memo.memo.enqueue if memo is not None else {}

    def note(self, job: JobInfo, st: PodGroupStatus, c: CloseCounts, *, ready_quiet: bool, waiting: bool,
             only_unschedulable: bool, unschedulable: bool) -> None:
        """Record what the next session may do with a job close looked at: ``ready_quiet``: its status is last
        session's object with the ready condition alone; ``waiting``: its status is its carried waiting status;
        ``only_unschedulable``: its conditions are the Unschedulable one or none; ``unschedulable``: it has it."""
        pg = job.podgroup
        assert pg is not None
        pending = PodGroupPhase.Pending  # a Pending PodGroup is enqueue's (or allocate's to promote): never settled
        if self.settle and ready_quiet and not c.pending and pg.phase != pending:
            # nothing pending, ready, valid, quiet: the next session may leave it alone
            job.derived["settled"] = ((job.version, pg.phase, self.reg), (st, c))
        elif self.park and waiting and pg.phase == pending and not c.held and job.enqueue_reason \
                and not job.fit_failed_roles and pg.network_topology is None and not pg.sub_group_policy:
            # refused by enqueue under this session's epoch, with the status of last session: parked
            e = self.refusals.get(job.uid)
            if e is not None and e.key[0] == self.free_epoch and e.key[1] == job.cloned_from \
                    and e.enqueue_reason == job.enqueue_reason and only_unschedulable:
                self.parked_now[job.uid] = (st, c)
                self.looked_at.append(job.uid)
        elif self.block and waiting and job.uid in self.plan.blocked_now and pg.phase == PodGroupPhase.Inqueue \
                and not c.held and not job.enqueue_reason and unschedulable and only_unschedulable \
                and pg.network_topology is None and not pg.sub_group_policy \
                and not job.pending_best_effort_task_num():
            # allocate found it blocked under the memo, with its carried waiting status: left alone as a settled
            # job that the next session's allocate checks first
            job.derived["settled"] = ((job.version, pg.phase, self.reg), (st, c))

    def hand_over(self, left: dict[str, Record], looked: list[str], extra: Iterable[str],
                  leavers: list[str] | None) -> None:
        """Tell the layer what the next snapshot may hand over as it is: ``left``, the settled jobs left alone;
        the parked ones (``parked_now``); the others of the map (``looked`` and ``extra``) are handed over
        again."""
        plan, snap = self.plan, self.plan.carry
        if snap is None or not self.settle:
            return
        exclude = self.parked_now if self.park else {}
        not_left = [uid for uid in looked if uid not in exclude]
        not_left.extend(uid for uid in extra if uid not in left and uid not in exclude)
        if deltas.CHECK:
            assert set(not_left) == {uid for uid in plan.jobs if uid not in left and uid not in exclude}, \
                "Handover.not_left"
        # the blocked jobs left alone (those newly blocked the next snapshot finds by their settled record)
        blocked = plan.blocked
        h = Handover(snap.seq, left, not_left,
                     list(blocked) if left.keys() >= blocked.keys() else [uid for uid in blocked if uid in left])
        if self.park:
            h.parked, h.parked_epoch = self.parked_now, self.free_epoch
        snap.state.hand_over(h)
        if self.park:
            plan.keep_park_groups(self.parked_now, self.looked_at, leavers)


def _no_key() -> OrderKey | None:
    return None


class SettledSums:
    """What close adds for the settled jobs a session left alone, kept from one session to the next and moved
    only by the jobs that join or leave that set (``Plan.settled_sums``): pods, PodGroups per queue and phase,
    held pods and held resources per queue.  Exact: counts are integers, and resource sums are used only while
    every amount is a whole number and the sums of their magnitudes stay below 2**53 (``whole``)."""

    __slots__ = ("bound", "counts", "held", "held_n", "joining", "lender", "members", "pending_n", "pods", "reg",
                 "said", "seq", "statuses", "whole")

    def __init__(self) -> None:
        self.seq = -1
        self.reg: Registration | None = None
        #: uid -> (queue, phase, held pods, pods, allocated row or None, the settled record)
        self.members: dict[str, tuple[str, str, int, int, np.ndarray | None, Record]] = {}
        self.pods = 0
        self.counts: dict[str, dict[str, int]] = {}
        self.held_n: dict[str, int] = {}
        self.held: dict[str, np.ndarray] = {}
        #: pending pods per queue, and each parked job's reason (``SessionResult.unschedulable``)
        self.pending_n: dict[str, int] = {}
        self.said: dict[str, str] = {}
        #: each member's carried status (``SessionResult.carried_podgroups``)
        self.statuses: dict[str, PodGroupStatus] = {}
        self.bound = 0.0
        self.whole = True
        #: the jobs the session that kept these sums parked after a look: settled in the next one, not members yet
        self.joining: list[str] = []
        #: ``statuses`` and ``said`` are handed to that session's result as they are (``deltas.py``)
        self.lender = Lender()

    def add(self, uid: str, job: JobInfo, rec: Record) -> None:
        st, c = rec
        q, phase = job.queue, st.phase
        row = job.allocated.copy() if c.held else None  # a copy: a later session may change the clone's in place
        self.members[uid] = (q, phase, c.held, c.pods, row, rec)
        self.statuses[uid] = st
        self.pods += c.pods
        counts = self.counts.get(q)
        if counts is None:
            counts = self.counts[q] = {}
        counts[phase] = counts.get(phase, 0) + 1
        if phase == PodGroupPhase.Pending or c.pending:  # a parked or blocked job (settled ones have no pending pod)
            if c.pending:
                self.pending_n[q] = self.pending_n.get(q, 0) + c.pending
            if st.reason:
                self.said[uid] = st.reason
        if row is not None:
            self.held_n[q] = self.held_n.get(q, 0) + c.held
            h = self.held.get(q)
            self.held[q] = row.copy() if h is None else h + row
            if self.whole:  # in plain floats: NumPy's calls cost more on a row this short
                amounts = row.tolist()
                if row.dtype != np.float64 or not all(map(float.is_integer, amounts)):
                    self.whole = False
                else:
                    self.bound += max(map(abs, amounts), default=0.0)
                    if self.bound >= EXACT:
                        self.whole = False

    def remove(self, uid: str) -> None:
        q, phase, held, pods, row, rec = self.members.pop(uid)
        del self.statuses[uid]
        self.pods -= pods
        self.counts[q][phase] -= 1
        pending = rec[1].pending
        if phase == PodGroupPhase.Pending or pending:
            if pending:
                self.pending_n[q] -= pending
            self.said.pop(uid, None)
        if row is not None:
            self.held_n[q] -= held
            self.held[q] = self.held[q] - row
