"""Whether preempt's or reclaim's victim search can find anything, without the search: the plugins' declared
victim conditions (``contracts.VictimCondition``), Volcano's tier rule and a ledger of the candidates' classes
kept between sessions.

Volcano's ``Session.Preemptable`` / ``Session.Reclaimable`` (framework/session_plugins.go, master ed72c7c8;
``points._intersect`` here): within a tier a plugin answering empty (with any vote but abstain) ends the tier with
no victims, and a tier without victims leaves the decision to the next one.  So when in every tier some plugin
declares a condition no candidate of the scope meets -- and every plugin called before it in its tier declares one
too, which promises it has no effect besides its answer -- every node's answer is empty, whatever the node.
preempt and reclaim then skip the plugins' votes node by node and keep only what the search does with no victims
(a task that already fits a node's future idle is still pipelined there; ``actions/preempt.py``).

The ledger (``VictimLedger``) counts, per queue and per declared classification, the classes of the queue's
candidate tasks: Running or Bound, preemptable (a superset of every action's candidates: preempt keeps Running
and Bound preemptable tasks, reclaim Running ones).  Like the plugins' ``JobSums`` (``plugins/_shared.py``) it
is carried between sessions (``Session.carried_values``) and moved only by the jobs that changed: those the
snapshot did not carry as settled, and those the session itself changed (``Session.touched``), each recounted
from its tasks.  A check is then a walk over a few classes per tier, not over the cluster's running tasks.

The proofs preempt and reclaim need to skip idle turns are carried too (``VictimProof.verdict``): per queue the
ledger stamps the classes present (``present``, moved when a class appears or its count drops to zero), and a
waiting preemptor's proof is kept under those stamps and what the conditions' ``admits`` read of it
(``VictimCondition.actor``), so a job that waits through many sessions is proved once per change of its queue's
classes.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Hashable, Sequence
from typing import Any, TypeVar

from pyvolcano.api.job_info import JobInfo, TaskInfo
from pyvolcano.api.types import TaskStatus
from pyvolcano.framework.incremental import deltas
from pyvolcano.framework.incremental.contracts import Contract, VictimActor, VictimClass, VictimCondition
from pyvolcano.framework.incremental.state import CarryKey
from pyvolcano.framework.points import JOB_STARVING, JOB_VALID, PREEMPTABLE, RECLAIMABLE, Point
from pyvolcano.framework.session import Session
from pyvolcano.framework.state import StateKey

#: the statuses of every action's candidates (preempt: Running and Bound; reclaim: Running)
CANDIDATE = TaskStatus.Running | TaskStatus.Bound

#: class -> how many candidates have it
Counts = dict[Hashable, int]
#: one job's counts, one ``Counts`` per classification of the ledger (None: the job has no candidate)
JobCounts = tuple[Counts, ...] | None


def count_job(job: JobInfo, classifiers: Sequence[VictimClass]) -> JobCounts:
    """Per classification, the classes of the job's candidate tasks (Running or Bound, preemptable)."""
    cands = [t for t in job.tasks_in(CANDIDATE) if t.preemptable]
    if not cands:
        return None
    out = []
    for f in classifiers:
        c: Counts = {}
        for t in cands:
            k = f(job, t)
            c[k] = c.get(k, 0) + 1
        out.append(c)
    return tuple(out)


def _move(into: list[Counts], counts: tuple[Counts, ...], sign: int) -> bool:
    """Add (``sign`` 1) or take out (-1) one job's counts; whether a class came or went (the classes present moved)."""
    moved = False
    for mine, theirs in zip(into, counts, strict=True):
        for k, n in theirs.items():
            had = mine.get(k, 0)
            m = had + sign * n
            if m:
                mine[k] = m
            else:
                del mine[k]
            moved = moved or (m > 0) != (had > 0)
    return moved


#: the source of ``VictimLedger.present`` stamps: one sequence for every ledger, so that a stamp is never reused
_STAMPS = itertools.count(1)


def _fresh(e: tuple[Any, ...], job: JobInfo) -> bool:
    """A ledger entry still counts ``job``: the same object or an unchanged clone of the same cache job, at the
    same version (``JobSums``' rule without the phase, which no condition reads)."""
    v = job.version
    return bool(e[1] == v and (e[0] is job or (e[3] is job.derived and job.cloned_from == v and e[4] == v)))


