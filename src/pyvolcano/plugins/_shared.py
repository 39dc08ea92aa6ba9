"""Helpers that more than one plugin uses, in one place so that no plugin imports another.

* the session's job ledger (``JobSums``, ``session_sums``): every job's allocated, pending request and held-back
  amounts, summed per queue and carried between sessions; overcommit reads the cluster's held-back sum,
  proportion and capacity the per-queue sums (``build_attrs``), drf every job's allocation and dominant share;
* the queue numbers of proportion and capacity (Volcano's ``queueAttr``: ``QueueAttr``, ``new_attr``,
  ``build_attrs``, proportion's water-filling ``deserved_loop``, the queue order's first key
  ``queue_priority_cmp``), from ``pkg/scheduler/plugins/proportion/proportion.go`` and
  ``pkg/scheduler/plugins/capacity/capacity.go``;
* the queue hierarchy (``hierarchy_enabled``, ``Tree``, ``queue_tree``) that capacity, drf and nodegroup read
  (Volcano's ``framework.HierarchyEnabled`` and ``spec.parent``).

See ``overcommit.py`` and ``proportion.py`` for the rules these numbers serve.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pyvolcano.api.job_info import JobInfo
from pyvolcano.api.queue_info import QueueInfo
from pyvolcano.api.resource import EPS, is_empty, share
from pyvolcano.api.types import ALLOCATED, PodGroupPhase, TaskStatus
from pyvolcano.framework.incremental import deltas
from pyvolcano.framework.incremental.state import CarriedValues, CarryKey
from pyvolcano.framework.session import Session
from pyvolcano.framework.state import StateKey
from pyvolcano.plugins._queue_res import deserved_share

#: the queue at the top of the hierarchy (Volcano's ``root``)
ROOT = "root"


def reservations(jobs: list[JobInfo], size: int, *, queue_view: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Per job (one row each): what it holds back for admission and what it holds beyond minResources.

    Held back: an Inqueue group its minResources (overcommit, ``plugins/overcommit/overcommit.go:
    OnSessionOpen``); with ``queue_view`` (proportion and capacity, ``plugins/proportion/proportion.go:
    OnSessionOpen``) the part of minResources it does not hold yet (``plugins/util/util.go: GetInqueueResource``),
    as for a Running group with at least minMember tasks holding resources in both.  Groups without
    minResources hold nothing back.  Beyond (``api/job_info.go: GetElasticResources``): what it holds above
    minResources; a group without minResources has an empty minimum (``GetMinResources``), so everything it
    holds counts as elastic (only proportion and capacity read it).  One NumPy pass: overcommit and proportion
    need it over every job of every session."""
    inqueue, elastic = np.zeros((len(jobs), size)), np.zeros((len(jobs), size))
    rows, kinds, mins, held = [], [], [], []
    for k, job in enumerate(jobs):
        pg = job.podgroup
        if pg is None or pg.min_resources is None:
            if pg is not None:
                elastic[k] = np.maximum(job.allocated, 0.0)
            continue
        rows.append(k)
        mins.append(pg.min_resources)
        held.append(job.allocated)
        if pg.phase == PodGroupPhase.Inqueue:
            kinds.append(2 if queue_view else 1)
        elif pg.phase == PodGroupPhase.Running and job.count(ALLOCATED) >= pg.min_member:
            kinds.append(2)
        else:
            kinds.append(0)
    if rows:
        at, kind = np.array(rows), np.array(kinds)
        m, h = np.array(mins).reshape(len(rows), size), np.array(held).reshape(len(rows), size)
        elastic[at] = np.maximum(h - m, 0.0)
        inqueue[at[kind == 1]] = m[kind == 1]
        inqueue[at[kind == 2]] = np.maximum(m - h, 0.0)[kind == 2]
    return inqueue, elastic


def _job_rows(job: JobInfo) -> np.ndarray:
    """One job's rows of ``JobSums``: what it holds (``allocated``), what its pending pods request, what it
    holds back for admission in overcommit's and in the queue view, and what it holds beyond minResources --
    ``reservations`` for one job, row for row the same numbers."""
    size = job.allocated.shape[0]
    out = np.zeros((5, size))
    out[0] = job.allocated
    pending = job.index.get(TaskStatus.Pending)
    if pending:
        req = out[1]
        for t in pending.values():
            req += t.resreq
    pg = job.podgroup
    if pg is None:
        return out
    if pg.min_resources is None:
        out[4] = np.maximum(job.allocated, 0.0)
        return out
    m, h = pg.min_resources, job.allocated
    out[4] = np.maximum(h - m, 0.0)
    if pg.phase == PodGroupPhase.Inqueue:
        out[2] = m
        out[3] = np.maximum(m - h, 0.0)
    elif pg.phase == PodGroupPhase.Running and job.count(ALLOCATED) >= pg.min_member:
        out[2] = out[3] = np.maximum(m - h, 0.0)
    return out


