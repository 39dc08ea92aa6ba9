"""proportion and capacity as Volcano master ed72c7c8 decides (issue 13): the resource comparisons they use,
the pod count in proportion's share, capacity's argument, ordering and victim rules called directly."""

from __future__ import annotations

import importlib.util
from typing import Any

import numpy as np
import pytest

from pyvolcano.api.resource import ResourceIndex
from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.conf.loader import load_conf
from pyvolcano.errors import ConfigError
from pyvolcano.framework.session import Session
from pyvolcano.framework.state import CAPACITY_QUEUES, PROPORTION_QUEUES, QUEUE_PROBLEMS
from pyvolcano.plugins._queue_res import (
    deserved_share,
    gt_partly_relevant,
    intersects,
    le_partly_zero_filtered,
    le_with_dimension,
)
from pyvolcano.plugins.capacity import FATAL_PROBLEMS
from tests.scenario_check import OWN, load

RES = ResourceIndex.of(["nvidia.com/gpu"])  # cpu, memory, pods, nvidia.com/gpu

_spec = importlib.util.spec_from_file_location("queue_scenario_helpers_t", OWN / "queues" / "build.py")
assert _spec is not None and _spec.loader is not None
h = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(h)


def v(cpu: float = 0, mem: float = 0, pods: float = 0, gpu: float = 0) -> np.ndarray:
    return np.array([cpu, mem, pods, gpu], dtype=float)


def test_le_with_dimension_compares_only_requested_dimensions_strictly_and_skips_pods() -> None:
    assert le_with_dimension(v(cpu=3, gpu=5, pods=9), v(cpu=3, gpu=1, pods=1), v(cpu=1, pods=1)) == []
    assert le_with_dimension(v(cpu=3.05), v(cpu=3), v(cpu=1)) == [0]  # no minResource tolerance here
    assert le_with_dimension(v(cpu=1, gpu=2), v(cpu=4, gpu=1), v(cpu=1, gpu=1)) == [3]


def test_le_partly_zero_filtered_needs_one_requested_dimension_within() -> None:
    # memory over, cpu within: partly within
    assert le_partly_zero_filtered(v(cpu=1, mem=3), v(cpu=1, mem=1), v(cpu=1, mem=1))
    assert not le_partly_zero_filtered(v(cpu=2, mem=3), v(cpu=1, mem=1), v(cpu=1, mem=1))
    # a dimension zero on both sides is left out, so it cannot make the answer true
    assert not le_partly_zero_filtered(v(cpu=2), v(cpu=1), v(cpu=1, gpu=1))
    # pods never count
    assert not le_partly_zero_filtered(v(cpu=2, pods=1), v(cpu=1, pods=5), v(cpu=1, pods=1))


def test_gt_partly_relevant_uses_only_dimensions_deserved_defines() -> None:
    nothing = np.zeros(4, dtype=bool)
    gpu_named = np.array([False, False, False, True])
    # deserved names only gpu: cpu far above it does not count
    assert not gt_partly_relevant(v(cpu=6, gpu=2), v(gpu=2), v(cpu=3, gpu=1), gpu_named)
    assert gt_partly_relevant(v(cpu=6, gpu=3), v(gpu=2), v(cpu=3, gpu=1), gpu_named)
    # a scalar named with amount 0 is defined; one not named is not
    assert gt_partly_relevant(v(gpu=1), v(), v(gpu=1), gpu_named)
    assert not gt_partly_relevant(v(gpu=1), v(), v(gpu=1), nothing)
    # cpu counts once deserved has at least minResource of it
    assert gt_partly_relevant(v(cpu=4), v(cpu=1), v(cpu=1), nothing)


def test_intersects_and_share_count_pods_unless_told() -> None:
    assert intersects(v(cpu=1, pods=1), v(pods=4), ignore_pods=False)
    assert not intersects(v(cpu=1, pods=1), v(pods=4), ignore_pods=True)
    assert deserved_share(v(cpu=1, pods=5), v(cpu=2, pods=6)) == pytest.approx(5 / 6)
    assert deserved_share(v(cpu=1), v()) == 0.0


def session(objects: list[Any], config: str) -> Session:
    return Session(SchedulerCache.from_objects(objects).snapshot(), load_conf(config, "t")).open()


def scenario_session(name: str) -> tuple[Session, dict[str, Any]]:
    sc = load(OWN / "queues" / f"{name}.yaml")
    return session(sc["objects"], sc["config"]), sc


