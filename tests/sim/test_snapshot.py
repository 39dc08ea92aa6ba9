"""Snapshots whose cost follows what changed (issue 15): the cache's running node totals, the carried per-node
task maps and the reused job clones give exactly what a snapshot rebuilt from scratch gives.

Two levels: random sequences of cache changes and session-like changes (``test_incremental_snapshots_equal_
rebuilt_ones``), each snapshot compared with ``SchedulerCache.rebuilt_nodes`` and with fresh clones; and whole
simulations on contended clusters with preempt, reclaim and node failures, checked the same way after every
snapshot and compared, job by job, with runs that rebuild every snapshot (``incremental_nodes = False``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyvolcano.api.job_info import JobInfo, PodGroup, TaskInfo
from pyvolcano.api.node_info import NodeArrays
from pyvolcano.api.types import PodGroupPhase, TaskStatus
from pyvolcano.cache.cache import SchedulerCache, Snapshot
from pyvolcano.conf.loader import load_conf_file
from pyvolcano.framework.session import Session
from pyvolcano.plugins._podaffinity import PodAffinityState
from pyvolcano.plugins.nodeorder import K8sNodeRequests
from pyvolcano.sim import metrics
from pyvolcano.sim.cluster import parse_cluster_spec
from pyvolcano.sim.engine import Simulator
from pyvolcano.sim.workload import synthetic
from tests.sim.test_trusted import assert_pending_kept

ROOT = Path(__file__).resolve().parents[2]
_AMOUNTS = ("allocatable", "capacity", "unschedulable", "idle", "used", "releasing", "pipelined", "future")
#: statuses in which a pod counts on its node (every one but these three, as Volcano's NodeInfo.AddTask)
_OFF = (TaskStatus.Pending, TaskStatus.Succeeded, TaskStatus.Failed)


def _plain(v: Any) -> Any:
    """A value made comparable with ``==``: arrays as tuples, containers recursively, PodGroups by fields."""
    if isinstance(v, np.ndarray):
        return ("array", v.shape, tuple(v.ravel().tolist()))
    if isinstance(v, PodGroup):
        return ("PodGroup", _plain(vars(v)))
    if isinstance(v, TaskInfo):
        return ("Task", tuple((s, _plain(getattr(v, s))) for s in TaskInfo.__slots__))
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, set):
        return sorted(v)
    return v


def _job_state(j: JobInfo) -> dict[str, Any]:
    d = {k: v for k, v in vars(j).items() if k != "index"}
    d["index"] = {s: list(b) for s, b in j.index.items() if b}
    d["task_order"] = list(j.tasks)
    return _plain(d)


def check_snapshot(cache: SchedulerCache, snap: Snapshot, jobs: Iterable[str] | None = None) -> None:
    """``snap`` (just taken) equals a rebuilt one: the same node amounts, each node's map holding the same task
    objects in the same order, every pod that holds something on a node in its node's map, and every job (or
    those named in ``jobs``) equal field by field to a fresh clone of the cache's job."""
    ref = cache.rebuilt_nodes(snap.jobs)
    got = snap.nodes
    assert got.names == ref.names
    for name in _AMOUNTS:
        assert np.array_equal(getattr(got, name), getattr(ref, name)), name
    for i, name in enumerate(got.names):
        assert [(u, id(t)) for u, t in got.tasks[i].items()] == [(u, id(t)) for u, t in ref.tasks[i].items()], name
    # who is on which node, from the jobs and other schedulers' pods rather than the cache's own node index
    on: dict[str, set[str]] = {n: set() for n in got.names}
    for uid, job in cache.jobs.items():
        for t in snap.jobs.get(uid, job).tasks.values():
            if t.node_name in on and t.status not in _OFF:
                on[t.node_name].add(t.uid)
    for t in cache.other_tasks.values():
        if t.node_name in on and t.status not in _OFF:
            on[t.node_name].add(t.uid)
    assert {n: set(got.tasks[i]) for i, n in enumerate(got.names)} == on
    # the jobs not settled, in ``jobs`` order (a carried map lists them by their kept positions)
    carry = snap.carry
    if carry is not None:
        assert [id(j) for j in carry.unsettled] == [id(j) for uid, j in snap.jobs.items() if uid not in carry.settled]
    if carry is not None and carry.pos is not None:
        order = [carry.pos[uid] for uid in snap.jobs]
        assert order == sorted(order) and len(set(order)) == len(order)
    for uid in snap.jobs if jobs is None else jobs:
        got_job, fresh = _job_state(snap.jobs[uid]), _job_state(cache.jobs[uid].clone())
        if carry is not None and uid in carry.parked:
            # a parked job's clone is handed over as the last session left it (``Session.close``): with enqueue's
            # refusal, recorded in the memo (at the epoch it was parked under or before: enqueue's group checks
            # leave the refusals they confirm as they are), and gang's message; all else is a fresh clone's
            entry = cache.incremental.memo.enqueue.get(uid) if cache.incremental is not None else None
            assert entry is not None and entry.key[1] == got_job["cloned_from"], uid
            assert entry.key[0] <= carry.parked_epoch <= carry.free_epoch, uid
            assert got_job["enqueue_reason"] == entry.enqueue_reason != "", uid
            for k in ("enqueue_reason", "job_fit_errors"):
                got_job.pop(k)
                fresh.pop(k)
        elif carry is not None and uid in carry.blocked:
            # a blocked job's clone left alone is handed over as the last session left it: with the fit errors and
            # failed roles its memo entry holds (allocate's check hands them back again) and gang's message, or, made
            # again from its settled record, as a fresh clone
            assert uid in carry.settled and carry.settled[uid][1].pending, uid
            entry = cache.incremental.memo.allocate.get(uid) if cache.incremental is not None else None
            assert entry is not None and entry.key[2] == got_job["cloned_from"], uid
            job = snap.jobs[uid]
            assert job.nodes_fit_errors in ({}, entry.fit_errors), uid
            assert job.fit_failed_roles in (set(), entry.failed_roles), uid
            for k in ("nodes_fit_errors", "fit_failed_roles", "job_fit_errors"):
                got_job.pop(k)
                fresh.pop(k)
        assert got_job == fresh, uid
    # the jobs listed as having a pod with pod constraints, and the nodes listed as holding special pods, are
    # exactly those a walk over every job and every node's map finds
    assert snap.constrained_jobs == {uid for uid, j in snap.jobs.items()
                                     if any(t.uses_pod_constraints for t in j.tasks.values())}
    if cache.incremental_nodes:
        assert (got.extra_at, got.constrained_at) == special_walk(got)
    else:
        assert got.extra_at is None and got.constrained_at is None


