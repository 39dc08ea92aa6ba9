"""Per-template masks and scores carried between sessions (``framework/node_select.py: _Carry``) are exact: every
entry a session reads from the carry is checked, bit for bit, against the same entry computed afresh on that
session's nodes, through whole simulations with binds, finishes, evictions and node failures."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pyvolcano.api.job_info import JobInfo, TaskInfo
from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.conf.loader import load_conf, load_conf_file
from pyvolcano.framework import node_select
from pyvolcano.framework.node_select import NodeSelector, _Entry
from pyvolcano.framework.session import Session
from pyvolcano.sim.cluster import parse_cluster_spec
from pyvolcano.sim.engine import Simulator
from pyvolcano.sim.workload import synthetic
from tests.confs import conf

ROOT = Path(__file__).resolve().parents[1]
FIELDS = ("static_mask", "static_score", "ok", "score", "fit_idle", "fit_future", "key_idle", "key_future")

#: binpack and nodeorder with other weights, predicates off (nodeorder's requests then stay as the session opened)
WEIGHTED = conf("enqueue, allocate, backfill", """\
    arguments:
      leastrequested.weight: 0
      mostrequested.weight: 2
      balancedresource.weight: 3
  - name: binpack
    arguments:
      binpack.weight: 5
      binpack.cpu: 2
      binpack.resources: nvidia.com/gpu
      binpack.resources.nvidia.com/gpu: 3
""").replace("  - name: predicates\n", "")


def _fresh(sel: NodeSelector, task: TaskInfo, job: JobInfo | None) -> _Entry:
    """The entry computed from scratch on the session's nodes now, nothing carried."""
    other = NodeSelector(sel.ssn, sel.engine)
    other.reset()
    other._carry_open = True  # carry off: computed afresh
    return other.entry(task, job)


@pytest.fixture
def checked(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Check every entry read while carrying against a fresh one; count them."""
    counts: Counter[str] = Counter()
    entry, adopt = NodeSelector.entry, NodeSelector._adopt

    def checked_entry(self: NodeSelector, task: TaskInfo, job: JobInfo | None) -> _Entry:
        e = entry(self, task, job)
        if e.sync:
            f = _fresh(self, task, job)
            for name in FIELDS:
                assert getattr(e, name).tobytes() == getattr(f, name).tobytes(), (name, task.uid)
            assert [(w, r, raw.tobytes()) for w, r, raw in e.norm] == [(w, r, raw.tobytes()) for w, r, raw in f.norm]
            counts["checked"] += 1
        return e

    def counted_adopt(self: NodeSelector, carry: Any, e: _Entry, task: TaskInfo) -> None:
        counts["adopted"] += 1
        counts["stale"] += int(np.count_nonzero(carry.stamp > e.sync))
        adopt(self, carry, e, task)

    monkeypatch.setattr(NodeSelector, "entry", checked_entry)
    monkeypatch.setattr(NodeSelector, "_adopt", counted_adopt)
    return counts


@pytest.mark.parametrize("conf_text", [None, "examples/confs/reclaim-preempt.conf", WEIGHTED,
                                       "benchmarks/confs/resource-strategy-fit.conf"],
                         ids=["default", "reclaim-preempt", "weighted", "resource-strategy-fit"])
def test_carried_entries_equal_fresh_ones(checked: Counter[str], conf_text: str | None) -> None:
    if conf_text is None or conf_text.startswith(("examples/", "benchmarks/")):
        sconf = load_conf_file(str(ROOT / conf_text) if conf_text else None)
    else:
        sconf = load_conf(conf_text, "weighted conf")
    queues = [{"kind": "Queue", "metadata": {"name": q}, "spec": {"weight": w, "reclaimable": True}}
              for q, w in (("a", 1), ("b", 2))]
    wl = synthetic(seed=3, jobs=70, rate=1.0, queues={"a": 1, "b": 2}, gang_sizes=(1, 1, 2, 4), mean_duration=60,
                   gpu_fraction=0.5)
    sim = Simulator(parse_cluster_spec("5x{cpu: 8, memory: 32Gi, nvidia.com/gpu: 2}"), queues, wl, sconf,
                    node_failures=[(20.0, "node-0001", 30.0)])
    sim.run()
    # the check above must have had work: entries carried into later sessions, brought up to date there
    assert checked["adopted"] > 20 and checked["stale"] > 0 and checked["checked"] >= checked["adopted"]


def _cache(objs: list[dict[str, Any]], memo: bool = True) -> SchedulerCache:
    cache = SchedulerCache(memo=memo)
    for o in objs:  # queue and node, then each podgroup before its pod
        cache.upsert(o)
    return cache


def _objs(ports: bool) -> list[dict[str, Any]]:
    node = {"kind": "Node", "metadata": {"name": "n1"},
            "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"}}}
    out: list[dict[str, Any]] = [{"kind": "Queue", "metadata": {"name": "default"}, "spec": {"weight": 1}}, node]
    for i in range(2):
        c: dict[str, Any] = {"name": "c", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}
        if ports:
            c["ports"] = [{"containerPort": 80, "hostPort": 8080 + i}]
        out.append({"kind": "PodGroup", "metadata": {"name": f"g{i}", "namespace": "default"},
                    "spec": {"minMember": 1}, "status": {"phase": "Inqueue"}})
        out.append({"kind": "Pod", "metadata": {"name": f"p{i}", "namespace": "default",
                                                "annotations": {"scheduling.k8s.io/group-name": f"g{i}"}},
                    "spec": {"schedulerName": "volcano", "containers": [c]}, "status": {"phase": "Pending"}})
    return out


@pytest.mark.parametrize("ports", [False, True])
def test_pods_with_host_ports_are_not_carried(ports: bool) -> None:
    """Host ports read the node's pods, not only its amounts: such templates are computed in every session."""
    cache = _cache(_objs(ports))
    ssn = Session(cache.snapshot(), load_conf_file(None)).open()
    job = next(iter(ssn.jobs.values()))
    task = next(iter(job.tasks.values()))
    ssn.selector.select(task, job)
    carry = ssn.selector._carry
    assert carry is not None
    assert (len(carry.entries) == 0) == ports


def test_a_session_used_after_another_synced_computes_its_own() -> None:
    """Two sessions used in turn over one node set: the first one, used again after the second brought the
    carried entries to its own nodes, stops carrying and computes its entries afresh."""
    cache = _cache(_objs(False))
    conf_ = load_conf_file(None)
    one = Session(cache.snapshot(), conf_).open()
    two = Session(cache.snapshot(), conf_).open()
    job = next(iter(one.jobs.values()))
    task = next(iter(job.tasks.values()))
    e1 = one.selector.entry(task, job)
    job2 = two.jobs[job.uid]
    e2 = two.selector.entry(job2.tasks[task.uid], job2)
    assert e1 is e2  # carried from the first session to the second
    assert one.selector.entry(task, job) is not e1 and one.selector._carry is None


def test_full_sessions_do_not_carry() -> None:
    cache = _cache(_objs(False), memo=False)  # --full-sessions
    ssn = Session(cache.snapshot(), load_conf_file(None)).open()
    job = next(iter(ssn.jobs.values()))
    ssn.selector.entry(next(iter(job.tasks.values())), job)
    assert ssn.selector._carry is None and node_select.CARRY_SETS > 0
