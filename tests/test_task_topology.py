"""task-topology (``plugins/task_topology.py``): annotations, buckets and scores as Volcano's
``plugins/task-topology`` builds and computes them."""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml

from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.conf.loader import load_conf
from pyvolcano.errors import ConfigError
from pyvolcano.framework.cycle import run_session
from pyvolcano.plugins.task_topology import SELF_ANTI, JobManager, TopologyError, read_topology

PG = "scheduling.volcano.sh/v1beta1"


def _node(name: str, cpu: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
            "status": {"allocatable": {"cpu": cpu, "memory": "16Gi", "pods": "110"}}}


def _pod(name: str, role: str, cpu: str = "1", node: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulerName": "volcano",
                            "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "spec": spec, "status": {"phase": "Running" if node else "Pending"},
            "metadata": {"name": name, "namespace": "ns",
                         "annotations": {"scheduling.k8s.io/group-name": "j", "volcano.sh/task-spec": role}}}


def _objects(ann: dict[str, str], pods: list[dict[str, Any]], nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [*nodes, {"apiVersion": PG, "kind": "PodGroup", "metadata": {"name": "j", "namespace": "ns", "annotations": ann},
                     "spec": {"minMember": 1}, "status": {"phase": "Inqueue"}}, *pods]


def _conf(args: dict[str, Any] | None = None, actions: str = "allocate") -> Any:
    p: dict[str, Any] = {"name": "task-topology", **({"arguments": args} if args else {})}
    return load_conf(yaml.safe_dump({"actions": actions, "tiers": [{"plugins": [p]}]}))


def _job(objects: list[dict[str, Any]]) -> Any:
    return SchedulerCache.from_objects(objects).snapshot().jobs["ns/j"]


def test_read_topology_and_errors() -> None:
    pods = [_pod("a-0", "ps"), _pod("b-0", "worker")]
    job = _job(_objects({"volcano.sh/task-topology-affinity": "ps,worker;worker",
                         "volcano.sh/task-topology-task-order": "worker,ps"}, pods, []))
    topo = read_topology(job)
    assert topo is not None and topo.affinity == [["ps", "worker"], ["worker"]] and topo.order == ["worker", "ps"]
    assert read_topology(_job(_objects({}, pods, []))) is None
    bad = _job(_objects({"volcano.sh/task-topology-anti-affinity": "ps,chief"}, pods, []))
    with pytest.raises(TopologyError, match="anti-affinity: task chief does not exist in job ns/j"):
        read_topology(bad)
    dup = _job(_objects({"volcano.sh/task-topology-task-order": "ps,worker,ps"}, pods, []))
    with pytest.raises(TopologyError, match="task-order: task ps is duplicate"):
        read_topology(dup)


def test_buckets() -> None:
    # ps and worker attract, worker repels itself: two buckets, each with a ps and a worker; the bound worker's
    # node has a bucket of its own, which the pending ps joins (affinity 1 beats the empty bucket's 0)
    pods = [_pod("w-0", "worker"), _pod("w-1", "worker"), _pod("p-0", "ps"), _pod("w-9", "worker", node="n1")]
    job = _job(_objects({"volcano.sh/task-topology-affinity": "ps,worker",
                         "volcano.sh/task-topology-anti-affinity": "worker"}, pods, [_node("n1", "8")]))
    topo = read_topology(job)
    assert topo is not None
    m = JobManager(topo, 1, 3)
    assert m.priority == {"ps": 3, "worker": SELF_ANTI}
    m.build(job, {"n1": 0})
    # order: w-9 (bound) -> bucket 0; w-0, w-1 (self anti-affinity, priority 4) first by name -> new buckets 1, 2
    # (each repels bucket 0's worker); p-0 -> the first bucket with affinity 1
    assert [sorted(t.split("/")[1] for t in m.bucket_of if m.bucket_of[t] == b.index) for b in m.buckets] == [
        ["p-0", "w-9"], ["w-0"], ["w-1"]]
    assert m.max_size == 2 and m.buckets[0].bound == 1 and len(m.buckets[0].tasks) == 1


def test_scores_take_pods_out_until_the_bucket_fits() -> None:
    pods = [_pod("a-0", "ps"), _pod("b-0", "worker"), _pod("b-1", "worker")]
    objects = _objects({"volcano.sh/task-topology-affinity": "ps,worker"}, pods,
                       [_node("big", "3"), _node("mid", "2"), _node("small", "1")])
    result = run_session(SchedulerCache.from_objects(objects), _conf({"task-topology.weight": 2}), explain=5)
    got = {b.node: b.plugins["task-topology"] for b in result.scores["ns/a-0"].best}
    # 3 pending pods: big holds them all (3), mid one out (2), small two out (1); x 2 x 100 / 3
    assert got == pytest.approx({"big": 200.0, "mid": 400 / 3, "small": 200 / 3})


def test_malformed_weight_names_plugin_and_argument() -> None:
    objects = _objects({"volcano.sh/task-topology-affinity": "ps"}, [_pod("a-0", "ps")], [_node("n", "1")])
    with pytest.raises(ConfigError, match=re.escape("plugin task-topology: argument 'task-topology.weight'")):
        run_session(SchedulerCache.from_objects(objects), _conf({"task-topology.weight": "heavy"}))


def test_bad_annotation_is_a_warning_and_the_job_is_scheduled() -> None:
    objects = _objects({"volcano.sh/task-topology-affinity": "ghost"}, [_pod("a-0", "ps")], [_node("n", "1")])
    result = run_session(SchedulerCache.from_objects(objects), _conf())
    assert result.binds == {"ns/a-0": "n"}
    assert result.warnings == ["PodGroup ns/j: metadata.annotations.volcano.sh/task-topology-affinity: task ghost "
                               "does not exist in job ns/j; task-topology ignores the job's annotations"]


def test_bad_annotation_is_a_problem_of_the_simulation_once() -> None:
    """In the simulator the job's annotation reaches its PodGroup (the vcjob controller copies it): the warning is
    listed once among the run's problems, however many sessions see it, and the job runs."""
    from pyvolcano.sim.engine import Simulator
    from pyvolcano.sim.workload import JobSpec, from_specs

    wl = from_specs([JobSpec("j", 0, tasks=2, cpu="1", duration=100), JobSpec("k", 50, tasks=1, cpu="1")])
    wl.jobs[0][1]["metadata"].setdefault("annotations", {})["volcano.sh/task-topology-affinity"] = "worker,ghost"
    queue = [{"kind": "Queue", "metadata": {"name": "default"}, "spec": {"weight": 1}}]
    res = Simulator([_node("n", "4")], queue, wl, _conf(actions="enqueue, allocate"), period=10.0).run(until=500.0)
    bad = [p for p in res.problems if "task-topology-affinity" in p]
    assert len(bad) == 1 and bad[0].startswith("PodGroup default/j: metadata.annotations.") and "ghost" in bad[0]
    assert all(r.finished is not None for r in res.records.values())