def special_walk(nodes: NodeArrays) -> tuple[set[int], set[int]]:
    """From scratch: the nodes whose maps hold a pod with ``k8s_extra``, and a pod with pod constraints."""
    return ({i for i, m in enumerate(nodes.tasks) if any(t.k8s_extra is not None for t in m.values())},
            {i for i, m in enumerate(nodes.tasks) if any(t.uses_pod_constraints for t in m.values())})


def open_state(snap: Snapshot) -> tuple[Any, ...]:
    """What nodeorder's Kubernetes requests and the pod-affinity state compute at session open from the
    snapshot's special pods, read through the listed nodes (``NodeArrays.extra_at`` / ``constrained_at``)."""
    ssn = Session(snap, load_conf_file(None))
    kr = K8sNodeRequests(ssn, track=False)
    pa = PodAffinityState(ssn)
    return (kr.both.tolist(), pa.aff_open.tolist(), pa.anti_open.tolist(), sorted(pa.terms), pa.any_terms,
            pa.any_required, pa.any_hard, pa.any_soft)


def check_open_state(snap: Snapshot) -> None:
    """Session open reading only the listed nodes computes what it computes walking every placed pod."""
    nodes = snap.nodes
    listed = nodes.extra_at, nodes.constrained_at, snap.constrained_jobs
    got = open_state(snap)
    nodes.extra_at = nodes.constrained_at = snap.constrained_jobs = None  # unknown: every map and job is walked
    try:
        assert got == open_state(snap)
    finally:
        nodes.extra_at, nodes.constrained_at, snap.constrained_jobs = listed


