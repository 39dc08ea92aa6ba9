"""Values carried between sessions (``framework/incremental/carry.py``) are the values a session would compute afresh.

Random changes to a cache -- pods bound, finished, evicted, deleted and created, PodGroups admitted or set to a
phase in place (as the Kubernetes mode does, without a new version), minimums changed -- and after each change one
session that carries per-job values and one that computes everything, on snapshots of the same cache: every
PodGroup status, queue status (with proportion's shares), bind and eviction must be the same.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from pyvolcano.api.types import PodGroupPhase, TaskStatus
from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.conf.loader import load_conf_file
from pyvolcano.framework.incremental.carry import carried, unchanged
from pyvolcano.framework.result import SessionResult
from pyvolcano.framework.session import Session
from pyvolcano.plugins._shared import JOB_SUMS, _checks, _checks_few, _job_rows, reservations
from tests.kube.helpers import node, pod, podgroup, queue

CONFS = [None, "examples/confs/reclaim-preempt.conf"]
_STATUSES = [TaskStatus.Pending, TaskStatus.Running, TaskStatus.Bound, TaskStatus.Succeeded, TaskStatus.Failed,
             TaskStatus.Releasing, TaskStatus.Binding]
_PHASES = [PodGroupPhase.Pending, PodGroupPhase.Inqueue, PodGroupPhase.Running, PodGroupPhase.Unknown]


def _key(r: SessionResult) -> tuple[Any, ...]:
    """Everything in a result but the session's random id (conditions' transitionID) and timings."""
    pgs = {uid: (st.phase, st.running, st.succeeded, st.failed, st.event, st.reason, dict(st.pod_conditions),
                 [(c["type"], c["reason"], c["message"]) for c in st.conditions])
           for uid, st in r.podgroups.items()}
    queues = {name: (q.allocated, q.pending, q.inqueue, q.running, q.unknown, q.completed, q.allocated_tasks,
                     q.pending_tasks, None if q.fair is None else
                     (q.fair.deserved.tolist(), q.fair.allocated.tolist(), q.fair.request.tolist(), q.fair.share))
              for name, q in r.queues.items()}
    return (pgs, queues, dict(r.binds), sorted(e.task.uid for e in r.evictions), dict(r.pipelined),
            dict(r.unschedulable), r.stats.rollbacks)


def _cache(rng: random.Random) -> SchedulerCache:
    cache = SchedulerCache(reuse_clones=True, memo=True)
    for i in range(4):
        cache.upsert(node(f"n{i}", cpu="8", memory="16Gi"))
    cache.upsert(queue("a", weight=1))
    cache.upsert(queue("b", weight=3))
    for g in range(12):
        size = rng.choice([1, 1, 2, 3])
        mins = {"cpu": str(size), "memory": f"{size}Gi"} if rng.random() < 0.8 else None
        cache.upsert(podgroup(f"g{g}", queue=rng.choice("ab"), min_member=rng.choice([1, size]), min_resources=mins))
        for k in range(size):
            cache.upsert(pod(f"g{g}-{k}", f"g{g}", cpu=rng.choice(["1", "2", "3"])))
    return cache


def _change(cache: SchedulerCache, rng: random.Random, step: int) -> None:
    what = rng.random()
    tasks = list(cache.tasks.values())
    if what < 0.35 and tasks:
        t = rng.choice(tasks)
        status = rng.choice(_STATUSES)
        on_node = status not in (TaskStatus.Pending,)
        cache.set_task_status(t, status, rng.choice(list(cache.nodes)) if on_node and not t.node_name else
                              (t.node_name if on_node else ""))
    elif what < 0.7:
        pg = cache.podgroups[rng.choice(list(cache.podgroups))]
        cache.set_podgroup_phase(pg, rng.choice(_PHASES))  # in place, no new job version
    elif what < 0.8:
        g = rng.choice(list(cache.podgroups)).split("/", 1)[1]
        cache.upsert(pod(f"{g}-x{step}", g, cpu=rng.choice(["1", "2"])))
    elif what < 0.9 and tasks:
        t = rng.choice(tasks)
        cache.delete({"kind": "Pod", "metadata": {"name": t.name, "namespace": t.namespace}})
    else:
        g = rng.choice(list(cache.podgroups)).split("/", 1)[1]
        cache.upsert(podgroup(g, queue=rng.choice("ab"), min_member=rng.choice([1, 2]),
                              min_resources={"cpu": "2", "memory": "1Gi"} if rng.random() < 0.5 else None))


def _session(cache: SchedulerCache, conf: Any, carry: bool) -> Session:
    ssn = Session(cache.snapshot(), conf)
    ssn.carry = carry
    ssn.memo = None  # the blocked-job memo has its own test (tests/sim/test_memo.py)
    return ssn


@pytest.mark.parametrize("conf_path", CONFS)
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_carried_values_give_the_results_of_fresh_ones(conf_path: str | None, seed: int) -> None:
    rng = random.Random(seed)
    conf = load_conf_file(conf_path)
    cache = _cache(rng)
    for step in range(40):
        _change(cache, rng, step)
        with_carry = _session(cache, conf, True).run()
        fresh = _session(cache, conf, False).run()
        assert _key(with_carry) == _key(fresh), f"step {step}"
    # the comparison means something only if values were carried
    assert sum(len(j.derived) for j in cache.jobs.values()) > 0


def test_job_rows_are_the_reservations_and_follow_an_in_place_phase_change() -> None:
    rng = random.Random(5)
    cache = _cache(rng)
    conf = load_conf_file(None)
    for step in range(30):
        _change(cache, rng, step)
        ssn = _session(cache, conf, True)
        ssn.open()
        sums = ssn.state.read(JOB_SUMS)
        jobs = list(ssn.jobs.values())
        for view in (False, True):
            want = reservations(jobs, ssn.res.size, queue_view=view)
            got = sums.reservations(queue_view=view)
            assert np.array_equal(want[0], got[0]) and np.array_equal(want[1], got[1])
        rows = sums.rows_in_order()
        assert np.array_equal(rows, np.array([_job_rows(j) for j in jobs]).reshape(rows.shape))
        # the carried per-queue sums are the sums of this session's rows, in order
        assert sums.exact
        _same_as_fresh_sums(sums, list(dict.fromkeys(j.queue for j in jobs)))


def test_a_changed_clone_is_computed_afresh() -> None:
    cache = _cache(random.Random(7))
    ssn = _session(cache, load_conf_file(None), True)
    job = next(iter(ssn.jobs.values()))
    assert unchanged(job)
    assert carried(job, "n", job.version, lambda j: len(j.tasks)) == len(job.tasks)
    assert carried(job, "n", job.version, lambda j: -1) == len(job.tasks)  # carried
    t = next(iter(job.tasks.values()))
    job.update_task_status(t, TaskStatus.Releasing if t.status != TaskStatus.Releasing else TaskStatus.Pending)
    assert not unchanged(job)
    assert carried(job, "n", job.version, lambda j: -1) == -1  # the session changed it: computed
    assert carried(job, "n", job.version - 1, lambda j: -2, enabled=False) == -2


def test_job_sums_follow_jobs_that_leave_and_come_back() -> None:
    """The carried ledger with only jobs gone (no new or changed one), a queue emptied and refilled, and a row
    that is not a whole number (a hand-built task): its per-queue sums are the sums of the session's rows."""
    from pyvolcano.plugins._shared import JobSums

    rng = random.Random(11)
    cache = _cache(rng)
    ssn = _session(cache, load_conf_file(None), True)
    jobs = dict(ssn.jobs)
    sums = JobSums(ssn.res.size)

    def check(js: dict[str, Any]) -> None:
        sums.sync(js)
        queues = list(dict.fromkeys(j.queue for j in js.values()))
        assert sums.queue_order == queues
        _same_as_fresh_sums(sums, queues)
        assert set(sums.alloc) == set(js)

    check(jobs)
    only_a = {u: j for u, j in jobs.items() if j.queue == "a"}
    check(only_a)  # jobs gone, nothing new
    check({})
    check(jobs)
    assert sums.exact
    job = next(iter(jobs.values()))
    t = next(iter(job.tasks.values()))
    job.delete_task(t)
    t.resreq = t.resreq + 0.5
    job.add_task(t)
    check(jobs)
    assert not sums.exact
    check(only_a if job.queue != "a" else {u: j for u, j in jobs.items() if j.queue != "a"})
    assert sums.exact


