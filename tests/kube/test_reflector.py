"""Reflector: list, watch, re-list on 410 Gone and after the connection drops, without losing objects."""

from __future__ import annotations

import threading

import pytest

from pyvolcano.kube.client import ApiError
from pyvolcano.kube.reflector import Reflector
from pyvolcano.kube.resources import HYPERNODE, NODE, POD
from tests.kube.fakeapi import FakeApi
from tests.kube.helpers import eventually, node, pod


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []
        self.lock = threading.Lock()

    def __call__(self, typ: str, obj: dict) -> None:
        with self.lock:
            self.events.append((typ, obj["metadata"]["name"]))

    def seen(self, typ: str, name: str) -> bool:
        with self.lock:
            return (typ, name) in self.events


@pytest.fixture
def api() -> FakeApi:
    return FakeApi()


def start(api: FakeApi, res=NODE, **kw) -> tuple[Reflector, Recorder]:
    rec = Recorder()
    r = Reflector(api, res, rec, backoff=(0.01, 0.05), **kw).start()
    assert r.synced.wait(5)
    return r, rec


def test_list_then_watch_delivers_adds_updates_deletes(api: FakeApi) -> None:
    api.create(NODE, node("a"))
    r, rec = start(api)
    try:
        assert rec.events == [("ADDED", "a")]
        assert r.store["a"]["kind"] == "Node"  # list items get their kind back
        api.create(NODE, node("b"))
        api.patch(NODE, "a", {"metadata": {"labels": {"x": "y"}}})
        api.delete(NODE, "b")
        eventually(lambda: rec.seen("DELETED", "b"))
        assert rec.events == [("ADDED", "a"), ("ADDED", "b"), ("MODIFIED", "a"), ("DELETED", "b")]
        assert set(r.store) == {"a"} and r.store["a"]["metadata"]["labels"] == {"x": "y"}
        assert r.lists == 1
    finally:
        r.stop()
    assert not r.alive


def test_dropped_watch_relists_and_reports_what_changed_meanwhile(api: FakeApi) -> None:
    for n in "abc":
        api.create(NODE, node(n))
    r, rec = start(api)
    try:
        with api.cond:  # cut the watch and change things before the reflector can look again
            api.compact()
            api.drop_watches()
            api.delete(NODE, "a")
            api.patch(NODE, "b", {"metadata": {"labels": {"k": "v"}}})
            api.create(NODE, node("d"))
        eventually(lambda: set(r.store) == {"b", "c", "d"}, what="store to converge")
        eventually(lambda: rec.seen("DELETED", "a") and rec.seen("ADDED", "d"))
        assert r.store["b"]["metadata"]["labels"] == {"k": "v"}
        assert r.lists == 2
        # the first list may come from the API server's watch cache; the re-list after the cut reads etcd
        assert api.list_versions == ["0", ""]
    finally:
        r.stop()


def test_watch_from_compacted_version_gets_410_and_relists(api: FakeApi) -> None:
    api.create(NODE, node("a"))
    r, rec = start(api)
    try:
        r.stop()  # stop, change things, compact, and resume from the old version as a restarted watch would
        api.delete(NODE, "a")
        api.create(NODE, node("z"))
        api.compact()
        r2 = Reflector(api, NODE, rec, backoff=(0.01, 0.05))
        r2.store, r2.resource_version = dict(r.store), r.resource_version
        with pytest.raises(ApiError) as exc:
            r2.watch_once()
        assert exc.value.gone
        r2.start()
        eventually(lambda: set(r2.store) == {"z"})
        assert rec.seen("DELETED", "a") and rec.seen("ADDED", "z")
        r2.stop()
    finally:
        r.stop()


def test_server_down_backs_off_then_relists(api: FakeApi) -> None:
    api.create(POD, pod("p1", "g"))
    r, _ = start(api, POD)
    try:
        api.set_down(True)
        eventually(lambda: r.errors >= 2, what="failed re-list attempts while down")
        lists_while_down = api.count("list")
        api.set_down(False)
        api.create(POD, pod("p2", "g"))
        eventually(lambda: "ns/p2" in r.store)
        assert api.count("list") > lists_while_down
    finally:
        r.stop()


def test_handler_error_does_not_kill_the_reflector(api: FakeApi) -> None:
    calls: list[str] = []

    def handler(typ: str, obj: dict) -> None:
        calls.append(obj["metadata"]["name"])
        if obj["metadata"]["name"] == "bad" and calls.count("bad") == 1:
            raise RuntimeError("boom")

    r = Reflector(api, NODE, handler, backoff=(0.01, 0.05)).start()
    try:
        assert r.synced.wait(5)
        api.create(NODE, node("bad"))
        api.create(NODE, node("good"))
        eventually(lambda: "good" in r.store and "good" in calls)
        assert r.alive
    finally:
        r.stop()


def test_an_optional_resource_not_served_is_empty_and_listed_again(api: FakeApi) -> None:
    """A CRD that is not installed (404 on list): the informer counts as synced with nothing in it, and picks the
    objects up once the resource is served."""
    api.fail("list", ApiError(404, "NotFound", "the server could not find the requested resource"), times=3,
             when=lambda res, ns, name: res == HYPERNODE)
    api.create(HYPERNODE, {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode",
                           "metadata": {"name": "leaf"}, "spec": {"tier": 1, "members": []}})
    r, rec = start(api, HYPERNODE, optional=True)
    try:
        assert r.missing or rec.seen("ADDED", "leaf")
        eventually(lambda: rec.seen("ADDED", "leaf"), what="the HyperNode once the resource is served")
        assert not r.missing and r.errors == 0
    finally:
        r.stop()


def test_a_required_resource_not_served_is_an_error(api: FakeApi) -> None:
    api.fail("list", ApiError(404, "NotFound", "not found"), times=1, when=lambda res, ns, name: res == NODE)
    api.create(NODE, node("n1"))
    r, rec = start(api, NODE)  # the first list fails and is retried with backoff
    try:
        assert rec.seen("ADDED", "n1") and r.errors == 1
    finally:
        r.stop()


def test_a_gated_first_list_is_requested_at_once_and_handed_over_only_after_its_gate(api: FakeApi) -> None:
    """``after``: the scheduler's pod informer lists while the node informer's objects are still being taken,
    but hands its pods to the cache only after them (dependency order without a round trip in between)."""
    api.create(NODE, node("a"))
    gate = threading.Event()
    rec = Recorder()
    r = Reflector(api, NODE, rec, backoff=(0.01, 0.05), after=[gate]).start()
    try:
        eventually(lambda: api.count("list") == 1)
        assert not r.synced.wait(0.2) and rec.events == []
        gate.set()
        assert r.synced.wait(5)
        assert rec.events == [("ADDED", "a")]
    finally:
        r.stop()
    assert not r.alive


def test_a_reflector_stopped_at_its_gate_ends_without_watching(api: FakeApi) -> None:
    rec = Recorder()
    r = Reflector(api, NODE, rec, backoff=(0.01, 0.05), after=[threading.Event()]).start()
    eventually(lambda: api.count("list") == 1)
    r.stop()
    assert not r.alive and not r.synced.is_set() and api.count("watch") == 0 and rec.events == []