def checked(cache: SchedulerCache) -> Callable[[], Snapshot]:
    """``cache.snapshot`` checking each snapshot, its reused clones field by field (a fresh clone is one)."""
    take = cache.snapshot
    last: dict[str, int] = {}

    def snapshot() -> Snapshot:
        snap = take()
        check_snapshot(cache, snap, [uid for uid, c in snap.jobs.items() if last.get(uid) == id(c)])
        last.clear()
        last.update((uid, id(c)) for uid, c in snap.jobs.items())
        return snap
    return snapshot


# --- random cache changes and session-like changes ----------------------------------------------------------------
def _node(i: int, cpu: int, unschedulable: bool = False) -> dict[str, Any]:
    return {"kind": "Node", "metadata": {"name": f"n{i}"}, "spec": {"unschedulable": unschedulable},
            "status": {"allocatable": {"cpu": str(cpu), "memory": "64Gi", "pods": "110"}}}


def _pod(name: str, group: str, cpu: int, node: str, phase: str, scheduler: str = "volcano",
         special: int = 0) -> dict[str, Any]:
    """``special``: 1 a pod Kubernetes' scores see differently (no memory request: ``k8s_extra``), 2 a pod with
    required anti-affinity (``uses_pod_constraints``), 3 both."""
    requests = {"cpu": str(cpu)} if special & 1 else {"cpu": str(cpu), "memory": f"{cpu}Gi"}
    spec: dict[str, Any] = {"schedulerName": scheduler, "containers": [{"name": "c", "resources": {
        "requests": requests}}]}
    if special & 2:
        spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "kubernetes.io/hostname"}]}}
    if node:
        spec["nodeName"] = node
    return {"kind": "Pod", "metadata": {"name": name, "namespace": "default", "labels": {"app": "x"},
                                        "annotations": {"scheduling.k8s.io/group-name": group}},
            "spec": spec, "status": {"phase": phase}}


def _podgroup(name: str, queue: str, phase: str = "Inqueue") -> dict[str, Any]:
    return {"kind": "PodGroup", "metadata": {"name": name, "namespace": "default"},
            "spec": {"minMember": 1, "queue": queue}, "status": {"phase": phase}}


#: (operation, pod, node, amount): snapshots with a session (12) and pod and PodGroup changes come most often,
#: node-set changes (0 with a new node, 1, 11), after which nothing is carried, seldom
_OPS = st.lists(st.tuples(st.sampled_from([0, 1, 11, *([2, 3, 4, 6, 9, 12] * 3), 5, 7, 8, 10]), st.integers(0, 7),
                          st.integers(0, 3), st.integers(1, 4)), min_size=5, max_size=80)