def _same_as_fresh_sums(sums: Any, queues: list[str]) -> None:
    """The carried per-queue sums are the sums of this session's rows, in queue order."""
    fresh = sums.ordered_sums(queues)
    assert set(sums.queue_sums) == set(queues)
    for q in queues:
        got = sums.queue_sums[q]
        assert np.array_equal(got[0], fresh[q][0]) and np.array_equal(got[2:], fresh[q][2:])
        assert np.array_equal(got[0] + got[1], fresh[q][1])


def test_checks_of_a_few_jobs_are_the_array_checks() -> None:
    """``JobSums.sync`` checks a few changed jobs' rows in plain floats (``_checks_few``): the bounds and
    wholeness ``_checks`` gives, with fractions, infinities and NaN among them."""
    rng = np.random.default_rng(3)
    for _ in range(200):
        rows = np.round(rng.normal(0, 1e6, (int(rng.integers(1, 9)), 5, 4)))
        for r in rows:
            pick = rng.random()
            if pick < 0.2:
                r[tuple(rng.integers(0, s) for s in r.shape)] += 0.5
            elif pick < 0.3:
                r[tuple(rng.integers(0, s) for s in r.shape)] = rng.choice([np.inf, -np.inf, np.nan])
        bounds, whole = _checks(rows)
        few_bounds, few_whole = _checks_few(list(rows))
        assert few_whole == whole
        assert [b for b, w in zip(few_bounds, whole, strict=True) if w] == [
            b for b, w in zip(bounds, whole, strict=True) if w]


