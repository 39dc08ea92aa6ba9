"""The blocked-job memo (``framework/incremental/memo.py``) changes no decision: random contended workloads, with preempt and
reclaim, give every job the same outcome with the memo and with ``--full-sessions`` (issue 15 item 4)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyvolcano.api.types import PodGroupPhase
from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.conf.loader import load_conf_file
from pyvolcano.framework.incremental import deltas
from pyvolcano.sim import metrics
from pyvolcano.sim.cluster import parse_cluster_spec
from pyvolcano.sim.engine import Simulator
from pyvolcano.sim.workload import synthetic

ROOT = Path(__file__).resolve().parents[2]
CONFS = [None, "examples/confs/reclaim-preempt.conf"]


def _run(full: bool, conf: str | None, seed: int, jobs: int, rate: float, gangs: tuple[int, ...], gpu: float,
         weights: tuple[int, int], nodes: int, failures: bool = False) -> tuple[Any, ...]:
    queues = [{"kind": "Queue", "metadata": {"name": q}, "spec": {"weight": w, "reclaimable": True}}
              for q, w in zip(("a", "b"), weights, strict=True)]
    wl = synthetic(seed=seed, jobs=jobs, rate=rate, queues={"a": weights[0], "b": weights[1]}, gang_sizes=gangs,
                   mean_duration=150, gpu_fraction=gpu)
    sim = Simulator(parse_cluster_spec(f"{nodes}x{{cpu: 8, memory: 32Gi, nvidia.com/gpu: 2}}"), queues, wl,
                    load_conf_file(str(ROOT / conf) if conf else None), full_sessions=full,
                    node_failures=[(40.0, "node-0000", 90.0), (150.0, f"node-{nodes - 1:04d}", 60.0)] if failures else None)
    res = sim.run()
    skipped = sim.cache.incremental.memo.skipped if sim.cache.incremental is not None else 0
    return metrics.job_rows(res), res.evictions, res.cycles, skipped


def _same_outcome(conf: str | None, seed: int, jobs: int, rate: float, gangs: tuple[int, ...], gpu: float,
                  weights: tuple[int, int], nodes: int, failures: bool) -> None:
    """With the memo, sessions also carry per-job values between cycles (``framework/incremental/carry.py``); with
    ``--full-sessions`` neither: both must give every job the same outcome, node failures included."""
    memo = _run(False, conf, seed, jobs, rate, gangs, gpu, weights, nodes, failures)
    full = _run(True, conf, seed, jobs, rate, gangs, gpu, weights, nodes, failures)
    assert memo[:3] == full[:3]  # every job's record (phase, times, restarts, preemptions), evictions, cycles
    assert full[3] == 0
    # with ``deltas.CHECK`` (the suite's) a job the one-node rule finds blocked still takes its turn, which must
    # place nothing; without it the rule skips the turn, and every outcome must still be the same
    with deltas.checking(False):
        skipping = _run(False, conf, seed, jobs, rate, gangs, gpu, weights, nodes, failures)
    assert skipping[:3] == full[:3]


WORKLOADS = {"conf": st.sampled_from(CONFS), "seed": st.integers(0, 10_000), "jobs": st.integers(30, 90),
             "rate": st.sampled_from([0.5, 1.0, 3.0]), "gangs": st.sampled_from([(1,), (1, 1, 2, 4), (2, 4, 8), (1, 8)]),
             "gpu": st.sampled_from([0.0, 0.5]), "weights": st.sampled_from([(1, 1), (1, 3)]),
             "nodes": st.integers(2, 5), "failures": st.booleans()}


#: ``make test`` runs a few random workloads each time (three simulations each); ``make bench`` many more
@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**WORKLOADS)
def test_memo_and_full_sessions_give_the_same_outcome(conf: str | None, seed: int, jobs: int, rate: float,
                                                     gangs: tuple[int, ...], gpu: float, weights: tuple[int, int],
                                                     nodes: int, failures: bool) -> None:
    _same_outcome(conf, seed, jobs, rate, gangs, gpu, weights, nodes, failures)


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**WORKLOADS)
def test_memo_and_full_sessions_give_the_same_outcome_on_many_workloads(
        conf: str | None, seed: int, jobs: int, rate: float, gangs: tuple[int, ...], gpu: float,
        weights: tuple[int, int], nodes: int, failures: bool) -> None:
    _same_outcome(conf, seed, jobs, rate, gangs, gpu, weights, nodes, failures)


def test_the_memo_skips_blocked_jobs_on_a_contended_cluster() -> None:
    # the property above would hold trivially if nothing were ever skipped
    memo = _run(False, "examples/confs/reclaim-preempt.conf", 3, 120, 1.0, (1, 1, 2, 4), 0.5, (1, 2), 4)
    full = _run(True, "examples/confs/reclaim-preempt.conf", 3, 120, 1.0, (1, 1, 2, 4), 0.5, (1, 2), 4)
    assert memo[:3] == full[:3]
    assert memo[3] > 100


def _pod(name: str, cpu: str, phase: str = "Pending", node: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulerName": "volcano", "containers": [{"name": "c", "resources": {
        "requests": {"cpu": cpu, "memory": "1Gi"}}}]}
    if node:
        spec["nodeName"] = node
    return {"kind": "Pod", "metadata": {"name": name, "namespace": "default", "annotations": {
        "scheduling.k8s.io/group-name": name}}, "spec": spec, "status": {"phase": phase}}


def test_epochs_move_only_when_room_can_come_back() -> None:
    """free_epoch moves on what can give room back (a pod finishing, a node changing); a new pending pod and a
    bind only consume, and move use_epoch alone."""
    cache = SchedulerCache(memo=True)
    cache.upsert({"kind": "Node", "metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "4", "memory": "8Gi",
                                                                                         "pods": "110"}}})
    cache.upsert({"kind": "PodGroup", "metadata": {"name": "p", "namespace": "default"},
                  "spec": {"minMember": 1}, "status": {"phase": "Pending"}})
    free, use, alloc = cache.free_epoch, cache.use_epoch, cache.alloc_epoch
    cache.upsert(_pod("p", "1"))  # a new pending pod
    assert (cache.free_epoch, cache.use_epoch) == (free, use)
    cache.upsert({"kind": "PodGroup", "metadata": {"name": "p", "namespace": "default"},
                  "spec": {"minMember": 1}, "status": {"phase": "Inqueue"}})  # admitted
    assert cache.free_epoch == free
    cache.upsert(_pod("p", "1", "Pending", "n1"))  # bound
    assert cache.free_epoch == free and cache.use_epoch == use + 1
    cache.upsert(_pod("p", "1", "Running", "n1"))  # running on the same node: nothing given back
    assert cache.free_epoch == free
    cache.upsert({"kind": "PodGroup", "metadata": {"name": "p", "namespace": "default"},
                  "spec": {"minMember": 1}, "status": {"phase": "Running"}})  # reservation handed back
    assert cache.free_epoch == free + 1
    # ... enqueue's only: no node room, no queue allocation (allocate's memo key, ``alloc_epoch``)
    assert cache.alloc_epoch == alloc
    cache.upsert({"kind": "PodGroup", "metadata": {"name": "p", "namespace": "default"},
                  "spec": {"minMember": 2}, "status": {"phase": "Running"}})  # its spec: allocate's answers too
    assert cache.alloc_epoch == alloc + 1
    free, alloc, room = cache.free_epoch, cache.alloc_epoch, cache.room_seq
    cache.upsert(_pod("p", "1", "Succeeded", "n1"))  # finished: its cpu is free again, on n1 only
    assert cache.free_epoch > free and cache.alloc_epoch == alloc
    assert cache.room_seq == room + 1 and cache.room_nodes[-1] == "n1"
    cache.delete(_pod("p", "1", "Succeeded", "n1"))  # a finished pod goes: no node gets anything back
    assert cache.alloc_epoch == alloc and cache.room_nodes[-1] == ""
    free, alloc = cache.free_epoch, cache.alloc_epoch
    free, alloc = cache.free_epoch, cache.alloc_epoch
    cache.upsert({"kind": "Node", "metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "8", "memory": "8Gi",
                                                                                         "pods": "110"}}})
    assert cache.free_epoch > free and cache.alloc_epoch > alloc


def test_a_written_podgroup_phase_moves_the_epochs_as_an_informer_update_would() -> None:
    # the Kubernetes mode keeps the phase it wrote in the cache (SchedulerCache.set_podgroup_phase) until the API
    # server shows it: admission only consumes, leaving Inqueue hands the reservation back
    cache = SchedulerCache(memo=True)
    cache.upsert({"kind": "PodGroup", "metadata": {"name": "p", "namespace": "default"},
                  "spec": {"minMember": 1}, "status": {"phase": "Pending"}})
    pg = cache.podgroups["default/p"]
    free = cache.free_epoch
    cache.set_podgroup_phase(pg, PodGroupPhase.Inqueue)
    assert cache.free_epoch == free and pg.phase == PodGroupPhase.Inqueue
    cache.set_podgroup_phase(pg, PodGroupPhase.Running)
    assert cache.free_epoch == free + 1 and pg.phase == PodGroupPhase.Running


def test_pod_slots_counts_placements_by_resources_with_volcanos_epsilon() -> None:
    """Hand-counted: a placement needs ``idle > request - EPS`` (0.1) and takes the request away."""
    import numpy as np

    from pyvolcano.actions.allocate import pod_slots
    from pyvolcano.api.job_info import TaskInfo

    task = TaskInfo.__new__(TaskInfo)
    task.resreq = task.init_resreq = np.array([2000.0, 1024.0, 0.0])
    # 4000 m: 2 pods (the second leaves 0); 3999.95 m: still 2 (1999.95 > 1999.9); 3999.85 m: 1; no memory: 0
    idle = np.array([[4000.0, 8192.0, 0.0], [3999.95, 8192.0, 0.0], [3999.85, 8192.0, 0.0], [8000.0, 1000.0, 0.0]])
    assert pod_slots(idle, task) == 2 + 2 + 1 + 0
    # a request of nothing: no bound
    task.resreq = task.init_resreq = np.zeros(3)
    assert pod_slots(idle, task) >= 2**62


def _gang_cache(cpu: str, selector: bool) -> SchedulerCache:
    """Two nodes of 4 cpu, a gang of three ``cpu`` pods (with ``selector``: asking for a label no node has) and
    a small job that the first session binds: node usage moves, nothing else."""
    cache = SchedulerCache(memo=True)
    for n in ("n1", "n2"):
        cache.upsert({"kind": "Node", "metadata": {"name": n},
                      "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}})
    cache.upsert({"kind": "Queue", "metadata": {"name": "default"}, "spec": {"weight": 1}})
    for name, size in (("g", 3), ("s", 1)):
        cache.upsert({"kind": "PodGroup", "metadata": {"name": name, "namespace": "default"},
                      "spec": {"minMember": size, "queue": "default"}, "status": {"phase": "Inqueue"}})
    for i in range(3):
        pod = _pod(f"g-{i}", cpu)
        pod["metadata"]["annotations"]["scheduling.k8s.io/group-name"] = "g"
        if selector:
            pod["spec"]["nodeSelector"] = {"big": "yes"}
        cache.upsert(pod)
    cache.upsert(_pod("s", "500m"))
    return cache


@pytest.mark.parametrize(("cpu", "selector", "bound"), [("3", False, True), ("1", True, False)])
def test_the_gang_bound_skips_a_gang_the_nodes_cannot_hold_after_usage_moved(cpu: str, selector: bool,
                                                                           bound: bool) -> None:
    """A gang blocked by room is looked at again after any bind (``use_epoch``), but skipped while the idle
    resources of all nodes cannot hold enough of its pods (``SessionMemo._gang_short``): three 3-cpu pods on two
    4-cpu nodes.  Three 1-cpu pods refused by a node selector fit by resources: the bound cannot tell, the turn
    is taken.  With ``deltas.CHECK`` a skipped turn is taken too and must place nothing (allocate asserts it)."""
    from pyvolcano.framework.cycle import run_session
    from pyvolcano.framework.incremental import memo as memo_mod

    conf = load_conf_file(None)
    found: list[bool] = []
    real = memo_mod.SessionMemo._gang_short

    def recording(self: memo_mod.SessionMemo, job: Any, *args: Any) -> bool:
        got = real(self, job, *args)
        found.append(got or job.uid in self.must_fail)
        return got

    for check in (False, True):
        was, deltas.CHECK = deltas.CHECK, check
        memo_mod.SessionMemo._gang_short = recording  # type: ignore[method-assign]
        try:
            cache = _gang_cache(cpu, selector)
            first = run_session(cache, conf)
            assert list(first.binds) == ["default/s"] and "default/g" in first.unschedulable
            memo = cache.incremental.memo if cache.incremental is not None else None
            assert memo is not None and memo.skipped == 0
            use = cache.use_epoch
            cache.upsert(_pod("s", "500m", "Running", first.binds["default/s"]))
            assert cache.use_epoch > use
            found.clear()
            second = run_session(cache, conf)
            assert not second.binds and "default/g" in second.unschedulable
            assert found == [bound]
            assert memo.skipped == (1 if bound and not check else 0)
            assert second.unschedulable["default/g"] == first.unschedulable["default/g"]
        finally:
            deltas.CHECK = was
            memo_mod.SessionMemo._gang_short = real  # type: ignore[method-assign]
