"""allocate for a job with a network topology constraint (Volcano master's ``actions/allocate/allocate.go``:
``allocateForJob``, ``allocateForSubJob``, ``allocateResourcesForTasks``, ``selectBestHyperNodeForJob`` /
``ForSubJob``, and ``recorder.go``).

A job in hard mode (soft mode is hard mode up to the virtual top, ``framework/topology.py``) is placed in three
nested loops:

1. the job-level gradients (the ``network-topology-aware`` plugin's, or the virtual top alone): candidate
   hypernodes at or below the allowed tier, lowest tier first;
2. in each candidate, a dry run of the job's (default) sub-group, which searches its own gradients below the
   candidate (hypernodes whose idle or future idle held the pending pods' requests when the session opened),
   tries every hypernode of the first gradient that yields a placement, keeps the one the hypernode scores
   (``HyperNodeOrderFn``) like best, and scores the job's solution with it;
3. in a hypernode, the task loop: each pending pod, in task order, to the best node *among that hypernode's
   nodes*, until the job is ready.

Every dry run is undone (except where a gradient holds a single candidate: its placements are kept, which ends in
the same state as Volcano's undo and replay, its score taken before the dry run, when the session is as after the
undo); of a gradient's solutions that leave the job ready or pipelined, the best-scoring one
is replayed (Volcano's ``RecoverOperations``) and committed by the caller only when the job is ready.  The job's
allocated hypernode then becomes the lowest common ancestor of the old one and the chosen candidate, so its
later pods search only under its ancestor at the allowed tier.  Volcano breaks score ties between hypernodes at
random; here the first candidate in breadth-first order wins.

A job with a constraint but no tier limit (hard mode without a tier, or an unknown ``highestTierName``) takes
the ordinary path over every node, with the node scores that pull its pods towards the hypernode its pods
already sit under.
"""

from __future__ import annotations

import numpy as np

from pyvolcano.actions._trials import ordered_trials
from pyvolcano.actions._turn import Turn, check_task, fail_task
from pyvolcano.api.job_info import JobInfo, TaskInfo
from pyvolcano.api.queue_info import QueueInfo
from pyvolcano.api.types import TaskStatus
from pyvolcano.framework.session import Session
from pyvolcano.framework.statement import Statement
from pyvolcano.framework.topology import JobTopology
from pyvolcano.framework.util import PriorityQueue

#: a recorded placement: (operation, task, node index), replayed by ``_replay``
Ops = list[tuple[str, TaskInfo, int]]


def topology_waits(ssn: Session, job: JobInfo) -> bool:
    """A job with a topology constraint waits while the HyperNode tree is not ready
    (``buildAllocateContext``: ``!ssn.HyperNodesReadyToSchedule && job.ContainsNetworkTopology()``)."""
    return not ssn.topology.ready and ssn.topology.of(job) is not None


def allocate_topology_job(ssn: Session, job: JobInfo, queue: QueueInfo, tasks: PriorityQueue[TaskInfo],
                          jobs: PriorityQueue[JobInfo]) -> None:
    """One turn of a job with a topology constraint (``allocateResources``' two branches for such jobs)."""
    jt = ssn.topology.of(job)
    assert jt is not None
    if jt.hard:
        got = _allocate_for_job(ssn, job, jt, queue, tasks)
        if got is None:
            return
        stmt, best, remaining, sub_allocated = got
        if ssn.job_ready(job):  # a pipelined job's placements stay in the session, uncommitted
            stmt.commit()
            jt.allocated = ssn.topology.lca(jt.allocated, best)  # recorder.UpdateDecisionToJob
            jt.sub_allocated = ssn.topology.lca(jt.sub_allocated, sub_allocated)
            tasks.assign(remaining)
            if not tasks.empty():
                jobs.push(job)
        else:
            tasks.assign(remaining)
        return
    stmt_or_none = _allocate_tasks(ssn, job, queue, tasks, ssn.topology.topo.top, jt.sub_allocated)
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
        if kind == "allocate":
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