#: Every row of every job is a whole number (cpu in millicores, memory in bytes, scalars in thousandths, pods: see
#: ``api/resource.py``), so sums of rows are exact in any order, running sums with rows taken away included, while
#: every partial sum stays below 2**53.  The ledger keeps a bound on that (``JobSums.bound``) and, past it or on a
#: row that is not whole (a hand-built task), sums in ``ssn.jobs`` order instead, as before.
_EXACT_BOUND = 2**52


def _checks(rows: np.ndarray) -> tuple[list[int], list[bool]]:
    """Per job of ``rows`` (jobs x 5 x resources): its largest amount rounded up (a bound on what it adds to a
    sum) and whether every amount is a whole number (finite)."""
    flat = rows.reshape(len(rows), -1)
    m = np.abs(flat).max(axis=1, initial=0.0)
    whole = (flat == np.rint(flat)).all(axis=1) & np.isfinite(m)
    return [int(x) + 1 if w else 0 for x, w in zip(m.tolist(), whole.tolist(), strict=True)], whole.tolist()


def _checks_few(rows: list[np.ndarray]) -> tuple[list[int], list[bool]]:
    """``_checks`` of a few jobs' rows, one at a time in plain floats (``float.is_integer`` is False for an
    infinity or NaN, as ``_checks``' rint test with its finiteness test; the bound is read only when whole)."""
    bounds, whole = [], []
    for r in rows:
        flat = r.ravel().tolist()
        w = all(map(float.is_integer, flat))  # (``tolist`` of a float array: Python floats)
        # the largest magnitude of whole (so finite) amounts: the larger of the largest and of minus the smallest
        bounds.append(int(max(max(flat), -min(flat))) + 1 if w and flat else 1 if w else 0)
        whole.append(w)
    return bounds, whole


#: at most this many jobs changed: the sums are updated job by job, more: with one ``np.add.at``
_SMALL = 8


def _rows_key(job: JobInfo) -> tuple[Any, ...]:
    """Everything ``_job_rows`` reads of a job, exactly (bytes): its allocation, its pending pods' requests in
    order (all of one length: the concatenation is unambiguous), and of its PodGroup the minResources, the phase
    and whether enough pods hold resources (read only in Running)."""
    pending = job.index.get(TaskStatus.Pending)
    req = b"".join([t.resreq.tobytes() for t in pending.values()]) if pending else b""
    pg = job.podgroup
    if pg is None:
        return job.allocated.tobytes(), req
    m = pg.min_resources
    if m is None:
        return job.allocated.tobytes(), req, None
    phase = pg.phase
    return (job.allocated.tobytes(), req, m.tobytes(), phase,
            phase == PodGroupPhase.Running and job.count(ALLOCATED) >= pg.min_member)


#: at most this many distinct inputs in ``JobSums.made`` (then it starts again, empty)
_MADE_KEPT = 4096


def _fresh(e: tuple[Any, ...], job: JobInfo) -> bool:
    """A ``JobSums`` entry still counts ``job``: the same object or an unchanged clone of the same cache job, at
    the same version, and the same PodGroup phase."""
    v = job.version
    if e[1] == v and (e[0] is job or (e[5] is job.derived and job.cloned_from == v and e[6] == v)):
        pg = job.podgroup
        return bool(e[2] == (pg.phase if pg is not None else None))
    return False


