"""The ordered dry runs of allocate's hypernode path (``actions/_trials.py``, ``_hypernode._search_by_score``) make
the choices of the plain loop that dry-runs every candidate: compared on random topologies, gangs and clusters
already partly used, with everything a session reports (binds, pipelined pods, PodGroup phases, conditions, reasons
and each pending pod's fit errors)."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from pyvolcano.actions import _trials
from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.conf.loader import load_conf
from pyvolcano.framework.cycle import run_session
from pyvolcano.framework.result import SessionResult
from pyvolcano.framework.session import Session
from tests.confs import conf

Obj = dict[str, Any]
CONF = conf("enqueue, allocate, backfill", "  - name: binpack\n  - name: network-topology-aware\n")


def _hn(name: str, tier: int, kind: str, members: list[str]) -> Obj:
    return {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": {"name": name},
            "spec": {"tier": tier, "members": [{"type": kind, "selector": {"exactMatch": {"name": m}}}
                                               for m in members]}}


def _pod(name: str, group: str, cpu: int, node: str = "", role: str = "", phase: str = "") -> Obj:
    meta: Obj = {"name": name, "namespace": "ns", "annotations": {"scheduling.k8s.io/group-name": group}}
    if role:
        meta["annotations"]["volcano.sh/task-spec"] = role
    spec: Obj = {"schedulerName": "volcano",
                 "containers": [{"name": "c", "resources": {"requests": {"cpu": str(cpu), "memory": f"{cpu}Gi"}}}]}
    status = {"phase": "Pending"}
    if node:
        spec["nodeName"], status = node, {"phase": phase or "Running"}
    return {"kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def random_cluster(seed: int) -> list[Obj]:
    """Leaves of 1-4 nodes of varied sizes under 1-3 spines, pods already running on some nodes (sometimes one
    terminating, which turns the ordered search off), hard gangs of tier 1 or 2 (some with minMember below their
    size, some in two roles), soft gangs and plain pods."""
    rnd = random.Random(seed)
    objs: list[Obj] = [{"kind": "Queue", "metadata": {"name": "default"}, "spec": {"weight": 1},
                        "status": {"state": "Open"}}]
    nodes: list[str] = []
    leaves: list[str] = []
    spines: list[str] = []
    for s in range(rnd.randint(1, 3)):
        kids = []
        for leaf in range(rnd.randint(1, 4)):
            members = []
            for _ in range(rnd.randint(1, 4)):
                name = f"n{len(nodes)}"
                nodes.append(name)
                members.append(name)
                cpu = str(rnd.choice((4, 8, 16)))
                objs.append({"kind": "Node", "metadata": {"name": name},
                             "status": {"allocatable": {"cpu": cpu, "memory": f"{cpu}Gi", "pods": "110"}}})
            lname = f"leaf{s}-{leaf}"
            leaves.append(lname)
            kids.append(lname)
            objs.append(_hn(lname, 1, "Node", members))
        spines.append(f"spine{s}")
        objs.append(_hn(f"spine{s}", 2, "HyperNode", kids))
    if rnd.random() < 0.5:
        objs.append(_hn("top", 3, "HyperNode", spines))
    for r in range(rnd.randint(0, len(nodes))):
        name = f"run{r}"
        objs.append({"kind": "PodGroup", "metadata": {"name": name, "namespace": "ns"},
                     "spec": {"minMember": 1}, "status": {"phase": "Running"}})
        phase = "Running" if rnd.random() < 0.97 else "Succeeded"
        pod = _pod(f"{name}-0", name, rnd.choice((1, 2, 3)), rnd.choice(nodes), phase=phase)
        if rnd.random() < 0.04:
            pod["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        objs.append(pod)
    for g in range(rnd.randint(1, 10)):
        name = f"g{g}"
        size = rnd.randint(1, 8)
        spec: Obj = {"minMember": rnd.randint(1, size) if rnd.random() < 0.3 else size}
        mode = rnd.random()
        if mode < 0.7:
            spec["networkTopology"] = {"mode": "hard", "highestTierAllowed": rnd.choice((1, 1, 2))}
        elif mode < 0.85:
            spec["networkTopology"] = {"mode": "soft"}
        objs.append({"kind": "PodGroup", "metadata": {"name": name, "namespace": "ns",
                                                       "creationTimestamp": f"2026-01-01T00:00:{g:02d}Z"},
                     "spec": spec, "status": {"phase": "Inqueue"}})
        cpu = rnd.choice((1, 2, 3, 4))
        two_roles = rnd.random() < 0.2
        for k in range(size):
            role = ("a" if k % 2 else "b") if two_roles else ""
            objs.append(_pod(f"{name}-{k}", name, cpu + (k % 2 if two_roles else 0), role=role))
    return objs


def everything(result: SessionResult) -> Obj:
    return {"binds": dict(sorted(result.binds.items())), "pipelined": dict(sorted(result.pipelined.items())),
            "evictions": sorted(e.task.uid for e in result.evictions),
            "podgroups": {uid: (pg.phase, pg.reason, pg.event, sorted(pg.pod_conditions.items()),
                                [(c.get("type"), c.get("reason"), c.get("message")) for c in pg.conditions])
                          for uid, pg in sorted(result.podgroups.items())},
            "unschedulable": dict(sorted(result.unschedulable.items()))}


def decide(objs: list[Obj], ordered: bool, monkeypatch: pytest.MonkeyPatch) -> Obj:
    monkeypatch.setattr(_trials, "ENABLED", ordered)
    cache = SchedulerCache.from_objects(objs)
    return everything(run_session(cache, load_conf(CONF, "test"), "vector"))


@pytest.mark.parametrize("seed", range(60))
def test_ordered_dry_runs_decide_as_the_plain_loop(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    objs = random_cluster(seed)
    assert decide(objs, True, monkeypatch) == decide(objs, False, monkeypatch)


def test_the_ordered_search_is_used_and_tries_fewer_candidates(monkeypatch: pytest.MonkeyPatch) -> None:
    """Eight empty leaves, one gang per leaf: the plain loop dry-runs every leaf for every gang, the ordered
    search only the best leaf (each gang needs all its pods), and both put the gangs in the same leaves."""
    objs: list[Obj] = [{"kind": "Queue", "metadata": {"name": "default"}, "spec": {"weight": 1},
                        "status": {"state": "Open"}}]
    for i in range(16):
        objs.append({"kind": "Node", "metadata": {"name": f"n{i:02d}"},
                     "status": {"allocatable": {"cpu": "4", "memory": "4Gi", "pods": "110"}}})
    objs += [_hn(f"leaf{k}", 1, "Node", [f"n{2 * k:02d}", f"n{2 * k + 1:02d}"]) for k in range(8)]
    for g in range(8):
        objs.append({"kind": "PodGroup", "metadata": {"name": f"g{g}", "namespace": "ns",
                                                       "creationTimestamp": f"2026-01-01T00:00:{g:02d}Z"},
                     "spec": {"minMember": 4, "networkTopology": {"mode": "hard", "highestTierAllowed": 1}},
                     "status": {"phase": "Inqueue"}})
        objs += [_pod(f"g{g}-{k}", f"g{g}", 2) for k in range(4)]
    from pyvolcano.actions import _hypernode

    calls = {"n": 0}
    real = _hypernode._dry_run_job

    def counting(*args: Any) -> Any:
        calls["n"] += 1
        return real(*args)

    monkeypatch.setattr(_hypernode, "_dry_run_job", counting)
    fast = decide(objs, True, monkeypatch)
    fast_calls, calls["n"] = calls["n"], 0
    plain = decide(objs, False, monkeypatch)
    assert fast == plain
    assert len(fast["binds"]) == 32
    assert calls["n"] == 8 * 8 and fast_calls == 8


@pytest.mark.parametrize("seed", range(5))
def test_scores_alone_are_the_order_of_each_hypernode_alone(seed: int) -> None:
    objs = random_cluster(seed)
    cache = SchedulerCache.from_objects(objs)
    ssn = Session(cache.snapshot(), load_conf(CONF, "test")).open()
    st = ssn.topology
    hs = list(range(len(st.topo.names)))
    for job in ssn.jobs.values():
        alone = st.order_alone(job, hs)
        one_by_one = np.array([st.order(job, [h])[h] for h in hs])
        assert np.array_equal(alone, one_by_one)


def test_task_share_kept_by_events_matches_a_fresh_count() -> None:
    """network-topology-aware keeps each job's tasks-per-hypernode count from the allocate/deallocate events:
    placing, unplacing, evicting (the task keeps its node) and undoing an eviction give the count that the job's
    tasks on nodes give afresh."""
    from pyvolcano.api.types import TaskStatus
    from pyvolcano.framework.statement import Statement
    from pyvolcano.plugins.network_topology_aware import NetworkTopologyAware

    objs = random_cluster(3)
    objs.append({"kind": "PodGroup", "metadata": {"name": "mix", "namespace": "ns"}, "spec": {"minMember": 1},
                 "status": {"phase": "Running"}})
    objs += [_pod("mix-run", "mix", 1, "n0"), _pod("mix-a", "mix", 1), _pod("mix-b", "mix", 1)]
    ssn = Session(SchedulerCache.from_objects(objs).snapshot(), load_conf(CONF, "test")).open()
    plugin = ssn.plugins["network-topology-aware"]
    assert isinstance(plugin, NetworkTopologyAware)
    job = next(j for j in ssn.jobs.values() if j.name == "mix")
    hs = np.arange(len(ssn.topology.topo.names))

    def fresh() -> np.ndarray:
        pos = ssn.nodes.pos
        on = [pos[t.node_name] for t in job.tasks.values() if t.node_name in pos]
        return ssn.topology.topo.members[:, on].sum(axis=1) / len(job.tasks)

    assert np.array_equal(plugin._task_share(job, hs), fresh())
    pending = list(job.index[TaskStatus.Pending].values())
    running = next(iter(job.index[TaskStatus.Running].values()))
    stmt = Statement(ssn)
    stmt.allocate(pending[0], len(ssn.nodes) - 1)
    stmt.pipeline(pending[1], 0)
    assert np.array_equal(plugin._task_share(job, hs), fresh())
    stmt.evict(running, "test")
    assert running.node_name and np.array_equal(plugin._task_share(job, hs), fresh())
    stmt.discard(rollback=False)
    assert np.array_equal(plugin._task_share(job, hs), fresh())
    stmt.allocate(pending[1], 1)
    stmt.evict(running, "test")
    stmt.restore(running)
    assert np.array_equal(plugin._task_share(job, hs), fresh())