def _session(snap: Snapshot, pick: int, node: int, cpu: int) -> None:
    """What a session does to its snapshot: place pending tasks, pipeline, evict, undo (``Session._place``...)."""
    nodes, jobs = snap.nodes, list(snap.jobs.values())
    if not jobs or not len(nodes):
        return
    for k in range(cpu):
        job = jobs[(pick + k) % len(jobs)]
        i = (node + k) % len(nodes)
        for t in list(job.tasks.values()):
            if t.status == TaskStatus.Pending:
                job.update_task_status(t, TaskStatus.Pipelined if k % 2 else TaskStatus.Allocated)
                t.node_name = nodes.names[i]
                nodes.add_task(i, t)
                break
            if t.status == TaskStatus.Running and t.node_name in nodes.pos and k % 3 == 0:
                nodes.update_task(nodes.pos[t.node_name], t, TaskStatus.Releasing, job)
                break
            if t.status == TaskStatus.Allocated and k % 3 == 1:  # a discarded statement
                nodes.remove_task(nodes.pos[t.node_name], t)
                job.update_task_status(t, TaskStatus.Pending)
                t.node_name = ""
                break
        job.enqueue_reason = "examined"
        job.job_fit_errors = "not ready"
        job.fit_failed_roles.add("worker")
        if job.podgroup is not None and job.podgroup.phase == PodGroupPhase.Pending:
            job.podgroup.phase = PodGroupPhase.Inqueue  # what enqueue and allocate write


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=_OPS, reuse=st.sampled_from([True, True, True, False]))
def test_incremental_snapshots_equal_rebuilt_ones(ops: list[tuple[int, int, int, int]], reuse: bool) -> None:
    cache = SchedulerCache("volcano", reuse_clones=reuse)
    for q in ("a", "b"):
        cache.upsert({"kind": "Queue", "metadata": {"name": q}, "spec": {"weight": 1}})
    for i in range(3):
        cache.upsert(_node(i, 16))
    for g in range(4):
        cache.upsert(_podgroup(f"g{g}", "ab"[g % 2]))
    phases = ("Pending", "Running", "Running", "Succeeded", "Failed")
    for op, a, b, c in ops:
        name, group = f"p{a}", f"g{a % 4}"
        if op == 0:
            cache.upsert(_node(b, 8 * c, unschedulable=c == 4))  # a new node or an update (allocatable, flag)
        elif op == 1:
            cache.delete({"kind": "Node", "metadata": {"name": f"n{b}"}})
        elif op in (2, 3, 4):  # a pod of ours, pending or on a node in some phase, special or not
            node = "" if op == 2 else f"n{b}"
            cache.upsert(_pod(name, group, c, node, "Pending" if op == 2 else phases[c], special=(a + c) % 4))
        elif op == 5:
            cache.delete({"kind": "Pod", "metadata": {"name": name, "namespace": "default"}})
        elif op == 6:
            cache.upsert(_podgroup(group, "ab"[b % 2], "Pending" if c == 1 else "Inqueue"))
        elif op == 7:
            cache.delete({"kind": "PodGroup", "metadata": {"name": group, "namespace": "default"}})
        elif op == 8:  # another scheduler's pod
            cache.upsert(_pod(f"o{a}", "", c, f"n{b}", phases[c % 3], scheduler="default-scheduler",
                              special=(a + b) % 4))
        elif op == 9:  # the scheduler's own decisions written back (binder, evictor)
            t = cache.tasks.get(f"default/{name}")
            if t is not None:
                status = (TaskStatus.Binding, TaskStatus.Releasing, TaskStatus.Running, TaskStatus.Succeeded)[c - 1]
                cache.set_task_status(t, status, f"n{b}" if status == TaskStatus.Binding else None)
        elif op == 10:  # a queue going away leaves its jobs out of the snapshot; coming back brings them in
            if b % 2:
                cache.delete({"kind": "Queue", "metadata": {"name": "b"}})
            else:
                cache.upsert({"kind": "Queue", "metadata": {"name": "b"}, "spec": {"weight": 1}})
        elif op == 11:  # a new resource name widens every vector
            cache.upsert({"kind": "Node", "metadata": {"name": f"n{b}"},
                          "status": {"allocatable": {"cpu": "8", "memory": "64Gi", "pods": "110",
                                                     f"example.com/r{c}": "4"}}})
        else:  # 12: a snapshot, and a session that changes it
            assert_pending_kept(cache)
            snap = cache.snapshot()
            check_snapshot(cache, snap)
            check_open_state(snap)
            _session(snap, a, b, c)
            # a session's placements keep the lists: never smaller than what is there
            extra, constrained = special_walk(snap.nodes)
            assert snap.nodes.extra_at is not None and snap.nodes.constrained_at is not None
            assert extra <= snap.nodes.extra_at and constrained <= snap.nodes.constrained_at
            check_open_state(snap)
    check_snapshot(cache, cache.snapshot())
    assert_pending_kept(cache)


def test_a_session_left_alone_hands_on_its_node_maps() -> None:
    # the property above would hold trivially if every snapshot rebuilt every node's map
    cache = SchedulerCache("volcano", reuse_clones=True)
    cache.upsert({"kind": "Queue", "metadata": {"name": "a"}, "spec": {"weight": 1}})
    for i in range(3):
        cache.upsert(_node(i, 16))
    for i in range(3):
        cache.upsert(_podgroup(f"g{i}", "a"))
        cache.upsert(_pod(f"p{i}", f"g{i}", 2, f"n{i}", "Running"))
    first = cache.snapshot()
    second = cache.snapshot()
    assert all(a is b for a, b in zip(first.nodes.tasks, second.nodes.tasks, strict=True))
    assert cache.reused == 3
    cache.upsert(_pod("p1", "g1", 2, "n1", "Succeeded"))  # only n1 changes
    third = cache.snapshot()
    assert [a is b for a, b in zip(second.nodes.tasks, third.nodes.tasks, strict=True)] == [True, False, True]
    assert third.nodes.tasks[1] == {} and third.nodes.idle[1, third.res.pos["cpu"]] == 16000
    check_snapshot(cache, third)


