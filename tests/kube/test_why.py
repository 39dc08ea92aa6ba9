"""The ``WhyPending`` Event's bookkeeping (``kube/why.py``), without an API server: a PodGroup is searched only
when what its answer depends on changed and has held ``settle`` seconds, a batch at a time within the CPU share,
and told once per change of its text.  The last tests run the real search on a small snapshot."""

from __future__ import annotations

import threading
from collections import ChainMap
from typing import Any

from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.framework.cycle import run_session
from pyvolcano.kube.binder import Assumed
from pyvolcano.kube.why import WHY_PENDING, KubeWhy, WhyLedger, WhyOptions, search
from tests.test_explain import BIG, CONF, GANG, gang, node

SHAPE = (3, b"24")


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def ledger(**opts: Any) -> tuple[WhyLedger, Clock]:
    clock = Clock()
    return WhyLedger(WhyOptions(**{"settle": 3.0, "cpu": 0.1, "jobs": 2, **opts}), clock), clock


def versions(v: dict[str, int]) -> Any:
    return v.get


def test_a_job_is_searched_once_its_key_held_settle_seconds_and_told_once() -> None:
    lg, clock = ledger()
    msgs = {"ns/g": "4/4 tasks in gang unschedulable: ..."}
    lg.observe(msgs, msgs, versions({"ns/g": 7}), SHAPE, CONF)
    assert lg.due() == []  # not settled yet
    clock.t += 3
    batch = lg.due()
    assert [uid for uid, _ in batch] == ["ns/g"] and lg.running
    assert lg.due() == []  # one batch at a time
    assert lg.done(batch, {"ns/g": "3 of 4 placed; fix: minAvailable 3 (from 4)"}, 0.5) == [
        ("ns/g", "3 of 4 placed; fix: minAvailable 3 (from 4)")]
    # the same key in every later session: nothing to search, nothing to tell
    for _ in range(20):
        clock.t += 10
        lg.observe(msgs, msgs, versions({"ns/g": 7}), SHAPE, CONF)
        assert lg.due() == []
    assert not lg.want


def test_a_changed_key_is_searched_again_but_the_same_text_is_not_told_again() -> None:
    lg, clock = ledger(cpu=1.0)
    lg.observe({"ns/g": "m1"}, {"ns/g": "m1"}, versions({"ns/g": 1}), SHAPE, CONF)
    clock.t += 3
    assert lg.done(lg.due(), {"ns/g": "why A"}, 0.1) == [("ns/g", "why A")]
    # the job changed (its version), then Volcano's message, then the nodes: each a new search
    for msg, version, shape in (("m1", 2, SHAPE), ("m2", 2, SHAPE), ("m2", 2, (4, b"32"))):
        lg.observe({"ns/g": msg}, {"ns/g": msg}, versions({"ns/g": version}), shape, CONF)
        assert lg.due() == []  # settling
        clock.t += 3
        batch = lg.due()
        assert [u for u, _ in batch] == ["ns/g"], (msg, version, shape)
        assert lg.done(batch, {"ns/g": "why A"}, 0.1) == []  # the same answer: no second Event
    lg.observe({"ns/g": "m2"}, {"ns/g": "m2"}, versions({"ns/g": 2}), (4, b"32"), CONF)
    clock.t += 3
    assert lg.due() == []  # answered under this very key
    lg.observe({"ns/g": "m3"}, {"ns/g": "m3"}, versions({"ns/g": 2}), (4, b"32"), CONF)
    clock.t += 3
    assert lg.done(lg.due(), {"ns/g": "why B"}, 0.1) == [("ns/g", "why B")]  # a new answer is told


def test_a_key_that_keeps_changing_is_not_searched() -> None:
    """A gang whose pods are still arriving (each moves the job's version): searched only once it holds."""
    lg, clock = ledger()
    for v in range(10):
        lg.observe({"ns/g": "m"}, {"ns/g": "m"}, versions({"ns/g": v}), SHAPE, CONF)
        clock.t += 1
        assert lg.due() == []
    clock.t += 2
    assert [u for u, _ in lg.due()] == ["ns/g"]


