"""The ``SessionResult`` of a closed session (Volcano's ``closeSession``, framework/session.go: the job updater's
PodGroup statuses and ``RecordJobStatusEvent``, then ``updateQueueStatus``), built after the plugins' close hooks.

Three parts, as in Volcano: one job-status builder (``StatusBuilder``: each looked-at job's ``PodGroupStatus``,
the very object of the last session while its inputs are the same), the jobs the session left alone (their carried
statuses and counts, from the incremental layer's plan: ``framework/incremental/plan.py``), and one queue-status
pass (``QueueTally``: PodGroups per phase, pods and held resources per queue, counted once per job).
"""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Callable, Iterable
from dataclasses import replace
from itertools import chain
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from pyvolcano.api.job_info import JobInfo, PodGroup
from pyvolcano.api.resource import ResourceIndex, resource_list
from pyvolcano.api.types import PodGroupPhase, TaskStatus
from pyvolcano.framework.incremental import deltas
from pyvolcano.framework.incremental import plan as plan_mod
from pyvolcano.framework.incremental.plan import EXACT, Closer, SettledSums
from pyvolcano.framework.incremental.records import CloseCounts, Record
from pyvolcano.framework.result import (
    ALL_NODES_UNAVAILABLE,
    FairShare,
    PodGroupStatus,
    QueueStatus,
    SessionResult,
    SessionStats,
)
from pyvolcano.framework.state import PLUGIN_WARNINGS, QUEUE_PROBLEMS, QUEUE_SHARES

if TYPE_CHECKING:
    from pyvolcano.framework.plugin import Plugin
    from pyvolcano.framework.session import Session

UNSCHEDULABLE = "Unschedulable"
#: the conditions a parked or blocked job may have: the Unschedulable one alone
_WAITING_CONDITIONS = frozenset({UNSCHEDULABLE})
SCHEDULED = "Scheduled"
#: gang's reason on the Scheduled condition of a ready job (``gang.go``: OnSessionClose)
GANG_READY = "tasks in gang are ready to be scheduled"
_READY_SIG = (SCHEDULED, "True", GANG_READY, "")
_READY_EVENT = ("Normal", SCHEDULED, "pod group is ready")
_NO_TASKS = (0, 0)
#: per resource index, a queue allocation's bytes -> its ``resource_list`` (``queue_statuses``; each status gets
#: its own copy of the dict); emptied when it grows past a few thousand allocations
_RESOURCE_LISTS: dict[ResourceIndex, dict[bytes, dict[str, str]]] = {}
#: the pods ``RecordJobStatusEvent`` writes a condition (and nominated node) for
_REASONED = (TaskStatus.Allocated, TaskStatus.Pending, TaskStatus.Pipelined)
_F64 = np.dtype(np.float64)
_whole = float.is_integer


def build_result(ssn: Session) -> SessionResult:
    """The session's result: every job's status, the decisions, the queue statuses; tells the incremental layer
    what the next session may leave alone."""
    out = _header(ssn)
    plan = ssn.plan
    settled = plan.settled
    closer = plan.closer(ssn.memo)
    statuses = StatusBuilder(ssn, out, closer)
    tally = QueueTally(by_job=bool(settled))
    looked: list[str] = []  # the jobs looked at one by one (the next snapshot hands them over again)
    for job in (ssn.unsettled_jobs() if settled else ssn.jobs.values()):
        tally.add(job, *statuses.status(job))
        looked.append(job.uid)
    left: dict[str, Record] = {}
    extra: Iterable[str] = ()
    leavers: list[str] | None = None
    if settled:
        left, extra, leavers = _left_alone(ssn, out, statuses, tally, closer)
    else:
        out.podgroups = statuses.podgroups
    out.pods = tally.pods
    closer.hand_over(left, looked, extra, leavers)
    if ssn.evicted_for or ssn.last_tx:
        _nominations(ssn, out)
    out.queues = queue_statuses(ssn, tally.held(ssn.jobs), tally.phases, tally.tasks)
    problems = ssn.state.get(QUEUE_PROBLEMS)
    out.queue_problems = list(problems) if problems else []
    warnings = ssn.state.get(PLUGIN_WARNINGS)
    out.warnings = list(warnings) if warnings else []
    return out


