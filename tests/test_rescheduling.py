"""rescheduling's lowNodeUtilization (``pkg/scheduler/plugins/rescheduling``) with the shuffle action: node usage
from annotations or from the pods' used shares, Volcano's pod order and stop rule, the interval between runs kept
by the cluster, and the arguments refused where Volcano would crash."""

from __future__ import annotations

from typing import Any

import pytest

from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.conf.loader import load_conf
from pyvolcano.errors import ConfigError
from pyvolcano.framework.cycle import result_json, run_session
from pyvolcano.plugins.rescheduling import qos_rank


def node(name: str, cpu: str | None = None, mem: str | None = None, capacity: bool = True,
         unschedulable: bool = False) -> dict[str, Any]:
    ann = {k: v for k, v in (("usage.pyvolcano.io/cpu", cpu), ("usage.pyvolcano.io/memory", mem)) if v is not None}
    res = {"cpu": "10", "memory": "10Gi", "pods": "110"}
    status: dict[str, Any] = {"allocatable": res}
    if capacity:
        status["capacity"] = res
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "annotations": ann},
            "spec": {"unschedulable": unschedulable}, "status": status}


def pod(name: str, node_name: str, priority: int | None = None, share: str | None = None,
        limits: bool = False) -> dict[str, Any]:
    ann = {"scheduling.k8s.io/group-name": "a"}
    if share is not None:
        ann["usage.pyvolcano.io/used-share"] = share
    res: dict[str, Any] = {"requests": {"cpu": "2", "memory": "1Gi"}}
    if limits:
        res["limits"] = {"cpu": "2", "memory": "1Gi"}
    spec: dict[str, Any] = {"schedulerName": "volcano", "nodeName": node_name,
                            "containers": [{"name": "c", "resources": res}]}
    if priority is not None:
        spec["priority"] = priority
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "ns", "annotations": ann},
            "spec": spec, "status": {"phase": "Running"}}


GROUP = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
         "metadata": {"name": "a", "namespace": "ns"}, "spec": {"minMember": 1}, "status": {"phase": "Running"}}


def conf(interval: str = "1ns", params: str = "{thresholds: {cpu: 20, memory: 20}, "
         "targetThresholds: {cpu: 70, memory: 70}}") -> str:
    return ('actions: "shuffle"\ntiers:\n- plugins:\n  - name: rescheduling\n    arguments:\n'
            f'      interval: {interval}\n      metricsPeriod: 10m\n      strategies:\n      - name: lowNodeUtilization\n'
            f'        params: {params}\n')


def evictions(objects: list[dict[str, Any]], text: str) -> list[str]:
    return result_json(run_session(SchedulerCache.from_objects(objects), load_conf(text)))["evictions"]


def test_usage_from_pod_shares() -> None:
    """hot: 4 pods x 2 cpu x 0.95 = 7.6 of 10 cpu (76%) > target 70; cold: no pods with a share, but a pod of
    0.1 share gives it 2%; the first victim brings hot to 56%."""
    objs = [node("hot"), node("cold"), GROUP, *(pod(f"a-{i}", "hot", priority=i, share="0.95") for i in range(4)),
            pod("c-0", "cold", share="0.1")]
    assert evictions(objs, conf()) == ["ns/a-0"]


def test_pod_order_no_priority_then_low_then_qos() -> None:
    objs = [node("hot", "95", "10"), node("cold", "5", "5"), GROUP,
            pod("p5", "hot", priority=5), pod("p1g", "hot", priority=1, limits=True), pod("p1b", "hot", priority=1),
            pod("none", "hot")]
    # 95 -> 75 -> 55 (cpu): two victims, the pod without a priority first, then the Burstable one of priority 1
    assert evictions(objs, conf()) == ["ns/none", "ns/p1b"]


def test_missing_capacity_stops_after_one_victim() -> None:
    """Volcano divides by the node's status.capacity: none gives an infinite share, the node looks drained."""
    objs = [node("hot", "95", "10", capacity=False), node("cold", "5", "5"), GROUP,
            pod("a-0", "hot", priority=1), pod("a-1", "hot", priority=2), pod("a-2", "hot", priority=3)]
    assert evictions(objs, conf()) == ["ns/a-0"]


def test_unschedulable_node_is_not_low() -> None:
    objs = [node("hot", "95", "10"), node("cold", "5", "5", unschedulable=True), node("mid", "50", "50"),
            GROUP, pod("a-0", "hot")]
    assert evictions(objs, conf()) == []  # no low node left