def test_node_maps_follow_new_clones_and_jobs_left_out_or_back() -> None:
    """A node's map holds the session's clone of each pod, the cache's own pod for a job the snapshot leaves out:
    a PodGroup update (new clones), its queue deleted (left out) and re-created (back), the PodGroup deleted,
    each with no pod changing, must each reach the node's map."""
    cache = SchedulerCache("volcano", reuse_clones=True)
    cache.upsert({"kind": "Queue", "metadata": {"name": "b"}, "spec": {"weight": 1}})
    cache.upsert(_node(0, 16))
    cache.upsert(_podgroup("g", "b"))
    cache.upsert(_pod("p", "g", 2, "n0", "Running"))
    steps: list[Callable[[], object]] = [
        lambda: cache.upsert(_podgroup("g", "b", "Running")),
        lambda: cache.delete({"kind": "Queue", "metadata": {"name": "b"}}),
        lambda: cache.upsert({"kind": "Queue", "metadata": {"name": "b"}, "spec": {"weight": 1}}),
        lambda: cache.delete({"kind": "PodGroup", "metadata": {"name": "g", "namespace": "default"}}),
        lambda: cache.upsert(_podgroup("g", "b", "Running")),
    ]
    check_snapshot(cache, cache.snapshot())
    for step in steps:
        step()
        snap = cache.snapshot()
        check_snapshot(cache, snap)
        held = snap.nodes.tasks[0]["default/p"]
        assert held is (snap.jobs["default/g"].tasks["default/p"] if "default/g" in snap.jobs
                        else cache.tasks["default/p"])


def test_snapshot_arrays_share_only_read_only_node_data() -> None:
    cache = SchedulerCache("volcano", reuse_clones=True)
    cache.upsert(_node(0, 4))
    a, b = cache.snapshot().nodes, cache.snapshot().nodes
    assert a.allocatable is b.allocatable and not a.allocatable.flags.writeable
    a.idle[0] -= 1000
    assert b.idle[0, b.res.pos["cpu"]] == 4000 and cache.snapshot().nodes.idle[0, b.res.pos["cpu"]] == 4000
    assert isinstance(a, NodeArrays)


# --- whole simulations ----------------------------------------------------------------------------------------------
CONFS = [None, "examples/confs/reclaim-preempt.conf"]


def _simulate(incremental: bool, conf: str | None, seed: int, jobs: int, gangs: tuple[int, ...], nodes: int,
              failures: list[tuple[float, str, float]], check: bool) -> tuple[Any, ...]:
    queues = [{"kind": "Queue", "metadata": {"name": q}, "spec": {"weight": w, "reclaimable": True}}
              for q, w in (("a", 1), ("b", 3))]
    wl = synthetic(seed=seed, jobs=jobs, rate=1.0, queues={"a": 1, "b": 3}, gang_sizes=gangs, mean_duration=150,
                   gpu_fraction=0.5)
    sim = Simulator(parse_cluster_spec(f"{nodes}x{{cpu: 8, memory: 32Gi, nvidia.com/gpu: 2}}"), queues, wl,
                    load_conf_file(str(ROOT / conf) if conf else None), node_failures=failures)
    sim.cache.incremental_nodes = incremental
    if check:
        sim.cache.snapshot = checked(sim.cache)  # type: ignore[method-assign]
    res = sim.run()
    return metrics.job_rows(res), res.evictions, res.rollbacks, res.cycles, sim.cache.reused


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conf=st.sampled_from(CONFS), seed=st.integers(0, 10_000), jobs=st.integers(20, 50),
       gangs=st.sampled_from([(1,), (1, 1, 2, 4), (2, 4)]), nodes=st.integers(2, 4),
       fail=st.lists(st.tuples(st.floats(5, 200), st.integers(0, 3), st.floats(10, 100)), max_size=2))