class JobSums:
    """Every job's ``_job_rows`` and their per-queue sums, kept up to date from what changed since the last session.

    ``rows``: per job uid its ``(5, resources)`` rows -- allocated, pending request, held back (overcommit), held
    back (proportion/capacity), elastic; ``queue_sums``: per queue the sum of its jobs' rows.  A session opens
    over every job of the cluster and most are unchanged, so the sums are carried between sessions (in the
    cache's ``BlockedMemo``, while ``Session.carry``): ``sync`` walks the session's jobs once, and only a job
    that is new, changed or gone changes the sums (its old rows taken away, its new ones added).

    A job's rows depend on its pods and PodGroup only.  A ledger entry is reused for a job when it was computed
    from the same object at the same ``version`` and PodGroup phase (the snapshot hands an unchanged job's clone
    on: ``JobInfo.reuse``), or from another unchanged clone of the same cache job (same ``derived`` dict, same
    version) at the same phase -- the rule of ``framework/incremental/carry.py``.  Without carry each session syncs a new,
    empty ledger: the same code, every job new.  Sums of whole numbers are exact in any order (``_EXACT_BOUND``),
    so carried sums are the sums a fresh session computes; ``tests/test_carry.py`` checks them after random
    changes.

    drf's dominant shares (``shares``) are carried too, recomputed for changed jobs and for all when the
    cluster's total changes."""

    def __init__(self, size: int) -> None:
        self.size = size
        #: uid -> (job object, its version, PodGroup phase, queue, rows, derived dict, cloned_from, the rows'
        #: ``_checks``: bound and whole)
        self.entries: dict[str, tuple[JobInfo, int, PodGroupPhase | None, str, np.ndarray, dict[str, Any], int,
                                      int, bool]] = {}
        self.queue_sums: dict[str, np.ndarray] = {}
        self.queue_jobs: dict[str, int] = {}
        #: per uid the job's ``allocated`` row (shared, never changed in place: drf copies on write)
        self.alloc: dict[str, np.ndarray] = {}
        #: sum over the entries of each one's largest amount: every partial sum is below it
        self.bound = 0
        #: a row was not a whole number: sums are made in ``ssn.jobs`` order each session (``ordered_sums``)
        self.inexact = 0
        #: drf's shares, against ``share_total``; ``share_stale``: uids whose share is to be recomputed
        self.shares: dict[str, float] = {}
        self.share_total: np.ndarray | None = None
        self.share_stale: set[str] = set()
        self._queue_order: list[str] | None = None
        #: ``inqueue_total`` while the sums are as it found them (None: to be summed)
        self._held: np.ndarray | None = None
        #: rows made (read-only) with their ``_checks``, by what they were made of (``_rows_key``): jobs of a few
        #: shapes go through the same states (a service admitted, started, ended), so a changed job's rows are most
        #: often rows made before, for it or another job
        self.made: dict[tuple[Any, ...], tuple[np.ndarray, int, bool]] = {}
        self.jobs: dict[str, JobInfo] = {}
        #: the ``SnapshotCarry.seq`` of the last sync
        self.seq = -1

    def sync(self, jobs: dict[str, JobInfo], seq: int = -1, look: list[JobInfo] | None = None,
             unchanged: int = 0, changed: set[str] | None = None) -> None:
        """Bring the ledger to the session's ``jobs``.  ``seq``: the snapshot's ``SnapshotCarry.seq``.  ``look``: the
        jobs to look at when the other ``unchanged`` ones are the very clones of the last snapshot, unchanged
        (``SnapshotCarry.settled``); used only if the ledger was synced to that last snapshot's jobs (``seq - 1``),
        where every one of them got its entry.  ``changed``: then, the jobs that changed in the cache since
        (``SnapshotCarry.changed``), among which are the only ones that can have gone."""
        entries = self.entries
        carried = None if look is None or seq < 1 or self.seq != seq - 1 else (look, unchanged, changed)
        self.seq = seq
        stale, gone = deltas.stale_and_gone(entries, jobs, carried, _fresh, "JobSums")
        self._queue_order = None
        self.jobs = jobs
        if not stale and not gone:
            return
        self._held = None
        size = self.size
        # (queue, rows, +1 / -1) for every change of the sums
        moves: list[tuple[str, np.ndarray, float]] = []
        for uid in gone:
            e = entries.pop(uid)
            moves.append((e[3], e[4], -1.0))
            self.bound -= e[7]
            self.inexact -= not e[8]
            del self.alloc[uid]
            self.shares.pop(uid, None)
            self.share_stale.discard(uid)
        if len(stale) <= _SMALL:  # the usual few: rows made before, else made one by one (checks in plain floats)
            few = [self._rows(job) for job in stale]
            rows: np.ndarray | list[np.ndarray] = [r for r, _, _ in few]
            bounds, whole = [b for _, b, _ in few], [w for _, _, w in few]
        else:
            add = [_job_rows(job) for job in stale]
            rows = np.array(add).reshape(len(add), 5, size)
            bounds, whole = _checks(rows)
        for k, job in enumerate(stale):
            uid = job.uid
            was = entries.get(uid)
            if was is not None:
                moves.append((was[3], was[4], -1.0))
                self.bound -= was[7]
                self.inexact -= not was[8]
            r = rows[k]
            moves.append((job.queue, r, 1.0))
            pg = job.podgroup
            entries[uid] = (job, job.version, pg.phase if pg is not None else None, job.queue, r, job.derived,
                            job.cloned_from, bounds[k], whole[k])
            self.bound += bounds[k]
            self.inexact += not whole[k]
            self.alloc[uid] = r[0]
            self.share_stale.add(uid)
        counts, sums = self.queue_jobs, self.queue_sums
        if len(moves) <= _SMALL:
            for q, r, sign in moves:
                n = counts[q] = counts.get(q, 0) + (1 if sign > 0 else -1)
                if n == 0:
                    del counts[q], sums[q]
                else:
                    old = sums.get(q)
                    sums[q] = (0.0 + r if old is None else old + r) if sign > 0 else old - r
            return
        qs = {q: k for k, q in enumerate(dict.fromkeys(q for q, _, _ in moves))}
        delta = np.zeros((len(qs), 5, size))
        np.add.at(delta, np.array([qs[q] for q, _, _ in moves]),
                  np.array([r if sign > 0 else -r for _, r, sign in moves]).reshape(len(moves), 5, size))
        for q, _, sign in moves:
            counts[q] = counts.get(q, 0) + (1 if sign > 0 else -1)
        for q, k in qs.items():
            if counts[q] == 0:
                del counts[q]
                sums.pop(q, None)
            else:
                old = sums.get(q)
                sums[q] = delta[k] if old is None else old + delta[k]

    def _rows(self, job: JobInfo) -> tuple[np.ndarray, int, bool]:
        """``job``'s rows and their ``_checks``: the rows made before from the same inputs (``made``), else made
        now and kept; under ``deltas.CHECK`` made again and compared."""
        key = _rows_key(job)
        made = self.made
        got = made.get(key)
        if got is None or deltas.CHECK:
            r = _job_rows(job)
            (b,), (w,) = _checks_few([r])
            assert got is None or (got[0].tobytes() == r.tobytes() and got[1:] == (b, w)), \
                "JobSums: rows made before from the same inputs are not the job's rows"
            r.flags.writeable = False
            if len(made) >= _MADE_KEPT:
                made.clear()
            got = made[key] = (r, b, w)
        return got

    @property
    def queue_order(self) -> list[str]:
        """The queues in the order their first job appears in the session's jobs (proportion's attribute order)."""
        if self._queue_order is None:
            # the queues with a job are the ledger's (``queue_jobs``, synced to these jobs): the walk stops once it
            # has met each of them, usually after a few jobs rather than over the whole backlog
            want = len(self.queue_jobs)
            seen: dict[str, None] = {}
            for job in self.jobs.values():
                if job.queue not in seen:
                    seen[job.queue] = None
                    if len(seen) == want:
                        break
            self._queue_order = list(seen)
        return self._queue_order

    @property
    def exact(self) -> bool:
        """The carried sums are the sums in any order (whole numbers, partial sums below 2**53)."""
        return self.inexact == 0 and self.bound < _EXACT_BOUND

    def rows_in_order(self) -> np.ndarray:
        """Every job's rows stacked in the session's job order (jobs x 5 x resources)."""
        rows = [self.entries[uid][4] for uid in self.jobs]
        return np.array(rows).reshape(len(rows), 5, self.size) if rows else np.zeros((0, 5, self.size))

    def ordered_sums(self, queues: list[str]) -> dict[str, np.ndarray]:
        """Per queue of ``queues`` the sums of its jobs' rows in ``ssn.jobs`` order, one job after the other (what
        the exact sums equal; used when they might not be exact).  Row 1 holds allocated + request."""
        rows = self.rows_in_order()
        at = {q: k for k, q in enumerate(queues)}
        sel = [(k, at[j.queue]) for k, j in enumerate(self.jobs.values()) if j.queue in at]
        out = np.zeros((len(queues), 5, self.size))
        if sel:
            k, q = np.array(sel).T
            np.add.at(out[:, 0], q, rows[k, 0])
            out[:, 1] = out[:, 0]
            np.add.at(out[:, 1], q, rows[k, 1])
            for i in (2, 3, 4):
                np.add.at(out[:, i], q, rows[k, i])
        return {name: out[k] for name, k in at.items()}

    def reservations(self, *, queue_view: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """``reservations(list(ssn.jobs.values()), size, queue_view=...)``."""
        rows = self.rows_in_order()
        return rows[:, 3 if queue_view else 2], rows[:, 4]

    def inqueue_total(self) -> np.ndarray:
        """overcommit's held-back amount summed over every job (read-only).  With exact sums it is kept from one
        session to the next while no sum changes (``sync`` drops it when one does: a session where only a job's
        pods moved between pending and allocated leaves it), and under ``deltas.CHECK`` summed again and compared."""
        if not self.exact:
            return self.rows_in_order()[:, 2].sum(axis=0)
        total = self._held
        if total is None or deltas.CHECK:
            fresh = np.zeros(self.size)
            for s in self.queue_sums.values():
                fresh += s[2]
            assert total is None or total.tobytes() == fresh.tobytes(), "JobSums: the kept held-back total is not the sum"
            fresh.flags.writeable = False
            total = self._held = fresh
        return total

    def job_shares(self, total: np.ndarray) -> dict[str, float]:
        """drf's dominant share of every job against ``total`` (every dimension, pods too): the same divisions as
        ``api/resource.py: share``, vectorised, for the jobs that changed (all of them when ``total`` did)."""
        if self.share_total is None or self.share_total.tolist() != total.tolist():  # as np.array_equal
            self.share_total = total.copy()
            self.shares = {}
            uids = list(self.alloc)
        else:
            uids = list(self.share_stale)
        self.share_stale = set()
        if len(uids) <= _SMALL:
            for u in uids:
                self.shares[u] = share(self.alloc[u], total)
        else:
            x = np.array([self.alloc[u] for u in uids]).reshape(len(uids), self.size)
            t = total
            with np.errstate(divide="ignore", invalid="ignore"):
                r = np.where(t > 0, x / np.where(t > 0, t, 1.0), np.where(x > 0, 1.0, 0.0))
            best = np.maximum(r.max(axis=1, initial=0.0), 0.0) if r.shape[1] else np.zeros(len(uids))
            self.shares.update(zip(uids, best.tolist(), strict=True))
        return self.shares


#: ``JobSums`` over every job of the session
JOB_SUMS: StateKey[JobSums] = StateKey("job-sums")
#: the ledger carried from one session to the next (``framework/incremental/state.py``)
CARRIED_SUMS: CarryKey[JobSums] = CarryKey("job-sums")


def session_sums(ssn: Session) -> JobSums:
    """``JobSums`` of the session, synced once per session (at open, before any plugin changes a job): the ledger
    carried from the last session with carry (``Session.carried_values``), a new one without."""
    def make() -> JobSums:
        values = ssn.carried_values()
        sums = values.get(CARRIED_SUMS) if values is not None else None
        if sums is None or sums.size != ssn.res.size:
            sums = JobSums(ssn.res.size)
            if values is not None:
                values.put(CARRIED_SUMS, sums)
        carry = ssn.snapshot.carry
        seq = carry.seq if carry is not None else 0
        if values is not None and carry is not None and carry.settled:
            sums.sync(ssn.jobs, seq, carry.unsettled, len(carry.settled), carry.changed)
        else:
            sums.sync(ssn.jobs, seq)
        return sums
    return ssn.state.read_or_init(JOB_SUMS, make)


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


#: proportion's last few ``deserved_loop`` inputs (bytes) and the rows each made, the most recent last, carried
#: between sessions (``framework/incremental/state.py``): a session whose queues ask for what they asked for in
#: one of those gets the same rows without a round
_CARRIED_DESERVED: CarryKey[dict[tuple[Any, ...], list[np.ndarray] | None]] = CarryKey("proportion-deserved")

#: how many distinct inputs ``deserved_loop`` keeps the rows of.  A queue's request moves with the jobs that arrive
#: and leave, and often back to where it was some sessions ago (a service ends, another of the same size comes):
#: on the services months the last input comes back in about half of the sessions, one of the last 8 in three
#: quarters; on the bundled trace in a fifth and in a third
_DESERVED_KEPT = 8

#: ``deserved_loop``'s "every dimension" mask per resource count (read-only)
_FULL: dict[int, np.ndarray] = {}


def _full(size: int) -> np.ndarray:
    got = _FULL.get(size)
    if got is None:
        got = _FULL[size] = np.ones(size, dtype=bool)
        got.flags.writeable = False
    return got


def _loop_key(queues: list[QueueAttr], total: np.ndarray, full: np.ndarray) -> tuple[Any, ...]:
    """Everything ``_loop_lists`` / ``_loop_arrays`` read, as bytes (exact: a different sign of zero or NaN
    payload is another key) and whole numbers: the total, the mask, and per queue in order its weight,
    deserved, realCapability, request and guarantee."""
    return (total.tobytes(), full.tobytes(), tuple(a.weight for a in queues),
            b"".join([b for a in queues for b in (a.deserved.tobytes(), a.real_capability.tobytes(),
                                                  a.request.tobytes(), a.guarantee.tobytes())]))


def deserved_loop(attrs: dict[str, QueueAttr], total: np.ndarray, mask: np.ndarray | None = None,
                  values: CarriedValues | None = None) -> None:
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
    ran or not.

    ``values`` (``Session.carried_values``, None without carry): the loop's inputs and rows are carried from one
    session to the next, the last ``_DESERVED_KEPT`` distinct inputs, and a session whose inputs are byte for
    byte one of those takes copies of its rows (the loop is a function of them alone: a waiting backlog leaves
    the queues' requests as they were session after session, and jobs that come and go bring them back to earlier
    values); under ``deltas.CHECK`` the loop runs anyway and must give the same bytes."""
    queues = list(attrs.values())
    if not queues:
        return
    full = _full(total.shape[0]) if mask is None else mask
    if values is None:
        _set_deserved(queues, _run_loop(queues, total, full))
        return
    key = _loop_key(queues, total, full)
    kept = values.setdefault(_CARRIED_DESERVED, dict)
    if key in kept:
        last = kept.pop(key)
        kept[key] = last  # the most recent last
        rows = None if last is None else [r.copy() for r in last]
        if deltas.CHECK:
            fresh = _run_loop(queues, total, full)
            assert (fresh is None) == (rows is None) and (
                fresh is None or rows is None or [r.tobytes() for r in fresh] == [r.tobytes() for r in rows]), \
                "deserved_loop: the carried rows are not the loop's"
        _set_deserved(queues, rows)
        return
    rows = _run_loop(queues, total, full)
    kept[key] = None if rows is None else [r.copy() for r in rows]
    if len(kept) > _DESERVED_KEPT:
        del kept[next(iter(kept))]  # the least recently met
    _set_deserved(queues, rows)


def _run_loop(queues: list[QueueAttr], total: np.ndarray, full: np.ndarray) -> list[np.ndarray] | None:
    done, rows = _loop_lists(queues, total, full) if len(queues) <= _LIST_QUEUES else (False, None)
    if not done:
        rows = _loop_arrays(queues, total, full)
    return rows


def _set_deserved(queues: list[QueueAttr], rows: list[np.ndarray] | None) -> None:
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
    total = ssn.total_resource  # read only
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
    # Per-queue sums of every job's rows (``JobSums``, carried from the last session and changed only by
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


def option_flags(ssn: Session, plugin: str) -> dict[str, bool]:
    """The enable flags ``plugin``'s option sets in the session's conf (``PluginOption.flags``, made once per conf:
    ``Registration.flags_of``; read-only), empty for a plugin the conf does not name.  Volcano's ``isEnabled``
    (framework/util.go) is ``option_flags(ssn, plugin).get(flag, True)``."""
    got = ssn.options.get(plugin)
    return {} if got is None else ssn.conf.registration.flags_of(got[1])


def hierarchy_enabled(ssn: Session, plugin: str) -> bool:
    """Volcano's HierarchyEnabled: off unless the plugin's option sets ``enableHierarchy: true``."""
    return bool(option_flags(ssn, plugin).get("enableHierarchy", False))



@dataclass
class Tree:
    """The queue hierarchy: parent of each queue and its children (root first)."""

    parent: dict[str, str] = field(default_factory=dict)
    children: dict[str, list[str]] = field(default_factory=dict)

    def ancestors(self, name: str) -> list[str]:
        """Ancestors nearest first (parent, grandparent, ..., root)."""
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
