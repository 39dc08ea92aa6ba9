"""Queue controller: PodGroup counts by phase and the Open/Closing/Closed state machine driven by Commands."""

from __future__ import annotations

import pytest

from pyvolcano.kube.queue_controller import QueueController, next_state
from pyvolcano.kube.resources import COMMAND, PODGROUP, QUEUE
from tests.kube.fakeapi import FakeApi
from tests.kube.helpers import eventually, podgroup, queue


def status(api: FakeApi, name: str) -> dict:
    return api.obj(QUEUE, name).get("status") or {}


def command(api: FakeApi, name: str, action: str) -> None:
    q = api.obj(QUEUE, name)
    api.create(COMMAND, {"apiVersion": "bus.volcano.sh/v1alpha1", "kind": "Command",
                         "metadata": {"generateName": f"{name}-", "namespace": "default"}, "action": action,
                         "target": {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "name": name,
                                    "uid": q["metadata"]["uid"]}})


@pytest.fixture
def setup():
    api = FakeApi()
    api.create(QUEUE, queue("default"))
    api.create(QUEUE, queue("research", weight=2))
    c = QueueController(api, resync=0.2)
    assert c.start(5)
    yield api, c
    c.stop()


def test_counts_podgroups_by_phase(setup) -> None:
    api, _ = setup
    api.create(PODGROUP, podgroup("a", queue="research"))
    api.create(PODGROUP, {**podgroup("b", queue="research"), "status": {"phase": "Running"}})
    api.create(PODGROUP, {**podgroup("c", queue="research"), "status": {"phase": "Inqueue"}})
    api.create(PODGROUP, podgroup("d"))
    eventually(lambda: status(api, "research").get("running") == 1 and status(api, "research").get("pending") == 1
               and status(api, "research").get("inqueue") == 1, what="research counts")
    eventually(lambda: status(api, "default").get("pending") == 1)
    assert status(api, "research")["state"] == "Open"
    api.patch(PODGROUP, "a", {"status": {"phase": "Running"}}, "ns")
    eventually(lambda: status(api, "research").get("running") == 2 and status(api, "research").get("pending") == 0)


def test_close_waits_for_podgroups_then_open_again(setup) -> None:
    api, _ = setup
    api.create(PODGROUP, podgroup("a", queue="research"))
    eventually(lambda: status(api, "research").get("pending") == 1)
    command(api, "research", "CloseQueue")
    eventually(lambda: status(api, "research").get("state") == "Closing", what="Closing")
    eventually(lambda: api.objects(COMMAND) == [], what="the command to be consumed")
    api.delete(PODGROUP, "a", "ns")
    eventually(lambda: status(api, "research").get("state") == "Closed", what="Closed")
    command(api, "research", "OpenQueue")
    eventually(lambda: status(api, "research").get("state") == "Open", what="Open again")


def test_scheduler_allocated_is_not_overwritten(setup) -> None:
    api, _ = setup
    api.patch(QUEUE, "research", {"status": {"allocated": {"cpu": "3"}}}, subresource="status")
    api.create(PODGROUP, podgroup("a", queue="research"))
    eventually(lambda: status(api, "research").get("pending") == 1)
    assert status(api, "research")["allocated"] == {"cpu": "3"}


def test_state_machine() -> None:
    assert next_state("", None, 3) == "Open"
    assert next_state("Open", "CloseQueue", 2) == "Closing"
    assert next_state("Closing", None, 0) == "Closed"
    assert next_state("Closed", None, 1) == "Closing"
    assert next_state("Closed", "OpenQueue", 0) == "Open"
    assert next_state("Weird", None, 0) == "Unknown"


def test_queue_tree_problems_use_the_shared_validator() -> None:
    from pyvolcano.kube.validation import validate_queue_tree

    queues = {
        "root": {"kind": "Queue", "metadata": {"name": "root"}, "spec": {"weight": 1}},
        "team": {"kind": "Queue", "metadata": {"name": "team"},
                 "spec": {"weight": 1, "parent": "root", "capability": {"cpu": "4"}}},
        "child": {"kind": "Queue", "metadata": {"name": "child"},
                  "spec": {"weight": 1, "parent": "team", "capability": {"cpu": "8"}}},
    }
    errs = validate_queue_tree("child", queues)
    assert errs and "capability" in errs[0]
    assert validate_queue_tree("team", queues) == []
    flat = {"a": {"kind": "Queue", "metadata": {"name": "a"}, "spec": {"weight": 1}}}
    assert validate_queue_tree("a", flat) == []
