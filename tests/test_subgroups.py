"""Sub-groups: PodGroup ``subGroupPolicy`` and vcjob ``partitionPolicy`` (Volcano master ed72c7c8:
``pkg/scheduler/api/sub_job_info.go``, ``job_info.go``; ``actions/allocate/allocate.go``; the job controller's
``setPgSubGroupPolicy`` / ``createJobPod``; the job webhook's ``validatePartitionPolicy``).  The scheduling
decisions themselves are checked against Volcano by ``tests/scenarios/topology/subgroup-*.yaml``."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from pyvolcano.api.job_info import JobInfo, PodGroup, SubGroupPolicy, TaskInfo, sub_job_id
from pyvolcano.api.job_validate import job_problems
from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.conf.loader import load_conf
from pyvolcano.controllers.vcjob import JobController
from pyvolcano.framework.cycle import cycle_objects, result_json
from pyvolcano.framework.session import Session
from tests.test_topology_allocate import CONF, NODES, TOPO, node, pg, pod
from tests.test_vcjob_actions import ImmediateAPI, task

P, TS = "volcano.sh/partition-id", "volcano.sh/task-spec"


def policy(name: str, size: int, min_groups: int, nt: dict[str, Any] | None = None) -> dict[str, Any]:
    p: dict[str, Any] = {"name": name, "subGroupSize": size, "minSubGroups": min_groups,
                         "labelSelector": {"matchLabels": {TS: name}}, "matchLabelKeys": [P]}
    if nt is not None:
        p["networkTopology"] = nt
    return p


def lpod(name: str, group: str, spec: str, part: int | None, cpu: int = 1, node_name: str = "") -> dict[str, Any]:
    p = pod(name, group, cpu, node_name)
    p["metadata"]["labels"] = {TS: spec, **({P: str(part)} if part is not None else {})}
    return p


def test_sub_group_policy_is_validated_naming_the_field() -> None:
    for bad, field in (({"name": "w", "subGroupSize": 0}, "subGroupSize"),
                       ({"name": "w", "minSubGroups": -1}, "minSubGroups"),
                       ({"name": "w", "networkTopology": {"highestTierAllowed": 1, "highestTierName": "leaf"}},
                        "networkTopology"),
                       ({"name": "w", "matchLabelKeys": "a"}, "matchLabelKeys"),
                       ({"name": "x" * 254}, "name")):
        cache = SchedulerCache.from_objects([*NODES, pg("a", 1, subGroupPolicy=[bad])])
        assert len(cache.problems) == 1 and "PodGroup ns/a" in cache.problems[0], cache.problems
        assert f"spec.subGroupPolicy[0].{field}" in cache.problems[0], cache.problems


def _job(policies: tuple[SubGroupPolicy, ...], pods: list[tuple[str, dict[str, str]]], min_member: int = 1,
         ) -> JobInfo:
    job = JobInfo("ns/j", PodGroup("j", "ns", min_member=min_member, sub_group_policy=policies), 1)
    for i, (name, labels) in enumerate(pods):
        job.add_task(TaskInfo(uid=name, name=name, namespace="ns", job="ns/j", resreq=np.ones(1),
                              init_resreq=np.ones(1), priority=i, pod={"metadata": {"labels": labels}}))
    return job


def test_pods_are_grouped_by_match_label_values_else_the_default_sub_group() -> None:
    w = SubGroupPolicy("w", 2, 2, {"matchLabels": {TS: "w"}}, (P,))
    job = _job((w,), [("a", {TS: "w", P: "0"}), ("b", {TS: "w", P: "0"}), ("c", {TS: "w", P: "1"}),
                      ("d", {TS: "w"}), ("e", {TS: "ps", P: "0"}), ("f", {TS: "w", P: ""})])
    subs = job.sub_jobs()
    assert {k: sorted(v.tasks) for k, v in subs.items()} == {
        "ns/j/w-0": ["a", "b"], "ns/j/w-1": ["c"], "ns/j": ["d", "e", "f"]}
    assert subs["ns/j/w-1"].match_index == 1 and subs["ns/j/w-0"].gid == "ns/j/w"
    assert subs["ns/j/w-0"].min_available == 2 and subs["ns/j"].min_available == 1  # default: 1 with policies
    assert subs["ns/j/w-1"].priority == 2 and job.min_sub_jobs() == {"ns/j/w": 2}
    assert job.check_sub_job_valid() and not job.check_sub_job_ready()
    assert "allocated subGroups 0 is less than the number of subGroups 2" in job.sub_jobs_short(lambda s: s.is_ready())
    # a policy without match keys selects no pod (Volcano: empty match values mean the default sub-group)
    job2 = _job((SubGroupPolicy("w", 2, 1, None, ()),), [("a", {TS: "w"})])
    assert list(job2.sub_jobs()) == ["ns/j"] and not job2.check_sub_job_valid()
    # no policy: one sub-group with the job's minMember
    job3 = _job((), [("a", {}), ("b", {})], min_member=2)
    assert [(s.uid, s.min_available, len(s.tasks)) for s in job3.sub_jobs().values()] == [("ns/j", 2, 2)]


def test_an_empty_label_selector_selects_every_pod_and_long_ids_are_hashed() -> None:
    job = _job((SubGroupPolicy("w", 1, 0, {}, ("k",)),), [("a", {"k": "v" * 200})])
    (sid,) = job.sub_jobs()
    assert sid == sub_job_id("ns/j", "w", ["v" * 200]) and len(sid) < 40 and sid.startswith("ns/j/w-")


def test_sub_jobs_follow_tasks_and_status_changes() -> None:
    from pyvolcano.api.types import TaskStatus

    w = SubGroupPolicy("w", 2, 1, None, (P,))
    job = _job((w,), [("a", {P: "0"}), ("b", {P: "0"})])
    sub = job.sub_jobs()["ns/j/w-0"]
    assert not sub.is_ready()
    job.update_task_status(job.tasks["a"], TaskStatus.Allocated)
    job.update_task_status(job.tasks["b"], TaskStatus.Pipelined)
    assert sub.ready_num() == 1 and sub.is_pipelined() and not sub.is_ready() and job.check_sub_job_pipelined()
    job.delete_task(job.tasks["b"])
    assert len(job.sub_jobs()["ns/j/w-0"].tasks) == 1
    clone = job.clone()
    assert clone.sub_jobs()["ns/j/w-0"].tasks["a"] is clone.tasks["a"]
    job.podgroup = PodGroup("j", "ns", sub_group_policy=())  # a new PodGroup without policies
    assert list(job.sub_jobs()) == ["ns/j"]


def test_failed_roles_are_per_sub_group() -> None:
    w = SubGroupPolicy("w", 1, 0, None, (P,))
    job = _job((w,), [("a", {P: "0"}), ("b", {P: "1"})])
    for t in job.tasks.values():
        t.task_spec = "worker"
    job.record_fit_failure(job.tasks["a"])
    assert job.task_has_fit_errors(job.tasks["a"]) and not job.task_has_fit_errors(job.tasks["b"])
    job.reset_sub_job_fit_errors(job.sub_jobs()["ns/j/w-0"])
    assert not job.task_has_fit_errors(job.tasks["a"])


def test_session_sub_group_points_and_flags() -> None:
    objs = [node("n0"), pg("j", 2, subGroupPolicy=[policy("w", 2, 1)]),
            lpod("j-0", "j", "w", 0), lpod("j-1", "j", "w", 0), lpod("j-2", "j", "w", 1, node_name="n0"),
            lpod("j-3", "j", "w", 1, node_name="n0")]
    cache = SchedulerCache.from_objects(objs)
    ssn = Session(cache.snapshot(), load_conf(CONF, "t")).open()
    job = ssn.jobs["ns/j"]
    subs = job.sub_jobs()
    assert ssn.sub_job_ready(job, subs["ns/j/w-1"]) and not ssn.sub_job_ready(job, subs["ns/j/w-0"])
    assert ssn.sub_job_cmp(subs["ns/j/w-0"], subs["ns/j/w-1"]) < 0  # gang: the unready one first
    off = CONF.replace("  - name: gang\n", "  - name: gang\n    enabledSubJobReady: false\n"
                                           "    enabledSubJobOrder: false\n")
    ssn2 = Session(cache.snapshot(), load_conf(off, "t")).open()
    job2 = ssn2.jobs["ns/j"]
    s2 = job2.sub_jobs()
    assert ssn2.sub_job_ready(job2, s2["ns/j/w-0"])  # no plugin left: ready
    assert ssn2.sub_job_cmp(s2["ns/j/w-1"], s2["ns/j/w-0"]) > 0  # by match index


def test_soft_sub_group_is_capped_by_the_job_hard_tier() -> None:
    """``convertSoftToHardTopology``: a soft sub-group becomes hard up to the job's tier (else the top's)."""
    objs = [*NODES, *TOPO,
            pg("j", 1, {"highestTierAllowed": 1}, subGroupPolicy=[policy("w", 1, 0, {"mode": "soft"})]),
            lpod("j-0", "j", "w", 0),
            pg("k", 1, subGroupPolicy=[policy("w", 1, 0, {"mode": "soft"}),
                                      policy("v", 1, 0, {"highestTierName": "spine"})]),
            lpod("k-0", "k", "w", 0), lpod("k-1", "k", "v", 0, node_name="n2"),
            pg("plain", 1, subGroupPolicy=[policy("w", 1, 0)]), lpod("plain-0", "plain", "w", 0)]
    ssn = Session(SchedulerCache.from_objects(objs).snapshot(), load_conf(CONF, "t")).open()
    st = ssn.topology
    j, k = st.jobs["ns/j"], st.jobs["ns/k"]
    assert (j.subs["ns/j/w-0"].hard, j.subs["ns/j/w-0"].tier) == (True, 1)
    assert (k.hard, k.own, k.subs["ns/k/w-0"].tier) == (False, False, 3)
    assert (k.subs["ns/k/v-0"].hard, k.subs["ns/k/v-0"].tier) == (True, 2)
    assert st.topo.names[k.subs["ns/k/v-0"].allocated] == "s1" and st.topo.names[k.allocated] == "s1"
    assert "ns/plain" not in st.jobs  # sub-groups without a constraint: no topology for the job


def test_cycle_explains_a_sub_group_that_cannot_be_placed() -> None:
    objs = [*NODES, *TOPO, pg("a", 4, subGroupPolicy=[policy("w", 2, 2, {"highestTierAllowed": 1})]),
            *[lpod(f"a-{i}", "a", "w", i // 2, 3) for i in range(4)],
            pg("busy", 1), pod("busy-0", "busy", 2, node_name="n2")]
    result, _ = cycle_objects(objs, load_conf(CONF, "t"))
    out = result_json(result)
    assert out["binds"] == {}
    why = out["unschedulable"]["ns/a"]
    assert "sub-group w-1 needs 2 of its 2 pods under one hypernode (hard, highest tier 1)" in why, why
    assert "sub-groups needed (minSubGroups): w 2" in why
    assert "network topology" not in result.podgroups["ns/a"].conditions[0]["message"]


def _controller_job(**task_extra: Any) -> tuple[ImmediateAPI, dict[str, Any]]:
    api = ImmediateAPI()
    job = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
           "metadata": {"name": "j", "namespace": "default"},
           "spec": {"minAvailable": 4, "queue": "default",
                    "tasks": [task("worker", 6, **task_extra), task("ps", 1)]}}
    ctrl = JobController(api)
    ctrl.add_job(job)
    ctrl.on_podgroup("default/j", "Inqueue")
    return api, job


def test_vcjob_partition_policy_becomes_sub_groups_and_pod_labels() -> None:
    nt = {"mode": "hard", "highestTierAllowed": 1}
    api, _ = _controller_job(partitionPolicy={"totalPartitions": 3, "partitionSize": 2, "minPartitions": 2,
                                              "networkTopology": nt})
    spec = api.objs[("PodGroup", "default", "j")]["spec"]
    assert spec["subGroupPolicy"] == [{"name": "worker", "subGroupSize": 2, "minSubGroups": 2,
                                       "labelSelector": {"matchLabels": {TS: "worker"}},
                                       "matchLabelKeys": [P], "networkTopology": nt}]
    assert spec["minTaskMember"] == {"worker": 4}  # minPartitions * partitionSize (mutateSpec)
    labels = {name: obj["metadata"]["labels"] for (kind, _, name), obj in api.objs.items() if kind == "Pod"}
    assert [labels[f"j-worker-{i}"][P] for i in range(6)] == ["0", "0", "1", "1", "2", "2"]
    assert P not in labels["j-ps-0"]
    cache = SchedulerCache.from_objects([node("n0", 16), *api.objs.values()])
    assert not cache.problems, cache.problems
    subs = cache.jobs["default/j"].sub_jobs()
    assert sorted(subs) == ["default/j", "default/j/worker-0", "default/j/worker-1", "default/j/worker-2"]


def test_vcjob_without_min_partitions_keeps_no_task_minimum() -> None:
    api, _ = _controller_job(partitionPolicy={"totalPartitions": 3, "partitionSize": 2})
    spec = api.objs[("PodGroup", "default", "j")]["spec"]
    assert "minTaskMember" not in spec and spec["subGroupPolicy"][0]["minSubGroups"] == 0


@pytest.mark.parametrize(("pp", "extra", "want"), [
    ({"totalPartitions": 0, "partitionSize": 2}, {}, "'TotalPartitions' must be greater than 0"),
    ({"totalPartitions": 3, "partitionSize": 0}, {}, "'PartitionSize' must be greater than 0"),
    ({"totalPartitions": 2, "partitionSize": 2}, {}, "'Replicas' (6) are not equal to TotalPartitions*PartitionSize"),
    ({"totalPartitions": 3, "partitionSize": 2, "minPartitions": 2}, {"minAvailable": 3},
     "'MinAvailable' (3) is not equal to MinPartitions*PartitionSize"),
    ({"totalPartitions": 3, "partitionSize": 2, "minPartitions": -1}, {}, "minPartitions: must be >= 0"),
    ({"totalPartitions": 3, "partitionSize": 2,
      "networkTopology": {"highestTierAllowed": 1, "highestTierName": "leaf"}}, {},
     "must not specify 'highestTierAllowed' and 'highestTierName'"),
    ({"totalPartitions": 3, "partitionSize": 2, "networkTopology": {"mode": "close"}}, {},
         "'close' is not one of 'hard', 'soft'"),  # the typed boundary's enum (api/job_model.py)
])
def test_partition_policy_is_validated_as_the_webhook_does(pp: dict[str, Any], extra: dict[str, Any],
                                                            want: str) -> None:
    job = {"metadata": {"name": "j"}, "spec": {"minAvailable": 1, "tasks": [task("worker", 6, partitionPolicy=pp,
                                                                                 **extra)]}}
    problems = [str(p) for p in job_problems(job)]
    assert any(want in p and "spec.tasks[0].partitionPolicy" in p for p in problems), problems


def test_a_valid_partition_policy_passes() -> None:
    job = {"metadata": {"name": "j"}, "spec": {"minAvailable": 1, "tasks": [task(
        "worker", 6, minAvailable=4, partitionPolicy={"totalPartitions": 3, "partitionSize": 2, "minPartitions": 2,
                                                      "networkTopology": {"mode": "soft"}})]}}
    assert job_problems(job) == []


def test_cycle_explains_a_sub_group_left_out_of_a_ready_job() -> None:
    """The job is ready with partition 0; partition 1 finds no leaf: the job's reason in ``cycle -o wide`` says
    which sub-group and why (the PodGroup condition stays Volcano's)."""
    objs = [*NODES, *TOPO, pg("a", 2, subGroupPolicy=[policy("w", 2, 1, {"highestTierAllowed": 1})]),
            *[lpod(f"a-{i}", "a", "w", i // 2, 3) for i in range(4)],
            pg("busy", 1), pod("busy-0", "busy", 2, node_name="n2")]
    result, _ = cycle_objects(objs, load_conf(CONF, "t"))
    assert sorted(result_json(result)["binds"]) == ["ns/a-0", "ns/a-1"]
    reason = result.podgroups["ns/a"].reason
    assert "not placed: sub-group w-1 needs 2 of its 2 pods under one hypernode" in reason, reason