def _allocate_for_job(ssn: Session, job: JobInfo, jt: JobTopology, queue: QueueInfo,
                      tasks: PriorityQueue[TaskInfo],
                      ) -> tuple[Statement, int, PriorityQueue[TaskInfo], int] | None:
    """``allocateForJob``: (the replayed statement, the chosen hypernode, the tasks left, the sub-group's new
    allocated hypernode), or None when no candidate leaves the job ready or pipelined."""
    st = ssn.topology
    assert jt.tier is not None
    pg = job.podgroup
    min_job = pg.min_resources if pg is not None and pg.min_resources is not None else ssn.res.zeros()
    gradients = st.gradient(job, st.topo.top, jt.tier, jt.allocated, min_job)
    tried: list[int] = []
    for gradient in gradients:
        tried += gradient
        predicted = ordered_trials(ssn, job, gradient)
        if predicted is not None:  # the same choice from a few dry runs (_search_by_score)
            found = _search_by_score(ssn, job, jt, queue, tasks, gradient, predicted)
            if found is not None:
                st.why.pop(job.uid, None)
                return found
            continue
        solutions: dict[int, tuple[Ops, PriorityQueue[TaskInfo], float, int]] = {}
        for h in gradient:
            stmts, work, score, sub_allocated = _dry_run_job(ssn, job, jt, queue, tasks, h)
            ops = [op for s_ in stmts for op in _record(s_)]
            if ops and (ssn.job_ready(job) or ssn.job_pipelined(job)):
                if len(gradient) == 1:  # the only candidate: keep its placements instead of undo and replay
                    st.why.pop(job.uid, None)
                    _forget_other_candidates(job, stmts, tasks)
                    return _merged(ssn, stmts), h, work, sub_allocated
                solutions[h] = (ops, work, score, sub_allocated)
            for s_ in reversed(stmts):
                s_.discard(rollback=False)
        if not solutions:
            continue
        best = max(solutions, key=lambda k: solutions[k][2])  # the first of equal scores (Volcano: random)
        ops, work, _, sub_allocated = solutions[best]
        st.why.pop(job.uid, None)
        stmt = _replay(ssn, ops)
        _forget_other_candidates(job, [stmt], tasks)
        return stmt, best, work, sub_allocated
    st.why[job.uid] = _why(ssn, job, jt, tried)
    return None


def _dry_run_job(ssn: Session, job: JobInfo, jt: JobTopology, queue: QueueInfo, tasks: PriorityQueue[TaskInfo],
                 h: int) -> tuple[list[Statement], PriorityQueue[TaskInfo], float, int]:
    """The job's dry run in candidate ``h`` (the body of ``allocateForJob``'s hypernode loop): its sub-group
    placed under ``h`` until the job is ready or nothing more is placed; (the statements, left in the session, the
    tasks left, the summed sub-group score, the sub-group's new allocated hypernode)."""
    _reset_fit_errors(job)
    work = tasks.clone()
    sub_allocated = jt.sub_allocated
    stmts: list[Statement] = []
    score = 0.0
    while not work.empty():
        got = _allocate_for_subjob(ssn, job, jt, queue, work, h, sub_allocated)
        if got is None or not got[0].ops:
            break
        stmt, s, sub_allocated, work = got
        stmts.append(stmt)
        score += s
        if ssn.job_ready(job):
            break
    return stmts, work, score, sub_allocated