def test_proportion_share_counts_pods() -> None:
    ssn, _ = scenario_session("vq11-proportion-pods-count-in-share")
    attrs = ssn.state.read(PROPORTION_QUEUES)
    pods = ssn.res.pos["pods"]
    assert attrs["q2"].deserved[pods] == 6 and attrs["q1"].deserved[pods] == 2
    assert attrs["q2"].share == pytest.approx(5 / 6) and attrs["q1"].share == pytest.approx(0.5)
    assert ssn.queue_cmp(ssn.queues["q1"], ssn.queues["q2"]) < 0


def test_proportion_queue_priority_before_share() -> None:
    ssn, _ = scenario_session("vq01-proportion-queue-priority-first")
    assert ssn.state.read(PROPORTION_QUEUES)["q2"].share > ssn.state.read(PROPORTION_QUEUES)["q1"].share
    assert ssn.queue_cmp(ssn.queues["q2"], ssn.queues["q1"]) < 0


def test_capacity_best_effort_share_and_tie() -> None:
    ssn, _ = scenario_session("vq03-capacity-equal-share-deserved-first")
    attrs = ssn.state.read(CAPACITY_QUEUES)
    assert attrs["q1"].share == 1.0 and attrs["q2"].share == 1.0
    assert ssn.queue_cmp(ssn.queues["q2"], ssn.queues["q1"]) < 0


def hier_conf(level: object | None) -> str:
    args = "" if level is None else f"    arguments:\n      ancestorReclaimLevel: {level}\n"
    return ("actions: reclaim\ntiers:\n- plugins:\n  - name: capacity\n    enableHierarchy: true\n" + args)


def test_ancestor_reclaim_level_argument() -> None:
    ssn, sc = scenario_session("vq09-ancestor-reclaim-level-zero")
    task = next(iter(ssn.jobs["team-a/y"].tasks.values()))
    assert not ssn.preemptive(ssn.queues["dev"], task)
    for level, want in ((1, True), (-3, False)):  # negative falls back to 0, as Volcano's parseArguments
        s2 = session(sc["objects"], hier_conf(level))
        t2 = next(iter(s2.jobs["team-a/y"].tasks.values()))
        assert s2.preemptive(s2.queues["dev"], t2) is want
    with pytest.raises(ConfigError, match="ancestorReclaimLevel"):
        session(sc["objects"], hier_conf("lots"))


def spare_objects() -> list[Any]:
    """dev (deserves only GPUs) and ops (deserves nothing) under eng; ops's pods are immediate victims."""
    return [h.gpu_node("n1", 4, 4), h.queue("root"), h.queue("eng"),
            h.queue("dev", parent="eng", deserved={h.GPU: "1"}), h.queue("ops", parent="eng"),
            *h.job("o", "ops", run=["n1"] * 4), *h.job("y", "dev", pend=1, created=5)]


@pytest.mark.parametrize(("level", "spared"), [(None, False), (1, True)])
def test_immediate_victim_spared_under_shared_ancestor(level: int | None, spared: bool) -> None:
    """Volcano's reclaimableFn: with ancestorReclaimLevel > 0, an immediate victim that shares a non-root
    ancestor within the level with a reclaimer whose deserved names none of its request is spared."""
    ssn = session(spare_objects(), hier_conf(level))
    task = next(iter(ssn.jobs["team-a/y"].tasks.values()))
    running = list(ssn.jobs["team-a/o"].tasks.values())
    victims = ssn.reclaimable(task, running)
    assert (victims == []) is spared
    if not spared:
        assert len(victims) == 4  # ops deserves nothing, so every pod is an immediate victim


def test_hierarchy_inconsistencies_are_warnings_and_missing_root_is_fatal() -> None:
    ssn, _ = scenario_session("c09-hierarchy-child-above-parent-warns")
    assert ssn.state.read(FATAL_PROBLEMS) == []
    assert any("dev" in p.message and "capability" in p.message for p in ssn.state.read(QUEUE_PROBLEMS))
    attrs = ssn.state.read(CAPACITY_QUEUES)
    assert np.isinf(attrs["root"].real_capability[0]) and attrs["dev"].real_capability[0] == 2000
    ssn, _ = scenario_session("c09b-hierarchy-without-root")
    assert [p.queue for p in ssn.state.read(FATAL_PROBLEMS)] == ["root"]


