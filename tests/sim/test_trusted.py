"""Objects the simulator builds itself enter the scheduler cache without a second validation (``SchedulerCache.
upsert(trusted=True)``), and a pod or PodGroup it changes in place keeps its first conversion: the cache must hold
exactly what converting every object afresh through the validated boundary gives, and what the job controller
would build from a Job is validated once, when the Job is admitted, naming the Job's field."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import numpy as np

from pyvolcano.api.job_info import PodGroup, TaskInfo
from pyvolcano.api.types import TaskStatus
from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.conf.loader import load_conf_file
from pyvolcano.sim import metrics
from pyvolcano.sim.cluster import parse_cluster_spec
from pyvolcano.sim.engine import Simulator
from pyvolcano.sim.workload import DURATION, Workload, synthetic

ROOT = Path(__file__).resolve().parents[2]
QUEUE = [{"kind": "Queue", "metadata": {"name": "default"}, "spec": {"weight": 1}}]


def _plain(v: Any) -> Any:
    if isinstance(v, np.ndarray):
        return ("array", v.shape, tuple(v.ravel().tolist()))
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_plain(x) for x in v]
    return v


def _task(t: TaskInfo) -> dict[str, Any]:
    out = {s: _plain(getattr(t, s)) for s in TaskInfo.__slots__ if s != "pod"}
    out["pod"] = id(t.pod)
    return out


def _podgroup(pg: PodGroup) -> dict[str, Any]:
    """A PodGroup's fields but its conditions: the simulator's status writer changes those in place without
    telling the cache unless the phase changes (``SimWriter.update_podgroup_status``), so the object may hold
    newer ones than the cache read, by design."""
    out = {k: _plain(v) for k, v in vars(pg).items() if k not in ("manifest", "conditions")}
    out["manifest"] = id(pg.manifest)
    return out


def same_as_fresh(cache: SchedulerCache) -> None:
    """Every task, PodGroup and job of ``cache`` equals what a cache converting the same objects afresh (validated,
    nothing carried) holds."""
    ref = SchedulerCache.from_objects(list(cache.raw.values()), cache.scheduler_name)
    assert ref.res.names == cache.res.names and not ref.problems
    assert {u: _task(t) for u, t in cache.tasks.items()} == {u: _task(t) for u, t in ref.tasks.items()}
    assert {u: _task(t) for u, t in cache.other_tasks.items()} == {u: _task(t) for u, t in ref.other_tasks.items()}
    assert {u: _podgroup(p) for u, p in cache.podgroups.items()} == {u: _podgroup(p) for u, p in ref.podgroups.items()}
    for uid, job in cache.jobs.items():
        other = ref.jobs[uid]
        for f in ("queue", "priority", "min_available", "task_min_available", "creation", "preemptable"):
            assert getattr(job, f) == getattr(other, f), (uid, f)
        assert np.array_equal(job.allocated, other.allocated) and np.array_equal(job.total_request,
                                                                                 other.total_request), uid
        assert {s: sorted(b) for s, b in job.index.items() if b} == {s: sorted(b) for s, b in other.index.items() if b}
    assert set(cache.jobs) == set(ref.jobs)
    assert_pending_kept(cache)


def assert_pending_kept(cache: SchedulerCache) -> None:
    """``has_pending`` (sets kept by the changes) answers what a walk over every job and PodGroup answers."""
    assert cache._pending_tasks == {u for j in cache.jobs.values() for u in j.index.get(TaskStatus.Pending, {})}
    assert cache._pending_groups == {u for u, pg in cache.podgroups.items() if pg.phase == "Pending"}


def test_a_contended_run_holds_what_fresh_conversion_gives() -> None:
    # preempt and reclaim (evictions, nominated pods), node failures (taints, deleted pods), gangs, restarts
    queues = [{"kind": "Queue", "metadata": {"name": q}, "spec": {"weight": w, "reclaimable": True}}
              for q, w in (("a", 1), ("b", 3))]
    wl = synthetic(seed=3, jobs=50, rate=1.0, queues={"a": 1, "b": 3}, gang_sizes=(1, 1, 2, 4), mean_duration=150,
                   gpu_fraction=0.5)
    sim = Simulator(parse_cluster_spec("4x{cpu: 8, memory: 32Gi, nvidia.com/gpu: 2}"), queues, wl,
                    load_conf_file(str(ROOT / "examples/confs/reclaim-preempt.conf")),
                    node_failures=[(40.0, "node-0001", 60.0), (90.0, "node-0003", 30.0)])
    take = sim.cache.snapshot
    checks = 0

    def snapshot():  # type: ignore[no-untyped-def]
        nonlocal checks
        same_as_fresh(sim.cache)
        checks += 1
        return take()

    sim.cache.snapshot = snapshot  # type: ignore[method-assign]
    res = sim.run()
    same_as_fresh(sim.cache)
    assert checks > 50 and res.evictions > 0 and not sim.cache.problems


def _pod(node: str = "", phase: str = "Pending") -> dict[str, Any]:
    return {"kind": "Pod", "metadata": {"name": "p", "namespace": "default",
                                        "annotations": {"scheduling.k8s.io/group-name": "g"}},
            "spec": {"schedulerName": "volcano", "nodeName": node,
                     "containers": [{"resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]},
            "status": {"phase": phase}}


def test_a_pod_changed_in_place_keeps_its_conversion_only_for_the_same_queue() -> None:
    cache = SchedulerCache("volcano")
    cache.upsert({"kind": "Node", "metadata": {"name": "n"}, "status": {"allocatable": {"cpu": "4", "memory": "8Gi"}}})
    cache.upsert({"kind": "PodGroup", "metadata": {"name": "g", "namespace": "default"}, "spec": {"queue": "a"}})
    pod = _pod()
    assert cache.upsert(pod, trusted=True)
    first = cache.tasks["default/p"]
    pod["spec"]["nodeName"] = "n"
    pod["status"] = {"phase": "Running"}
    cache.upsert(pod, trusted=True)
    t = cache.tasks["default/p"]
    assert t is not first and (t.status, t.node_name) == (TaskStatus.Running, "n")
    assert t.resreq is first.resreq and t.template_key == first.template_key  # kept, not parsed again
    same_as_fresh(cache)
    # the PodGroup moves to another queue (a new object): the pod's template key names the queue, so the next
    # in-place change converts the pod again
    cache.upsert({"kind": "PodGroup", "metadata": {"name": "g", "namespace": "default"}, "spec": {"queue": "b"}})
    pod["status"] = {"phase": "Succeeded"}
    cache.upsert(pod, trusted=True)
    assert cache.tasks["default/p"].template_key != first.template_key
    same_as_fresh(cache)
    # a copy is not the object the cache holds: converted afresh, validation skipped only because it is trusted
    bad = copy.deepcopy(pod)
    bad["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "-1"
    assert not cache.upsert(bad) and "negative" in cache.problems[-1]


def _job(name: str, spec: dict[str, Any] | None = None, template: dict[str, Any] | None = None,
         metadata: dict[str, Any] | None = None) -> dict[str, Any]:
    pod_spec = {"containers": [{"name": "m", "resources": {"requests": {"cpu": "1"}}}], **(template or {})}
    return {"kind": "Job", "metadata": {"name": name, **(metadata or {})},
            "spec": {"queue": "default", "minAvailable": 1, **(spec or {}),
                     "tasks": [{"name": "w", "replicas": 2, "template": {
                         "metadata": {"annotations": {DURATION: "5"}}, "spec": pod_spec}}]}}


def test_what_the_controller_would_build_is_validated_when_the_job_is_admitted() -> None:
    jobs = [_job("sel", template={"nodeSelector": {"disk": {"ssd": 1}}}),
            _job("tol", template={"tolerations": [{"key": "k", "operator": "Sometimes"}]}),
            _job("sched", spec={"schedulerName": 5}),
            _job("prio", template={"priority": 2**40}),
            _job("ann", metadata={"annotations": {"team": ["a"]}}),
            _job("ok")]
    res = Simulator(parse_cluster_spec("1x{cpu: 4, memory: 16Gi}"), QUEUE, Workload([(0.0, j) for j in jobs], [], []),
                    load_conf_file(None)).run()
    problems = [p for p in res.problems if p.endswith("; job skipped")]
    assert len(problems) == 5, res.problems
    assert any(p.startswith("Job default/sel: field spec.tasks[0].template.spec.nodeSelector.disk: ") for p in problems)
    assert any(p.startswith("Job default/tol: field spec.tasks[0].template.spec.tolerations[0].operator: ")
               for p in problems)
    assert any(p.startswith("Job default/sched: field spec.schedulerName: ") for p in problems)
    assert any(p.startswith("Job default/prio: field spec.tasks[0].template.spec.priority: ") for p in problems)
    assert any(p.startswith("Job default/ann: field metadata.annotations.team: ") for p in problems)
    assert {r["job"]: r["phase"] for r in metrics.job_rows(res)} == {"default/ok": "Completed"}
    assert res.problems == problems  # nothing reached the cache to be skipped there