def test_strategy_without_params_names_no_victims() -> None:
    objs = [node("hot", "95", "10"), node("cold", "5", "5"), GROUP, pod("a-0", "hot")]
    text = conf().replace("        params: {thresholds: {cpu: 20, memory: 20}, targetThresholds: {cpu: 70, memory: 70}}\n",
                          "")
    assert "params" not in text
    assert evictions(objs, text) == []
    assert evictions(objs, conf()) == ["ns/a-0"]


def test_interval_is_kept_by_the_cluster() -> None:
    objs = [node("hot", "95", "10"), node("cold", "5", "5"), GROUP, pod("a-0", "hot"), pod("a-1", "hot")]
    cache = SchedulerCache.from_objects(objs)
    cache.now, cache.has_clock = 1000.0, True
    c = load_conf(conf("5m"))
    assert run_session(cache, c).evictions == []  # the scheduler has just started
    cache.now += 299
    assert run_session(cache, c).evictions == []
    cache.now += 2
    assert sorted(e.task.name for e in run_session(cache, c).evictions) == ["a-0", "a-1"]  # 95 -> 75 -> 55
    cache.now += 60
    assert run_session(cache, c).evictions == []  # the next run is 5m after the last


@pytest.mark.parametrize(("params", "msg"), [
    ("{thresholds: {cpu: 20.5}}", "not a whole percentage"),
    ("{thresholds: [20]}", "not a map"),
    ("[1]", "params = \\[1\\] is not a map"),
])
def test_bad_params(params: str, msg: str) -> None:
    with pytest.raises(ConfigError, match=msg):
        evictions([node("n")], conf(params=params))


def test_bad_interval_and_strategies() -> None:
    with pytest.raises(ConfigError, match="interval"):
        evictions([node("n")], conf(interval="soon"))
    text = 'actions: "shuffle"\ntiers:\n- plugins:\n  - name: rescheduling\n    arguments:\n      strategies: x\n'
    with pytest.raises(ConfigError, match="not a list"):
        evictions([node("n")], text)


def test_qos_rank() -> None:
    assert qos_rank({"spec": {"containers": [{"name": "c"}]}}) == 0
    assert qos_rank(pod("x", "n")) == 1 and qos_rank(pod("x", "n", limits=True)) == 2
    assert qos_rank({"status": {"qosClass": "Guaranteed"}}) == 2


def test_default_metrics_period_reads_no_usage() -> None:
    """Volcano fills only the 10m average; rescheduling's default metricsPeriod 5m finds every node at 0%."""
    objs = [node("hot", "95", "10"), node("cold", "5", "5"), GROUP, pod("a-0", "hot")]
    assert evictions(objs, conf()) == ["ns/a-0"]
    assert evictions(objs, conf().replace("      metricsPeriod: 10m\n", "")) == []


def test_simulator_rescheduling_costs_evictions() -> None:
    """In the simulator: binpack fills one node with pods using 90% of their requests (72% cpu, above the 70%
    target) and leaves the other empty (low); every interval (1m of simulated time) shuffle moves pods off it."""
    from pyvolcano.sim.engine import Simulator
    from pyvolcano.sim.workload import JobSpec, from_specs

    wl = from_specs([JobSpec("svc", 0, tasks=4, min_available=1, cpu="2", memory="1Gi", duration=600)])
    wl.jobs[0][1]["spec"]["tasks"][0]["template"]["metadata"]["annotations"]["usage.pyvolcano.io/used-share"] = "0.9"
    text = ('actions: "enqueue, allocate, shuffle"\ntiers:\n- plugins:\n  - name: gang\n  - name: predicates\n'
            '  - name: binpack\n  - name: rescheduling\n    arguments:\n      interval: 1m\n      metricsPeriod: 10m\n'
            '      strategies:\n      - name: lowNodeUtilization\n'
            '        params: {thresholds: {cpu: 20, memory: 20}, targetThresholds: {cpu: 70, memory: 70}}\n')
    queue = [{"kind": "Queue", "metadata": {"name": "default"}, "spec": {"weight": 1}}]
    res = Simulator([node("n1"), node("n2")], queue, wl, load_conf(text), period=10.0).run(until=200.0)
    # one pod a run (72% - 20% per 2-cpu pod is under 70%), which binpack puts back on n1: 60 s, then the first
    # session more than a minute later (130 s), then 200 s
    assert [(e.t, e.cause, e.node) for e in res.eviction_log] == [(60.0, "shuffle", "n1"), (130.0, "shuffle", "n1"),
                                                                  (200.0, "shuffle", "n1")]
