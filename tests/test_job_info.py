"""JobInfo's status functions against Volcano's pkg/scheduler/api/job_info.go, and the task bookkeeping."""

from __future__ import annotations

import numpy as np
import pytest

from pyvolcano.api.job_info import JobInfo, PodGroup, TaskInfo
from pyvolcano.api.types import PodGroupPhase, TaskStatus

S = TaskStatus
CPU = np.array([1000.0, 0.0, 1.0])
NONE = np.array([0.0, 0.0, 1.0])  # BestEffort: only the pod slot


def task(name: str, status: TaskStatus = S.Pending, spec: str = "", best_effort: bool = False) -> TaskInfo:
    req = NONE if best_effort else CPU
    return TaskInfo(uid=f"ns/{name}", name=name, namespace="ns", job="ns/j", resreq=req, init_resreq=req,
                    status=status, task_spec=spec)


def job(*tasks: TaskInfo, min_member: int = 1, per_spec: dict[str, int] | None = None,
        phase: PodGroupPhase = PodGroupPhase.Inqueue) -> JobInfo:
    pg = PodGroup(name="j", namespace="ns", min_member=min_member, min_task_member=per_spec or {}, phase=phase)
    j = JobInfo("ns/j", pg, 3)
    for t in tasks:
        j.add_task(t)
    return j


ALL = [S.Pending, S.Allocated, S.Pipelined, S.Binding, S.Bound, S.Running, S.Releasing, S.Succeeded, S.Failed,
       S.Unknown]


def one_of_each() -> JobInfo:
    return job(*[task(s.name.lower(), s) for s in ALL], task("pending-be", S.Pending, best_effort=True))


def test_counts_follow_volcano() -> None:
    j = one_of_each()
    assert j.ready_task_num() == 5  # Bound, Binding, Running, Allocated, Succeeded
    assert j.waiting_task_num() == 1  # Pipelined
    assert j.pending_best_effort_task_num() == 1
    assert j.valid_task_num() == 8  # ready + Pipelined + 2 Pending (Releasing, Failed, Unknown are not valid)
    assert j.count(S.Releasing | S.Failed) == 2
    assert {t.name for t in j.tasks_in(S.Running | S.Bound)} == {"running", "bound"}


@pytest.mark.parametrize(("min_member", "ready", "pipelined", "starving"), [
    (6, True, True, False),   # 5 ready + 1 pending BestEffort = 6; + 1 waiting = 7; 6 waiting+ready
    (7, False, True, True),   # 6 < 7; 7 >= 7; 6 < 7
    (8, False, False, True),
    (5, True, True, False),
])
def test_is_ready_pipelined_starving(min_member: int, ready: bool, pipelined: bool, starving: bool) -> None:
    j = one_of_each()
    j.min_available = min_member
    assert j.is_ready() is ready
    assert j.is_pipelined() is pipelined
    assert j.is_starving() is starving


def test_is_pending_is_the_podgroup_phase() -> None:
    assert job(phase=PodGroupPhase.Pending).is_pending()
    assert not job(phase=PodGroupPhase.Inqueue).is_pending()
    assert not JobInfo("ns/x", None, 3).is_pending()


def spec_job(statuses: dict[str, list[TaskStatus]], per_spec: dict[str, int], min_member: int,
             be: tuple[str, ...] = ()) -> JobInfo:
    tasks = [task(f"{spec}-{i}", st, spec) for spec, sts in statuses.items() for i, st in enumerate(sts)]
    tasks += [task(f"{spec}-be", S.Pending, spec, best_effort=True) for spec in be]
    return job(*tasks, min_member=min_member, per_spec=per_spec)


def test_check_task_valid_counts_pending_and_pipelined_per_spec() -> None:
    per = {"ps": 1, "worker": 2}
    assert spec_job({"ps": [S.Pending], "worker": [S.Pipelined, S.Running]}, per, 3).check_task_valid()
    assert not spec_job({"ps": [S.Pending], "worker": [S.Running, S.Failed]}, per, 3).check_task_valid()
    assert not spec_job({"worker": [S.Running, S.Running]}, per, 3).check_task_valid()


def test_check_task_ready_counts_allocated_and_pending_best_effort() -> None:
    per = {"ps": 1, "worker": 2}
    assert spec_job({"ps": [S.Allocated], "worker": [S.Bound, S.Succeeded]}, per, 3).check_task_ready()
    assert not spec_job({"ps": [S.Pipelined], "worker": [S.Bound, S.Running]}, per, 3).check_task_ready()
    assert spec_job({"worker": [S.Bound, S.Running]}, per, 3, be=("ps",)).check_task_ready()
    assert not spec_job({"ps": [S.Pending], "worker": [S.Bound, S.Running]}, per, 3).check_task_ready()


