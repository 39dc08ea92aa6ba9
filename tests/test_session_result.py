"""SessionResult is the complete record of a session (framework/result.py), and apply() hands it to a
ClusterWriter in Volcano's order; the simulator writes a PodGroup's full status as a cluster does."""

from __future__ import annotations

from typing import Any

from pyvolcano.api.job_info import TaskInfo
from pyvolcano.conf.loader import load_conf_file
from pyvolcano.framework.cycle import cycle_objects
from pyvolcano.framework.result import PodGroupStatus, QueueStatus, SessionResult, apply, podgroup_status_body
from pyvolcano.sim.cluster import parse_cluster_spec
from pyvolcano.sim.engine import Simulator
from pyvolcano.sim.workload import JobSpec, from_specs
from tests.kube.helpers import node, pod, podgroup, queue


def objects() -> list[dict[str, Any]]:
    return [node("n1", cpu="4"), queue("default"),
            podgroup("a", min_member=2), pod("a-0", "a"), pod("a-1", "a"),
            podgroup("b"), pod("b-0", "b", cpu="3"),
            pod("ghost-0", "ghost")]


def run() -> SessionResult:
    result, _ = cycle_objects(objects(), load_conf_file(None))
    return result


def test_the_result_carries_podgroup_pod_and_queue_status() -> None:
    r = run()
    assert sorted(r.binds) == ["ns/a-0", "ns/a-1"]
    a, b = r.podgroups["ns/a"], r.podgroups["ns/b"]
    # a's pods are binding, not yet scheduled: Inqueue, nothing running, nothing pending, no event
    assert (a.phase, a.running, a.succeeded, a.failed, a.pod_conditions, a.event) == ("Inqueue", 0, 0, 0, {}, None)
    assert [c["type"] for c in a.conditions] == ["Scheduled"]
    # b fits no more (3 cpu on a node a holds 2 of 4): one reason, the event, and its pod's condition
    why = r.unschedulable["ns/b"]
    assert b.reason == why and b.event == ("Warning", "Unschedulable", why)
    assert list(b.pod_conditions) == ["ns/b-0"] and b.pod_conditions["ns/b-0"]  # its own fit error
    # the pod whose PodGroup does not exist: skipped, with a reason for its pod
    assert "ns/ghost" in r.skipped and r.skipped_pods == {"ns/ghost-0": r.skipped["ns/ghost"]}
    q = r.queues["default"]
    assert q.allocated == {"cpu": "2", "memory": str(2 * 2**30)}
    assert (q.allocated_tasks, q.pending_tasks, q.inqueue) == (2, 1, 2)
    assert q.fair is not None and q.fair.share > 0  # proportion is in Volcano's default conf
    assert set(r.stats.action_seconds) == {"enqueue", "allocate", "backfill"}
    assert r.stats.rollbacks == 0 and (r.nodes, r.pods) == (1, 3)


class Recorder:
    """A ``ClusterWriter`` that records its calls and settles nothing (it is handed every status)."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.settled: dict[str, PodGroupStatus] = {}
        self.settles_every_status = False
        self.unwritten: set[str] = set()

    def bind(self, task: TaskInfo, node: str) -> None:
        self.calls.append(("bind", task.uid, node))

    def evict(self, task: TaskInfo, reason: str) -> None:
        self.calls.append(("evict", task.uid))

    def update_podgroup_status(self, uid: str, status: PodGroupStatus) -> bool:
        self.calls.append(("podgroup", uid, status.phase))
        return uid != "ns/b"  # as if ns/b had no PodGroup object: its pods get no condition

    def pod_condition(self, pod: str, message: str, nominated: str = "") -> None:
        self.calls.append(("condition", pod))

    def nominate(self, pod: str, node: str) -> None:
        self.calls.append(("nominate", pod, node))

    def update_queue_status(self, status: QueueStatus) -> None:
        self.calls.append(("queue", status.name))

    def event(self, kind: str, key: str, etype: str, reason: str, message: str) -> None:
        self.calls.append(("event", kind, key, reason))


def test_apply_writes_in_volcano_order() -> None:
    rec = Recorder()
    apply(run(), rec)
    kinds = [c[0] for c in rec.calls]
    assert kinds == ["bind", "bind", "podgroup", "podgroup", "event", "queue"]
    assert ("event", "Pod", "ns/ghost-0", "FailedScheduling") in rec.calls


def test_podgroup_status_keeps_an_unchanged_conditions_time() -> None:
    st = PodGroupStatus("Inqueue", [{"type": "Scheduled", "status": "True", "reason": "r", "message": ""}], 1)
    first = podgroup_status_body({}, st, "T1")
    again = podgroup_status_body(first, st, "T2")
    assert again["conditions"][0]["lastTransitionTime"] == "T1"
    assert (again["phase"], again["running"], again["succeeded"], again["failed"]) == ("Inqueue", 1, 0, 0)


def test_the_simulator_writes_the_full_podgroup_status() -> None:
    queues = [{"kind": "Queue", "metadata": {"name": "default"}, "spec": {"weight": 1}}]
    sim = Simulator(parse_cluster_spec("1x{cpu: 4, memory: 16Gi}"), queues,
                    from_specs([JobSpec("a", 0, tasks=2, min_available=2, cpu="1", memory="1Gi", duration=100)]),
                    load_conf_file(None))
    sim.run(until=1.5)
    pg = sim.api.get("PodGroup", "default", "a")
    assert pg is not None
    st = pg["status"]
    assert st["phase"] == "Inqueue" and (st["running"], st["succeeded"], st["failed"]) == (0, 0, 0)
    # t=0: no pods yet (the controller creates them once the PodGroup is Inqueue), so the gang was
    # Unschedulable; t=1: bound, Scheduled.  Conditions merge by type, each with its simulated time.
    assert [(c["type"], c["lastTransitionTime"]) for c in st["conditions"]] == [
        ("Unschedulable", "1970-01-01T00:00:00Z"), ("Scheduled", "1970-01-01T00:00:01Z")]