def test_batches_are_bounded_and_spaced_by_the_cpu_share() -> None:
    lg, clock = ledger(cpu=0.1, jobs=2)
    msgs = {f"ns/j{i}": "m" for i in range(5)}
    lg.observe(msgs, msgs, versions(dict.fromkeys(msgs, 1)), SHAPE, CONF)
    clock.t += 3
    searched: list[str] = []
    batch = lg.due()
    assert len(batch) == 2  # at most ``jobs`` per batch, the longest-settled first
    searched += [u for u, _ in batch]
    lg.done(batch, {u: "" for u, _ in batch}, 1.0)  # 1 s of search: the next batch 9 s later at most 10 %
    clock.t += 8.9
    assert lg.due() == []
    clock.t += 0.2
    while len(searched) < 5:
        batch = lg.due()
        assert batch, searched
        searched += [u for u, _ in batch]
        lg.done(batch, {u: "" for u, _ in batch}, 0.0)
    assert searched == sorted(msgs)
    assert lg.due() == []  # all answered ("" : nothing to tell), none searched again


def test_a_batch_stopped_part_way_leaves_the_rest_for_later() -> None:
    lg, clock = ledger(cpu=1.0)
    msgs = {"ns/a": "m", "ns/b": "m"}
    lg.observe(msgs, msgs, versions({"ns/a": 1, "ns/b": 1}), SHAPE, CONF)
    clock.t += 3
    batch = lg.due()
    lg.done(batch, {"ns/a": "why a"}, 0.1)  # ns/b not reached
    assert [u for u, _ in lg.due()] == ["ns/b"]


def test_parked_jobs_keep_their_answer_and_gone_jobs_are_forgotten() -> None:
    lg, clock = ledger(cpu=1.0)
    msgs = {"ns/g": "m", "ns/h": "m"}
    lg.observe(msgs, msgs, versions({"ns/g": 1, "ns/h": 1}), SHAPE, CONF)
    clock.t += 3
    assert len(lg.done(lg.due(), {"ns/g": "why g", "ns/h": "why h"}, 0.0)) == 2
    # the next session examined neither (both parked by the memo): they are still waiting, nothing to do
    lg.observe({}, ChainMap({}, msgs), versions({}), SHAPE, CONF)
    assert set(lg.answers) == {"ns/g", "ns/h"} and not lg.want
    # ns/g was scheduled: forgotten; stuck again later with the same text, it is told again
    lg.observe({}, {"ns/h": "m"}, versions({}), SHAPE, CONF)
    assert set(lg.answers) == {"ns/h"} and set(lg.told) == {"ns/h"}
    lg.observe({"ns/g": "m"}, msgs, versions({"ns/g": 5}), SHAPE, CONF)
    clock.t += 3
    assert lg.done(lg.due(), {"ns/g": "why g"}, 0.0) == [("ns/g", "why g")]


def test_an_answer_about_a_state_that_is_gone_is_not_told() -> None:
    """The search runs while sessions go on: a PodGroup scheduled meanwhile gets no Event, and one whose key
    changed meanwhile is searched again rather than told about its old state."""
    lg, clock = ledger(cpu=1.0)
    msgs = {"ns/a": "m", "ns/b": "m"}
    lg.observe(msgs, msgs, versions({"ns/a": 1, "ns/b": 1}), SHAPE, CONF)
    clock.t += 3
    batch = lg.due()
    lg.observe({"ns/b": "m2"}, {"ns/b": "m2"}, versions({"ns/b": 1}), SHAPE, CONF)  # a scheduled, b changed
    assert lg.done(batch, {"ns/a": "why a", "ns/b": "why b"}, 0.0) == []
    assert not lg.answers and list(lg.want) == ["ns/b"]
    clock.t += 3
    assert lg.done(lg.due(), {"ns/b": "why b"}, 0.0) == [("ns/b", "why b")]


