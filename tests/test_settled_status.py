"""Session results written only for jobs whose status can change (issue 15): a job whose session verdict is the
last session's gets the very same ``PodGroupStatus`` object (``Session.close``), and ``framework.result.apply``
does not hand a writer the object it last settled (``ClusterWriter.settled``).  Whole simulations with and
without this are compared by ``tests/sim/test_memo.py`` (``--full-sessions`` builds every status afresh), and each
status against a fresh session's by ``tests/test_carry.py``."""

from __future__ import annotations

from collections import ChainMap
from typing import Any

from pyvolcano.api.job_info import TaskInfo
from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.conf.loader import load_conf_file
from pyvolcano.framework.cycle import run_session
from pyvolcano.framework.result import PodGroupStatus, QueueStatus, SessionResult, apply
from tests.kube.helpers import node, pod, podgroup, queue


class Recorder:
    """A ``ClusterWriter`` that records what it is handed; with ``settle``, it fills ``settled`` as the
    simulator's writer does (every write is synchronous)."""

    def __init__(self, settle: bool, settles_every_status: bool = False) -> None:
        self.written: list[tuple[str, PodGroupStatus]] = []
        self.settle = settle
        self.settled: dict[str, PodGroupStatus] = {}
        self.settles_every_status = settles_every_status
        self.unwritten: set[str] = set()

    def bind(self, task: TaskInfo, node: str) -> None:
        return None

    def evict(self, task: TaskInfo, reason: str) -> None:
        return None

    def update_podgroup_status(self, uid: str, status: PodGroupStatus) -> bool:
        self.written.append((uid, status))
        if self.settle and not status.pod_conditions:
            self.settled[uid] = status
        return True

    def pod_condition(self, pod: str, message: str, nominated: str = "") -> None:
        return None

    def nominate(self, pod: str, node: str) -> None:
        return None

    def update_queue_status(self, status: QueueStatus) -> None:
        return None

    def event(self, kind: str, key: str, etype: str, reason: str, message: str) -> None:
        return None


def _cache(memo: bool = True) -> SchedulerCache:
    cache = SchedulerCache(reuse_clones=True, memo=memo)
    cache.upsert(node("n1", cpu="4"))
    cache.upsert(queue("default"))
    running = podgroup("run", min_member=2)
    running["status"] = {"phase": "Running"}
    cache.upsert(running)
    for i in range(2):
        cache.upsert(pod(f"run-{i}", "run", node_name="n1", phase="Running"))
    waiting = podgroup("wait", min_member=1)
    waiting["status"] = {"phase": "Inqueue"}
    cache.upsert(waiting)
    cache.upsert(pod("wait-0", "wait", cpu="8"))  # fits no node: pending every session
    return cache


def _written(writer: Recorder, result: SessionResult) -> list[str]:
    writer.written.clear()
    apply(result, writer)
    return [uid for uid, _ in writer.written]


def test_an_unchanged_running_gang_is_handed_over_once() -> None:
    cache, conf = _cache(), load_conf_file(None)
    writer = Recorder(settle=True)
    first = run_session(cache, conf)
    assert _written(writer, first) == ["ns/run", "ns/wait"]
    second = run_session(cache, conf)
    assert second.podgroups["ns/run"] is first.podgroups["ns/run"]  # the same verdict: the same object
    # a pending pod with the same inputs (fit error, version, phase): the same object too, but handed over
    # every session (its pod conditions are written again; the Kubernetes writer records its Event)
    assert second.podgroups["ns/wait"] is first.podgroups["ns/wait"]
    assert _written(writer, second) == ["ns/wait"]
    # a pod of the gang finishes: the job's version moves, its status is built and written again
    cache.upsert(pod("run-0", "run", node_name="n1", phase="Succeeded"))
    third = run_session(cache, conf)
    assert third.podgroups["ns/run"] is not second.podgroups["ns/run"]
    assert (third.podgroups["ns/run"].running, third.podgroups["ns/run"].succeeded) == (1, 1)
    assert _written(writer, third) == ["ns/run", "ns/wait"]
    assert _written(writer, run_session(cache, conf)) == ["ns/wait"]


def test_a_phase_set_in_place_is_a_new_verdict() -> None:
    """The Kubernetes mode sets a written phase on the cache's PodGroup without a new job version
    (``SchedulerCache.set_podgroup_phase``): the carried status is keyed by the phase too."""
    cache, conf = _cache(), load_conf_file(None)
    first = run_session(cache, conf)
    pg = cache.podgroups["ns/run"]
    cache.set_podgroup_phase(pg, "Inqueue")  # type: ignore[arg-type]
    second = run_session(cache, conf)
    assert second.podgroups["ns/run"] is not first.podgroups["ns/run"]
    assert second.podgroups["ns/run"].phase == "Running"


def test_writers_that_settle_nothing_and_full_sessions_get_every_status() -> None:
    conf = load_conf_file(None)
    cache = _cache()
    plain = Recorder(settle=False)
    for _ in range(2):
        assert _written(plain, run_session(cache, conf)) == ["ns/run", "ns/wait"]
    full = _cache(memo=False)  # --full-sessions: nothing carried, every status a new object
    writer = Recorder(settle=True)
    a, b = run_session(full, conf), run_session(full, conf)
    assert a.podgroups["ns/run"] is not b.podgroups["ns/run"]
    _written(writer, a)
    assert _written(writer, b) == ["ns/run", "ns/wait"]


def test_a_status_the_writer_did_not_settle_is_handed_over_again() -> None:
    """A write still in flight or failed (the writer drops it from ``settled``) is retried with the same status."""
    cache, conf = _cache(), load_conf_file(None)
    writer = Recorder(settle=True)
    _written(writer, run_session(cache, conf))
    del writer.settled["ns/run"]
    again: Any = run_session(cache, conf)
    assert _written(writer, again) == ["ns/run", "ns/wait"]


def test_a_writer_that_settles_every_status_is_handed_the_changed_and_the_unwritten_carried_ones() -> None:
    """``ClusterWriter.settles_every_status``: of the statuses carried from the last session, ``apply`` hands over
    only those the writer lists as ``unwritten``; a writer that does not settle every status gets every status but
    the very objects it settled."""
    carried = {uid: PodGroupStatus(phase="Running") for uid in ("ns/a", "ns/b", "ns/c")}
    changed = {"ns/d": PodGroupStatus(phase="Inqueue")}
    result = SessionResult(podgroups=ChainMap(changed, carried), carried_podgroups=carried,
                           changed_podgroups=changed)
    sim_like = Recorder(settle=True, settles_every_status=True)
    sim_like.unwritten = {"ns/b", "ns/gone"}
    assert sorted(_written(sim_like, result)) == ["ns/b", "ns/d"]
    kube_like = Recorder(settle=True)
    kube_like.settled["ns/a"] = carried["ns/a"]
    kube_like.settled["ns/d"] = PodGroupStatus(phase="Inqueue")  # an equal status, not the same object
    assert sorted(_written(kube_like, result)) == ["ns/b", "ns/c", "ns/d"]