class VictimLedger:
    """Per queue, per classification (``classifiers``, in order) the classes of its candidate tasks, kept up to
    date job by job.  An entry is reused for a job computed from the same object at the same ``version``, or from
    an unchanged clone of the same cache job at the same version (the rule of ``JobSums.sync``)."""

    def __init__(self, classifiers: tuple[VictimClass, ...]) -> None:
        self.classifiers = classifiers
        #: uid -> (job object, its version, queue, derived dict, cloned_from, its counts)
        self.entries: dict[str, tuple[JobInfo, int, str, dict[str, Any], int, JobCounts]] = {}
        self.queues: dict[str, list[Counts]] = {}
        #: per queue, a stamp that changes whenever the classes present in its counts change (a class appears or its
        #: count drops to zero): what a proof over the queue reads of the ledger (``VictimProof``'s verdicts)
        self.present: dict[str, int] = {}
        #: proofs carried between sessions, by everything they read (``VictimProof.verdict``), and the conf they
        #: were made under (a reload makes a new object: they are dropped)
        self.verdicts: dict[tuple[Any, ...], bool] = {}
        self.conf: Any = None
        #: the ``SnapshotCarry.seq`` of the last sync
        self.seq = -1

    def _set(self, job: JobInfo) -> None:
        uid = job.uid
        old = self.entries.get(uid)
        if old is not None and old[5] is not None and _move(self.queues[old[2]], old[5], -1):
            self.present[old[2]] = next(_STAMPS)
        counts = count_job(job, self.classifiers)
        if counts is not None:
            q = self.queues.get(job.queue)
            if q is None:
                q = self.queues[job.queue] = [{} for _ in self.classifiers]
            if _move(q, counts, 1):
                self.present[job.queue] = next(_STAMPS)
        self.entries[uid] = (job, job.version, job.queue, job.derived, job.cloned_from, counts)

    def _drop(self, uid: str) -> None:
        e = self.entries.pop(uid)
        if e[5] is not None and _move(self.queues[e[2]], e[5], -1):
            self.present[e[2]] = next(_STAMPS)

    def sync(self, ssn: Session) -> None:
        """Bring the ledger to the session's jobs: when it was synced to the last snapshot, only the jobs the
        snapshot did not carry as settled are looked at (the settled ones are the very objects of the last
        session, unchanged), else every job; then the jobs this session changed so far (``refresh``)."""
        carry = ssn.snapshot.carry
        seq = carry.seq if carry is not None else 0
        carried = (carry.unsettled, len(carry.settled), carry.changed) \
            if ssn.carry and carry is not None and carry.settled and seq >= 1 and self.seq == seq - 1 else None
        self.seq = seq
        stale, gone = deltas.stale_and_gone(self.entries, ssn.jobs, carried, _fresh, "VictimLedger")
        for uid in gone:
            self._drop(uid)
        for job in stale:
            self._set(job)
        self.refresh(ssn)

    def refresh(self, ssn: Session) -> None:
        """Recount the jobs this session changed since they were last counted (``Session.touched``: every place,
        unplace, eviction and dispatch names its job)."""
        jobs, entries = ssn.jobs, self.entries
        for uid in ssn.touched:
            job = jobs.get(uid)
            if job is None:
                continue
            e = entries.get(uid)
            if e is None or e[0] is not job or e[1] != job.version:
                self._set(job)
        if deltas.CHECK:
            self.check(ssn)

    def check(self, ssn: Session) -> None:
        """Every queue's counts are those of its jobs counted afresh (tests: ``deltas.CHECK``)."""
        fresh: dict[str, list[Counts]] = {}
        for job in ssn.jobs.values():
            counts = count_job(job, self.classifiers)
            if counts is not None:
                _move(fresh.setdefault(job.queue, [{} for _ in self.classifiers]), counts, 1)
        assert all(q in self.present for q, c in self.queues.items() if any(c)), "VictimLedger: a queue without stamp"
        mine = {q: c for q, c in self.queues.items() if any(c)}
        assert mine == fresh, f"VictimLedger: {mine} != {fresh}"

    def of_queue(self, queue: str) -> list[Counts] | None:
        return self.queues.get(queue)

    def of_job(self, uid: str) -> JobCounts:
        e = self.entries.get(uid)
        return e[5] if e is not None else None


#: the ledger carried from one session to the next
CARRIED_LEDGER: CarryKey[VictimLedger] = CarryKey("victim-ledger")


