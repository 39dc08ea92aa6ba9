"""usage (``pkg/scheduler/plugins/usage``): Volcano's estimator formulas, the shadow load of pods the metrics
cannot show yet (by status and start time), the risk factor, the arguments' ranges and types, and node usage from
the pods' used shares."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.conf.loader import load_conf
from pyvolcano.errors import ConfigError
from pyvolcano.framework.cycle import result_json, run_session
from pyvolcano.framework.session import Session
from pyvolcano.plugins.usage import estimate_pod, pod_limits

T0 = 1_800_000_000.0  # the session clock in these tests


def node(name: str, cpu: str | None = None, mem: str | None = None) -> dict[str, Any]:
    ann = {k: v for k, v in (("usage.pyvolcano.io/cpu", cpu), ("usage.pyvolcano.io/memory", mem)) if v is not None}
    res = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "annotations": ann},
            "status": {"capacity": res, "allocatable": res}}


def pod(name: str, node_name: str = "", cpu: str = "1", started: float | None = None, share: str | None = None,
        limit: str | None = None) -> dict[str, Any]:
    ann = {"scheduling.k8s.io/group-name": "a"}
    if share is not None:
        ann["usage.pyvolcano.io/used-share"] = share
    res: dict[str, Any] = {"requests": {"cpu": cpu, "memory": "1Gi"}}
    if limit:
        res["limits"] = {"cpu": limit}
    spec: dict[str, Any] = {"schedulerName": "volcano", "containers": [{"name": "c", "resources": res}]}
    status: dict[str, Any] = {"phase": "Pending"}
    if node_name:
        spec["nodeName"] = node_name
        status["phase"] = "Running"
        if started is not None:
            status["startTime"] = np.datetime_as_string(np.datetime64(int(started), "s")) + "Z"
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "ns", "annotations": ann},
            "spec": spec, "status": status}


GROUP = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
         "metadata": {"name": "a", "namespace": "ns"}, "spec": {"minMember": 1}, "status": {"phase": "Running"}}


def conf(args: str = "{}") -> str:
    return f'actions: "allocate"\ntiers:\n- plugins:\n  - name: predicates\n  - name: usage\n    arguments: {args}\n'


def session(objects: list[dict[str, Any]], args: str = "{}") -> Session:
    cache = SchedulerCache.from_objects(objects)
    cache.now, cache.has_clock = T0, True
    return Session(cache.snapshot(), load_conf(conf(args))).open()


def scores(ssn: Session, task_name: str = "p") -> dict[str, float]:
    task = next(t for j in ssn.jobs.values() for t in j.tasks.values() if t.name == task_name)
    cand = np.ones(len(ssn.nodes.names), dtype=bool)
    return dict(zip(ssn.nodes.names, ssn.node_scores(task, cand).tolist(), strict=True))


def test_estimator_formulas() -> None:
    assert estimate_pod(1000, 0, 0.7, 0.0, 1.0) == 700  # no limit: the request
    assert estimate_pod(1000, 3000, 0.7, 0.5, 1.0) == 1700  # 700 + 2000 x 0.5
    assert estimate_pod(1000, 3000, 1.0, 1.0, 1.2) == 3000  # clamped at the limit
    assert pod_limits({"spec": {"containers": [{"resources": {"limits": {"cpu": "2"}}}],
                                "initContainers": [{"resources": {"limits": {"cpu": "3", "memory": "1Gi"}}}]}}) \
        == (3000.0, 2.0**30)


def test_shadow_load_of_recent_pods_only() -> None:
    """A pod running for 10s (under the 30s metrics interval) or without a start time adds to the shadow load;
    one running for an hour is in the metrics already."""
    objs = [node("old", "10", "10"), node("new", "10", "10"), node("nostart", "10", "10"), GROUP,
            pod("o", "old", started=T0 - 3600), pod("n", "new", started=T0 - 10), pod("s", "nostart"), pod("p")]
    s = scores(session(objs))
    # old: (0.9 + 0.9) / 2 x 500 = 450; the others: cpu 10% + 700m/4 = 27.5%, mem 10% + 0.7Gi/8Gi = 18.75%
    assert s["old"] == pytest.approx(450.0)
    assert s["new"] == pytest.approx(((1 - 0.275) + (1 - 0.1875)) / 2 * 500)
    assert s["nostart"] == pytest.approx(s["new"])


def test_risk_factor_applies_above_risk_threshold() -> None:
    objs = [node("hot", "70", "70"), GROUP, pod("n", "hot"), pod("p")]
    s = scores(session(objs))
    # load 0.7 >= 0.6: the estimate is 700m x 1.2 = 840m, 0.84Gi
    assert s["hot"] == pytest.approx(((1 - (0.7 + 0.84 / 4)) + (1 - (0.7 + 0.84 / 8))) / 2 * 500)


def test_no_metrics_scores_zero_and_passes() -> None:
    objs = [node("a"), GROUP, pod("p")]
    ssn = session(objs, "{thresholds: {cpu: 0, mem: 0}}")
    assert scores(ssn) == {"a": 0.0}
    assert ssn.feasible_nodes(next(iter(ssn.jobs["ns/a"].tasks.values()))).all()


def test_usage_from_pod_shares_and_thresholds() -> None:
    objs = [node("a"), node("b"), GROUP, pod("x", "a", cpu="3", share="0.9", started=T0 - 3600), pod("p")]
    out = result_json(run_session(_cache(objs), load_conf(conf("{thresholds: {cpu: 60}}"))))
    assert out["binds"] == {"ns/p": "b"}  # a: 3 cpu x 0.9 = 67.5% > 60


def _cache(objs: list[dict[str, Any]]) -> SchedulerCache:
    cache = SchedulerCache.from_objects(objs)
    cache.now, cache.has_clock = T0, True
    return cache


@pytest.mark.parametrize(("args", "msg"), [
    ("{usage.weight: high}", "not an integer"),
    ("{thresholds: 80}", "not a map"),
    ("{thresholds: {cpu: 80.5}}", "thresholds.cpu"),
    ("{estimator: {risk_factor: x}}", "estimator.risk_factor"),
    ("{estimator: {be_cpu: lots}}", "be_cpu"),
])
def test_bad_arguments(args: str, msg: str) -> None:
    with pytest.raises(ConfigError, match=msg):
        session([node("a"), GROUP, pod("p")], args)


def test_out_of_range_keeps_default(caplog: pytest.LogCaptureFixture) -> None:
    objs = [node("a", "50", "50"), GROUP, pod("p")]
    s = scores(session(objs, "{usage.weight: -1, thresholds: {cpu: 120}, estimator: {risk_factor: 0.5}}"))
    assert s["a"] == pytest.approx(((1 - 0.5) + (1 - 0.5)) / 2 * 500)
    assert any("thresholds.cpu = 120" in r.getMessage() for r in caplog.records)
