"""Workloads for the simulator: one ``JobSpec`` per job, from Volcano Job manifests, a generic CSV, a seeded
synthetic generator or the Alibaba GPU trace (``alibaba.py``), all turned into vcjob manifests the same way.

Annotations the simulator reads on Volcano Job manifests (documented in docs/simulator.md):
``pyvolcano.io/arrival`` on the Job (seconds after the start) and ``pyvolcano.io/duration`` on a task's pod
template (seconds the pod runs once started).
"""

from __future__ import annotations

import csv
import random
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyvolcano.errors import UserError

ARRIVAL = "pyvolcano.io/arrival"
DURATION = "pyvolcano.io/duration"
CSV_COLUMNS = ("id", "submit", "queue", "priority", "tasks", "min_available", "cpu", "memory", "gpu", "duration")


@dataclass
class JobSpec:
    name: str
    arrival: float
    queue: str = "default"
    priority: int = 0
    tasks: int = 1
    min_available: int = 1
    cpu: str = "1"
    memory: str = "1Gi"
    gpu: str = "0"
    duration: float = 60.0
    namespace: str = "default"
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class Workload:
    jobs: list[tuple[float, dict[str, Any]]]  # (arrival, vcjob manifest), sorted
    priority_classes: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def queues(self) -> set[str]:
        return {j["spec"].get("queue") or "default" for _, j in self.jobs}


def priority_class_name(p: int) -> str:
    return f"sim-priority-{p}" if p >= 0 else f"sim-priority-minus-{-p}"


def to_vcjob(js: JobSpec) -> dict[str, Any]:
    requests: dict[str, str] = {"cpu": js.cpu, "memory": js.memory}
    if js.gpu not in ("0", "", "0.0"):
        requests["nvidia.com/gpu"] = js.gpu
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
        "metadata": {"name": js.name, "namespace": js.namespace, "annotations": {ARRIVAL: f"{js.arrival:g}"}},
        "spec": {
            "schedulerName": "volcano", "queue": js.queue, "minAvailable": js.min_available,
            "priorityClassName": priority_class_name(js.priority), "maxRetry": 3,
            "policies": [{"event": "PodEvicted", "action": "RestartJob"}] if js.min_available > 1 else [],
            "tasks": [{"name": "worker", "replicas": js.tasks, "template": {
                "metadata": {"annotations": {DURATION: f"{js.duration:g}"}},
                "spec": {"containers": [{"name": "main", "image": "busybox",
                                         "resources": {"requests": requests}}]}}}],
        },
    }


def from_specs(specs: Iterable[JobSpec], problems: list[str] | None = None) -> Workload:
    jobs, prios = [], set()
    for js in specs:
        jobs.append((js.arrival, to_vcjob(js)))
        prios.add(js.priority)
    jobs.sort(key=lambda x: (x[0], x[1]["metadata"]["name"]))
    pcs = [{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
            "metadata": {"name": priority_class_name(p)}, "value": p} for p in sorted(prios)]
    return Workload(jobs, pcs, problems or [])


def from_manifests(objects: list[dict[str, Any]]) -> Workload:
    """Volcano Job manifests (plus any PriorityClass objects) with the arrival annotation."""
    jobs, pcs, problems = [], [], []
    for o in objects:
        if o.get("kind") == "PriorityClass":
            pcs.append(o)
        elif o.get("kind") == "Job":
            ann = (o.get("metadata") or {}).get("annotations") or {}
            try:
                t = float(ann.get(ARRIVAL, 0))
            except ValueError:
                problems.append(f"Job {(o.get('metadata') or {}).get('name')}: annotation {ARRIVAL} is not a number")
                continue
            jobs.append((t, o))
    jobs.sort(key=lambda x: (x[0], str(x[1].get("metadata", {}).get("name"))))
    return Workload(jobs, pcs, problems)


def load_csv(path: str) -> Workload:
    """The generic CSV: one row per job with the columns in ``CSV_COLUMNS`` (memory as a quantity, e.g. 4Gi)."""
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise UserError(f"cannot read {path}: {exc.strerror}") from None
    rows = csv.DictReader(text.splitlines())
    missing = [c for c in CSV_COLUMNS if c not in (rows.fieldnames or [])]
    if missing:
        raise UserError(f"{path}: missing CSV columns {', '.join(missing)} (need {', '.join(CSV_COLUMNS)})")
    specs, problems = [], []
    for n, r in enumerate(rows, start=2):
        try:
            js = JobSpec(name=str(r["id"]).lower().replace("_", "-"), arrival=float(r["submit"]),
                         queue=r["queue"] or "default", priority=int(r["priority"] or 0), tasks=int(r["tasks"]),
                         min_available=int(r["min_available"]), cpu=r["cpu"], memory=r["memory"],
                         gpu=r["gpu"] or "0", duration=float(r["duration"]))
        except (TypeError, ValueError) as exc:
            problems.append(f"{path}: line {n}: {exc}")
            continue
        bad = check_spec(js)
        if bad:
            problems.append(f"{path}: line {n} (job {js.name}): {bad}")
            continue
        specs.append(js)
    return from_specs(specs, problems)


def check_spec(js: JobSpec) -> str | None:
    if js.duration < 0:
        return f"negative duration {js.duration:g}"
    if js.arrival < 0:
        return f"negative submit time {js.arrival:g}"
    if js.tasks < 1:
        return f"tasks must be >= 1, got {js.tasks}"
    if not 0 <= js.min_available <= js.tasks:
        return f"min_available {js.min_available} must be between 0 and tasks {js.tasks}"
    return None


def synthetic(seed: int = 0, jobs: int = 200, rate: float = 0.2, queues: dict[str, float] | None = None,
              gang_sizes: tuple[int, ...] = (1, 1, 2, 4, 8), mean_duration: float = 600.0,
              cpu_choices: tuple[str, ...] = ("1", "2", "4"), gpu_fraction: float = 0.5) -> Workload:
    """Poisson arrivals at ``rate`` jobs/s, gang sizes drawn from ``gang_sizes``, exponential durations, queues
    drawn by weight from ``queues``.  Same seed, same workload."""
    rnd = random.Random(seed)
    queues = queues or {"default": 1.0}
    names, weights = list(queues), list(queues.values())
    t = 0.0
    specs = []
    for i in range(jobs):
        t += rnd.expovariate(rate)
        size = rnd.choice(gang_sizes)
        gpu = str(rnd.choice((1, 1, 2))) if rnd.random() < gpu_fraction else "0"
        specs.append(JobSpec(name=f"syn-{i:06d}", arrival=round(t, 3), queue=rnd.choices(names, weights)[0],
                             priority=rnd.choice((0, 0, 100)), tasks=size, min_available=size,
                             cpu=rnd.choice(cpu_choices), memory=f"{rnd.choice((2, 4, 8))}Gi", gpu=gpu,
                             duration=round(max(1.0, rnd.expovariate(1 / mean_duration)), 1)))
    return from_specs(specs)
