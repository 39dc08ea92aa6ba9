"""Settled jobs (``Plan.settled_jobs``, framework/incremental/plan.py): a session leaves alone the jobs that closed the
last session ready, valid, with nothing pending and a quiet status, and are unchanged since.  Every session's result
must be what it is when every job is looked at: each PodGroup's status (phase, conditions, counts, reason, Event, pod
conditions), each queue's status, the binds and the evictions, on contended workloads with preempt and reclaim
(evictions of settled jobs' pods included) and node failures."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pyvolcano.actions.enqueue import Enqueue
from pyvolcano.api.job_info import JobInfo, PodGroup
from pyvolcano.conf.loader import load_conf_file
from pyvolcano.framework import closing
from pyvolcano.framework import session as session_mod
from pyvolcano.framework.incremental import plan as plan_mod
from pyvolcano.framework.result import SessionResult
from pyvolcano.sim import engine as engine_mod
from pyvolcano.sim.cluster import parse_cluster_spec
from pyvolcano.sim.engine import Simulator
from pyvolcano.sim.workload import synthetic

ROOT = Path(__file__).resolve().parents[1]


def _sig(res: SessionResult) -> tuple[Any, ...]:
    # the statuses in uid order: a session with carried statuses lists the changed ones first
    # (``SessionResult.podgroups``), as Volcano's job updater walks a Go map in no order
    pgs = tuple((uid, st.phase, tuple((c["type"], c["status"], c["reason"], c["message"]) for c in st.conditions),
                 st.running, st.succeeded, st.failed, st.event, st.reason, tuple(st.pod_conditions.items()),
                 tuple(st.nominated.items())) for uid, st in sorted(res.podgroups.items()))
    queues = tuple((name, tuple(sorted(q.allocated.items())),
                    None if q.allocated_vector is None else q.allocated_vector.tolist(),
                    q.pending, q.inqueue, q.running, q.unknown) for name, q in res.queues.items())
    return (pgs, queues, tuple(sorted(res.binds.items())), tuple((e.task.uid, e.reason) for e in res.evictions),
            tuple(sorted(res.unschedulable.items())), res.pods)


def _run(monkeypatch: pytest.MonkeyPatch, settle: bool, conf: str | None, seed: int,
         sums_from: int = 64, parked: list[int] | None = None) -> tuple[list[Any], int]:
    seen: list[Any] = []
    settled = [0]
    real_apply = engine_mod.apply
    real_settled = plan_mod.Plan.settled_jobs

    def apply(result: SessionResult, writer: Any) -> None:
        seen.append(_sig(result))
        real_apply(result, writer)

    def settled_jobs(self: plan_mod.Plan, *args: Any) -> Any:
        got = real_settled(self, *args)
        if not settle:
            return {}
        settled[0] += len(got)
        if parked is not None and got:
            assert self.carry is not None
            parked[0] += len(self.carry.parked)
            parked[2] += len(self.carry.blocked)
        return got
    monkeypatch.setattr(plan_mod, "SUMS_FROM", sums_from)  # 1: close's carried sums on every session
    real_with_parked = Enqueue._with_parked

    def with_parked(*args: Any) -> None:  # enqueue's pass over stale parked groups (``actions/enqueue.py``)
        if parked is not None:
            parked[1] += 1
        real_with_parked(*args)
    monkeypatch.setattr(Enqueue, "_with_parked", staticmethod(with_parked))
    monkeypatch.setattr(engine_mod, "apply", apply)
    monkeypatch.setattr(plan_mod.Plan, "settled_jobs", settled_jobs)
    real_release = plan_mod.Plan.release

    def release(self: plan_mod.Plan, uids: list[str]) -> None:  # preempt's and reclaim's turns not proved idle
        if parked is not None:
            parked[3] += len(uids)
        real_release(self, uids)
    monkeypatch.setattr(plan_mod.Plan, "release", release)
    queues = [{"kind": "Queue", "metadata": {"name": q}, "spec": {"weight": w, "reclaimable": True}}
              for q, w in (("a", 1), ("b", 3))]
    wl = synthetic(seed=seed, jobs=70, rate=1.0, queues={"a": 1, "b": 3}, gang_sizes=(1, 1, 2, 4),
                   mean_duration=150, gpu_fraction=0.5)
    sim = Simulator(parse_cluster_spec("4x{cpu: 8, memory: 32Gi, nvidia.com/gpu: 2}"), queues, wl,
                    load_conf_file(str(ROOT / conf) if conf else None),
                    node_failures=[(40.0, "node-0000", 90.0), (150.0, "node-0003", 60.0)])
    res = sim.run()
    monkeypatch.undo()
    return [*seen, res.evictions], settled[0]


@pytest.mark.parametrize("conf", [None, "examples/confs/reclaim-preempt.conf"])
@pytest.mark.parametrize(("seed", "sums_from"), [(1, 1), (7, 1), (7, 64)])
def test_settled_sessions_give_the_same_results(monkeypatch: pytest.MonkeyPatch, conf: str | None,
                                                seed: int, sums_from: int) -> None:
    parked = [0, 0, 0, 0]
    fast, settled = _run(monkeypatch, True, conf, seed, sums_from, parked)
    slow, none = _run(monkeypatch, False, conf, seed)
    assert none == 0
    assert settled > 100  # the comparison would hold trivially if no job were ever left alone
    assert parked[0] > 20  # and for parked jobs (Pending, refused by enqueue under the same epoch)
    assert parked[1] > 5  # and for enqueue's checks of parked groups after room came back
    # and for blocked jobs (admitted, allocate's memo skipped them), left alone under enqueue, allocate, backfill,
    # and under preempt and reclaim while their turns are proved idle; else looked at before the turns
    assert parked[2] > 20
    assert parked[3] == 0 if conf is None else parked[3] > 5
    assert len(fast) == len(slow)
    for k, (a, b) in enumerate(zip(fast, slow, strict=True)):
        assert a == b, f"session {k} differs"
    if conf is not None:
        assert fast[-1] > 0  # evictions happened


def test_a_settled_job_evicted_in_the_session_is_looked_at_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """An eviction moves the clone's version: gang's close and ``close`` then treat the job as any other (its
    status shows the Releasing pod's effect), not as the carried record."""
    seen: list[tuple[int, int]] = []
    real_close = session_mod.Session.close

    def close(self: session_mod.Session) -> SessionResult:
        evicted = {ev.task.job for ev in self.evictions}
        hit = [uid for uid in evicted if uid in self.plan.settled]
        out = real_close(self)
        for uid in hit:
            st, _ = self.plan.settled[uid]
            seen.append((int(out.podgroups[uid] is st), len(hit)))
        return out
    monkeypatch.setattr(session_mod.Session, "close", close)
    queues = [{"kind": "Queue", "metadata": {"name": q}, "spec": {"weight": w, "reclaimable": True}}
              for q, w in (("a", 1), ("b", 3))]
    wl = synthetic(seed=7, jobs=70, rate=1.0, queues={"a": 1, "b": 3}, gang_sizes=(1, 1, 2, 4),
                   mean_duration=150, gpu_fraction=0.5)
    Simulator(parse_cluster_spec("4x{cpu: 8, memory: 32Gi, nvidia.com/gpu: 2}"), queues, wl,
              load_conf_file(str(ROOT / "examples/confs/reclaim-preempt.conf"))).run()
    assert seen, "no settled job lost a pod to an eviction: the case is not exercised"
    assert all(same == 0 for same, _ in seen)
    assert np.all(np.array([n for _, n in seen]) > 0)


@pytest.mark.parametrize("seed", range(6))
def test_queue_held_sums_are_the_sums_in_job_order(seed: int) -> None:
    """``session._held``: bit for bit what adding the jobs' vectors one after the other gives, whole amounts (one
    NumPy sum) or not (fractions of a GPU, huge amounts: one after the other)."""
    rng = np.random.default_rng(seed)
    for _ in range(50):
        rows: dict[str, list[np.ndarray]] = {}
        for q in ("a", "b", "c"):
            n = int(rng.integers(1, 40))
            kind = rng.integers(0, 3)
            if kind == 0:
                m = rng.integers(0, 10**12, size=(n, 4)).astype(float)
            elif kind == 1:
                m = rng.random((n, 4)) * 10.0 ** rng.integers(-3, 4)
            else:
                m = rng.integers(0, 10**15, size=(n, 4)).astype(float) * 64.0
            rows[q] = list(m)
        got = closing._held(rows)
        for q, rs in rows.items():
            want = rs[0].copy()
            for r in rs[1:]:
                want += r
            assert got[q].tobytes() == want.tobytes()


def test_queue_held_sums_of_few_rows_are_numpys_sums() -> None:
    """A queue's few rows (summed in plain floats) and its many rows (NumPy) give, bit for bit, the queue's NumPy
    sum over its rows when all are whole (an all -0.0 column sums to 0.0 there, a single row is copied as it is),
    and the sum one after the other when one is not, whatever the other queues hold."""
    rng = np.random.default_rng(11)
    neg = np.full(3, -0.0)
    for _ in range(300):
        rows: dict[str, list[np.ndarray]] = {}
        for q in ("a", "b", "c")[:int(rng.integers(1, 4))]:
            n = int(rng.integers(1, 12))
            kind = rng.integers(0, 4)
            if kind == 0:
                m = rng.integers(-10**9, 10**9, size=(n, 3)).astype(float)
            elif kind == 1:
                m = np.where(rng.random((n, 3)) < 0.8, -0.0, 0.0)
            elif kind == 2:  # magnitudes summing to 2**53: one after the other
                m = np.full((n, 3), 2.0**52)
            else:
                m = rng.integers(0, 10**6, size=(n, 3)) + rng.random((n, 3)).round(1)
            rows[q] = list(m)
        got = closing._held(rows)
        for q, rs in rows.items():
            m = np.array(rs)
            if len(rs) == 1:
                want = rs[0]
            elif (m == np.rint(m)).all() and np.abs(m).sum(axis=0).max() < 2.0**53:
                want = m.sum(axis=0)
            else:
                want = rs[0].copy()
                for r in rs[1:]:
                    want += r
            assert got[q].tobytes() == want.tobytes()
    got = closing._held({"a": [neg, neg], "b": [neg, neg, neg], "c": [neg]})
    assert [np.signbit(got[q]).any() for q in "abc"] == [False, False, True]


# --- the carried job map (``SchedulerCache._carried_jobs``) under random cache changes between real sessions ---------
def _ops() -> Any:
    from hypothesis import strategies as st
    return st.lists(st.tuples(st.integers(0, 7), st.integers(0, 5), st.integers(0, 2)), min_size=3, max_size=40)


def test_carried_job_maps_equal_a_full_walk() -> None:
    """Jobs created, finished, deleted and made again under the same name, PodGroups deleted (the job left out) and
    back, a queue added, PodGroup phases written: after every session, a snapshot that carries the last job map
    (when it can) lists the same jobs, in the same order, each handed over clone equal to a fresh one, with the same
    settled and unsettled jobs as a snapshot that walks every job."""
    from hypothesis import HealthCheck, given, settings

    from pyvolcano.api.types import PodGroupPhase
    from pyvolcano.cache.cache import SchedulerCache
    from pyvolcano.framework.cycle import run_session
    from tests.sim.test_snapshot import _node, _pod, _podgroup, check_snapshot

    conf = load_conf_file(None)
    carried = [0]

    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(ops=_ops())
    def run(ops: list[tuple[int, int, int]]) -> None:
        cache = SchedulerCache("volcano", reuse_clones=True, memo=True)
        cache.upsert({"kind": "Queue", "metadata": {"name": "a"}, "spec": {"weight": 1}})
        for i in range(2):
            cache.upsert(_node(i, 8))
        real = cache._carried_jobs

        def spy(*a: Any) -> Any:
            got = real(*a)
            carried[0] += got is not None
            return got
        cache._carried_jobs = spy  # type: ignore[method-assign,assignment]
        for op, g, n in ops:
            name = f"g{g}"
            if op <= 2:  # a job of one pod, pending
                cache.upsert(_podgroup(name, "a", "Pending"))
                cache.upsert(_pod(f"{name}-p", name, 1, "", "Pending"))
            elif op == 3:  # its pod finished
                t = cache.tasks.get(f"default/{name}-p")
                if t is not None and t.node_name:
                    cache.upsert(_pod(f"{name}-p", name, 1, t.node_name, "Succeeded"))
            elif op == 4:  # the job deleted (and at once made again under the same name: it moves to the end)
                cache.delete({"kind": "Pod", "metadata": {"name": f"{name}-p", "namespace": "default"}})
                cache.delete({"kind": "PodGroup", "metadata": {"name": name, "namespace": "default"}})
                if n:
                    cache.upsert(_podgroup(name, "a", "Pending"))
                    cache.upsert(_pod(f"{name}-p", name, 1, "", "Pending"))
            elif op == 5:  # only the PodGroup deleted: the job is left out while its pod stays
                cache.delete({"kind": "PodGroup", "metadata": {"name": name, "namespace": "default"}})
            elif op == 6:
                pg = cache.podgroups.get(f"default/{name}")
                if pg is not None:
                    cache.set_podgroup_phase(pg, PodGroupPhase.Running if n else PodGroupPhase.Inqueue)
            else:
                cache.upsert({"kind": "Queue", "metadata": {"name": f"q{n}"}, "spec": {"weight": 1}})
            for _ in range(2):
                res = run_session(cache, conf)
                for uid, node in res.binds.items():  # what the binder and the kubelet would write back
                    t = cache.tasks[uid]
                    cache.upsert(_pod(t.uid.split("/", 1)[1], t.job.split("/", 1)[1], 1, node, "Running"))
                for uid, st in res.podgroups.items():  # and the status writer (the Kubernetes mode's way)
                    pg = cache.podgroups.get(uid)
                    if pg is not None and pg.phase != st.phase:
                        cache.set_podgroup_phase(pg, PodGroupPhase(st.phase))
            snap = cache.snapshot()
            check_snapshot(cache, snap)
            walked = [uid for uid, j in cache.jobs.items() if j.podgroup is not None and j.queue in snap.queues]
            assert list(snap.jobs) == walked
            assert snap.carry is not None
            assert [c.uid for c in snap.carry.unsettled] == [uid for uid in walked if uid not in snap.carry.settled]
            for uid in snap.carry.settled:
                job = cache.jobs[uid]
                rec = job.derived.get("settled")
                assert rec is not None and rec[0][0] == job.version
            run_session(cache, conf)
    run()
    assert carried[0] > 20  # the comparison would hold trivially if no snapshot carried its job map


def test_a_job_made_again_between_snapshots_is_listed_where_the_cache_has_it() -> None:
    """Two settled jobs; the first deleted and made again under its name before the next snapshot: the cache now
    lists it last, and so must the snapshot (the carried map would have kept its old place)."""
    from pyvolcano.api.types import PodGroupPhase
    from pyvolcano.cache.cache import SchedulerCache
    from pyvolcano.framework.cycle import run_session
    from tests.sim.test_snapshot import _node, _pod, _podgroup, check_snapshot

    conf = load_conf_file(None)
    cache = SchedulerCache("volcano", reuse_clones=True, memo=True)
    cache.upsert({"kind": "Queue", "metadata": {"name": "a"}, "spec": {"weight": 1}})
    for i in range(2):
        cache.upsert(_node(i, 8))
    for g in ("g0", "g1"):
        cache.upsert(_podgroup(g, "a", "Pending"))
        cache.upsert(_pod(f"{g}-p", g, 1, "", "Pending"))
    for _ in range(4):
        res = run_session(cache, conf)
        for uid, node in res.binds.items():
            t = cache.tasks[uid]
            cache.upsert(_pod(t.uid.split("/", 1)[1], t.job.split("/", 1)[1], 1, node, "Running"))
        for uid, st in res.podgroups.items():
            pg = cache.podgroups[uid]
            if pg.phase != st.phase:
                cache.set_podgroup_phase(pg, PodGroupPhase(st.phase))
    state = cache.incremental
    assert state is not None and state.handover is not None and len(state.handover.left) == 2  # both left alone
    cache.delete({"kind": "Pod", "metadata": {"name": "g0-p", "namespace": "default"}})
    cache.delete({"kind": "PodGroup", "metadata": {"name": "g0", "namespace": "default"}})
    cache.upsert(_podgroup("g0", "a", "Pending"))
    cache.upsert(_pod("g0-p", "g0", 1, "", "Pending"))
    snap = cache.snapshot()
    assert list(snap.jobs) == list(cache.jobs) == ["default/g1", "default/g0"]
    assert snap.carry is not None and list(snap.carry.settled) == ["default/g1"]
    check_snapshot(cache, snap)


def test_queue_held_sums_out_of_job_order_are_made_in_job_order() -> None:
    """With settled jobs the rows come unsettled first: whole amounts are summed as they come (exact in any order),
    fractions one after the other in job order (``in_order``)."""
    rng = np.random.default_rng(3)
    ordered = list(rng.random((30, 4)) * 7.3)
    shuffled = ordered[15:] + ordered[:15]
    got = closing._held({"a": shuffled}, lambda q: ordered)
    want = ordered[0].copy()
    for r in ordered[1:]:
        want += r
    assert got["a"].tobytes() == want.tobytes()
    whole = [np.floor(r * 1000) for r in ordered]
    asked: list[str] = []

    def in_order(q: str) -> list[np.ndarray]:
        asked.append(q)
        return whole
    got = closing._held({"a": whole[15:] + whole[:15]}, in_order)
    assert not asked and np.array_equal(got["a"], np.sum(whole, axis=0))


def test_release_keeps_what_allocate_handed_back_only_after_its_check() -> None:
    """``Plan.release`` (preempt and reclaim, before turns not proved idle): after allocate's memo check a blocked
    job's clone holds the fit errors a memo-skipped turn leaves on a job looked at, so they stay; before it, the clone
    holds what earlier sessions wrote, and release is ``unblock``, which clears them.  Either way the job leaves
    ``settled`` and ``blocked``, loses its settled record and the Unschedulable message, and is walked again."""
    def plan_with_blocked(checked: bool) -> tuple[plan_mod.Plan, JobInfo]:
        job = JobInfo("ns/j", PodGroup("j", "ns"), 3)
        other = JobInfo("ns/k", PodGroup("k", "ns"), 3)
        job.nodes_fit_errors = {"n1": "Insufficient cpu"}  # type: ignore[dict-item]
        job.fit_failed_roles = {"worker"}
        job.job_fit_errors = "1/1 tasks in gang unschedulable"
        job.derived["settled"] = "record"
        plan = plan_mod.Plan({"ns/k": other, "ns/j": job}, None, set())
        plan.settled = {"ns/j": ("status", "counts")}  # type: ignore[dict-item]
        plan.blocked = {"ns/j": None}
        plan._unsettled = [other]
        plan.blocked_checked = checked
        return plan, job

    for checked in (True, False):
        plan, job = plan_with_blocked(checked)
        assert [j.uid for j in plan.blocked_jobs()] == ["ns/j"]
        plan.release(["ns/j"])
        assert not plan.settled and not plan.blocked and "settled" not in job.derived
        assert job.job_fit_errors == "" and plan.unparked_uids == ["ns/j"]
        assert [j.uid for j in plan.unsettled_jobs()] == ["ns/k", "ns/j"]
        if checked:
            assert job.nodes_fit_errors == {"n1": "Insufficient cpu"} and job.fit_failed_roles == {"worker"}
        else:
            assert job.nodes_fit_errors == {} and job.fit_failed_roles == set()