def test_held_back_total_is_kept_while_the_sums_stay_and_summed_again_when_they_move() -> None:
    """overcommit's held-back total (``JobSums.inqueue_total``) is kept while no job's rows change, summed again
    after a change that moves it (a group admitted, a group gone), and under ``deltas.CHECK`` a kept total that is
    not the sum raises."""
    from pyvolcano.framework.incremental import deltas
    from pyvolcano.plugins._shared import JobSums

    rng = random.Random(17)
    cache = _cache(rng)
    ssn = _session(cache, load_conf_file(None), True)
    jobs = dict(ssn.jobs)
    sums = JobSums(ssn.res.size)

    def fresh() -> np.ndarray:
        return np.array([sums.entries[u][4][2] for u in sums.jobs]).sum(axis=0)

    sums.sync(jobs)
    first = sums.inqueue_total()
    assert np.array_equal(first, fresh())
    sums.sync(jobs)  # nothing changed: the same total, not summed again (but for the checks)
    with deltas.checking(False):
        assert sums.inqueue_total() is first
    grouped = [j for j in jobs.values() if j.podgroup is not None and j.podgroup.min_resources is not None]
    job = next(j for j in grouped if j.podgroup.phase != PodGroupPhase.Inqueue)
    job.podgroup.phase = PodGroupPhase.Inqueue  # admitted: holds its minimum back
    job.version += 1
    sums.sync(jobs)
    moved = sums.inqueue_total()
    assert moved is not first and np.array_equal(moved, fresh())
    assert not np.array_equal(moved, first)
    sums.sync({u: j for u, j in jobs.items() if u != job.uid})  # gone again
    assert np.array_equal(sums.inqueue_total(), first)
    sums._held = first + 1.0  # a kept total that is not the sum
    with deltas.checking(True), pytest.raises(AssertionError, match="held-back total"):
        sums.inqueue_total()


def test_rows_made_before_serve_jobs_of_the_same_inputs_and_no_other() -> None:
    """A changed job's rows come from ``JobSums.made`` when made before from the very same inputs (allocation,
    pending requests, minResources, phase, enough pods holding), for it or another job, and are made again when any
    input differs; under ``deltas.CHECK`` kept rows that are not the job's raise."""
    from pyvolcano.framework.incremental import deltas
    from pyvolcano.plugins._shared import JobSums, _rows_key

    rng = random.Random(19)
    cache = _cache(rng)
    sums = JobSums(_session(cache, load_conf_file(None), True).res.size)
    made = 0
    for step in range(60):
        _change(cache, rng, step)
        ssn = _session(cache, load_conf_file(None), False)
        for job in ssn.jobs.values():
            key = _rows_key(job)
            before = sums.made.get(key)
            with deltas.checking(False):
                rows, bound, whole = sums._rows(job)
            want = _job_rows(job)
            assert rows.tobytes() == want.tobytes()
            bounds, wholes = _checks(want[None])
            assert whole == wholes[0] and (not whole or bound == bounds[0])
            if before is not None:
                assert rows is before[0]  # made before: not made again
            else:
                made += 1
    assert 0 < made < 60 * 12  # some rows were made, most were found
    # every input of the rows is in the key: a job changed in any of them gets another key
    job = next(j for j in ssn.jobs.values() if j.podgroup is not None and j.podgroup.min_resources is not None)
    key = _rows_key(job)
    job.podgroup.min_resources = job.podgroup.min_resources + 1.0
    assert _rows_key(job) != key
    job.podgroup.phase = PodGroupPhase.Inqueue if job.podgroup.phase != PodGroupPhase.Inqueue else \
        PodGroupPhase.Running
    spoilt = _rows_key(job)
    sums.made[spoilt] = (_job_rows(job) + 1.0, 1, True)  # kept rows that are not the job's
    with deltas.checking(True), pytest.raises(AssertionError, match="rows made before"):
        sums._rows(job)