def test_a_reloaded_conf_clears_the_answers_and_jobs_without_podgroup_are_left_out() -> None:
    lg, clock = ledger(cpu=1.0)
    msgs = {"ns/g": "m", "ns/podgroup-x": "m"}
    lg.observe(msgs, msgs, versions({"ns/g": 1}), SHAPE, CONF)  # the synthetic group has no version
    clock.t += 3
    batch = lg.due()
    assert [u for u, _ in batch] == ["ns/g"]
    lg.done(batch, {"ns/g": "why"}, 0.0)
    other = object()
    lg.observe(msgs, msgs, versions({"ns/g": 1}), SHAPE, other)
    assert not lg.answers and list(lg.want) == ["ns/g"]


def test_no_cpu_share_means_no_search() -> None:
    lg, clock = ledger(cpu=0.0)
    lg.observe({"ns/g": "m"}, {"ns/g": "m"}, versions({"ns/g": 1}), SHAPE, CONF)
    clock.t += 100
    assert lg.due() == []


# --- the real search ----------------------------------------------------------------------------------------------

def test_search_gives_the_short_reason_and_verified_fixes() -> None:
    texts = search([*GANG, *gang("b", 1, "10")], CONF, ["ns/g", "ns/b", "ns/missing"], "volcano",
                   WhyOptions(max_runs=8))
    assert texts["ns/g"].startswith("3 of 4 placed") and "fix: minAvailable 3 (from 4)" in texts["ns/g"]
    assert "larger than any node" in texts["ns/b"] and "fix:" in texts["ns/b"]
    assert texts["ns/missing"] == ""  # not a job: nothing to tell


def test_search_says_nothing_for_a_job_that_fits_after_all() -> None:
    assert search([*BIG, node("n3", "16")], CONF, ["ns/b"], "volcano", WhyOptions()) == {"ns/b": ""}


class _Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str, str]] = []

    def __call__(self, obj: dict[str, Any], etype: str, reason: str, message: str) -> bool:
        self.events.append((obj["metadata"]["name"], etype, reason, message))
        return True


def test_kube_why_sends_one_event_per_change_from_a_thread() -> None:
    """The glue: a session's result in, a batch on its own thread, the Event through the recorder; the binds in
    flight hold the batch back, and a pod being bound is not placed again by the search."""
    cache = SchedulerCache.from_objects([*GANG, node("n0"), *gang("w", 1, "8")])
    lock = threading.RLock()
    rec = _Recorder()
    busy = [True]
    assumed = {"ns/w-0": Assumed("n0", "", 0.0)}  # bound by this scheduler, not yet seen: n0 is full
    why = KubeWhy(WhyOptions(settle=0.0, cpu=1.0), cache, lock, assumed, lambda: busy[0], rec, lambda: CONF)
    objs = {o["metadata"]["name"]: o for o in why._objects() if o["kind"] == "Pod"}
    assert objs["w-0"]["spec"]["nodeName"] == "n0"
    assert "nodeName" not in cache.raw[("Pod", "ns/w-0")]["spec"]  # the cache's object is left alone
    result = run_session(SchedulerCache.from_objects([*GANG]), CONF)
    assert "ns/g" in result.unschedulable
    with lock:
        why.after_session(result)
    assert why._thread is None  # binds first
    busy[0] = False
    for _ in range(3):
        with lock:
            why.after_session(result)
        assert why._thread is not None
        why._thread.join(30)
    assert [(n, t, r) for n, t, r, _ in rec.events] == [("g", "Normal", WHY_PENDING)]
    assert rec.events[0][3].startswith("3 of 4 placed") and "minAvailable 3 (from 4)" in rec.events[0][3]
    assert why.stats["batches"] == 1
    why.stop()