def test_check_task_pipelined_also_counts_pipelined() -> None:
    per = {"ps": 1, "worker": 2}
    assert spec_job({"ps": [S.Pipelined], "worker": [S.Bound, S.Running]}, per, 3).check_task_pipelined()
    assert spec_job({"worker": [S.Pipelined, S.Allocated]}, per, 3, be=("ps",)).check_task_pipelined()
    assert not spec_job({"ps": [S.Pending], "worker": [S.Bound, S.Pipelined]}, per, 3).check_task_pipelined()


def test_check_task_starving_is_true_when_a_spec_is_short() -> None:
    per = {"ps": 1, "worker": 2}
    assert spec_job({"ps": [S.Running], "worker": [S.Running]}, per, 3).check_task_starving()
    assert not spec_job({"ps": [S.Pipelined], "worker": [S.Running, S.Bound]}, per, 3).check_task_starving()
    # a pending BestEffort task does not count for starving
    assert spec_job({"worker": [S.Running, S.Bound]}, per, 3, be=("ps",)).check_task_starving()


def test_per_spec_checks_are_skipped_when_minimums_exceed_min_member() -> None:
    # Volcano: if MinAvailable < TaskMinAvailableTotal the per-spec checks pass (starving: not starving)
    j = spec_job({"worker": [S.Pending]}, {"ps": 2, "worker": 2}, 3)
    assert j.check_task_valid() and j.check_task_ready() and j.check_task_pipelined()
    assert not j.check_task_starving()


def test_no_per_spec_minimums_always_pass() -> None:
    j = job(task("a"))
    assert j.check_task_valid() and j.check_task_ready() and j.check_task_pipelined()
    assert not j.check_task_starving()


def test_status_moves_keep_buckets_and_allocated_exact() -> None:
    a, b = task("a"), task("b", S.Running)
    j = job(a, b)
    assert list(j.allocated) == [1000, 0, 1]
    assert list(j.total_request) == [2000, 0, 2]
    j.update_task_status(a, S.Allocated)
    assert list(j.allocated) == [2000, 0, 2]
    assert set(j.index[S.Allocated]) == {"ns/a"} and not j.index[S.Pending]
    j.update_task_status(a, S.Pipelined)  # pipelined holds no allocation
    assert list(j.allocated) == [1000, 0, 1]
    j.update_task_status(b, S.Releasing)
    assert list(j.allocated) == [0, 0, 0]
    j.update_task_status(b, S.Releasing)  # no-op
    j.delete_task(a)
    assert list(j.total_request) == [1000, 0, 1] and "ns/a" not in j.tasks
    j.delete_task(a)  # deleting twice is harmless


def test_clone_is_independent() -> None:
    a = task("a")
    j = job(a, per_spec={"x": 1})
    c = j.clone()
    c.update_task_status(c.tasks["ns/a"], S.Allocated)
    c.task_min_available["x"] = 5
    c.podgroup.phase = PodGroupPhase.Running  # type: ignore[union-attr]
    assert a.status == S.Pending and j.ready_task_num() == 0 and list(j.allocated) == [0, 0, 0]
    assert j.task_min_available == {"x": 1}
    assert j.podgroup.phase == PodGroupPhase.Inqueue  # type: ignore[union-attr]


def test_elastic_and_min_resources() -> None:
    j = job(task("a", S.Running), task("b", S.Running))
    assert not j.has_min_resources()
    # without minResources the minimum is empty: all of the allocation is elastic (Volcano's GetElasticResources)
    assert list(j.elastic_resources()) == [2000, 0, 2]
    assert list(j.min_resources(3)) == [0, 0, 0]
    j.podgroup.min_resources = np.array([1500.0, 0.0, 0.0])  # type: ignore[union-attr]
    assert list(j.elastic_resources()) == [500, 0, 2]


def test_best_effort_is_an_empty_init_request() -> None:
    assert task("x", best_effort=True).best_effort
    assert not task("y").best_effort


def test_fit_error_summary() -> None:
    from pyvolcano.api.fit_errors import FitErrors

    j = job(task("a"), task("b", S.Running), min_member=2)
    fe = FitErrors(3)
    fe.add("Insufficient cpu", 2)
    fe.add("node(s) were unschedulable")
    j.nodes_fit_errors["ns/a"] = fe
    msg = j.fit_error()
    assert msg.startswith("pod group is not ready, 1 Pending, 1 Running, 2 minAvailable")
    assert msg.endswith("0/3 nodes are available: 1 node(s) were unschedulable, 2 Insufficient cpu.")
    assert j.first_fit_error() == str(fe)