def _header(ssn: Session) -> SessionResult:
    nodes = ssn.nodes
    out = SessionResult(binds=dict(ssn.binds), bind_tasks=list(ssn.bind_tasks), evictions=list(ssn.evictions),
                        skipped=dict(ssn.snapshot.skipped_jobs), skipped_pods=dict(ssn.snapshot.skipped_pods),
                        stats=SessionStats(rollbacks=ssn.rollbacks, action_seconds=dict(ssn.action_seconds),
                                           plugin_seconds=dict(ssn.plugin_seconds)),
                        resource_names=list(ssn.res.names), total=ssn.total_resource, used=nodes.used_total(),
                        fair_mask=ssn.res.fair_mask, nodes=len(nodes))
    out.bind_annotations = {t.uid: dict(t.pod_annotations) for t in ssn.bind_tasks if t.pod_annotations}
    if ssn.selector.ties is not None:
        names = nodes.names
        out.ties = {uid: [names[i] for i in idx] for uid, idx in ssn.selector.ties.items()}
    if ssn.topology.ties is not None:
        topo = ssn.topology.topo
        out.hypernode_ties = {uid: {topo.names[h]: [nodes.names[i] for i in
                                                   np.flatnonzero(topo.members[h, :len(nodes)])]
                                    for h in sorted(hs)} for uid, hs in ssn.topology.ties.items()}
    return out


class StatusBuilder:
    """One job-status builder: a job's ``PodGroupStatus`` from its counts and this session's verdict, carried from
    the last session while the job and those inputs are the same (``framework/incremental/carry.py``, spelled out
    on this hot path); each job close looks at is noted for the next session (``Closer.note``)."""

    def __init__(self, ssn: Session, out: SessionResult, closer: Closer) -> None:
        self.ssn, self.out, self.closer = ssn, out, closer
        self.carry = ssn.carry
        self.invalid, self.pg_conditions = ssn.invalid, ssn.pg_conditions
        self.topology_why = ssn.topology.why
        #: the statuses built in this session, in the order built
        self.podgroups: dict[str, PodGroupStatus] = {}

    def status(self, job: JobInfo) -> tuple[str, CloseCounts]:
        """The job's status (into ``podgroups``) and counts; its phase is returned for the queue's count."""
        uid = job.uid
        pg = job.podgroup
        assert pg is not None
        conds = self.pg_conditions.get(uid, _NO_CONDS)
        invalid, topology_why, out = self.invalid, self.topology_why, self.out
        quiet: tuple[tuple[int, str], tuple[Any, ...]] | None = None
        waiting: tuple[Any, ...] | None = None
        st: PodGroupStatus | None = None
        if self.carry and job.version == job.cloned_from >= 0:
            key = (job.version, pg.phase)
            hit = job.derived.get("close")
            if hit is not None and hit[0] == key:
                c = hit[1]
            else:
                c = CloseCounts(job)
                job.derived["close"] = (key, c)
            # a job with nothing waiting, no fit error, no objection and the same conditions as in the last
            # session gets the very status object of the last session: the writers skip it (``apply``)
            if not (c.waiting or c.pipelined or job.nodes_fit_errors or job.enqueue_reason or uid in invalid
                    or (topology_why and uid in topology_why)):
                quiet = (key, _conditions_sig(conds))
                last = job.derived.get("status")
                if last is not None and last[0] == quiet:
                    st = last[1]
            elif not c.pipelined:
                # a waiting job (pending pods, refused by enqueue, fit errors, an objection): its status is rebuilt
                # from exactly these inputs, so with the same ones it is last session's object again, conditions
                # and all (equal dicts, transition id included: gang hands back its own condition with this
                # session's id); what ``podgroup_status`` adds to ``out`` is added again
                waiting = (key, job.enqueue_reason, job.job_fit_errors, tuple(job.nodes_fit_errors.items()),
                           invalid.get(uid), topology_why.get(uid) if topology_why else None)
                last = job.derived.get("waiting-status")
                if last is not None and last[0] == waiting and last[1][0].conditions == list(conds.values()):
                    st, said = last[1]
                    if said is not None:
                        out.unschedulable[uid] = said
        else:
            c = CloseCounts(job)
        if st is None:
            st, why = podgroup_status(self.ssn, out, job, c, conds)
            if quiet is not None and not why:
                job.derived["status"] = (quiet, st)
            elif waiting is not None:
                job.derived["waiting-status"] = (waiting, (st, out.unschedulable.get(uid)))
        ready_quiet = quiet is not None and quiet[1] == _READY_SIG and \
            job.derived.get("status", (None,))[0] == quiet and job.derived["status"][1] is st
        self.closer.note(job, st, c, ready_quiet=ready_quiet, waiting=waiting is not None,
                         only_unschedulable=conds.keys() <= _WAITING_CONDITIONS, unschedulable=UNSCHEDULABLE in conds)
        self.podgroups[uid] = st
        return st.phase, c

    def misfit(self, uid: str, job: JobInfo) -> bool:
        """Whether the session changed or wrote on this settled (or parked) job, so that its carried record no
        longer stands (a parked job carries its own enqueue reason, a blocked one its fit errors)."""
        plan, topology_why = self.ssn.plan, self.topology_why
        return bool(job.version != job.cloned_from or uid in self.pg_conditions
                    or (job.nodes_fit_errors and uid not in plan.blocked)
                    or (job.enqueue_reason and uid not in plan.parked) or uid in self.invalid
                    or (topology_why and uid in topology_why))