def _search_by_score(ssn: Session, job: JobInfo, jt: JobTopology, queue: QueueInfo, tasks: PriorityQueue[TaskInfo],
                     gradient: list[int], predicted: np.ndarray,
                     ) -> tuple[Statement, int, PriorityQueue[TaskInfo], int] | None:
    """The gradient's choice, as the plain loop above makes it, from fewer dry runs (see ``_trials.py`` for when
    ``ordered_trials`` allows it): a successful candidate scores exactly its ``predicted`` score, so trying them
    best score first (breadth-first order among equal scores) the first success is the plain loop's choice and
    nothing after it needs a dry run.  The chosen candidate's placements are kept (no undo and replay).

    The plain loop leaves on the job the failed roles and fit errors of the gradient's *last* candidate (each
    candidate starts afresh).  They matter only when the chosen solution leaves tasks of this turn unplaced
    (``_forget_other_candidates``), so when a solution may do that (a gang whose minimum needs fewer than all
    its pending tasks) the last candidate is dry-run first, whatever its score, and its record put back at the
    end; when nothing succeeds every candidate has been tried and the last one's record is put back."""
    last = len(gradient) - 1
    errors = None
    last_ops: Ops = []
    last_solution: tuple[PriorityQueue[TaskInfo], int] | None = None
    if not _every_task_needed(job, tasks):
        stmts, work, _, sub_allocated = _dry_run_job(ssn, job, jt, queue, tasks, gradient[last])
        errors = (job.nodes_fit_errors, job.fit_failed_roles, job.job_fit_errors)
        last_ops = [op for s_ in stmts for op in _record(s_)]
        if last_ops and (ssn.job_ready(job) or ssn.job_pipelined(job)):
            last_solution = (work, sub_allocated)
        for s_ in reversed(stmts):
            s_.discard(rollback=False)
    order = sorted(range(last if errors is not None else last + 1), key=lambda k: (-predicted[k], k))
    for k in order:
        if last_solution is not None and predicted[k] < predicted[last]:
            break
        stmts, work, _, sub_allocated = _dry_run_job(ssn, job, jt, queue, tasks, gradient[k])
        if stmts and (ssn.job_ready(job) or ssn.job_pipelined(job)):
            if errors is not None:
                job.nodes_fit_errors, job.fit_failed_roles, job.job_fit_errors = errors
            _forget_other_candidates(job, stmts, tasks)
            return _merged(ssn, stmts), gradient[k], work, sub_allocated
        if k == last:
            errors = (job.nodes_fit_errors, job.fit_failed_roles, job.job_fit_errors)
        for s_ in reversed(stmts):
            s_.discard(rollback=False)
    if errors is not None:
        job.nodes_fit_errors, job.fit_failed_roles, job.job_fit_errors = errors
    if last_solution is None:
        return None
    stmt = _replay(ssn, last_ops)
    _forget_other_candidates(job, [stmt], tasks)
    return stmt, gradient[last], last_solution[0], last_solution[1]


def _every_task_needed(job: JobInfo, tasks: PriorityQueue[TaskInfo]) -> bool:
    """The job becomes ready only once every task of this turn is placed (its minimum is not below them)."""
    need = job.min_available - job.ready_task_num() - job.pending_best_effort_task_num()
    return need >= len(tasks)


def _forget_other_candidates(job: JobInfo, stmts: list[Statement], tasks: PriorityQueue[TaskInfo]) -> None:
    """A solution that placed every task of the turn clears what the candidates tried left on the job: Volcano
    keeps the last candidate's fit errors (``JobInfo.ResetFitErr`` before each), which nothing reads once no
    task of the job waits, while here they would become the PodGroup's "task(s) not placed" reason."""
    if sum(len(s.ops) for s in stmts) == len(tasks):
        _reset_fit_errors(job)


def _why(ssn: Session, job: JobInfo, jt: JobTopology, tried: list[int]) -> str:
    """Why no hypernode took the job: the constraint, then which hypernodes were candidates and how much of the
    job's pending requests the best of them had idle when the session opened."""
    st = ssn.topology
    topo, res = st.topo, ssn.res
    names = topo.names
    limit = f"network topology: hard, highest tier {jt.tier}"
    if jt.allocated >= 0:
        limit += f", pods already under {names[jt.allocated]}"
    if not tried:
        if jt.allocated >= 0 and topo.tier[jt.allocated] > (jt.tier or 0):
            return f"{limit}: the hypernode its pods are under is above the allowed tier"
        return f"{limit}: no hypernode at or below that tier has idle resources for the job's minResources"
    need = _pending_request(job, res.size)
    idle = topo.sums(ssn.nodes.idle)
    shown = sorted(tried, key=lambda h: (-float(idle[h][0]), names[h]))[:3]
    have = ", ".join(f"{names[h]} (tier {int(topo.tier[h])}) {res.format(idle[h])}" for h in shown)
    more = f" and {len(tried) - len(shown)} more" if len(tried) > len(shown) else ""
    return (f"{limit}: no candidate hypernode holds the gang (pending pods ask {res.format(need)}); "
            f"idle in {have}{more}")


