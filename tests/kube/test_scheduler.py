"""KubeScheduler against the in-memory API: binds, rollbacks, status write-back, resilience."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator

import pytest

from pyvolcano.kube.client import ApiError
from pyvolcano.kube.leader import LeaderElector
from pyvolcano.kube.resources import EVENT, LEASE, NODE, POD, PODGROUP, PRIORITYCLASS, QUEUE
from pyvolcano.kube.scheduler import ConfFile, KubeScheduler, SchedulerOptions
from tests.confs import PREEMPT_CONF
from tests.kube.fakeapi import FakeApi
from tests.kube.helpers import eventually, node, pod, podgroup, priority_class, queue


class Harness:
    """A scheduler on a fake API whose sessions the test runs one at a time."""

    def __init__(self, api: FakeApi, conf: ConfFile | None = None, **opts) -> None:
        self.api = api
        self.s = KubeScheduler(api, conf or ConfFile(None), SchedulerOptions(period=0.05, **opts))
        assert self.s.start_informers(timeout=5)

    def session(self):
        r = self.s.run_once()
        assert self.s.wait_binds(5)
        self.s.flush(5)
        return r

    def settle(self, what, timeout: float = 5.0) -> None:
        """Wait until the informers delivered what the API holds (pods' nodeName and phase)."""
        eventually(what, timeout)

    def bound(self) -> dict[str, str]:
        return {p["metadata"]["name"]: p["spec"]["nodeName"] for p in self.api.objects(POD)
                if p["spec"].get("nodeName")}

    def cache_sees(self, name: str, ns: str = "ns") -> bool:
        with self.s.lock:
            t = self.s.cache.tasks.get(f"{ns}/{name}")
            return t is not None and bool(t.pod["spec"].get("nodeName"))

    def stop(self) -> None:
        self.s.stop()


@pytest.fixture
def api() -> FakeApi:
    a = FakeApi()
    a.create(QUEUE, queue("default"))
    return a


@pytest.fixture
def harness(api: FakeApi) -> Iterator[Harness]:
    hs: list[Harness] = []

    def make(**kw) -> Harness:
        h = Harness(api, **kw)
        hs.append(h)
        return h

    yield make  # type: ignore[misc]
    for h in hs:
        h.stop()


def gang(api: FakeApi, name: str, n: int, min_member: int, cpu: str = "1", ns: str = "ns", **pg) -> None:
    api.create(PODGROUP, podgroup(name, ns, min_member, **pg))
    for i in range(n):
        api.create(POD, pod(f"{name}-{i}", name, ns, cpu=cpu))


def test_gang_is_all_or_nothing_then_binds_when_it_fits(api: FakeApi, harness) -> None:
    api.create(NODE, node("n1", cpu="2"))
    gang(api, "g", 3, 3)
    h = harness()
    r = h.session()
    assert r.binds == {} and h.bound() == {}
    assert api.count("bind") == 0
    pg = api.obj(PODGROUP, "g", "ns")
    assert pg["status"]["phase"] in ("Pending", "Inqueue")
    cond = {c["type"]: c for c in pg["status"]["conditions"]}["Unschedulable"]
    assert cond["status"] == "True" and "3/3 tasks in gang unschedulable" in cond["message"]
    # every pending pod tells autoscalers why (PodScheduled=False/Unschedulable) and gets a FailedScheduling event
    for p in api.objects(POD):
        c = {c["type"]: c for c in p["status"]["conditions"]}["PodScheduled"]
        assert c["status"] == "False" and c["reason"] == "Unschedulable" and c["message"]
    reasons = [e["reason"] for e in api.objects(EVENT, "ns")]
    assert reasons.count("FailedScheduling") == 3 and "Unschedulable" in reasons

    api.create(NODE, node("n2", cpu="2"))
    h.settle(lambda: "n2" in h.s.cache.nodes)
    r = h.session()
    assert len(r.binds) == 3 and len(h.bound()) == 3
    assert api.count("bind") == 3
    h.settle(lambda: all(h.cache_sees(f"g-{i}") for i in range(3)))
    h.session()
    pg = api.obj(PODGROUP, "g", "ns")
    assert pg["status"]["phase"] == "Running"
    assert {c["type"] for c in pg["status"]["conditions"]} == {"Unschedulable", "Scheduled"}
    msgs = [e["message"] for e in api.objects(EVENT, "ns") if e["reason"] == "Scheduled"]
    assert "Successfully assigned ns/g-0 to n1" in msgs or "Successfully assigned ns/g-0 to n2" in msgs
    assert api.count("bind") == 3  # nothing bound twice


def test_status_writes_only_when_something_changed(api: FakeApi, harness) -> None:
    api.create(NODE, node("n1", cpu="1"))
    gang(api, "g", 2, 2)
    h = harness()
    h.session()
    h.settle(lambda: h.s.pg_sent == {} and all(
        "PodScheduled" in str(t.pod.get("status")) for t in h.s.cache.tasks.values()))
    writes = api.count("patch")
    events = len(api.objects(EVENT, "ns"))
    for _ in range(3):
        h.session()
    assert api.count("patch") == writes
    assert len(api.objects(EVENT, "ns")) == events


def test_a_quiet_running_gang_is_rewritten_when_its_status_or_pods_change(api: FakeApi, harness) -> None:
    # sessions skip PodGroups with nothing to write; a status changed by someone else, or a pod that finished,
    # must still be written back
    api.create(NODE, node("n1", cpu="4"))
    gang(api, "g", 2, 2)
    h = harness()
    h.session()
    api.run_bound_pods()
    h.settle(lambda: all(t.status.name == "Running" for t in h.s.cache.tasks.values()))

    def status() -> dict:
        return api.obj(PODGROUP, "g", "ns").get("status") or {}

    def until_quiet() -> None:
        def step() -> bool:
            h.session()
            return h.s.pg_sent == {} and "ns/g" in h.s.pg_quiet
        eventually(step, what="the PodGroup to go quiet")
        patches = api.count("patch")
        h.session()
        assert api.count("patch") == patches and "ns/g" in h.s.pg_quiet  # quiet: nothing computed or written

    until_quiet()
    assert status()["phase"] == "Running"
    api.patch(PODGROUP, "g", {"status": {"phase": "Pending"}}, "ns")  # somebody else's write
    h.settle(lambda: (h.s.cache.podgroups["ns/g"].manifest.get("status") or {}).get("phase") == "Pending")
    h.session()
    eventually(lambda: status()["phase"] == "Running", what="the phase written back")
    until_quiet()
    api.patch(POD, "g-0", {"status": {"phase": "Succeeded"}}, "ns", subresource="status")
    h.settle(lambda: h.s.cache.tasks["ns/g-0"].status.name == "Succeeded")
    h.session()
    eventually(lambda: status().get("succeeded") == 1 and status().get("running") == 1, what="the counts")


def test_queue_status_allocated_is_written(api: FakeApi, harness) -> None:
    api.create(NODE, node("n1", cpu="8"))
    gang(api, "g", 2, 2, cpu="1500m")
    h = harness()
    h.session()
    eventually(lambda: (api.obj(QUEUE, "default").get("status") or {}).get("allocated", {}).get("cpu") == "3")
    assert api.obj(QUEUE, "default")["status"]["allocated"]["memory"] == str(2 * 2**30)


def test_conflict_on_bind_rolls_back_and_the_pod_is_never_bound_twice(api: FakeApi, harness) -> None:
    api.create(NODE, node("n1", cpu="4"))
    api.create(NODE, node("n2", cpu="4"))
    gang(api, "g", 2, 1)
    state = {"done": False}

    def another_scheduler_got_there_first(res, ns, name) -> bool:
        if name == "g-0" and not state["done"]:
            state["done"] = True
            api.bind(ns, name, api.obj(POD, name, ns)["metadata"]["uid"], "n2")
            return True
        return False

    api.fail("bind", ApiError(409, "Conflict", "pod g-0 is already assigned to node n2"),
             when=another_scheduler_got_there_first)
    h = harness()
    h.session()
    assert h.s.stats["bind_errors"] == 1
    assert h.bound()["g-0"] == "n2"
    h.settle(lambda: h.cache_sees("g-0") and h.cache_sees("g-1"))
    with h.s.lock:
        assert h.s.cache.tasks["ns/g-0"].node_name == "n2"
        assert not h.s.assumed
    h.session()
    ours = [c for c in api.calls if c[0] == "bind"]
    assert [c[3] for c in ours].count("g-1") == 1


def test_transient_bind_failure_is_retried_next_session(api: FakeApi, harness) -> None:
    api.create(NODE, node("n1"))
    gang(api, "g", 1, 1)
    api.fail("bind", ApiError(500, "InternalError", "etcd leader changed"))
    h = harness()
    h.session()
    assert h.bound() == {}
    with h.s.lock:
        assert h.s.cache.tasks["ns/g-0"].status.name == "Pending"  # rolled back, not stuck in Binding
    h.session()
    assert h.bound() == {"g-0": "n1"}


def test_pod_deleted_between_session_and_bind(api: FakeApi, harness) -> None:
    api.create(NODE, node("n1"))
    gang(api, "g", 2, 1)

    def deleted_meanwhile(res, ns, name) -> bool:
        if name == "g-0" and api.obj(POD, "g-0", "ns"):
            api.delete(POD, "g-0", "ns")
        return False

    api.fail("bind", ApiError(0, "unused"), times=1, when=deleted_meanwhile)
    h = harness()
    h.session()
    assert h.bound() == {"g-1": "n1"}
    assert h.s.stats["bind_errors"] == 1
    h.settle(lambda: "ns/g-0" not in h.s.cache.tasks)
    h.session()
    assert api.count("bind") == 2


def test_recreated_pod_with_same_name_is_not_bound_on_a_stale_decision(api: FakeApi, harness) -> None:
    api.create(NODE, node("n1"))
    gang(api, "g", 1, 1)

    def recreated(res, ns, name) -> bool:
        old = api.obj(POD, name, ns)
        if old and not old["metadata"].get("labels"):
            api.delete(POD, name, ns)
            p = pod(name, "g")
            p["metadata"]["labels"] = {"generation": "2"}
            api.create(POD, p)
        return False

    api.fail("bind", ApiError(0, "unused"), times=1, when=recreated)
    h = harness()
    h.session()
    assert h.bound() == {}  # the uid precondition refused the stale bind
    h.settle(lambda: (h.s.cache.tasks.get("ns/g-0") or h).pod.get("metadata", {}).get("labels"))
    h.session()
    assert h.bound() == {"g-0": "n1"}


def test_a_late_deletion_of_a_recreated_pods_predecessor_leaves_the_new_pod_in_the_cache(api: FakeApi) -> None:
    """The cause of a rare failure of the test above: a bind's 409 reads the re-created pod at once, ahead of the
    pod watch, whose ``DELETED`` of the old pod may come after it.  That deletion must not drop the new pod (of
    another uid) from the cache, or the next session finds nothing to bind until the watch's ``ADDED`` arrives.
    The informer events are fed here by hand, in that order, so the interleaving is the one that failed."""
    s = KubeScheduler(api, ConfFile(None), SchedulerOptions())
    for res, obj in ((NODE, node("n1")), (PODGROUP, podgroup("g", "ns", 1))):
        s.on_event("ADDED", api.create(res, obj))
    s.on_event("ADDED", api.obj(QUEUE, "default") or api.create(QUEUE, queue("default")))
    old = api.create(POD, pod("g-0", "g"))
    s.on_event("ADDED", old)
    api.delete(POD, "g-0", "ns")
    new = api.create(POD, pod("g-0", "g"))
    assert new["metadata"]["uid"] != old["metadata"]["uid"]
    s.on_event("MODIFIED", new)  # the direct read after the 409
    s.on_event("DELETED", old)  # the watch's late deletion of the predecessor
    assert s.cache.tasks["ns/g-0"].pod["metadata"]["uid"] == new["metadata"]["uid"]
    s.on_event("DELETED", new)  # a deletion of the cached pod itself still removes it
    assert "ns/g-0" not in s.cache.tasks
    s.on_event("ADDED", new)
    try:
        assert s.run_once().binds == {"ns/g-0": "n1"}
        assert s.wait_binds(5)
    finally:
        s.stop()
    assert (api.obj(POD, "g-0", "ns") or {})["spec"].get("nodeName") == "n1"


def test_binds_in_flight_are_not_repeated_by_the_next_session(api: FakeApi, harness) -> None:
    api.create(NODE, node("n1", cpu="8"))
    gang(api, "g", 4, 4)
    api.bind_delay = 0.3
    h = harness()
    h.s.run_once()
    second = h.s.run_once()  # runs while the first session's binds are still on their way
    assert second.binds == {}
    assert h.s.wait_binds(5)
    assert api.count("bind") == 4 and len(h.bound()) == 4


def test_binds_do_not_hold_up_the_next_session(api: FakeApi, harness) -> None:
    api.create(NODE, node("n1", cpu="8"))
    gang(api, "g", 2, 2)
    api.bind_delay = 1.0
    h = harness()
    h.s.run_once()
    assert h.s._inflight == 2  # run_once returned with both binds still in flight
    assert h.s.wait_binds(5)


def _reuse_run(reuse: bool) -> tuple[dict[str, str], list[str], int]:
    """Sessions with informer changes between them; returns what was bound, the PodGroup phases, clones reused."""
    api = FakeApi()
    api.create(QUEUE, queue("default"))
    for n in ("n1", "n2"):
        api.create(NODE, node(n, cpu="4"))
    gang(api, "a", 3, 3)
    h = Harness(api, reuse_clones=reuse)
    try:
        h.session()
        h.settle(lambda: all(h.cache_sees(f"a-{i}") for i in range(3)))
        h.session()
        h.session()  # a is unchanged since the last session: its clone can be handed on
        gang(api, "b", 6, 6)  # 5 CPUs free: does not fit
        h.settle(lambda: len(h.s.cache.tasks) == 9)
        h.session()
        h.session()
        assert not any(p.startswith("b-") for p in h.bound())
        # a changes under an otherwise reusable clone: the next session must see it
        api.delete(POD, "a-0", "ns", grace_period=0)
        h.settle(lambda: "ns/a-0" not in h.s.cache.tasks)
        h.session()
        h.settle(lambda: all(h.cache_sees(f"b-{i}") for i in range(6)))
        h.session()
        phases = [api.obj(PODGROUP, g, "ns")["status"]["phase"] for g in ("a", "b")]
        return h.bound(), phases, h.s.cache.reused
    finally:
        h.stop()


def test_reusing_unchanged_job_clones_changes_no_decision() -> None:
    # Kubernetes mode hands unchanged jobs' clones to the next session, as the simulator does; a pod deleted
    # from a job whose clone was reusable must still free its CPU, and every decision must match fresh clones.
    with_reuse, without = _reuse_run(True), _reuse_run(False)
    assert with_reuse[:2] == without[:2]
    assert set(with_reuse[0]) == {"a-1", "a-2"} | {f"b-{i}" for i in range(6)}
    assert with_reuse[2] > 0 and without[2] == 0


def test_restart_mid_gang_resumes_in_the_first_session(api: FakeApi, harness) -> None:
    api.create(NODE, node("n1", cpu="4"))
    api.create(PODGROUP, {**podgroup("g", "ns", 3), "status": {"phase": "Inqueue"}})
    for i in range(2):  # the previous scheduler bound two of three before it died
        api.create(POD, pod(f"g-{i}", "g", node_name="n1", phase="Running"))
    api.create(POD, pod("g-2", "g"))
    h = harness()
    r = h.session()
    assert r.binds == {"ns/g-2": "n1"}
    assert api.count("bind") == 1


def test_dropped_watches_and_server_outage_lose_nothing(api: FakeApi, harness) -> None:
    api.create(NODE, node("n1", cpu="8"))
    h = harness()
    h.session()
    api.drop_watches()
    gang(api, "a", 1, 1)
    h.settle(lambda: "ns/a-0" in h.s.cache.tasks and "ns/a" in h.s.cache.podgroups)
    h.session()
    assert h.bound() == {"a-0": "n1"}

    api.set_down(True)
    r = h.session()  # sessions keep running on the cache; nothing to do
    assert r.binds == {}
    api.set_down(False)
    gang(api, "b", 2, 2)
    api.delete(POD, "a-0", "ns", grace_period=0)
    h.settle(lambda: "ns/b-1" in h.s.cache.tasks and "ns/b" in h.s.cache.podgroups
             and "ns/a-0" not in h.s.cache.tasks)
    api.set_down(True)
    h.session()  # binds fail while the server is away, and are rolled back
    assert h.s.stats["bind_errors"] == 2
    api.set_down(False)
    h.session()
    assert h.bound() == {"b-0": "n1", "b-1": "n1"}


def test_high_priority_job_preempts_low_priority_pods(api: FakeApi, harness, tmp_path) -> None:
    conf = tmp_path / "conf.yaml"
    conf.write_text(PREEMPT_CONF)
    api.create(PRIORITYCLASS, priority_class("high", 1000))
    api.create(PRIORITYCLASS, priority_class("low", 1))
    api.create(NODE, node("n1", cpu="2"))
    api.create(PODGROUP, podgroup("low", "ns", 1, priority_class="low"))
    for i in range(2):
        api.create(POD, pod(f"low-{i}", "low", node_name="n1", phase="Running", priority=1))
    api.create(PODGROUP, podgroup("high", "ns", 1, priority_class="high"))
    api.create(POD, pod("high-0", "high", priority=1000))
    h = harness(conf=ConfFile(str(conf)))
    r = h.session()
    assert [e.task.uid for e in r.evictions]
    assert api.count("evict") >= 1
    assert any(p["metadata"].get("deletionTimestamp") for p in api.objects(POD))
    api.run_bound_pods()  # the kubelet finishes terminating the victim
    for _ in range(4):
        h.settle(lambda: len(h.s.cache.tasks) < 3)
        h.session()
        if "high-0" in h.bound():
            break
    assert h.bound()["high-0"] == "n1"


def test_preemptor_is_nominated_then_waits_on_its_node(api: FakeApi, harness, tmp_path) -> None:
    """A pod pipelined after evictions gets ``status.nominatedNodeName`` (Volcano's ``taskUnschedulable``), one
    pod status patch; the next session, its victim still terminating, allocate takes the nominated node first and
    pipelines it there again (although another node has emptied meanwhile), without writing the node again."""
    conf = tmp_path / "conf.yaml"
    conf.write_text(PREEMPT_CONF)
    api.create(PRIORITYCLASS, priority_class("high", 1000))
    api.create(PRIORITYCLASS, priority_class("low", 1))
    api.create(NODE, node("n1", cpu="2"))
    api.create(NODE, node("n2", cpu="2"))
    api.create(PODGROUP, podgroup("low", "ns", 1, priority_class="low"))
    for i, n in enumerate(("n1", "n1", "n2", "n2")):
        api.create(POD, pod(f"low-{i}", "low", node_name=n, phase="Running", priority=1))
    api.create(PODGROUP, podgroup("high", "ns", 1, priority_class="high"))
    api.create(POD, pod("high-0", "high", priority=1000))
    h = harness(conf=ConfFile(str(conf)))
    r = h.session()
    assert len(r.evictions) == 1 and r.nominated == r.pipelined
    (node_name,) = r.nominated.values()
    assert api.obj(POD, "high-0", "ns")["status"]["nominatedNodeName"] == node_name
    patches = [c for c in api.calls if c[0] == "patch" and c[3] == "high-0"]
    assert len(patches) == 1
    other = "n2" if node_name == "n1" else "n1"
    for p in api.objects(POD, "ns"):  # the other node empties: the pod could now run there at once
        if p["spec"].get("nodeName") == other:
            api.delete(POD, p["metadata"]["name"], "ns", grace_period=0)
    h.settle(lambda: h.s.cache.tasks["ns/high-0"].nominated_node == node_name and len(h.s.cache.tasks) == 3)
    r2 = h.session()  # the victim is still terminating: only future idle room on the nominated node
    assert r2.binds == {} and r2.evictions == [] and r2.nominated == {}
    assert r2.pipelined == {"ns/high-0": node_name}
    assert [c for c in api.calls if c[0] == "patch" and c[3] == "high-0"] == patches


def test_only_the_leader_schedules(api: FakeApi) -> None:

    api.create(NODE, node("n1"))
    gang(api, "g", 1, 1)
    other = LeaderElector(api, "kube-system", "vc-scheduler", "other", lease_duration=30, renew_deadline=20,
                          retry_period=0.05)
    assert other.try_acquire_or_renew()
    mine = LeaderElector(api, "kube-system", "vc-scheduler", "me", lease_duration=30, renew_deadline=20,
                         retry_period=0.05)
    s = KubeScheduler(api, ConfFile(None), SchedulerOptions(period=0.02), elector=mine)
    stop = threading.Event()
    t = threading.Thread(target=s.run, args=(stop,))
    t.start()
    try:
        eventually(lambda: s.stats["sessions"] == 0 and all(r.synced.is_set() for r in s.reflectors))
        eventually(lambda: api.count("get") >= 3, what="the standby to poll the lease")
        assert s.stats["sessions"] == 0 and api.count("bind") == 0
        other.release()  # a clean shutdown of the leader hands over at once
        eventually(lambda: api.obj(POD, "g-0", "ns")["spec"].get("nodeName") == "n1", what="the new leader to bind")
        assert mine.is_leader
    finally:
        stop.set()
        t.join(5)
        s.stop()
    lease = api.obj(LEASE, "vc-scheduler", "kube-system")
    assert lease["spec"]["holderIdentity"] == ""  # released on stop


@pytest.mark.parametrize("stream", [True, False])
def test_binds_start_while_the_session_that_decided_them_runs(api: FakeApi, harness, monkeypatch,
                                                              stream: bool) -> None:
    """Volcano's binder starts on each ``cache.AddBindTask``, during the session: so do ours
    (``SchedulerOptions.stream_binds``), and applying the session's result does not bind them again."""
    from pyvolcano.framework.session import Session

    api.create(NODE, node("n1", cpu="8"))
    for g in ("a", "b", "c"):
        gang(api, g, 1, 1)
    first_bind = threading.Event()
    bind = api.bind

    def bind_and_tell(*a, **kw) -> None:
        bind(*a, **kw)
        first_bind.set()

    monkeypatch.setattr(api, "bind", bind_and_tell)
    seen_before_close: list[bool] = []
    close = Session.close

    def close_after_a_bind(self: Session):
        seen_before_close.append(first_bind.wait(2.0 if stream else 0.3))
        return close(self)

    monkeypatch.setattr(Session, "close", close_after_a_bind)
    h = harness(stream_binds=stream)
    r = h.session()
    assert seen_before_close == [stream]
    assert len(r.binds) == 3
    assert h.s.wait_binds(5) and api.count("bind") == 3 and len(h.bound()) == 3
    assert not h.s.binder.streamed
    assert h.s.run_once().binds == {}  # nothing decided twice


def test_a_bind_the_informers_never_confirm_is_dropped_after_the_ttl_and_young_ones_stay(api: FakeApi,
                                                                                          harness) -> None:
    """``Binder.expire_assumed`` walks the assumed binds oldest first and stops at the first young one."""
    import time

    from pyvolcano.kube.binder import Assumed

    h = harness()
    now = time.monotonic()
    with h.s.lock:
        h.s.binder.assumed.update({"ns/old-1": Assumed("n1", "u1", now - 700), "ns/old-2": Assumed("n1", "u2", now - 650),
                                   "ns/young": Assumed("n1", "u3", now - 10)})
        h.s.binder.expire_assumed(600)
        assert list(h.s.binder.assumed) == ["ns/young"]


def _event_counts(api: FakeApi) -> Counter[tuple[str, str, str]]:
    """(involved kind, name, reason) of every Event in ``ns``."""
    return Counter((e["involvedObject"]["kind"], e["involvedObject"]["name"], e["reason"])
                   for e in api.objects(EVENT, "ns"))


@pytest.mark.parametrize("every_group", [False, True])
def test_one_event_per_pod_for_one_pod_groups(api: FakeApi, harness, every_group: bool) -> None:
    """A one-pod PodGroup ready at its first try gets no "pod group is ready" Event by default (its pod's
    Scheduled Event says it: one Event per pod, as kube-scheduler); a gang, and a one-pod group that was
    Unschedulable first, get Volcano's ready Event; ``one_pod_ready_events`` gives it to every group."""
    api.create(NODE, node("n1", cpu="4"))
    for g in ("a", "b"):
        gang(api, g, 1, 1)
    gang(api, "g", 2, 2)
    gang(api, "big", 1, 1, cpu="8")  # fits nowhere until n2 comes
    h = harness(one_pod_ready_events=every_group)
    h.session()
    h.settle(lambda: all(h.cache_sees(p) for p in ("a-0", "b-0", "g-0", "g-1")))
    h.session()
    api.create(NODE, node("n2", cpu="16"))
    h.settle(lambda: "n2" in h.s.cache.nodes)
    h.session()
    h.settle(lambda: h.cache_sees("big-0"))
    h.session()
    assert all(api.obj(PODGROUP, g, "ns")["status"]["phase"] == "Running" for g in ("a", "b", "g", "big"))
    a = api.obj(PODGROUP, "a", "ns")["status"]
    assert [c["type"] for c in a["conditions"]] == ["Scheduled"]  # what `kubectl describe podgroup` still shows
    ev = _event_counts(api)
    pods = ("a-0", "b-0", "g-0", "g-1", "big-0")
    assert all(ev[("Pod", p, "Scheduled")] == 1 for p in pods)
    ready = {name for kind, name, reason in ev if kind == "PodGroup" and reason == "Scheduled"}
    assert ready == ({"a", "b", "g", "big"} if every_group else {"g", "big"})
    assert ev[("PodGroup", "big", "Unschedulable")] == 1
    # one-pod groups ready at once cost one Event each; the gang one per pod and one for the group
    assert sum(v for (kind, name, _), v in ev.items() if name in ("a", "b", "a-0", "b-0")) == (4 if every_group else 2)


def test_binds_first_events_and_status_wait_for_the_binds_in_flight(api: FakeApi, harness) -> None:
    """While a bind is in flight, the Scheduled Event of a pod already bound and the PodGroup status writes wait
    (``write_defer``, kube/writer.py); once the binds are done they all go out, after every bind."""
    api.create(NODE, node("n1", cpu="8"))
    for g in ("a", "b", "c"):
        gang(api, g, 1, 1)
    dispatched = threading.Event()  # no bind goes out before the session has dispatched all three ...
    gate = threading.Event()  # ... and the last one hangs until the test lets it go
    real_bind = api.bind

    def bind(namespace: str, name: str, uid: str, node: str) -> None:
        assert dispatched.wait(30)
        if name == "c-0":
            assert gate.wait(30)
        real_bind(namespace, name, uid, node)

    api.bind = bind  # type: ignore[method-assign]
    h = harness(write_defer=30.0)
    waiting: list[str] = []
    for w in (h.s.events, h.s.writer):
        def defer(seconds: float, w=w) -> object:
            waiting.append(w.name)
            return h.s.binder.wait(seconds)
        w.defer_to = defer
    start = len(api.calls)

    def ops() -> list[str]:
        return [c[0] for c in api.calls[start:] if c[0] in ("bind", "create", "patch")]

    h.s.run_once()
    assert h.s._inflight == 3
    dispatched.set()
    eventually(lambda: api.count("bind") == 2 and h.s._inflight == 1 and h.s.recorder.emitted >= 2 and
               {"events", "status"} <= set(waiting), 20)
    # a-0 and b-0 are bound and their Events queued; the writers are held by c-0's bind
    assert len(h.bound()) == 2
    assert ops() == ["bind", "bind"]  # no Event, no status yet
    gate.set()
    assert h.s.wait_binds(5) and h.s.flush(10)
    done = ops()
    assert done.count("bind") == 3 and done.count("create") == 3  # an Event per pod ...
    assert done.count("patch") >= 3  # ... and every group's status
    assert done[:3] == ["bind", "bind", "bind"]


def test_binds_first_is_off_with_write_defer_0(api: FakeApi, harness) -> None:
    api.create(NODE, node("n1", cpu="8"))
    gang(api, "a", 1, 1)
    h = harness(write_defer=0.0)
    assert h.s.events.defer_to is None and h.s.writer.defer_to is None
    start = len(api.calls)
    h.session()
    ops = [c[0] for c in api.calls[start:]]
    assert ops.count("bind") == 1 and ops.count("create") == 1


def test_a_bind_echo_is_taken_without_converting_the_pod_again(api: FakeApi, harness, monkeypatch) -> None:
    """The pod update that only shows our own bind (node, PodScheduled condition, resourceVersion) updates the
    cached object in place as a trusted write (``EventHandlers._bind_echo``): not validated, not converted; an
    update that changes anything else on top goes through the validated path."""
    from pyvolcano.api import models

    api.create(NODE, node("n1", cpu="8"))
    gang(api, "a", 1, 1)
    gang(api, "b", 1, 1)
    h = harness()
    with h.s.lock:
        before = {k: h.s.cache.raw[("Pod", k)] for k in ("ns/a-0", "ns/b-0")}
    validated: list[str] = []
    real = models.validate

    def counting(obj) -> None:
        validated.append(obj["metadata"]["name"])
        real(obj)

    monkeypatch.setattr(models, "validate", counting)
    # b-0's update carries a new label besides the bind: not an echo of the bind alone
    real_bind = api.bind

    def bind(namespace: str, name: str, uid: str, node: str) -> None:
        real_bind(namespace, name, uid, node)
        if name == "b-0":
            api.patch(POD, name, {"metadata": {"labels": {"x": "1"}}}, namespace)

    api.bind = bind  # type: ignore[method-assign]
    h.session()

    def labelled() -> bool:
        # the bind and the label arrive as two watch events; wait for the second as well
        with h.s.lock:
            return h.s.cache.raw[("Pod", "ns/b-0")]["metadata"].get("labels") == {"x": "1"}

    h.settle(lambda: h.cache_sees("a-0") and h.cache_sees("b-0") and labelled() and not h.s.assumed)
    with h.s.lock:
        a, b = h.s.cache.raw[("Pod", "ns/a-0")], h.s.cache.raw[("Pod", "ns/b-0")]
        ta = h.s.cache.tasks["ns/a-0"]
        assert a is before["ns/a-0"] and a["spec"]["nodeName"] == "n1" and ta.node_name == "n1"
        assert a["metadata"]["resourceVersion"] == api.obj(POD, "a-0", "ns")["metadata"]["resourceVersion"]
        assert ta.status.name == "Bound" and ta.pod is a
        assert b is not before["ns/b-0"] and b["metadata"]["labels"] == {"x": "1"}
        assert h.s.cache.tasks["ns/b-0"].node_name == "n1"
    assert "a-0" not in validated and "b-0" in validated


DEVICESHARE_CONF = """\
actions: "enqueue, allocate"
tiers:
- plugins:
  - name: gang
- plugins:
  - name: predicates
  - name: deviceshare
    arguments:
      deviceshare.VGPUEnable: true
"""


def test_the_binding_carries_deviceshares_annotations(api: FakeApi, harness, tmp_path) -> None:
    """The GPUs deviceshare chose reach the pod with its Binding (``volcano.sh/vgpu-ids-new``: what HAMi's device
    plugin reads), and the next session counts them from the bound pod: a second one-share pod waits."""
    conf = tmp_path / "conf.yaml"
    conf.write_text(DEVICESHARE_CONF)
    n = node("n1", cpu="8")
    n["metadata"]["annotations"] = {"volcano.sh/node-vgpu-register": "GPU-0,1,16384,NVIDIA-A100,true,hami-core:"}
    n["status"]["allocatable"].update({"volcano.sh/vgpu-number": "10", "volcano.sh/vgpu-memory": "16384",
                                       "volcano.sh/vgpu-cores": "100"})
    api.create(NODE, n)
    h = harness(conf=ConfFile(str(conf)))
    for name in ("a", "b"):
        api.create(PODGROUP, podgroup(name, "ns", 1))
        p = pod(f"{name}-0", name, "ns")
        lim = {"volcano.sh/vgpu-memory": "1000"}
        p["spec"]["containers"][0]["resources"].setdefault("limits", {}).update(lim)
        p["spec"]["containers"][0]["resources"].setdefault("requests", {}).update(lim)
        api.create(POD, p)
        h.settle(lambda name=name: f"ns/{name}-0" in h.s.cache.tasks)
        if name == "b":  # the bind's echo: the cache's a-0 names its GPU
            h.settle(lambda: "volcano.sh/vgpu-ids-new" in (h.s.cache.tasks["ns/a-0"].pod["metadata"].get("annotations")
                                                          or {}))
        h.session()
    got = api.obj(POD, "a-0", "ns")
    assert got["spec"]["nodeName"] == "n1"
    assert got["metadata"]["annotations"]["volcano.sh/vgpu-ids-new"] == "GPU-0,NVIDIA,1000,0:"
    assert "b-0" not in h.bound()