_NO_CONDS: dict[str, dict[str, Any]] = {}


class QueueTally:
    """The one queue-status pass: per queue, PodGroups by phase, held and pending pods, and the allocated vector
    of each job holding something (``held``); per job when ``by_job`` (the rows are then not in job order, and
    ``held`` may need that order)."""

    def __init__(self, by_job: bool) -> None:
        self.phases: dict[str, dict[str, int]] = {}
        self.tasks: dict[str, list[int]] = {}
        self.rows: dict[str, list[np.ndarray]] = {}
        self.row_of: dict[str, np.ndarray] | None = {} if by_job else None
        self.pods = 0
        #: the row of a job whose sums were added whole (``add_sums``)
        self._settled_row: Callable[[str], np.ndarray | None] = _no_row

    def _queue(self, q: str) -> tuple[dict[str, int], list[int]]:
        counts = self.phases.get(q)
        if counts is None:
            counts = self.phases[q] = {}
            self.tasks[q] = [0, 0]
            return counts, self.tasks[q]
        return counts, self.tasks[q]

    def add(self, job: JobInfo, phase: str, c: CloseCounts) -> None:
        counts, tc = self._queue(job.queue)
        counts[phase] = counts.get(phase, 0) + 1
        tc[0] += c.held
        tc[1] += c.pending
        self.pods += c.pods
        if c.held:
            r = self.rows.get(job.queue)
            if r is None:
                self.rows[job.queue] = [job.allocated]
            else:
                r.append(job.allocated)
            if self.row_of is not None:
                self.row_of[job.uid] = job.allocated

    def add_sums(self, sums: SettledSums) -> None:
        """The settled jobs' sums kept between sessions (``SettledSums``), added whole."""
        self.pods += sums.pods
        for q, counts_q in sums.counts.items():
            counts, tc = self._queue(q)
            for ph, n in counts_q.items():
                if n:
                    counts[ph] = counts.get(ph, 0) + n
            tc[0] += sums.held_n.get(q, 0)
            tc[1] += sums.pending_n.get(q, 0)
        if sums.whole:  # one row per queue: exact in any order
            for q, row in sums.held.items():
                if sums.held_n.get(q):
                    self.rows.setdefault(q, []).append(row)
        else:  # each job's row, so that ``held`` sees the fractions and adds them in job order
            for q, _, _, _, mrow, _ in sums.members.values():
                if mrow is not None:
                    self.rows.setdefault(q, []).append(mrow)
        members = sums.members

        def settled_row(uid: str) -> np.ndarray | None:
            m = members.get(uid)
            return m[4] if m is not None else None
        self._settled_row = settled_row

    def held(self, jobs: dict[str, JobInfo]) -> dict[str, np.ndarray]:
        order = self.row_of
        if order is None:
            return _held(self.rows)
        settled_row = self._settled_row

        def in_order(q: str) -> list[np.ndarray]:
            rows = []
            for uid, j in jobs.items():
                if j.queue != q:
                    continue
                r = order.get(uid)
                if r is None:
                    r = settled_row(uid)
                if r is not None:
                    rows.append(r)
            return rows
        return _held(self.rows, in_order)


