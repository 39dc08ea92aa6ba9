"""The background ``Writer``: writes for one key are coalesced, and a writer that defers to the binds in flight
sends only the newest write once they are done."""

from __future__ import annotations

import threading

from pyvolcano.kube.writer import EventRecorder, Writer


def test_a_deferred_write_is_replaced_by_a_newer_one_for_the_same_key() -> None:
    binds_done = threading.Event()
    asked: list[float] = []

    def wait_for_binds(seconds: float) -> None:
        asked.append(seconds)
        binds_done.wait(seconds)

    sent: list[str] = []
    w = Writer(1, "t", defer_to=wait_for_binds, max_defer=30.0)
    try:
        w.submit(("podgroup", "g"), lambda: sent.append("Inqueue"))
        w.submit(("podgroup", "h"), lambda: sent.append("h"))
        w.submit(("podgroup", "g"), lambda: sent.append("Running"))
        assert sent == []  # still waiting for the binds
        binds_done.set()
        assert w.flush(10)
        assert sorted(sent) == ["Running", "h"]
        assert asked and all(0 < s <= 30.0 for s in asked)
    finally:
        w.shutdown(1)


def test_a_write_waits_no_longer_than_max_defer() -> None:
    never = threading.Event()
    sent: list[str] = []
    w = Writer(1, "t", defer_to=lambda s: never.wait(s), max_defer=0.2)
    try:
        w.submit("k", lambda: sent.append("x"))
        assert w.flush(10) and sent == ["x"]
    finally:
        w.shutdown(1)


def test_recorder_remembers_what_it_recorded_per_object_and_reason() -> None:
    """``recorded`` is what the status writer asks before leaving out a one-pod group's ready Event: a group
    that got an ``Unschedulable`` Warning from this recorder gets its ready Event."""
    sent: list[dict] = []

    class Api:
        def create(self, res, body, ns=None) -> dict:
            sent.append(body)
            return body

    w = Writer(1, "events")
    rec = EventRecorder(Api(), w)
    pg = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
          "metadata": {"name": "g", "namespace": "ns", "uid": "u1"}}
    other = {**pg, "metadata": {**pg["metadata"], "name": "h", "uid": "u2"}}
    assert not rec.recorded(pg, "Unschedulable")
    assert rec.event(pg, "Warning", "Unschedulable", "0/1 tasks in gang unschedulable")
    assert not rec.event(pg, "Warning", "Unschedulable", "0/1 tasks in gang unschedulable")  # a repeat: dropped
    assert rec.recorded(pg, "Unschedulable") and not rec.recorded(pg, "Scheduled")
    assert not rec.recorded(other, "Unschedulable")
    assert w.flush(5)
    assert [(b["involvedObject"]["uid"], b["reason"]) for b in sent] == [("u1", "Unschedulable")]


class FakeClock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def test_deferral_is_bounded_from_the_oldest_unsent_write_of_a_key() -> None:
    """Binds first, but never for ever: a key may wait ``max_defer`` after its oldest unsent write was queued,
    and rewriting it again and again does not push that back (a busy cluster always has a bind in flight)."""
    clock = FakeClock()
    binds_done = threading.Event()
    w = Writer(1, "t", defer_to=lambda s: binds_done.wait(s), max_defer=30.0, clock=clock)
    try:
        assert w.deferral("k") == 0.0  # nothing queued
        w.submit("k", lambda: None)
        assert w.deferral("k") == 30.0
        clock.t += 12
        w.submit("k", lambda: None)  # a newer status for the same object
        assert w.deferral("k") == 18.0
        clock.t += 20
        assert w.deferral("k") == 0.0  # past the bound: written at once, binds or not
        assert Writer(1, "u", defer_to=lambda s: None, max_defer=0.0).deferral("k") == 0.0
        assert Writer(1, "v", max_defer=30.0).deferral("k") == 0.0  # a writer that defers to nothing
    finally:
        binds_done.set()
        w.shutdown(1)


def test_a_write_past_its_bound_does_not_wait_for_the_binds() -> None:
    clock = FakeClock()
    asked: list[float] = []
    sent: list[str] = []
    started = threading.Event()  # the worker is in its first write ...
    gate = threading.Event()  # ... and stays there until the test lets it go
    w = Writer(1, "t", defer_to=lambda s: asked.append(s), max_defer=30.0, clock=clock)
    try:
        w.submit("first", lambda: (started.set(), gate.wait(10), sent.append("first")))
        w.submit("second", lambda: sent.append("second"))  # queued at the same (fake) time
        assert started.wait(10)
        clock.t += 31  # the second write waited longer than max_defer behind the first
        gate.set()
        assert w.flush(10)
        assert sent == ["first", "second"]
        assert asked == [30.0]  # only the first write asked to wait for the binds
    finally:
        w.shutdown(1)