class VictimProof:
    """One session's proofs over a point (preemptable or reclaimable): per tier, the declared conditions of the
    plugins in tier order up to the first that declares none (``chains``); built only when every tier that has
    a plugin on the point starts with a declared one."""

    def __init__(self, ssn: Session, point: Point[Any], ledger: VictimLedger) -> None:
        self.ssn = ssn
        self.ledger = ledger
        at = {f: k for k, f in enumerate(ledger.classifiers)}
        self.chains: list[list[tuple[int, VictimCondition]]] = []
        shape: list[tuple[tuple[str, int], ...]] = []
        actors: dict[VictimActor, None] | None = {}
        sessions: dict[Callable[[], Hashable], None] | None = {}
        for tier in ssn.fns[point.name]:
            if not tier:
                continue
            chain, names = [], []
            for name, fn in tier:
                cond = ssn.victim_conditions.get(fn)
                if cond is None:
                    break
                chain.append((at[cond.classify], cond))
                names.append((name, at[cond.classify]))
                if actors is not None and cond.actor is not None:
                    actors[cond.actor] = None
                else:
                    actors = None
                if sessions is not None and cond.actor_session is not None:
                    sessions[cond.actor_session] = None
                else:
                    sessions = None
            self.chains.append(chain)
            shape.append(tuple(names))
        #: what a verdict reads of the session's registration: the point, and per tier the declaring plugins asked
        self.shape = (point.name, tuple(shape))
        #: what the chains' ``admits`` read of a preemptor (``VictimCondition.actor``); None when one declares nothing
        self.actors = tuple(actors) if actors is not None else None
        #: what the ``actors`` read of the session besides the preemptor's job (``VictimCondition.actor_session``,
        #: asked once here); None when a condition declares no actor or no session part
        self.actor_session = tuple([f() for f in sessions]) if sessions is not None and actors is not None else None

    def none(self, actor: TaskInfo, queues: Sequence[str] = (), less: str | None = None, job: str | None = None,
             own: bool = False) -> bool:
        """True when no candidate of the scope can be in the point's answer for ``actor``: in every tier some
        plugin, reached only through declared plugins, admits none of the classes present.  The scope: the
        candidates of ``queues`` less those of job ``less``, or those of job ``job``; ``own``: they are of
        ``actor``'s own job."""
        ledger = self.ledger
        ledger.refresh(self.ssn)
        scopes: list[Sequence[Counts]]
        if job is not None:
            one = ledger.of_job(job)
            scopes = [one] if one is not None else []
        else:
            scopes = [c for q in queues if (c := ledger.of_queue(q)) is not None]
        if not scopes:
            return True  # no candidate at all (every tier's first plugin declares a condition: ``_provable``)
        minus = ledger.of_job(less) if less is not None else None
        for chain in self.chains:
            for k, cond in chain:
                if not _admits_any(cond, actor, [s[k] for s in scopes], minus[k] if minus is not None else None,
                                   own):
                    break  # this plugin answers empty on every node: the tier ends without victims
            else:
                return False
        return True

    def verdict(self, actor: TaskInfo, queues: Sequence[str], less: str | None = None, job: str | None = None) -> bool:
        """``none(actor, queues, less=less)`` and, with ``job``, ``none(actor, job=job, own=True)``: the proof a
        turn that is to be skipped needs (``actions/_victims.py: turns_idle``), proved once per key and carried
        between sessions in the ledger.

        The proof reads the classes present in the scope, which ``admits`` each chain's conditions give, and for
        each class ``admits(actor, class, own)``.  When neither ``less`` nor ``job`` has a candidate (a waiting
        job: the scopes are ``queues``' candidates and none), the classes present are those of ``queues``, which
        their ``VictimLedger.present`` stamps name, and every ``admits`` answers as for any preemptor with the same
        ``VictimCondition.actor`` keys; with the registration's ``shape`` that is every input, and the conf is the
        same object (``session_ledger`` drops the verdicts of another).  Otherwise, or when a condition declares no
        actor key, the proof is made as it is.  With ``deltas.CHECK`` a reused verdict is proved again and must
        agree."""
        ledger = self.ledger
        actors = self.actors
        ledger.refresh(self.ssn)
        entries = ledger.entries
        if actors is None or (less is not None and (e := entries.get(less)) is not None and e[5] is not None) \
                or (job is not None and job != less and (e := entries.get(job)) is not None and e[5] is not None):
            return self.none(actor, queues, less=less) and (job is None or self.none(actor, job=job, own=True))
        present = ledger.present
        key = (self.shape, tuple(queues), tuple([present.get(q) for q in queues]), tuple([a(actor) for a in actors]))
        got = ledger.verdicts.get(key)
        if got is None:
            got = ledger.verdicts[key] = self.none(actor, queues)  # the own scope has no candidate: empty
        elif deltas.CHECK:
            assert got == self.none(actor, queues), f"VictimProof: a carried verdict for {actor.uid} is stale"
        return got


def _admits_any(cond: VictimCondition, actor: TaskInfo, counts: list[Counts], minus: Counts | None,
                own: bool) -> bool:
    if not counts:
        return False
    if len(counts) == 1:
        merged = counts[0]
    else:
        merged = {}
        for c in counts:
            for k, n in c.items():
                merged[k] = merged.get(k, 0) + n
    admits = cond.admits
    for k, n in merged.items():
        if minus:
            n -= minus.get(k, 0)
        if n > 0 and admits(actor, k, own):
            return True
    return False


#: how many verdicts a ledger keeps before it forgets them all (``VictimProof.verdict``)
VERDICTS = 4096