def _no_row(uid: str) -> np.ndarray | None:
    return None


def _left_alone(ssn: Session, out: SessionResult, statuses: StatusBuilder, tally: QueueTally,
                closer: Closer) -> tuple[dict[str, Record], Iterable[str], list[str] | None]:
    """The settled (and parked, blocked) jobs the session left alone: their carried statuses and counts, unless
    the session changed or wrote on them (then built like any other).  Returns the settled jobs left alone, the
    jobs of the map not left alone beside those looked at, and the jobs that may have left the parked map (None:
    not known)."""
    plan, jobs, podgroups = ssn.plan, ssn.jobs, statuses.podgroups
    settled, parked, blocked = plan.settled, plan.parked, plan.blocked
    left: dict[str, Record] = {}
    leavers: list[str] | None = None
    misfits: list[JobInfo] = []
    if len(settled) >= plan_mod.SUMS_FROM:
        # the last session's status and counts.  Only a job the session touched, or with a condition, an objection
        # or a topology reason, can be otherwise (nothing else in a session writes on a job it does not look at):
        # those are checked one by one
        out_of: set[str] = set()
        for uid in ssn.touched.union(statuses.pg_conditions, statuses.invalid, statuses.topology_why or ()):
            if uid not in settled or uid in podgroups:
                continue
            job = jobs[uid]
            if statuses.misfit(uid, job):
                misfits.append(job)
                out_of.add(uid)
        out_of.update(uid for uid in podgroups if uid in settled)
        sums = plan.settled_sums(out_of)
        tally.add_sums(sums)
        if sums.said:  # the parked jobs' reasons, as their carried statuses give them (not copied: lent)
            out.unschedulable = ChainMap(out.unschedulable, sums.said)
        # the parked jobs go to the next snapshot apart (left alone only under the same epoch), the settled ones in
        # the snapshot's settled-only map: the snapshot's maps, in place (the session that made them is over)
        carry = plan.carry
        assert carry is not None
        left = carry.settled_only
        for uid in out_of:
            left.pop(uid, None)
        if parked:  # the jobs parked after a look join them (they were not settled: no key in common)
            parked.update(closer.parked_now)
            for uid in out_of:
                parked.pop(uid, None)
            closer.parked_now = parked
            changed = carry.changed
            leavers = [*changed, *plan.unparked_uids, *out_of] if changed is not None else None
        for job in misfits:
            tally.add(job, *statuses.status(job))
        sums.joining = closer.looked_at
        sums.lender.lend(out)
        # the changed statuses over the carried ones (lent, not copied: ``Plan.settled_sums`` copies them before
        # it moves them if this result is still alive then)
        out.changed_podgroups, out.carried_podgroups = podgroups, sums.statuses
        out.podgroups = ChainMap(podgroups, sums.statuses)
        return left, out_of, leavers
    # a few settled jobs (the trace's sessions): one by one, cheaper than keeping sums
    for uid, hit in settled.items():
        if uid in podgroups:  # changed in the session (an eviction): done above
            continue
        job = jobs[uid]
        if statuses.misfit(uid, job):
            misfits.append(job)
            continue
        sst, sc = hit
        if uid in parked:  # parked: its reason, its pending pods, and parked again
            closer.parked_now[uid] = hit
            if sst.reason:
                out.unschedulable[uid] = sst.reason
        else:
            if uid in blocked and sst.reason:  # blocked: its reason (gang's message), its pending pods
                out.unschedulable[uid] = sst.reason
            if not job.fit_failed_roles:  # nothing written on the clone: the next snapshot may keep it
                left[uid] = hit
        podgroups[uid] = sst
        tally.add(job, sst.phase, sc)
    for job in misfits:
        tally.add(job, *statuses.status(job))
    out.podgroups = {uid: podgroups[uid] if uid in podgroups else settled[uid][0] for uid in jobs}
    return left, settled, leavers


