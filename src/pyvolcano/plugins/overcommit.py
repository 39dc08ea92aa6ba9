"""overcommit (``pkg/scheduler/plugins/overcommit/overcommit.go``): admit PodGroups while their minResources fit the
cluster's allocatable times ``overcommit-factor`` (default 1.2; below 1 means the default) minus what is used and what
admitted jobs still wait for: the minResources of Inqueue groups, and for Running groups with at least minMember tasks
holding resources, the part of minResources they do not hold yet."""

from __future__ import annotations

from typing import Any

import numpy as np

from pyvolcano.api.job_info import JobInfo
from pyvolcano.api.resource import EPS, share
from pyvolcano.api.types import ALLOCATED, PodGroupPhase, TaskStatus
from pyvolcano.framework.incremental import deltas
from pyvolcano.framework.incremental.contracts import Contract
from pyvolcano.framework.incremental.state import CarryKey
from pyvolcano.framework.plugin import Plugin
from pyvolcano.framework.points import PERMIT, REJECT, Vote
from pyvolcano.framework.registry import register_plugin
from pyvolcano.framework.session import Session
from pyvolcano.framework.state import StateKey


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
        w = all(x.is_integer() for x in flat)
        bounds.append(int(max(map(abs, flat), default=0.0)) + 1 if w else 0)
        whole.append(w)
    return bounds, whole


#: at most this many jobs changed: the sums are updated job by job, more: with one ``np.add.at``
_SMALL = 8


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
        get = entries.get
        stale: list[JobInfo] = []
        known = 0
        if look is None or seq < 1 or self.seq != seq - 1:
            look = list(jobs.values())
            changed = None
        else:
            known = unchanged
        self.seq = seq
        for job in look:
            uid = job.uid
            e = get(uid)
            if e is None:
                stale.append(job)
                continue
            known += 1
            v = job.version
            if e[1] == v and (e[0] is job or (e[5] is job.derived and job.cloned_from == v and e[6] == v)):
                pg = job.podgroup
                if e[2] == (pg.phase if pg is not None else None):
                    continue
            stale.append(job)
        self._queue_order = None
        self.jobs = jobs
        if known == len(entries):
            gone = []
        elif changed is not None:
            gone = [uid for uid in changed if uid in entries and uid not in jobs]
            if deltas.CHECK:
                assert set(gone) == {uid for uid in entries if uid not in jobs}, "JobSums gone by deltas"
        else:
            gone = [uid for uid in entries if uid not in jobs]
        if not stale and not gone:
            return
        size = self.size
        add = [_job_rows(job) for job in stale]
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
        if len(add) <= _SMALL:  # the usual few: no stacking, and the checks in plain floats
            rows: np.ndarray | list[np.ndarray] = add
            bounds, whole = _checks_few(add)
        else:
            rows = np.array(add).reshape(len(add), 5, size)
            bounds, whole = _checks(rows)
        for k, job in enumerate(stale):
            uid = job.uid
            e = entries.get(uid)
            if e is not None:
                moves.append((e[3], e[4], -1.0))
                self.bound -= e[7]
                self.inexact -= not e[8]
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
        """overcommit's held-back amount summed over every job."""
        if not self.exact:
            return self.rows_in_order()[:, 2].sum(axis=0)
        total = np.zeros(self.size)
        for s in self.queue_sums.values():
            total += s[2]
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


@register_plugin
class Overcommit(Plugin):
    name = "overcommit"
    contracts = frozenset({Contract.FINGERPRINTED, Contract.ENQUEUE_VOTER})

    def on_session_open(self, ssn: Session) -> None:
        factor = self.arguments.get_float("overcommit-factor", 1.2)
        if factor < 1.0:
            factor = 1.2
        mask = ssn.res.fair_mask
        used = ssn.nodes.used_total()
        idle = ((ssn.total_resource * factor - used) * mask).tolist()
        # plain floats over a handful of dimensions: the same IEEE operations as NumPy's on the rows (Volcano's
        # ``LessEqualWithDimension``, ``less_equal_with_dimension``), without a NumPy call's cost on every
        # waiting job's turn (enqueue's group checks, every session the room came back)
        fair = mask.tolist()
        names = ssn.res.names
        state = {"inqueue": (session_sums(ssn).inqueue_total() * mask).tolist()}

        def enqueueable(job: JobInfo) -> Vote:
            pg = job.podgroup
            if pg is None or pg.min_resources is None:  # ``has_min_resources``
                return PERMIT
            need = [a * m for a, m in zip(pg.min_resources.tolist(), fair, strict=True)]
            short = [i for i, (n, q, h) in enumerate(zip(need, state["inqueue"], idle, strict=True))
                     if n > 0 and not q + n < h + EPS]
            if not short:
                return PERMIT
            # Volcano's text (``util.FormatResourceNames`` in overcommit's JobEnqueueableFn): the overused
            # resources, not amounts, so a job refused again for the same reason keeps last session's status
            job.enqueue_reason = "resource in cluster is overused: " + ", ".join(f"overused {names[i]}" for i in short)
            return REJECT

        def enqueued(job: JobInfo) -> None:
            pg = job.podgroup
            if pg is not None and pg.min_resources is not None:
                state["inqueue"] = [q + a * m for q, a, m in zip(state["inqueue"], pg.min_resources.tolist(), fair,
                                                                 strict=True)]
        ssn.add_job_enqueueable_fn(self.name, enqueueable)
        ssn.add_job_enqueued_fn(self.name, enqueued)
