"""tdm (``pkg/scheduler/plugins/tdm/tdm.go``) and the shuffle action on the session's clock: windows follow
``now`` (the simulated time), the evict period is remembered by the cluster between sessions, budgets limit the
victims, bad windows are refused, and a victim evicted as the node's own copy leaves the node's amounts as they
were (Volcano with PANIC_ON_ERROR=false)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from pyvolcano.api.types import TaskStatus
from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.conf.loader import load_conf
from pyvolcano.errors import ConfigError
from pyvolcano.framework.cycle import result_json, run_session
from pyvolcano.plugins.tdm import int_or_percent, parse_window, pod_revocable_zone

HOUR = 3600.0
DAY_2 = 2 * 86400.0  # midnight UTC of the third day of the simulated clock


def node(name: str, zone: str = "") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if zone:
        meta["labels"] = {"volcano.sh/revocable-zone": zone}
    return {"apiVersion": "v1", "kind": "Node", "metadata": meta,
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}


def pod(name: str, group: str, node_name: str = "", preemptable: bool = True) -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulerName": "volcano",
                            "containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}
    if node_name:
        spec["nodeName"] = node_name
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "ns", "annotations": {
                "scheduling.k8s.io/group-name": group, "volcano.sh/preemptable": str(preemptable).lower()}},
            "spec": spec, "status": {"phase": "Running" if node_name else "Pending"}}


def group(name: str, phase: str = "Inqueue", **annotations: str) -> dict[str, Any]:
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "ns", "annotations": annotations},
            "spec": {"minMember": 1}, "status": {"phase": phase}}


def conf(actions: str, window: str = "10:00-21:00", period: str = "") -> str:
    extra = f"\n        tdm.evict.period: {period}" if period else ""
    return (f'actions: "{actions}"\ntiers:\n- plugins:\n  - name: gang\n  - name: predicates\n  - name: tdm\n'
            f'    arguments:\n        tdm.revocable-zone.rz1: "{window}"{extra}\n')


def cache_at(objects: list[dict[str, Any]], now: float) -> SchedulerCache:
    cache = SchedulerCache.from_objects(objects)
    cache.now, cache.has_clock = now, True
    return cache


PLACE = [node("n1", "rz1"), node("n2"), group("a"), pod("a-0", "a")]


@pytest.mark.parametrize(("hour", "where"), [(9.5, "n2"), (10.0, "n1"), (15.0, "n1"), (21.0, "n1"), (21.5, "n2")])
def test_window_follows_session_clock(hour: float, where: str) -> None:
    """10:00-21:00, both ends included (Volcano compares Unix seconds), on the session's day."""
    out = result_json(run_session(cache_at(PLACE, DAY_2 + hour * HOUR), load_conf(conf("allocate"))))
    assert out["binds"] == {"ns/a-0": where}


@pytest.mark.parametrize(("hour", "where"), [(23.0, "n1"), (1.0, "n2"), (12.0, "n2")])
def test_overnight_window_is_open_from_its_start_only(hour: float, where: str) -> None:
    """22:00-02:00 ends the next day; at 01:00 the window of *today* has not begun (Volcano's reading)."""
    out = result_json(run_session(cache_at(PLACE, DAY_2 + hour * HOUR), load_conf(conf("allocate", "22:00-02:00"))))
    assert out["binds"] == {"ns/a-0": where}


def test_closed_zone_reason_in_wide_output() -> None:
    objs = [node("n1", "rz1"), node("n9", "elsewhere"), group("a"), pod("a-0", "a")]
    out = result_json(run_session(cache_at(objs, DAY_2 + 8 * HOUR), load_conf(conf("allocate"))))
    msg = out["unschedulable"]["ns/a"]
    assert "current time beyond revocable zone rz1:10:00-21:00" in msg and "revocable zone elsewhere not support" in msg


def test_pod_without_revocable_zone_is_refused_by_open_zone() -> None:
    objs = [node("n1", "rz1"), group("a"), pod("a-0", "a", preemptable=False)]
    out = result_json(run_session(cache_at(objs, DAY_2 + 12 * HOUR), load_conf(conf("allocate"))))
    assert "not allow to dispatch to revocable node" in out["unschedulable"]["ns/a"]


@pytest.mark.parametrize("window", ["25:00-3:00", "10:00", "10:00-21:0", "10:60-11:00", "a-b", "10:00-11:00-12:00"])
def test_bad_window_is_refused(window: str) -> None:
    with pytest.raises(ConfigError, match=r"tdm\.revocable-zone\.rz1"):
        run_session(cache_at(PLACE, DAY_2), load_conf(conf("allocate", window)))


def test_parse_window_and_helpers() -> None:
    assert parse_window("z", "3:05-4:00") == (3 * HOUR + 300, 4 * HOUR)
    assert parse_window("z", "10:00-10:00") == (10 * HOUR, 34 * HOUR)
    assert int_or_percent("50%", 3) == 2 and int_or_percent("2", 9) == 2 and int_or_percent("x", 9) == 0
    assert pod_revocable_zone({"metadata": {"annotations": {"volcano.sh/revocable-zone": "rz1"}}}) == ""
    assert pod_revocable_zone({"metadata": {"annotations": {"volcano.sh/preemptable": "True"}}}) == "*"


def shuffle_objects(**budget: str) -> list[dict[str, Any]]:
    return [node("n1", "rz1"), node("n2"), group("a", "Running", **budget),
            *(pod(f"a-{i}", "a", node_name="n1") for i in range(4)), pod("a-4", "a", node_name="n2"),
            group("s", "Running"), pod("s-0", "s", node_name="n1", preemptable=False)]


