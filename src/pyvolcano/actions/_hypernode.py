"""allocate for a job with a network topology constraint or sub-groups (Volcano master's
``actions/allocate/allocate.go``: ``organizeJobWorksheet``, ``allocateForJob``, ``allocateForSubJob``,
``allocateResourcesForTasks``, ``selectBestHyperNodeForJob`` / ``ForSubJob``, and ``recorder.go``).

A job whose PodGroup has a ``subGroupPolicy`` is split into sub-groups (``JobInfo.sub_jobs``); a job without one
is a single (default) sub-group.  A job with a hard constraint (soft mode is hard mode up to the virtual top,
``framework/topology.py``), on itself or on a sub-group, or with sub-groups, is placed in three nested loops:

1. the job-level gradients (the ``network-topology-aware`` plugin's for a job in hard mode, else the virtual top
   alone): candidate hypernodes at or below the job's tier whose idle or future idle covers its minResources,
   lowest tier first;
2. in each candidate, a dry run of the job's sub-groups in worksheet order -- first the sub-groups needed to reach
   each policy's ``minSubGroups``, then the ``subJobOrder`` plugins (unready first, higher priority first), then
   the first match value and the id -- until the job is ready.  Each sub-group searches its own gradients below
   the candidate (for a sub-group in hard mode: hypernodes within its tier whose idle or future idle held its
   pending pods' requests when the session opened; a soft sub-group is capped by the job's hard tier), tries
   every hypernode of the first gradient that yields a placement, keeps the one the hypernode scores
   (``HyperNodeOrderFn`` over the sub-group's pods) like best, and adds that score to the job's solution.  A
   sub-group that gets placements but still has pods goes back into the worksheet; one that gets none is dropped
   from this dry run;
3. in a hypernode, the task loop: each pending pod of the sub-group, in task order, to the best node *among that
   hypernode's nodes*, until the sub-group is ready (``subJobReady``; for a job without policies: the job).

Every dry run is undone (except where a gradient holds a single candidate: its placements are kept, which ends in
the same state as Volcano's undo and replay, its score taken before the dry run, when the session is as after the
undo); of a gradient's solutions that leave the job ready or pipelined, the best-scoring one is replayed (Volcano's
``RecoverOperations``) and committed by the caller only when the job is ready.  The job's allocated hypernode then
becomes the lowest common ancestor of the old one and the chosen candidate, and each sub-group's the lowest common
ancestor of its old one and the hypernodes it was placed in, so later pods search only under them.  Volcano
breaks score ties between hypernodes at random; here the first candidate in breadth-first order wins.

A job with a constraint but no hard limit and no sub-groups (hard mode without a tier, or an unknown
``highestTierName``) takes the ordinary path over every node, with the node scores that pull its pods towards
the hypernode its pods already sit under.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cmp_to_key

import numpy as np

from pyvolcano.actions._trials import ordered_trials
from pyvolcano.actions._turn import Turn, check_task, fail_task
from pyvolcano.api.job_info import JobInfo, SubJob, TaskInfo
from pyvolcano.api.queue_info import QueueInfo
from pyvolcano.api.types import TaskStatus
from pyvolcano.framework.session import Session
from pyvolcano.framework.statement import OpKind, Statement
from pyvolcano.framework.topology import JobTopology, SubTopology, best_of
from pyvolcano.framework.util import PriorityQueue

#: a recorded placement: (operation, task, node index), replayed by ``_replay``
Ops = list[tuple[OpKind, TaskInfo, int]]


def topology_waits(ssn: Session, job: JobInfo) -> bool:
    """A job with a topology constraint (its own or a sub-group's) waits while the HyperNode tree is not ready
    (``buildAllocateContext``: ``!ssn.HyperNodesReadyToSchedule && job.ContainsNetworkTopology()``)."""
    return not ssn.topology.ready and ssn.topology.of(job) is not None


def takes_hypernode_path(ssn: Session, job: JobInfo) -> bool:
    """Jobs allocate hands to ``allocate_topology_job``: those with a constraint or with sub-groups."""
    return ssn.topology.of(job) is not None or job.has_sub_policy()


@dataclass
class Worksheet:
    """Volcano's ``JobWorksheet``: the sub-groups still to place, in worksheet order, and each one's pending
    tasks in task order.  Built once per job and session; a turn's chosen dry run leaves its remains here."""

    subs: PriorityQueue[SubJob]
    tasks: dict[str, PriorityQueue[TaskInfo]]

    def empty(self) -> bool:
        return self.subs.empty()

    def clone(self) -> Worksheet:
        return Worksheet(self.subs.clone(), {k: q.clone() for k, q in self.tasks.items()})

    def task_count(self) -> int:
        """The pending tasks of every sub-group still to place."""
        return sum(len(q) for q in self.tasks.values())

    def assign(self, other: Worksheet) -> None:
        self.subs.assign(other.subs)
        self.tasks = other.tasks


def worksheet_order(ssn: Session, job: JobInfo) -> Callable[[SubJob, SubJob], int]:
    """The order of ``organizeJobWorksheet`` (allocate) and ``organizeEvictionWorksheet`` (gangpreempt/gangreclaim,
    simulate.go): the sub-groups not yet ready (``subJobReady``) are walked in ``subJobOrder`` and, per policy, the
    first ones needed to reach its ``minSubGroups`` (counting those already ready) are marked required; required
    sub-groups come first, then ``subJobOrder``."""
    counts: dict[str, int] = {}
    unready: list[SubJob] = []
    for sj in job.sub_jobs().values():
        if ssn.sub_job_ready(job, sj):
            counts[sj.gid] = counts.get(sj.gid, 0) + 1
        else:
            unready.append(sj)
    need = job.min_sub_jobs()
    required: set[str] = set()
    for sj in sorted(unready, key=cmp_to_key(ssn.sub_job_cmp)):
        if counts.get(sj.gid, 0) < need.get(sj.gid, 0):
            required.add(sj.uid)
            counts[sj.gid] = counts.get(sj.gid, 0) + 1

    def order(left: SubJob, right: SubJob) -> int:
        lr, rr = left.uid in required, right.uid in required
        if lr != rr:
            return -1 if lr else 1
        return ssn.sub_job_cmp(left, right)

    return order


def organize_worksheet(ssn: Session, job: JobInfo) -> Worksheet:
    """``organizeJobWorksheet``: the sub-groups in ``worksheet_order``; every sub-group with a pending pod that is
    neither BestEffort nor gated is in it, ready or not."""
    subs = job.sub_jobs()
    order = worksheet_order(ssn, job)
    ws = Worksheet(PriorityQueue(order), {})
    for sid, sj in subs.items():
        pending = [t for t in sj.pending() if not t.best_effort and not t.sch_gated]
        if pending:
            ws.tasks[sid] = PriorityQueue(ssn.task_cmp, pending)
            ws.subs.push(sj)
    return ws


def _unconstrained(job: JobInfo) -> JobTopology:
    """The topology view of a job with sub-groups and no constraint anywhere: every search is the whole
    cluster."""
    return JobTopology(False, None, own=False,
                       subs={sid: SubTopology(False, False, None) for sid in job.sub_jobs()})


def allocate_topology_job(ssn: Session, job: JobInfo, queue: QueueInfo, tasks: PriorityQueue[TaskInfo],
                          jobs: PriorityQueue[JobInfo]) -> None:
    """One turn of a job with a topology constraint or sub-groups (``allocateResources``' branches for them)."""
    st = ssn.topology
    jt = st.of(job) or _unconstrained(job)
    if jt.hard or job.has_sub_policy() or any(s.hard for s in jt.subs.values()):
        ws = st.worksheets.get(job.uid)
        if ws is None:
            ws = st.worksheets[job.uid] = organize_worksheet(ssn, job)
        got = _allocate_for_job(ssn, job, jt, queue, ws)
        if got is None:
            return
        stmt, best, remaining, decided = got
        ws.assign(remaining)
        if ssn.job_ready(job):  # a pipelined job's placements stay in the session, uncommitted
            stmt.commit()
            jt.allocated = st.lca(jt.allocated, best)  # recorder.UpdateDecisionToJob
            for sid, h in decided.items():
                sub = jt.subs.get(sid)
                if sub is not None:
                    sub.allocated = st.lca(sub.allocated, h)
            if not ws.empty():
                jobs.push(job)
        return
    sj = job.sub_jobs()[job.uid]
    sub_t = jt.subs.get(job.uid)
    stmt_or_none = _allocate_tasks(ssn, job, sj, sub_t, queue, tasks, st.topo.top,
                                   sub_t.allocated if sub_t is not None else -1)
    if stmt_or_none is not None and ssn.job_ready(job):
        stmt_or_none.commit()
        if not tasks.empty():
            jobs.push(job)


def _record(stmt: Statement) -> Ops:
    pos = stmt.ssn.nodes.pos
    return [(op.kind, op.task, pos[op.task.node_name]) for op in stmt.ops]


def _replay(ssn: Session, ops: Ops) -> Statement:
    stmt = Statement(ssn)
    for kind, task, node in ops:
        if kind is OpKind.ALLOCATE:
            stmt.allocate(task, node)
        else:
            stmt.pipeline(task, node)
    return stmt


def _merged(ssn: Session, stmts: list[Statement]) -> Statement:
    out = Statement(ssn)
    for s in stmts:
        out.merge(s)
    return out


def _reset_fit_errors(job: JobInfo) -> None:
    """``JobInfo.ResetFitErr``: every candidate hypernode starts with a clean record of failed roles."""
    job.nodes_fit_errors = {}
    job.fit_failed_roles = set()
    job.job_fit_errors = ""


#: a dry run's outcome: (the statement, the job's hypernode, the worksheet left, the sub-groups' hypernodes recorded
#: under that hypernode)
JobSolution = tuple[Statement, int, Worksheet, dict[str, int]]


def _allocate_for_job(ssn: Session, job: JobInfo, jt: JobTopology, queue: QueueInfo, ws: Worksheet,
                      ) -> JobSolution | None:
    """``allocateForJob``: the replayed statement, the chosen hypernode, the worksheet left and the sub-groups'
    new allocated hypernodes, or None when no candidate leaves the job ready or pipelined."""
    st = ssn.topology
    top = st.topo.top
    if ws.empty():
        return None
    if jt.hard:
        assert jt.tier is not None
        pg = job.podgroup
        min_job = pg.min_resources if pg is not None and pg.min_resources is not None else ssn.res.zeros()
        gradients = st.gradient(job, top, jt.tier, jt.allocated, min_job)
    else:
        gradients = [[top]]  # HyperNodeGradientForJobFn for a job without a hard tier
    tried: list[int] = []
    # sub-groups that found no place: the first candidate that failed them and the nodes' idle then (after the
    # sub-groups placed before them in that dry run), for ``cycle``
    failed: dict[str, tuple[SubJob, int, np.ndarray]] = {}
    explain = job.has_sub_policy()
    # recorder.SaveSubJobDecision: per job candidate, each sub-group's hypernode after its dry run there; kept for
    # the whole action, so a commit under a candidate also applies what earlier turns' dry runs recorded under it
    rec = st.decisions.setdefault(job.uid, {})
    n_tasks = ws.task_count()
    for gradient in gradients:
        tried += gradient
        # only the default sub-group: a candidate's score is then known before its dry run (actions/_trials.py)
        predicted = None if job.has_sub_policy() else ordered_trials(ssn, job, gradient)
        if predicted is not None:  # the same choice from a few dry runs (_search_by_score)
            found = _search_by_score(ssn, job, jt, queue, ws, gradient, predicted, rec, n_tasks)
            if found is not None:
                st.why.pop(job.uid, None)
                return found
            continue
        solutions: dict[int, tuple[Ops, Worksheet, float]] = {}
        for h in gradient:
            stmts, work, score = _dry_run_job(ssn, job, jt, queue, ws, h, rec, failed if explain else None)
            ops = [op for s_ in stmts for op in _record(s_)]
            if ops and (ssn.job_ready(job) or ssn.job_pipelined(job)):
                if len(gradient) == 1:  # the only candidate: keep its placements instead of undo and replay
                    st.why.pop(job.uid, None)
                    _forget_other_candidates(job, stmts, n_tasks)
                    return _merged(ssn, stmts), h, work, rec.get(h, {})
                solutions[h] = (ops, work, score)
            for s_ in reversed(stmts):
                s_.discard(rollback=False)
        if not solutions:
            continue
        best = best_of({h: sol[2] for h, sol in solutions.items()}, st, job)  # Volcano: random among equals
        ops, work, _ = solutions[best]
        st.why.pop(job.uid, None)
        stmt = _replay(ssn, ops)
        _forget_other_candidates(job, [stmt], n_tasks)
        return stmt, best, work, rec.get(best, {})
    st.why[job.uid] = _why(ssn, job, jt, tried, failed)
    return None


def _dry_run_job(ssn: Session, job: JobInfo, jt: JobTopology, queue: QueueInfo, ws: Worksheet, h: int,
                 rec: dict[int, dict[str, int]], failed: dict[str, tuple[SubJob, int, np.ndarray]] | None,
                 ) -> tuple[list[Statement], Worksheet, float]:
    """The job's dry run in candidate ``h`` (the body of ``allocateForJob``'s hypernode loop): its sub-groups in
    worksheet order, each placed under ``h``, until the job is ready or nothing more is placed; (the statements,
    left in the session, the worksheet left, the summed sub-group score).  Records each sub-group's hypernode
    under ``h`` in ``rec``; ``failed`` (for ``cycle``) gets the sub-groups that found no place."""
    _reset_fit_errors(job)
    work = ws.clone()
    alloc = {sid: s.allocated for sid, s in jt.subs.items()}  # RecoverSubJobStatus: per dry run
    stmts: list[Statement] = []
    score = 0.0
    while not work.subs.empty():
        sj = work.subs.pop()
        got = _allocate_for_subjob(ssn, job, jt, sj, queue, work.tasks[sj.uid], h, alloc)
        if got is None:
            if failed is not None and sj.uid not in failed:
                failed[sj.uid] = (sj, h, ssn.nodes.idle.copy())
            continue
        stmt, s, left = got
        rec.setdefault(h, {})[sj.uid] = alloc[sj.uid]
        work.tasks[sj.uid] = left
        stmts.append(stmt)
        score += s
        if not left.empty():
            work.subs.push(sj)
        if ssn.job_ready(job):
            break
    return stmts, work, score


def _search_by_score(ssn: Session, job: JobInfo, jt: JobTopology, queue: QueueInfo, ws: Worksheet,
                     gradient: list[int], predicted: np.ndarray, rec: dict[int, dict[str, int]], n_tasks: int,
                     ) -> JobSolution | None:
    """The gradient's choice, as the plain loop above makes it, from fewer dry runs (see ``_trials.py`` for when
    ``ordered_trials`` allows it): a successful candidate scores exactly its ``predicted`` score, so trying them
    best score first (breadth-first order among equal scores) the first success is the plain loop's choice and
    nothing after it needs a dry run.  The chosen candidate's placements are kept (no undo and replay).  With
    ``st.ties`` recording, the candidates scored as well as the chosen one are recorded as ties, as the plain
    loop's ``best_of`` would (a tie the plain loop sees only among candidates that succeed: predicted scores of
    candidates never tried may count too, so the record can name more hypernodes than the plain loop's).

    The plain loop leaves on the job the failed roles and fit errors of the gradient's *last* candidate (each
    candidate starts afresh).  They matter only when the chosen solution leaves tasks of this turn unplaced
    (``_forget_other_candidates``), so when a solution may do that (a gang whose minimum needs fewer than all
    its pending tasks) the last candidate is dry-run first, whatever its score, and its record put back at the
    end; when nothing succeeds every candidate has been tried and the last one's record is put back.

    Only for a job with its default sub-group alone, whose recorder entry under the chosen candidate is the one
    its own dry run just wrote (entries under candidates not tried are never applied)."""
    st = ssn.topology
    last = len(gradient) - 1
    errors = None
    last_ops: Ops = []
    last_solution: Worksheet | None = None
    if not _every_task_needed(job, n_tasks):
        stmts, work, _ = _dry_run_job(ssn, job, jt, queue, ws, gradient[last], rec, None)
        errors = (job.nodes_fit_errors, job.fit_failed_roles, job.job_fit_errors)
        last_ops = [op for s_ in stmts for op in _record(s_)]
        if last_ops and (ssn.job_ready(job) or ssn.job_pipelined(job)):
            last_solution = work
        for s_ in reversed(stmts):
            s_.discard(rollback=False)
    order = sorted(range(last if errors is not None else last + 1), key=lambda k: (-predicted[k], k))

    def chosen(k: int) -> int:
        if st.ties is not None:
            best_of({gradient[i]: float(predicted[i]) for i in range(len(gradient))
                     if predicted[i] == predicted[k]}, st, job)
        return gradient[k]

    for k in order:
        if last_solution is not None and predicted[k] < predicted[last]:
            break
        stmts, work, _ = _dry_run_job(ssn, job, jt, queue, ws, gradient[k], rec, None)
        if stmts and (ssn.job_ready(job) or ssn.job_pipelined(job)):
            if errors is not None:
                job.nodes_fit_errors, job.fit_failed_roles, job.job_fit_errors = errors
            _forget_other_candidates(job, stmts, n_tasks)
            h = chosen(k)
            return _merged(ssn, stmts), h, work, rec.get(h, {})
        if k == last:
            errors = (job.nodes_fit_errors, job.fit_failed_roles, job.job_fit_errors)
        for s_ in reversed(stmts):
            s_.discard(rollback=False)
    if errors is not None:
        job.nodes_fit_errors, job.fit_failed_roles, job.job_fit_errors = errors
    if last_solution is None:
        return None
    stmt = _replay(ssn, last_ops)
    _forget_other_candidates(job, [stmt], n_tasks)
    h = chosen(last)
    return stmt, h, last_solution, rec.get(h, {})


def _every_task_needed(job: JobInfo, n_tasks: int) -> bool:
    """The job becomes ready only once every task of this turn is placed (its minimum is not below them)."""
    need = job.min_available - job.ready_task_num() - job.pending_best_effort_task_num()
    return need >= n_tasks


def _forget_other_candidates(job: JobInfo, stmts: list[Statement], n_tasks: int) -> None:
    """A solution that placed every task of the turn clears what the candidates tried left on the job: Volcano
    keeps the last candidate's fit errors (``JobInfo.ResetFitErr`` before each), which nothing reads once no
    task of the job waits, while here they would become the PodGroup's "task(s) not placed" reason."""
    if sum(len(s.ops) for s in stmts) == n_tasks:
        _reset_fit_errors(job)


def _pending_request(tasks: Iterable[TaskInfo], size: int) -> np.ndarray:
    """``SubJobInfo.GetMinResources``: the init requests of every pending pod of the sub-group."""
    total = np.zeros(size)
    for t in tasks:
        total += t.init_resreq
    return total


def _allocate_for_subjob(ssn: Session, job: JobInfo, jt: JobTopology, sj: SubJob, queue: QueueInfo,
                         tasks: PriorityQueue[TaskInfo], root: int, alloc: dict[str, int],
                         ) -> tuple[Statement, float, PriorityQueue[TaskInfo]] | None:
    """``allocateForSubJob``: sub-group ``sj`` under the job's candidate ``root``: (the statement, the chosen
    hypernode's score, the sub-group's tasks left), with ``alloc[sj]`` moved to include the chosen hypernode;
    None when no hypernode of any gradient gives it a placement."""
    st = ssn.topology
    sub_t = jt.subs.get(sj.uid)
    allocated = alloc.get(sj.uid, -1)
    if sub_t is not None and sub_t.hard:
        assert sub_t.tier is not None
        pending = sj.pending() if job.has_sub_policy() else job.index.get(TaskStatus.Pending, {}).values()
        need = _pending_request(pending, ssn.res.size)
        gradients = st.gradient(job, root, sub_t.tier, allocated, need)
    else:
        gradients = [[root]]  # HyperNodeGradientForSubJobFn for a sub-group without a hard tier
    for gradient in gradients:
        if len(gradient) == 1:  # one candidate: its score now equals its score after an undone dry run
            h = gradient[0]
            score = st.order(job, [h], sj)[h]
            job.reset_sub_job_fit_errors(sj)
            work = tasks.clone()
            stmt = _allocate_tasks(ssn, job, sj, sub_t, queue, work, h, allocated, trial=True)
            if stmt is not None and stmt.ops:
                alloc[sj.uid] = st.lca(allocated, h)
                return stmt, score, work
            continue
        found: dict[int, tuple[Ops, PriorityQueue[TaskInfo]]] = {}
        for h in gradient:
            job.reset_sub_job_fit_errors(sj)
            work = tasks.clone()
            stmt = _allocate_tasks(ssn, job, sj, sub_t, queue, work, h, allocated, trial=True)
            if stmt is not None and stmt.ops:
                found[h] = (_record(stmt), work)
                stmt.discard(rollback=False)
        if not found:
            continue
        scores = st.order(job, list(found), sj)
        best = best_of({h: scores[h] for h in found}, st, job)  # Volcano: random among equals
        ops, work = found[best]
        alloc[sj.uid] = st.lca(allocated, best)
        return _replay(ssn, ops), scores[best], work
    return None


def _allocate_tasks(ssn: Session, job: JobInfo, sj: SubJob, sub_t: SubTopology | None, queue: QueueInfo,
                    tasks: PriorityQueue[TaskInfo], hypernode: int, allocated: int, *,
                    trial: bool = False) -> Statement | None:
    """``allocateResourcesForTasks``: the sub-group's pending pods, in task order, each to the best node under
    ``hypernode``, until the sub-group is ready; the statement when it ends ready or pipelined
    (``subJobReady`` / ``subJobPipelined``; for a job without policies, the job's), else everything undone and
    None.  A pod of a constrained sub-group is scored knowing the hypernode its sub-group's pods placed so far
    sit under (``task.JobAllocatedHyperNode``).  ``trial``: a dry run in one candidate hypernode, whose failure
    is not a gang roll-back in the statistics."""
    st = ssn.topology
    within = None if hypernode == st.topo.top else st.topo.members[hypernode]
    if not len(ssn.nodes) or (within is not None and not within.any()):
        return None
    constrained = sub_t is not None and sub_t.constrained
    leaf = st.leaf_of_nodes()
    stmt = Statement(ssn)
    try:
        while not tasks.empty():
            task = tasks.pop()
            turn = check_task(ssn, job, queue, task)
            if turn is Turn.PLACE:
                if constrained:
                    st.placing[job.uid] = allocated
                node, now = ssn.select_node(task, job, within)
                if node is None:
                    fe = ssn.explain(task, job, within)
                    if within is not None:
                        fe.set_hypernode(st.topo.names[hypernode])
                    turn = fail_task(job, task, fe)
            if turn is not Turn.PLACE:
                if turn is Turn.END:
                    break
                continue
            assert node is not None
            if now:
                stmt.allocate(task, node)
            else:
                stmt.pipeline(task, node)
            if constrained and leaf[node] >= 0:  # getNewAllocatedHyperNode
                allocated = st.lca(allocated, int(leaf[node]))
            if ssn.sub_job_ready(job, sj):
                break
    finally:
        st.placing.pop(job.uid, None)
    if ssn.sub_job_ready(job, sj) or ssn.sub_job_pipelined(job, sj):
        return stmt
    stmt.discard(rollback=not trial)
    return None


# --- why a job found no placement (``pyvolcano cycle``; Volcano's condition message is unchanged) ------------
def _limit(jt: JobTopology | SubTopology, names: list[str], allocated: int) -> str:
    if not jt.hard:
        out = "no hard tier"
    else:
        out = f"network topology: hard, highest tier {jt.tier}"
    if allocated >= 0:
        out += f", pods already under {names[allocated]}"
    return out


def _why_sub(ssn: Session, jt: JobTopology, sj: SubJob, root: int, node_idle: np.ndarray) -> str:
    """Why sub-group ``sj`` found no placement under the job's candidate ``root``: its size, its constraint, and
    the idle resources (``node_idle``: when it failed) of the hypernodes it could use against its pending pods'
    requests."""
    st = ssn.topology
    topo, res = st.topo, ssn.res
    names = topo.names
    sub_t = jt.subs.get(sj.uid)
    pending = sj.pending()
    need = _pending_request(pending, res.size)
    where = "" if root == topo.top else f" in {names[root]}"
    head = f"sub-group {sj.uid.split('/', 2)[-1]}{where} needs {sj.min_available} of its {len(sj.tasks)} pods"
    if sub_t is not None and sub_t.hard:
        assert sub_t.tier is not None
        cands = np.array([h for h in st.subtree(root) if topo.tier[h] <= sub_t.tier], dtype=np.int64)
        mode = f"soft, up to tier {sub_t.tier}" if sub_t.soft else f"hard, highest tier {sub_t.tier}"
        if not len(cands):
            return f"{head} under one hypernode ({mode}): none at or below that tier"
        idle = topo.members[cands].astype(float) @ node_idle
        order = sorted(range(len(cands)), key=lambda i: (-float(idle[i][0]), names[cands[i]]))[:2]
        have = ", ".join(f"{names[cands[i]]} {res.format(idle[i])}" for i in order)
        return (f"{head} under one hypernode ({mode}); its {len(pending)} pending pods ask {res.format(need)}; "
                f"idle then in {have}")
    within = node_idle if root == topo.top else node_idle[topo.members[root]]
    return (f"{head}; its {len(pending)} pending pods ask {res.format(need)}; idle then "
            f"{res.format(within.sum(axis=0))}")


def _why(ssn: Session, job: JobInfo, jt: JobTopology, tried: list[int],
         failed: dict[str, tuple[SubJob, int, np.ndarray]]) -> str:
    """Why no hypernode took the job: the constraint, then which hypernodes were candidates and how much of the
    job's pending requests the best of them had idle when the session opened; for a job with sub-groups, the
    sub-groups that found no place (in the first candidate that failed them)."""
    st = ssn.topology
    topo, res = st.topo, ssn.res
    names = topo.names
    subs_note = ""
    if job.has_sub_policy():
        mins = ", ".join(f"{g.rsplit('/', 1)[-1]} {n}" for g, n in job.min_sub_jobs().items() if n)
        parts = [_why_sub(ssn, jt, sj, h, at) for sj, h, at in list(failed.values())[:3]]
        more = f" and {len(failed) - 3} more" if len(failed) > 3 else ""
        subs_note = f"sub-groups needed (minSubGroups): {mins or 'none'}"
        if parts:
            subs_note += f"; not placed: {'; '.join(parts)}{more}"
    if not jt.hard:
        return subs_note or "no placement leaves the job ready"
    limit = _limit(jt, names, jt.allocated)
    if not tried:
        if jt.allocated >= 0 and topo.tier[jt.allocated] > (jt.tier or 0):
            return f"{limit}: the hypernode its pods are under is above the allowed tier"
        return f"{limit}: no hypernode at or below that tier has idle resources for the job's minResources"
    need = _pending_request(job.tasks_in(TaskStatus.Pending), res.size)
    idle = topo.sums(ssn.nodes.idle)
    shown = sorted(tried, key=lambda h: (-float(idle[h][0]), names[h]))[:3]
    have = ", ".join(f"{names[h]} (tier {int(topo.tier[h])}) {res.format(idle[h])}" for h in shown)
    more = f" and {len(tried) - len(shown)} more" if len(tried) > len(shown) else ""
    out = (f"{limit}: no candidate hypernode holds the gang (pending pods ask {res.format(need)}); "
           f"idle in {have}{more}")
    return f"{out}; {subs_note}" if subs_note else out