#: the session's ledger, synced once (``victim_proof``)
LEDGER: StateKey[VictimLedger | None] = StateKey("victim-ledger")


def _provable(ssn: Session, point: Point[Any]) -> bool:
    """Every tier with a plugin on the point starts with a plugin that declared a condition (else no proof is
    possible for that tier, and the search runs as it is)."""
    tiers = [t for t in ssn.fns[point.name] if t]
    return bool(tiers) and all(t[0][1] in ssn.victim_conditions for t in tiers)


def _classifiers(ssn: Session) -> tuple[VictimClass, ...]:
    seen: dict[VictimClass, None] = {}
    for point in (PREEMPTABLE, RECLAIMABLE):
        for tier in ssn.fns[point.name]:
            for _, fn in tier:
                cond = ssn.victim_conditions.get(fn)
                if cond is not None:
                    seen[cond.classify] = None
    return tuple(seen)


def session_ledger(ssn: Session) -> VictimLedger | None:
    """The session's ledger, synced once per session (the one carried from the last session when its
    classifications are this session's, a new one otherwise); None when neither point can be proven empty, and
    when the session carries nothing (``Session.carry`` false: ``--full-sessions``, a single ``cycle``): counting
    every job's candidates afresh would cost each session what the search costs, so the search runs as Volcano's,
    which makes ``--full-sessions`` the reference the shortcut is compared with."""
    def make() -> VictimLedger | None:
        if not ssn.carry or not (_provable(ssn, PREEMPTABLE) or _provable(ssn, RECLAIMABLE)):
            return None
        classifiers = _classifiers(ssn)
        values = ssn.carried_values()
        ledger = values.get(CARRIED_LEDGER) if values is not None else None
        if ledger is None or ledger.classifiers != classifiers:
            ledger = VictimLedger(classifiers)
            if values is not None:
                values.put(CARRIED_LEDGER, ledger)
        if ledger.conf is not ssn.conf or len(ledger.verdicts) > VERDICTS:
            ledger.verdicts.clear()  # made under another conf (or too many kept: most are for stamps gone by)
            ledger.conf = ssn.conf
        ledger.sync(ssn)
        return ledger
    return ssn.state.read_or_init(LEDGER, make)


def walk_by_version(ssn: Session) -> bool:
    """Whether ``valid_starving`` may carry its answer for unchanged jobs: the session carries values and every
    jobValid and jobStarving callback comes from a plugin whose answer is a function of the job's version
    (``Contract.VALID_BY_VERSION``, ``Contract.STARVING_BY_VERSION``)."""
    return ssn.state.read_or_init(_BY_VERSION, lambda: ssn.carry and ssn.registered_only_by(
        JOB_VALID, Contract.VALID_BY_VERSION) and ssn.registered_only_by(JOB_STARVING, Contract.STARVING_BY_VERSION))


T = TypeVar("T")
#: what ``while_unchanged`` compares: the session's node log, evictions, jobs unparked or released, jobs changed
Stamp = tuple[int, int, int, int]


def while_unchanged(ssn: Session, key: StateKey[tuple[Stamp, T]], make: Callable[[], T]) -> T:
    """``make()``, kept in the session's state under ``key`` for as long as the session has not changed: preempt and
    reclaim, one after the other, ask the same questions of the same jobs and nodes (their starving jobs, whether a
    request fits some node's future idle) when the first one's turns changed nothing.  What can change the answers
    between them is counted: each place, pipeline, eviction and undo on a node (``NodeArrays.log``), each eviction,
    each job the plan puts back to be looked at (``Plan.unparked_uids``: unparked, unblocked, released) and each job
    changed (``Session.touched``); any of these made since, the value is made again."""
    stamp = (len(ssn.nodes.log), len(ssn.evictions), len(ssn.plan.unparked_uids), len(ssn.touched))
    hit = ssn.state.get(key)
    if hit is not None and hit[0] == stamp:
        return hit[1]
    got = make()
    ssn.state.write(key, (stamp, got))
    return got


#: ``walk_by_version``'s answer, worked out once per session (preempt and reclaim both ask; session state, which
#: only the framework and the plugins read)
_BY_VERSION: StateKey[bool] = StateKey("preempt-walk-by-version")


def victim_proof(ssn: Session, point: Point[Any]) -> VictimProof | None:
    """The proof over ``point`` for this session, or None when a tier with a plugin on it starts with one that
    declares no condition (the search then runs as Volcano's)."""
    if not _provable(ssn, point):
        return None
    ledger = session_ledger(ssn)
    return VictimProof(ssn, point, ledger) if ledger is not None else None


__all__ = ["CARRIED_LEDGER", "VictimLedger", "VictimProof", "count_job", "session_ledger", "victim_proof",
           "walk_by_version", "while_unchanged"]