def test_incremental_and_rebuilt_snapshots_give_the_same_outcome(
        conf: str | None, seed: int, jobs: int, gangs: tuple[int, ...], nodes: int,
        fail: list[tuple[float, int, float]]) -> None:
    failures = [(t, f"node-{n % nodes:04d}", down) for t, n, down in fail]
    inc = _simulate(True, conf, seed, jobs, gangs, nodes, failures, check=True)
    ref = _simulate(False, conf, seed, jobs, gangs, nodes, failures, check=False)
    assert inc[:4] == ref[:4]  # every job's record, evictions, gang roll-backs, cycles


def test_a_contended_run_with_failures_reuses_and_checks_every_snapshot() -> None:
    inc = _simulate(True, "examples/confs/reclaim-preempt.conf", 3, 60, (1, 1, 2, 4), 4,
                    [(40.0, "node-0001", 60.0), (90.0, "node-0003", 30.0)], check=True)
    ref = _simulate(False, "examples/confs/reclaim-preempt.conf", 3, 60, (1, 1, 2, 4), 4,
                    [(40.0, "node-0001", 60.0), (90.0, "node-0003", 30.0)], check=False)
    assert inc[:4] == ref[:4]
    assert inc[1] > 0 and inc[4] > 100  # evictions happened, clones were reused


def test_snapshot_blocked_list_follows_the_jobs_that_changed(monkeypatch: Any) -> None:
    """``SnapshotCarry.blocked``: the blocked jobs the last session handed over, then those the snapshot found
    blocked, each once and only while still settled -- taken whole by dict operations when all are in the
    settled-only map, else filtered job by job.  Every snapshot's list is compared with the per-job filter (as
    check mode does), through a contended simulation in which handed-over blocked jobs change in the cache (a pod
    placed, a job gone) and must drop out."""
    from pyvolcano.framework.incremental.state import IncrementalState

    seen = {"snapshots": 0, "dropped": 0, "found": 0}
    handed: list[list[str]] = []
    take = IncrementalState.take_handover
    snapshot = SchedulerCache.snapshot

    def take_handover(self: IncrementalState, seq: int, reuse: bool) -> Any:
        got = take(self, seq, reuse)
        handed.append(list(got.blocked))
        return got

    def checked_snapshot(self: SchedulerCache) -> Snapshot:
        handed.clear()
        snap = snapshot(self)
        carry = snap.carry
        if carry is None or not handed:
            return snap
        left = handed[0]
        settled = carry.settled
        found = [uid for uid in carry.blocked if uid not in left]
        want = [uid for uid in dict.fromkeys((*left, *found)) if uid in settled]
        assert carry.blocked == want
        assert all(uid in settled for uid in carry.blocked) and len(set(carry.blocked)) == len(carry.blocked)
        seen["snapshots"] += bool(left or carry.blocked)
        seen["dropped"] += any(uid not in settled for uid in left)
        seen["found"] += bool(found)
        return snap

    monkeypatch.setattr(IncrementalState, "take_handover", take_handover)
    monkeypatch.setattr(SchedulerCache, "snapshot", checked_snapshot)
    queues = [{"kind": "Queue", "metadata": {"name": q}, "spec": {"weight": w, "reclaimable": True}}
              for q, w in (("a", 1), ("b", 2))]
    wl = synthetic(seed=5, jobs=80, rate=2.0, queues={"a": 1, "b": 2}, gang_sizes=(1, 1, 2, 4), mean_duration=90,
                   gpu_fraction=0.5)
    # every other job cancelled 30 to 75 s after it arrives: a few of them blocked then, handed over and gone
    cancel = [(t + 30.0 + 5.0 * (i % 10), f"default/{job['metadata']['name']}")
              for i, (t, job) in enumerate(wl.jobs) if i % 2 == 0]
    Simulator(parse_cluster_spec("3x{cpu: 8, memory: 32Gi, nvidia.com/gpu: 2}"), queues, wl, load_conf_file(None),
              node_failures=[(20.0, "node-0001", 30.0)], cancellations=cancel).run()
    assert seen["snapshots"] > 20 and seen["dropped"] > 0 and seen["found"] > 0, seen