def _pending_request(job: JobInfo, size: int) -> np.ndarray:
    """``SubJobInfo.GetMinResources``: the init requests of every pending pod of the sub-group."""
    total = np.zeros(size)
    for t in job.index.get(TaskStatus.Pending, {}).values():
        total += t.init_resreq
    return total


def _allocate_for_subjob(ssn: Session, job: JobInfo, jt: JobTopology, queue: QueueInfo,
                         tasks: PriorityQueue[TaskInfo], root: int, sub_allocated: int,
                         ) -> tuple[Statement, float, int, PriorityQueue[TaskInfo]] | None:
    """``allocateForSubJob`` for the job's default sub-group under the job's candidate ``root``."""
    st = ssn.topology
    assert jt.tier is not None
    need = _pending_request(job, ssn.res.size)
    for gradient in st.gradient(job, root, jt.tier, sub_allocated, need):
        if len(gradient) == 1:  # one candidate: its score now equals its score after an undone dry run
            h = gradient[0]
            score = st.order(job, [h])[h]
            _reset_fit_errors(job)
            work = tasks.clone()
            stmt = _allocate_tasks(ssn, job, queue, work, h, sub_allocated, trial=True)
            if stmt is not None and stmt.ops:
                return stmt, score, st.lca(sub_allocated, h), work
            continue
        found: dict[int, tuple[Ops, PriorityQueue[TaskInfo]]] = {}
        for h in gradient:
            _reset_fit_errors(job)
            work = tasks.clone()
            stmt = _allocate_tasks(ssn, job, queue, work, h, sub_allocated, trial=True)
            if stmt is not None and stmt.ops:
                found[h] = (_record(stmt), work)
                stmt.discard(rollback=False)
        if not found:
            continue
        scores = st.order(job, list(found))
        best = max(found, key=lambda k: scores[k])  # the first of equal scores (Volcano: random)
        ops, work = found[best]
        return _replay(ssn, ops), scores[best], st.lca(sub_allocated, best), work
    return None


def _allocate_tasks(ssn: Session, job: JobInfo, queue: QueueInfo, tasks: PriorityQueue[TaskInfo], hypernode: int,
                    allocated: int, *, trial: bool = False) -> Statement | None:
    """``allocateResourcesForTasks``: the job's pending pods, in task order, each to the best node under
    ``hypernode``; the statement when the job ends ready or pipelined, else everything undone and None.  Each pod
    is scored knowing the hypernode the job's pods placed so far sit under (``task.JobAllocatedHyperNode``).
    ``trial``: a dry run in one candidate hypernode, whose failure is not a gang roll-back in the statistics."""
    st = ssn.topology
    within = None if hypernode == st.topo.top else st.topo.members[hypernode]
    if not len(ssn.nodes) or (within is not None and not within.any()):
        return None
    leaf = st.leaf_of_nodes()
    stmt = Statement(ssn)
    try:
        while not tasks.empty():
            task = tasks.pop()
            turn = check_task(ssn, job, queue, task)
            if turn is Turn.PLACE:
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
            if leaf[node] >= 0:  # getNewAllocatedHyperNode
                allocated = st.lca(allocated, int(leaf[node]))
            if ssn.job_ready(job):
                break
    finally:
        st.placing.pop(job.uid, None)
    if ssn.job_ready(job) or ssn.job_pipelined(job):
        return stmt
    stmt.discard(rollback=not trial)
    return None