def podgroup_status(ssn: Session, out: SessionResult, job: JobInfo, c: CloseCounts,
                    conds: dict[str, dict[str, Any]]) -> tuple[PodGroupStatus, str]:
    """The job's ``PodGroupStatus`` from its counts and this session's verdict (Volcano's ``jobStatus``,
    framework/session.go, and ``cache.RecordJobStatusEvent``), with why it is not scheduled ("" when it is); adds
    its pipelined pods and reason to ``out``."""
    uid = job.uid
    pg = job.podgroup
    assert pg is not None
    for t_uid, node in c.pipelined:
        out.pipelined[t_uid] = node
        out.pipelined_jobs[t_uid] = uid
    phase = str(job_phase(pg, c, UNSCHEDULABLE in conds))
    st = PodGroupStatus(phase, list(conds.values()), c.running, c.succeeded, c.failed)
    why = ""
    if UNSCHEDULABLE in conds:
        why = conds[UNSCHEDULABLE]["message"]
    elif job.enqueue_reason and phase == PodGroupPhase.Pending:
        why = job.enqueue_reason
    invalid = ssn.invalid
    if uid in invalid:
        why = f"{why}; {invalid[uid]}" if why else invalid[uid]
    if why:
        out.unschedulable[uid] = why
        st.reason = why
    elif job.nodes_fit_errors:
        st.reason = f"{len(job.nodes_fit_errors)} task(s) not placed: {job.first_fit_error()}"
    # cache.RecordJobStatusEvent (pkg/scheduler/cache/cache.go): the PodGroup event, and each pending pod's
    # PodScheduled condition with its own fit errors, else the job's
    waiting = c.waiting
    if why or (waiting and phase != PodGroupPhase.Running):
        st.event = ("Warning", UNSCHEDULABLE, why or job.job_fit_errors or ALL_NODES_UNAVAILABLE)
    elif phase == PodGroupPhase.Running:
        st.event = _READY_EVENT
    if waiting:
        base = why or job.job_fit_errors or ALL_NODES_UNAVAILABLE
        fit = job.nodes_fit_errors
        for t_uid in waiting:
            fe = fit.get(t_uid)
            st.pod_conditions[t_uid] = str(fe) if fe else base
    topology_why = ssn.topology.why
    if topology_why:
        note = topology_why.get(uid)
        if note and uid in out.unschedulable:  # cycle's explanation only: Volcano's condition text is unchanged
            out.unschedulable[uid] = st.reason = f"{out.unschedulable[uid]}; {note}"
        elif note and st.reason:  # a ready job whose later sub-groups (or pods) found no hypernode
            st.reason = f"{st.reason}; {note}"
    return st, why