def test_clone_is_reused_only_while_neither_side_changed() -> None:
    j = job(task("a"), task("b"))
    c = j.clone()
    c.enqueue_reason = "set by a plugin"
    c.podgroup.phase = PodGroupPhase.Running  # type: ignore[union-attr]
    assert c.reuse(j)  # nothing changed: per-session fields come back from the source
    assert c.enqueue_reason == "" and c.podgroup.phase == PodGroupPhase.Inqueue  # type: ignore[union-attr]
    c.update_task_status(c.tasks["ns/a"], S.Allocated)  # the session moved a task
    assert not c.reuse(j)
    c2 = j.clone()
    j.update_task_status(j.tasks["ns/b"], S.Allocated)  # the cache moved a task
    assert not c2.reuse(j)
    c3 = j.clone()
    j.add_task(task("c"))
    assert not c3.reuse(j)


# --- allocation continuation: Volcano master api/job_info.go NeedContinueAllocating / TaskHasFitErrors ------------
def test_need_continue_stops_when_every_task_is_needed() -> None:
    j = job(task("a"), task("b"), min_member=2)
    j.record_fit_failure(j.tasks["ns/a"])
    assert not j.need_continue_allocating()


def test_need_continue_without_role_minimums_always_goes_on() -> None:
    j = job(task("a"), task("b"), task("c"), min_member=2)
    j.record_fit_failure(j.tasks["ns/a"])
    assert j.need_continue_allocating()
    assert not j.task_has_fit_errors(j.tasks["ns/b"])  # no role: never skipped


def test_need_continue_non_binding_role_minimums_count_what_is_left() -> None:
    # minimums add up to 3 > minMember 2: ready + pending tasks of roles that have not failed must reach 2
    j = job(task("w0", spec="w"), task("w1", spec="w"), task("p0", spec="p"), min_member=2,
            per_spec={"w": 2, "p": 1})
    j.record_fit_failure(j.tasks["ns/w0"])
    assert j.task_has_fit_errors(j.tasks["ns/w1"])
    assert not j.need_continue_allocating()  # 0 ready + 1 pending p < 2
    j.update_task_status(j.tasks["ns/w1"], S.Allocated)
    assert j.need_continue_allocating()  # 1 ready + 1 pending p >= 2


def test_need_continue_binding_role_minimum_of_a_failed_role() -> None:
    j = job(task("w0", spec="w"), task("w1", spec="w"), task("w2", spec="w"), task("p0", spec="p"), min_member=3,
            per_spec={"w": 1, "p": 1})
    j.record_fit_failure(j.tasks["ns/w1"])
    assert not j.need_continue_allocating()  # role w holds 0 < 1
    j.update_task_status(j.tasks["ns/w0"], S.Allocated)
    assert j.need_continue_allocating()  # role w holds its minimum
    assert j.clone().fit_failed_roles == set()  # a session's clone starts afresh


def test_task_role_annotation_then_label() -> None:
    from pyvolcano.api.convert import task_role
    key = "volcano.sh/task-spec"
    assert task_role({key: "ps"}, {key: "worker"}) == "ps"
    assert task_role({key: ""}, {key: "worker"}) == "worker"
    assert task_role({}, {}) == ""


def test_task_priority_is_spec_priority_or_one_with_the_annotation_on_top() -> None:
    """Volcano master's NewTaskInfo: spec.priority, else 1; a volcano.sh/task-priority annotation that parses as a
    32-bit integer (strconv.ParseInt base 10) wins; priorityClassName is not read."""
    from pyvolcano.cache.cache import task_priority

    def pod(spec: dict, note: str | None = None) -> dict:
        md: dict = {"name": "p", "namespace": "ns"}
        if note is not None:
            md["annotations"] = {"volcano.sh/task-priority": note}
        return {"kind": "Pod", "metadata": md, "spec": spec}

    assert task_priority(pod({}), {}) == 1
    assert task_priority(pod({"priorityClassName": "high"}), {"priorityClassName": "high"}) == 1
    assert task_priority(pod({"priority": 50}), {"priority": 50}) == 50
    assert task_priority(pod({"priority": 50}, "-7"), {"priority": 50}) == -7
    assert task_priority(pod({"priority": 50}, "+8"), {"priority": 50}) == 8
    for bad in ("1_000", " 5", "x", "2147483648", ""):
        assert task_priority(pod({"priority": 50}, bad), {"priority": 50}) == 50, bad


def test_fit_errors_are_equal_when_they_say_the_same() -> None:
    # a waiting job's carried status stands while its fit errors say what they said (Session.close, gang's close)
    from pyvolcano.api.fit_errors import FitErrors

    a, b = FitErrors(3), FitErrors(3)
    a.add("Insufficient cpu", 2)
    b.add("Insufficient cpu", 2)
    assert a == b and str(a) == str(b)
    b.add("Insufficient memory")
    assert a != b
    c = FitErrors(3)
    c.add("Insufficient cpu", 2)
    c.set_hypernode("h1")
    assert a != c and a != "0/3 nodes are available: 2 Insufficient cpu."
    with pytest.raises(TypeError):
        hash(a)