@pytest.mark.parametrize(("budget", "evicted"), [
    ({}, 1),                                              # default budget: one pod per job
    ({"volcano.sh/jdb-min-available": "2"}, 3),           # 5 running - 2
    ({"volcano.sh/jdb-min-available": "9"}, 1),           # fewer running than that: Volcano's default 1
    ({"volcano.sh/jdb-max-unavailable": "40%"}, 2),       # ceil(0.4 x 5) - 0 unavailable
])
def test_shuffle_evicts_per_job_budget_from_closed_zone(budget: dict[str, str], evicted: int) -> None:
    out = result_json(run_session(cache_at(shuffle_objects(**budget), DAY_2 + 8 * HOUR), load_conf(conf("shuffle"))))
    assert len(out["evictions"]) == evicted
    assert set(out["evictions"]) <= {"ns/a-0", "ns/a-1", "ns/a-2", "ns/a-3"}  # not s-0 (not preemptable), not a-4


def test_open_zone_evicts_nothing() -> None:
    out = result_json(run_session(cache_at(shuffle_objects(), DAY_2 + 12 * HOUR), load_conf(conf("shuffle"))))
    assert out["evictions"] == []


def test_evict_period_is_remembered_between_sessions_of_a_cluster() -> None:
    cache = cache_at(shuffle_objects(), DAY_2 + 8 * HOUR)
    c = load_conf(conf("shuffle", period="10m"))
    assert len(run_session(cache, c).evictions) == 1
    cache.now += 300  # 5 minutes later: within the period
    assert run_session(cache, c).evictions == []
    cache.now += 301
    assert len(run_session(cache, c).evictions) == 1


def test_node_copy_eviction_leaves_node_amounts() -> None:
    """Volcano's Session.Evict on the node's own task copy: removed and re-added as Releasing, so the node's
    idle, used and releasing end where they were, while the pod is evicted and its job counts it Releasing."""
    from pyvolcano.framework.session import Session

    cache = cache_at(shuffle_objects(), DAY_2 + 8 * HOUR)
    ssn = Session(cache.snapshot(), load_conf(conf("shuffle"))).open()
    i = ssn.nodes.pos["n1"]
    before = (ssn.nodes.idle[i].copy(), ssn.nodes.used[i].copy(), ssn.nodes.releasing[i].copy())
    from pyvolcano.actions.shuffle import Shuffle
    Shuffle().execute(ssn)
    assert len(ssn.evictions) == 1
    victim = ssn.evictions[0].task
    assert ssn.jobs[victim.job].index[TaskStatus.Releasing] == {victim.uid: victim}
    for a, b in zip(before, (ssn.nodes.idle[i], ssn.nodes.used[i], ssn.nodes.releasing[i]), strict=True):
        assert np.array_equal(a, b)
    ssn.close()
    ssn.release()


def test_job_order_pipelined_and_starving() -> None:
    """Non-preemptable jobs first; a job that is not pipelined is rejected; a non-preemptable job with
    pending pods is starving."""
    from pyvolcano.framework.session import Session

    objs = [node("n2"), group("p", **{"volcano.sh/preemptable": "true"}), pod("p-0", "p"),
            group("q"), pod("q-0", "q", preemptable=False)]
    text = 'actions: "allocate"\ntiers:\n- plugins:\n  - name: tdm\n'
    ssn = Session(cache_at(objs, DAY_2).snapshot(), load_conf(text)).open()
    p, q = ssn.jobs["ns/p"], ssn.jobs["ns/q"]
    assert ssn.job_cmp(q, p) < 0 and ssn.job_cmp(p, q) > 0
    assert not ssn.job_pipelined(p)  # tdm alone: Reject, where no vote at all would permit
    assert ssn.job_starving(q) and not ssn.job_starving(p)
    ssn.close()
    ssn.release()


def test_simulator_windows_follow_simulated_time() -> None:
    """A preemptable job lands on the revocable node while rz1 is open (00:00-00:10 of the simulated day); once the
    zone closes, shuffle evicts one of its pods per evict period (2m): at 720 s and 840 s of simulated time."""
    from pyvolcano.conf.loader import load_conf as load
    from pyvolcano.sim.engine import Simulator
    from pyvolcano.sim.workload import JobSpec, from_specs

    wl = from_specs([JobSpec("batch", 0, tasks=2, min_available=1, cpu="1", memory="1Gi", duration=3000)])
    tmpl = wl.jobs[0][1]["spec"]["tasks"][0]["template"]
    tmpl["metadata"]["annotations"]["volcano.sh/preemptable"] = "true"
    nodes = [node("rev", "rz1"), node("normal")]
    text = ('actions: "enqueue, allocate, shuffle"\ntiers:\n- plugins:\n  - name: gang\n  - name: predicates\n'
            '  - name: tdm\n    arguments:\n      tdm.revocable-zone.rz1: "00:00-00:10"\n      tdm.evict.period: 2m\n')
    queue = [{"kind": "Queue", "metadata": {"name": "default"}, "spec": {"weight": 1}}]
    res = Simulator(nodes, queue, wl, load(text), period=30.0).run(until=1000.0)
    assert [(e.t, e.cause, e.node) for e in res.eviction_log] == [(720.0, "shuffle", "rev"), (840.0, "shuffle", "rev")]
