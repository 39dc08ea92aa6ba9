"""Statement: discard puts the session back exactly (node arrays, job buckets, plugin state such as drf
shares and proportion's queue allocation, the node-selection caches); commit binds and evicts."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from pyvolcano.api.types import TaskStatus
from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.conf.loader import load_conf
from pyvolcano.framework.session import Session
from pyvolcano.framework.statement import Statement

CONF = """\
actions: "allocate"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
"""


def pod(name: str, group: str, cpu: str, node: str | None = None, phase: str = "Pending") -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulerName": "volcano",
                            "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}]}
    if node:
        spec["nodeName"] = node
    return {"kind": "Pod", "metadata": {"name": name, "namespace": "ns",
                                        "annotations": {"scheduling.k8s.io/group-name": group}},
            "spec": spec, "status": {"phase": phase}}


def objects() -> list[dict[str, Any]]:
    nodes = [{"kind": "Node", "metadata": {"name": n},
              "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}} for n in ("n1", "n2")]
    pgs = [{"kind": "PodGroup", "metadata": {"name": g, "namespace": "ns"}, "spec": {"minMember": 1},
            "status": {"phase": "Running"}} for g in ("a", "b")]
    return [*nodes, *pgs, pod("a-0", "a", "1", "n1", "Running"), pod("a-1", "a", "1"), pod("a-2", "a", "3"),
            pod("b-0", "b", "2", "n2", "Running"), pod("b-1", "b", "1", "n1", "Running")]


def open_session() -> Session:
    return Session(SchedulerCache.from_objects(objects()).snapshot(), load_conf(CONF)).open()


def state(ssn: Session) -> dict[str, Any]:
    n = ssn.nodes
    drf = ssn.plugins["drf"]
    prop = ssn.plugins["proportion"]
    return {
        "arrays": [a.copy() for a in (n.idle, n.used, n.releasing, n.pipelined)],
        "node_tasks": [sorted(t) for t in n.tasks],
        "buckets": {uid: {s: sorted(b) for s, b in j.index.items() if b} for uid, j in ssn.jobs.items()},
        "allocated": {uid: j.allocated.copy() for uid, j in ssn.jobs.items()},
        "tasks": {t.uid: (t.status, t.node_name) for j in ssn.jobs.values() for t in j.tasks.values()},
        "drf": dict(drf.shares),  # type: ignore[attr-defined]
        "proportion": {q: (a.allocated.copy(), a.share) for q, a in prop.attrs.items()},  # type: ignore[attr-defined]
    }


def same(a: dict[str, Any], b: dict[str, Any]) -> None:
    for x, y in zip(a["arrays"], b["arrays"], strict=True):
        assert np.array_equal(x, y)
    for key in ("node_tasks", "buckets", "tasks", "drf"):
        assert a[key] == b[key], key
    assert a["allocated"].keys() == b["allocated"].keys()
    for uid in a["allocated"]:
        assert np.array_equal(a["allocated"][uid], b["allocated"][uid])
    for q in a["proportion"]:
        assert np.array_equal(a["proportion"][q][0], b["proportion"][q][0]) and a["proportion"][q][1] == \
            b["proportion"][q][1]


def test_discard_restores_everything_exactly() -> None:
    ssn = open_session()
    job_a, job_b = ssn.jobs["ns/a"], ssn.jobs["ns/b"]
    a1, a2, b0 = job_a.tasks["ns/a-1"], job_a.tasks["ns/a-2"], job_b.tasks["ns/b-0"]
    before = state(ssn)
    choice_before = ssn.select_node(a1, job_a)
    n2 = ssn.nodes.pos["n2"]

    stmt = Statement(ssn)
    stmt.allocate(a1, n2)
    stmt.evict(b0, "test")
    stmt.pipeline(a2, n2)
    during = state(ssn)
    assert during["tasks"]["ns/a-1"] == (TaskStatus.Allocated, "n2")
    assert during["tasks"]["ns/b-0"] == (TaskStatus.Releasing, "n2")
    assert during["tasks"]["ns/a-2"] == (TaskStatus.Pipelined, "n2")
    assert during["drf"]["ns/a"] > before["drf"]["ns/a"] and during["drf"]["ns/b"] < before["drf"]["ns/b"]
    assert during["arrays"][2][n2][0] == 2000  # b-0's cpu is releasing
    assert during["arrays"][3][n2][0] == 3000  # a-2 waits for it

    stmt.discard()
    same(state(ssn), before)
    assert stmt.ops == []
    assert ssn.binds == {} and ssn.evictions == []
    assert ssn.select_node(a1, job_a) == choice_before  # the per-template caches saw the undo


def test_commit_binds_allocations_and_records_evictions() -> None:
    ssn = open_session()
    job_a, job_b = ssn.jobs["ns/a"], ssn.jobs["ns/b"]
    a1, a2, b0 = job_a.tasks["ns/a-1"], job_a.tasks["ns/a-2"], job_b.tasks["ns/b-0"]
    n2 = ssn.nodes.pos["n2"]
    stmt = Statement(ssn)
    stmt.allocate(a1, n2)
    stmt.evict(b0, "make room")
    stmt.pipeline(a2, n2)
    stmt.commit()
    assert ssn.binds == {"ns/a-1": "n2"}
    assert a1.status == TaskStatus.Binding and a1 in ssn.bind_tasks
    assert [(e.task.uid, e.reason) for e in ssn.evictions] == [("ns/b-0", "make room")]
    assert b0.status == TaskStatus.Releasing
    assert a2.status == TaskStatus.Pipelined
    result = ssn.close()
    assert result.binds == {"ns/a-1": "n2"}
    assert result.pipelined == {"ns/a-2": "n2"}
    assert [e.task.uid for e in result.evictions] == ["ns/b-0"]


def test_merge_then_discard_undoes_both() -> None:
    ssn = open_session()
    job_a = ssn.jobs["ns/a"]
    before = state(ssn)
    s1, s2 = Statement(ssn), Statement(ssn)
    s1.allocate(job_a.tasks["ns/a-1"], 0)
    s2.allocate(job_a.tasks["ns/a-2"], 1)
    s1.merge(s2)
    assert s2.ops == [] and len(s1.ops) == 2
    s1.discard()
    same(state(ssn), before)


def test_session_allocate_dispatches_once_the_job_is_ready() -> None:
    objs = objects()
    objs[2]["spec"]["minMember"] = 3  # job a: a-0 runs, needs two more
    ssn = Session(SchedulerCache.from_objects(objs).snapshot(), load_conf(CONF)).open()
    job_a = ssn.jobs["ns/a"]
    ssn.allocate(job_a.tasks["ns/a-1"], 0)
    assert ssn.binds == {}  # 2 of 3
    ssn.allocate(job_a.tasks["ns/a-2"], 1)
    assert ssn.binds == {"ns/a-1": "n1", "ns/a-2": "n2"}


def test_restore_gives_one_eviction_back() -> None:
    """Preempt's topology-aware dry run gives victims back one at a time (Volcano's SelectVictimsOnNode)."""
    ssn = open_session()
    a0, b1 = ssn.jobs["ns/a"].tasks["ns/a-0"], ssn.jobs["ns/b"].tasks["ns/b-1"]
    before = state(ssn)
    stmt = Statement(ssn)
    stmt.evict(a0, "trial")
    stmt.evict(b1, "trial")
    stmt.restore(a0)
    assert a0.status == TaskStatus.Running and b1.status == TaskStatus.Releasing
    assert [op.task for op in stmt.ops] == [b1]
    with pytest.raises(ValueError, match="ns/a-0"):
        stmt.restore(a0)
    stmt.discard(rollback=False)
    same(state(ssn), before)
    assert ssn.rollbacks == 0  # a trial is no gang rollback in the simulator's report