def _nominations(ssn: Session, out: SessionResult) -> None:
    """Each pod's ``status.nominatedNodeName`` to write: Volcano's ``RecordJobStatusEvent`` asks
    ``JobInfo.TaskSchedulingReason`` (pkg/scheduler/api/job_info.go) about every allocated, pending and pipelined
    pod that is not scheduling-gated; from the pod's last discarded transaction if it has one, else from its state
    now, a pod *pipelined after evictions* is nominated to that node.  ``cache.taskUnschedulable``
    (cache/cache.go) writes it only when it is not empty and differs from the pod's (never clearing one)."""
    last = ssn.last_tx
    copied: set[str] = set()
    jobs_of = dict(ssn.evicted_for)
    for uid, tx in last.items():
        jobs_of[uid] = tx[3]
    for uid, job_uid in jobs_of.items():
        job = ssn.jobs.get(job_uid)
        task = job.tasks.get(uid) if job is not None else None
        if task is None or task.sch_gated or task.status not in _REASONED:
            continue
        ctx = last.get(uid)
        status, node, evicted = (ctx[0], ctx[1], ctx[2]) if ctx is not None else (
            task.status, task.node_name, uid in ssn.evicted_for)
        if status != TaskStatus.Pipelined or not evicted or not node or node == task.nominated_node:
            continue
        st = out.podgroups.get(job_uid)
        if st is not None:
            if job_uid not in copied:  # the status may be carried to later sessions: this one's own copy
                copied.add(job_uid)
                st = out.podgroups[job_uid] = replace(st, conditions=list(st.conditions),
                                                      pod_conditions=dict(st.pod_conditions),
                                                      nominated=dict(st.nominated))
            st.nominated[uid] = node
            out.nominated[uid] = node


#: per tuple of a session's plugin classes, the first of ``QUEUE_SHARES`` one of them declares (None: none)
_SHARE_OF: dict[tuple[type[Plugin], ...], Any] = {}
_NO_SHARE = object()


def queue_statuses(ssn: Session, held: dict[str, np.ndarray], phases: dict[str, dict[str, int]],
                   tasks: dict[str, list[int]]) -> dict[str, QueueStatus]:
    """Each queue's status: ``allocated`` as Volcano's ``updateQueueStatus`` (framework/session.go) sums it,
    PodGroup counts by phase, and the fairness plugin's deserved/allocated/share (proportion's or capacity's queue
    attributes, which they keep in ``state`` under the key their class declares in ``Plugin.queue_share``, the
    first of ``state.QUEUE_SHARES`` a configured plugin declares)."""
    fair = None
    kinds = cast("tuple[type[Plugin], ...]", tuple(map(type, ssn.plugins.values())))
    key = _SHARE_OF.get(kinds, _NO_SHARE)
    if key is _NO_SHARE:  # the conf's plugin classes the first time: which share, if any, they keep
        shares = {cls.queue_share for cls in kinds}
        key = _SHARE_OF[kinds] = next((k for k in QUEUE_SHARES if k in shares), None)
    elif deltas.CHECK:
        shares = {plugin.queue_share for plugin in ssn.plugins.values()}
        assert key == next((k for k in QUEUE_SHARES if k in shares), None), "queue_statuses: the share's key"
    if key is not None:
        fair = ssn.state.get(key)
    res = ssn.res
    zeros: np.ndarray | None = None
    no_counts: dict[str, int] = {}
    lists = _RESOURCE_LISTS.get(res)
    if lists is None or len(lists) > 4096:
        lists = _RESOURCE_LISTS[res] = {}
    out: dict[str, QueueStatus] = {}
    for name in ssn.queues:
        v = held.get(name)
        if v is None:
            v = zeros = res.zeros() if zeros is None else zeros
        # the same allocation as in an earlier session (most queues, most sessions): its list again
        vkey = v.tobytes()
        rl = lists.get(vkey)
        if rl is None:
            rl = lists[vkey] = resource_list(res, v)
        c = phases.get(name, no_counts)
        tc = tasks.get(name, _NO_TASKS)
        q = QueueStatus(name, dict(rl), v, pending=c.get(PodGroupPhase.Pending, 0),
                        inqueue=c.get(PodGroupPhase.Inqueue, 0), running=c.get(PodGroupPhase.Running, 0),
                        unknown=c.get(PodGroupPhase.Unknown, 0), completed=c.get(PodGroupPhase.Completed, 0),
                        allocated_tasks=tc[0], pending_tasks=tc[1])
        if fair:
            a = fair.get(name)
            if a is not None:
                q.fair = FairShare(a.weight, a.deserved, a.allocated, a.request, a.guarantee, a.capability,
                                   a.real_capability, a.share)
        out[name] = q
    return out


