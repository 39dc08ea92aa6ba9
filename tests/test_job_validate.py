"""The one Job validator (api/job_validate.py, Volcano's admission webhook rules) and its three users: the
simulator, the controller and ``pyvolcano job run`` accept and refuse the same Jobs."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from pyvolcano.api.job_validate import job_problems
from pyvolcano.controllers.vcjob import _matches, validate_job
from pyvolcano.errors import ManifestError
from pyvolcano.kube.validation import validate_job as admission

JOB: dict[str, Any] = {
    "apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "j", "namespace": "ns"},
    "spec": {"minAvailable": 1, "queue": "default", "tasks": [
        {"name": "worker", "replicas": 2, "template": {"spec": {"containers": [
            {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}}]},
}


def job(**spec: Any) -> dict[str, Any]:
    j = copy.deepcopy(JOB)
    j["spec"].update(spec)
    return j


def both(j: dict[str, Any]) -> tuple[list[str], str | None]:
    """What admission says, and what the simulator's validator raises (None: accepted)."""
    try:
        validate_job(j, {"default"})
        sim = None
    except ManifestError as exc:
        sim = str(exc)
    return admission(j, {"default": {}}), sim


@pytest.mark.parametrize("event", ["TaskFailed", "PodPending", "Unknown", "JobUpdated", "*", "PodEvicted"])
def test_every_event_volcano_admits_is_accepted_everywhere(event: str) -> None:
    assert both(job(policies=[{"event": event, "action": "RestartJob"}])) == ([], None)


@pytest.mark.parametrize("policies, words", [
    ([{"event": "Any", "action": "AbortJob"}], "invalid policy event 'Any'"),
    ([{"event": "PodRunning", "action": "AbortJob"}], "invalid policy event 'PodRunning'"),
    ([{"event": "PodFailed", "action": "SyncJob"}], "invalid policy action 'SyncJob'"),
    ([{"event": "PodFailed", "action": "AbortJob"}, {"event": "PodFailed", "action": "RestartJob"}],
     "duplicate event 'PodFailed'"),
    ([{"event": "*", "action": "AbortJob"}, {"event": "PodFailed", "action": "RestartJob"}],
     "if there's * here, no other policy should be here"),
    ([{"exitCode": 0, "action": "AbortJob"}], "is not a valid error code"),
    ([{"event": "PodFailed", "exitCode": 3, "action": "AbortJob"}], "must not specify event and exitCode"),
    ([{"action": "AbortJob"}], "either event and exitCode should be specified"),
    # typed entries (api/models.py: LifecyclePolicy): an event given as a list was a TypeError traceback
    ([{"event": ["PodFailed"], "action": "AbortJob"}], "must be a string"),
    ([{"events": "PodFailed", "action": "AbortJob"}], "must be a list"),
    ([{"exitCode": True, "action": "AbortJob"}], "True is not an integer"),
    ([{"exitCode": "\u0663", "action": "AbortJob"}], "is not an integer"),
    ([5], "must be a mapping"),
])
def test_bad_policies_are_refused_everywhere_with_the_field(policies: list[dict[str, Any]], words: str) -> None:
    errs, sim = both(job(policies=policies))
    assert errs and words in errs[0] and errs[0].startswith("Job ns/j: spec.policies")
    assert sim is not None and words in sim and sim.startswith("Job ns/j: field spec.policies")


@pytest.mark.parametrize("replicas", [True, 2.5, "\u0662", "1_0", float("inf")])
def test_counts_are_integers_as_the_api_server_reads_them(replicas: Any) -> None:
    j = job()
    j["spec"]["tasks"][0]["replicas"] = replicas
    errs, sim = both(j)
    assert errs and errs[0].startswith("Job ns/j: spec.tasks[0].replicas"), errs
    assert sim is not None and "spec.tasks[0].replicas" in sim


def test_min_partitions_above_the_replicas_is_refused_with_volcanos_words() -> None:
    """The job webhook's mutateSpec makes a missing task minAvailable minPartitions * partitionSize; validateJobCreate
    then says "'minAvailable' is greater than 'replicas'": refused here too, in admission and in the simulator."""
    j = job(minAvailable=4)
    j["spec"]["tasks"][0].update(replicas=4, partitionPolicy={"totalPartitions": 2, "partitionSize": 2,
                                                                "minPartitions": 3})
    errs, sim = both(j)
    assert errs and "'minAvailable' is greater than 'replicas' in task: " in errs[0], errs
    assert errs[0].startswith("Job ns/j: spec.tasks[0].partitionPolicy.minPartitions")
    assert sim is not None and "'minAvailable' is greater than 'replicas'" in sim
    j["spec"]["tasks"][0]["partitionPolicy"]["minPartitions"] = 2  # 2 * 2 = 4 replicas: accepted
    assert both(j) == ([], None)


def test_the_simulator_and_admission_agree_on_the_first_problem() -> None:
    j = job(minAvailable=5, queue="nosuch")
    problems = job_problems(j, {"default"})
    assert [p.field for p in problems] == ["spec.minAvailable", "spec.queue"]
    errs, sim = both(j)
    assert errs[0] == "Job ns/j: spec.minAvailable (5) should not be greater than total replicas in tasks (2)"
    assert sim == "Job ns/j: field spec.minAvailable: (5) should not be greater than total replicas in tasks (2)"
    assert errs[1] == "Job ns/j: spec.queue: unable to find job queue 'nosuch'"


def test_queue_state_is_checked_only_with_queue_objects() -> None:
    closed = {"default": {"status": {"state": "Closed"}}}
    assert "can only submit job to queue with state Open" in admission(JOB, closed)[0]
    assert job_problems(JOB, {"default"}) == []


def test_the_controller_answers_the_any_event_and_events_lists() -> None:
    assert _matches({"event": "*", "action": "AbortJob"}, "PodEvicted")
    assert _matches({"events": ["PodFailed", "PodEvicted"], "action": "AbortJob"}, "PodEvicted")
    assert not _matches({"event": "PodFailed", "action": "AbortJob"}, "PodEvicted")