def test_hierarchy_root_sums_and_child_deserved_floor() -> None:
    ssn, _ = scenario_session("c08-hierarchy-reclaim-checks-leaf-guarantee")
    attrs = ssn.state.read(CAPACITY_QUEUES)
    assert attrs["eng"].deserved[0] == 3000  # max(spec 2, guarantee 3)
    assert attrs["root"].deserved[0] == 5000 and attrs["root"].guarantee[0] == 3000


def test_capacity_hierarchy_queue_order_leaf_first_then_branch_shares() -> None:
    ssn, _ = scenario_session("c07-hierarchy-capability")
    q = ssn.queues
    assert ssn.queue_cmp(q["dev"], q["eng"]) < 0 and ssn.queue_cmp(q["eng"], q["dev"]) > 0
    # default sits under root, dev under eng: compared through eng (best effort, share 1) and default (share 1),
    # both without deserved: a tie for capacity
    assert ssn.call("queueOrder", q["dev"], q["default"]) == 0


def test_queues_command_shows_root_capability_as_volcano_reads_it() -> None:
    from pyvolcano.commands.queues import build_report
    sc = load(OWN / "queues" / "vq13-hierarchy-root-capability-unset-is-zero.yaml")
    rep = build_report(sc["objects"], load_conf(sc["config"], "t"))
    by = {r.name: r for r in rep.queues}
    assert by["root"].values["capability"] == {"cpu": "8", "memory": "0 (not named)",
                                               "nvidia.com/gpu": "0 (not named)"}
    assert any(p.queue == "q1" and p.field == "spec.capability" for p in rep.problems)


def test_proportion_enqueue_vote_in_floats_is_volcanos_formula_vote_after_vote() -> None:
    """proportion's jobEnqueueable compares plain floats over per-queue lists it remakes when the queue's numbers
    change (a permit adds the job's minResources to inqueue, an allocation moves allocated): vote after vote it
    answers as Volcano's ``minReq + allocated + inqueue - elastic`` within ``realCapability`` on NumPy rows."""
    from pyvolcano.plugins._queue_res import le_with_dimension

    objects: list[Any] = [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
         "status": {"allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110"}}},
        {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "q"},
         "spec": {"weight": 1, "capability": {"cpu": "10", "memory": "40Gi"}}}]
    sizes = [("3", "8Gi"), ("3", "8Gi"), ("2.5", "30Gi"), ("3", "1Gi"), ("1", "1Gi"), ("2", "1Gi")]
    for k, (cpu, mem) in enumerate(sizes):
        objects.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                        "metadata": {"name": f"pg{k}", "namespace": "ns"},
                        "spec": {"minMember": 1, "queue": "q", "minResources": {"cpu": cpu, "memory": mem}},
                        "status": {"phase": "Pending"}})
        objects.append({"apiVersion": "v1", "kind": "Pod", "metadata": {
            "name": f"p{k}", "namespace": "ns", "annotations": {"scheduling.k8s.io/group-name": f"pg{k}"}},
            "spec": {"schedulerName": "volcano", "containers": [
                {"name": "c", "resources": {"requests": {"cpu": cpu, "memory": mem}}}]},
            "status": {"phase": "Pending"}})
    ssn = session(objects, "actions: enqueue\ntiers:\n- plugins:\n  - name: proportion\n")
    a = ssn.state.read(PROPORTION_QUEUES)["q"]
    inqueue = np.array(a.inqueue, dtype=float)
    votes = []
    for k in range(len(sizes)):
        job = next(j for j in ssn.jobs.values() if j.name == f"pg{k}")
        need = job.min_resources(ssn.res.size)
        want = not le_with_dimension(need + a.allocated + inqueue - a.elastic, a.real_capability, need)
        if k == 3:  # an allocation between two votes: the queue's allocated moves (the event handler)
            task = next(iter(next(j for j in ssn.jobs.values() if j.name == "pg4").tasks.values()))
            ssn.place(task, 0, task.status.__class__.Allocated)
            want = not le_with_dimension(need + a.allocated + inqueue - a.elastic, a.real_capability, need)
        got = ssn.job_enqueueable(job)
        assert got == want, k
        if want:
            inqueue = inqueue + need
        assert a.inqueue.tolist() == inqueue.tolist()
        votes.append(got)
    # pg2 is short of memory; pg4 fits the capability as the session opened (1 + 9 <= 10 cpu) but not once pg4's
    # own pod holds 1 cpu: a list not remade after the allocation would admit it
    assert votes == [True, True, False, True, False, False]