def _held(rows: dict[str, list[np.ndarray]],
          in_order: Callable[[str], list[np.ndarray]] | None = None) -> dict[str, np.ndarray]:
    """Each queue's sum of its jobs' allocated vectors, exactly what adding them one after the other in job order
    gives: in one sum when every amount is a whole number and the sums stay below 2**53 (then every order of
    addition is exact; a queue's few rows in plain floats, ``_few_whole``), else one after the other, in job order
    (``in_order(queue)`` gives the rows in that order when ``rows`` are not)."""
    out: dict[str, np.ndarray] = {}
    for q, rs in rows.items():
        n = len(rs)
        if n == 1:
            out[q] = rs[0].copy()
            continue
        if n <= _FEW_ROWS:
            got = _few_whole(rs)
            if got is not None:
                out[q] = got
                continue
        m = np.concatenate(rs).reshape(n, -1)  # faster than np.array on a list of vectors
        if (m == np.rint(m)).all() and float(np.abs(m).sum(axis=0).max(initial=0.0)) < EXACT:
            out[q] = m.sum(axis=0)
        else:
            if in_order is not None:
                rs = in_order(q)
            h = rs[0].copy()
            for r in rs[1:]:
                h += r
            out[q] = h
    return out


#: up to this many rows of a queue (the settled jobs' sums and the few jobs looked at, a trace session's few jobs)
#: ``_few_whole`` sums them in plain floats: NumPy's half a dozen calls cost more on rows this few and short
_FEW_ROWS = 8


def _few_whole(rs: list[np.ndarray]) -> np.ndarray | None:
    """The sum of a few float64 rows of whole amounts whose magnitudes all together sum below 2**53 (so that every
    column's partial sums are exact in any order, as NumPy's sum over the rows is), in plain floats, from 0.0 as
    NumPy's sum starts (-0.0 + -0.0 gives 0.0 there); None when a row is not float64 or an amount is not whole,
    or the magnitudes reach 2**53 (then ``_held`` asks NumPy, and sums one after the other if it must)."""
    lists = []
    for r in rs:
        if r.dtype != _F64:
            return None
        a = r.tolist()
        if not all(map(_whole, a)):
            return None
        lists.append(a)
    if sum(map(abs, chain.from_iterable(lists))) >= EXACT:
        return None
    return np.array([sum(c, 0.0) for c in zip(*lists, strict=True)], dtype=np.float64)


def job_phase(pg: PodGroup, c: CloseCounts, unschedulable: bool) -> PodGroupPhase:
    """Volcano's ``getPodGroupPhase`` from the job's counts (see ``Session.job_phase``)."""
    if c.running and unschedulable:
        return PodGroupPhase.Unknown
    if c.scheduled >= pg.min_member:
        return PodGroupPhase.Completed if c.scheduled == c.completed else PodGroupPhase.Running
    if pg.phase != PodGroupPhase.Inqueue:
        return PodGroupPhase.Pending
    return pg.phase


def _conditions_sig(conds: dict[str, dict[str, Any]]) -> tuple[Any, ...]:
    """What a writer compares of a job's session conditions: type, status, reason and message of each, in order
    (the transition id and times are the session's own; ``framework/result.py: conditions_key``)."""
    if len(conds) == 1:
        for c in conds.values():
            return (c["type"], c["status"], c["reason"], c["message"])
    return tuple((c["type"], c["status"], c["reason"], c["message"]) for c in conds.values())
