"""Workloads for the simulator: one ``JobSpec`` per job, from Volcano Job manifests, a generic CSV, a seeded
synthetic generator or the Alibaba GPU trace (``alibaba.py``), all turned into vcjob manifests the same way.

Annotations the simulator reads on Volcano Job manifests (documented in docs/simulator.md):
``pyvolcano.io/arrival`` on the Job (seconds after the start) and ``pyvolcano.io/duration`` on a task's pod
template (seconds the pod runs once started).
"""

from __future__ import annotations

import csv
import math
import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, model_validator

from pyvolcano.api import models
from pyvolcano.api.job_model import ARRIVAL, DURATION, WorkloadFlow, WorkloadJob, field_path
from pyvolcano.api.job_validate import JobProblem, typed_job
from pyvolcano.api.models import _integer, seconds
from pyvolcano.errors import ManifestError, UserError

FLOW_KINDS = ("CronJob", "JobFlow", "JobTemplate")
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
    #: more for the pod template: ``resources`` (extended resources its container requests and limits, e.g.
    #: gpushare's ``volcano.sh/gpu-memory``, which Volcano reads from the limits) and ``affinity`` (the pod's)
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class Workload:
    jobs: list[tuple[float, dict[str, Any]]]  # (arrival, vcjob manifest), sorted
    priority_classes: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    #: (arrival, CronJob / JobFlow / JobTemplate manifest), sorted (``sim/flows.py``)
    flows: list[tuple[float, dict[str, Any]]] = field(default_factory=list)
    #: the workload's task mix (``api/gpufrag.py: TaskMix``) when known (the openb trace's): the fragmentation
    #: metric's and ``Snapshot.task_mix``
    task_mix: Any = None

    @property
    def queues(self) -> set[str]:
        return {j["spec"].get("queue") or "default" for _, j in self.jobs}


def priority_class_name(p: int) -> str:
    return f"sim-priority-{p}" if p >= 0 else f"sim-priority-minus-{-p}"


def to_vcjob(js: JobSpec) -> dict[str, Any]:
    requests: dict[str, str] = {"cpu": js.cpu, "memory": js.memory}
    if js.gpu not in ("0", "", "0.0"):
        requests["nvidia.com/gpu"] = js.gpu
    resources: dict[str, Any] = {"requests": requests}
    if js.extra.get("resources"):  # as the API server defaults an extended resource's request to its limit
        requests.update(js.extra["resources"])
        resources["limits"] = dict(js.extra["resources"])
    pod_spec: dict[str, Any] = {"containers": [{"name": "main", "image": "busybox", "resources": resources}]}
    if js.extra.get("affinity"):
        pod_spec["affinity"] = js.extra["affinity"]
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
        "metadata": {"name": js.name, "namespace": js.namespace, "annotations": {ARRIVAL: f"{js.arrival:g}"}},
        "spec": {
            "schedulerName": "volcano", "queue": js.queue, "minAvailable": js.min_available,
            "priorityClassName": priority_class_name(js.priority), "maxRetry": 3,
            "policies": [{"event": "PodEvicted", "action": "RestartJob"}] if js.min_available > 1 else [],
            "tasks": [{"name": "worker", "replicas": js.tasks, "template": {
                "metadata": {"annotations": {DURATION: f"{js.duration:g}"}},
                "spec": pod_spec}}],
        },
    }


def from_specs(specs: Iterable[JobSpec], problems: list[str] | None = None) -> Workload:
    """Vcjob manifests for ``specs``; a spec that ``check_spec`` rejects is reported in ``problems`` and left out."""
    jobs, prios = [], set()
    problems = list(problems or [])
    for js in specs:
        bad = check_spec(js)
        if bad:
            problems.append(f"job {js.name}: {bad}; skipped")
            continue
        jobs.append((js.arrival, to_vcjob(js)))
        prios.add(js.priority)
    jobs.sort(key=lambda x: (x[0], x[1]["metadata"]["name"]))
    pcs = [{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
            "metadata": {"name": priority_class_name(p)}, "value": p} for p in sorted(prios)]
    return Workload(jobs, pcs, problems)



def job_ref(job: dict[str, Any]) -> str:
    meta = job.get("metadata")
    md: dict[str, Any] = meta if isinstance(meta, dict) else {}
    return f"Job {md.get('namespace') or 'default'}/{md.get('name') or '<unnamed>'}"


#: pods one simulated Job may ask for; ``replicas: 100000000`` would otherwise build that many pod manifests
MAX_JOB_PODS = 100_000


def _typed(job: dict[str, Any]) -> WorkloadJob | str:
    """A Job of a workload through the boundary (``api/job_model.py: WorkloadJob``: the Job's types, its arrival
    and its templates' durations as seconds), plus the simulator's own bound on its size: not a count that would
    build millions of pod manifests.  The typed Job, or the problem naming the Job and the field."""
    typed = typed_job(job, WorkloadJob)
    if isinstance(typed, JobProblem):
        return f"{typed.ref}: field {typed.field}: {typed.problem}"
    assert isinstance(typed, WorkloadJob)
    total = sum(max(0, t.replicas) for t in typed.spec.tasks or [])
    if total > MAX_JOB_PODS:
        return f"{job_ref(job)}: field spec.tasks: {total} replicas in all, more than {MAX_JOB_PODS} pods"
    return typed


def from_manifests(objects: list[dict[str, Any]]) -> Workload:
    """Volcano Job manifests (plus any PriorityClass objects) with the arrival annotation.  A Job the boundary
    refuses (``_typed``: a wrong type, an arrival or duration that is not a number of seconds >= 0) is reported in
    ``problems`` and left out; Volcano's admission rules are checked when the Job arrives (``Simulator.job_problem``)."""
    jobs, pcs, problems, flows = [], [], [], []
    for o in objects:
        if o.get("kind") == "PriorityClass":
            try:
                models.validate(o)
            except ManifestError as exc:
                problems.append(f"{exc}; skipped")
                continue
            pcs.append(o)
        elif o.get("kind") == "Job":
            typed = _typed(o)
            if isinstance(typed, str):
                problems.append(f"{typed}; job skipped")
                continue
            md = o["metadata"]
            if not md.get("namespace"):  # the API server puts a namespaced object without one (or with null or
                md["namespace"] = "default"  # "") in the request's namespace, kubectl's "default"
            jobs.append((typed.arrival, o))
        elif o.get("kind") in FLOW_KINDS:
            t_flow, bad = _flow_object(o)
            if bad:
                problems.append(f"{bad}; skipped")
                continue
            flows.append((t_flow, o))
    jobs.sort(key=lambda x: (x[0], str(x[1].get("metadata", {}).get("name"))))
    # templates before the flows that name them at the same arrival time
    flows.sort(key=lambda x: (x[0], x[1]["kind"] != "JobTemplate", str(x[1]["metadata"].get("name"))))
    return Workload(jobs, pcs, problems, flows)


def _flow_object(o: dict[str, Any]) -> tuple[float, str | None]:
    """A CronJob, JobFlow or JobTemplate of a workload: its arrival, or why it is refused (Volcano's admission
    rules of ``api/admission.py``, the simulator's annotations)."""
    from pyvolcano.api.admission import validate_cronjob, validate_jobflow

    md = o.get("metadata")
    ref = f"{o['kind']} {(md or {}).get('namespace') or 'default'}/{(md or {}).get('name') or '<unnamed>'}" \
        if isinstance(md, dict) else f"{o['kind']} <unnamed>"
    try:
        t = models.validate_model(WorkloadFlow, o, ref).arrival
    except ManifestError as exc:
        return 0.0, f"{ref}: field {field_path(exc.field)}: {exc.problem}"
    msg = validate_cronjob(o) if o["kind"] == "CronJob" else validate_jobflow(o) if o["kind"] == "JobFlow" else ""
    return t, (f"{ref}: {msg}" if msg else None)


#: a job's name (the CSV ``id``, lower-cased, ``_`` as ``-``): a DNS-1123 label, as Volcano's job webhook
#: requires (``validateJobName``); a queue's: a DNS-1123 subdomain, as every Kubernetes object name
_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"


def _seconds(v: Any) -> float:
    return seconds(v)


def _row_quantity(v: Any) -> Any:
    """A quantity as the models check one (finite, >= 0, not absurd), kept as written (a string)."""
    models._quantity(v)
    return str(v)


class JobRow(BaseModel):
    """One job of a workload the simulator generates or reads as rows (``JobSpec``: a CSV row, a synthetic or an
    Alibaba job), typed: the CSV's columns are its fields, so a bad cell is refused naming the column."""

    model_config = ConfigDict(extra="forbid")
    id: Annotated[str, Field(max_length=63, pattern=_LABEL)]
    submit: Annotated[float, BeforeValidator(_seconds)]
    queue: Annotated[str, Field(max_length=253, pattern=_SUBDOMAIN)]
    #: a PriorityClass value (``api/models.py: PriorityClass``): the simulator makes one per priority
    priority: Annotated[int, _integer(models.INT32_MIN, models.PRIORITY_MAX)]
    tasks: Annotated[int, _integer(1, MAX_JOB_PODS)]
    min_available: Annotated[int, _integer(0, MAX_JOB_PODS)]
    cpu: Annotated[str, BeforeValidator(_row_quantity)]
    memory: Annotated[str, BeforeValidator(_row_quantity)]
    gpu: Annotated[str, BeforeValidator(_row_quantity)]
    duration: Annotated[float, BeforeValidator(_seconds)]

    @model_validator(mode="after")
    def _gang_fits(self) -> JobRow:
        if self.min_available > self.tasks:
            raise ValueError(f"min_available: {self.min_available} must be between 0 and tasks {self.tasks}")
        return self


def _row_problem(exc: ValidationError) -> str:
    """``field COLUMN: why`` for the first mistake of a row."""
    where, msg = models.first_error(exc)
    if not where and ": " in msg:  # the row-level check names its column
        where, msg = msg.split(": ", 1)
    return f"field {where}: {msg}"


#: columns that may be left empty, and what an empty cell means
_DEFAULTS = {"priority": "0", "gpu": "0", "queue": "default"}


def load_csv(path: str) -> Workload:
    """The generic CSV: one row per job with the columns in ``CSV_COLUMNS`` (memory as a quantity, e.g. 4Gi).
    A bad row is reported in ``problems`` with its line, job and field, and left out; the other rows load."""
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise UserError(f"cannot read {path}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise UserError(f"{path}: not a text file (byte {exc.start} is not UTF-8)") from None
    rows = csv.DictReader(text.splitlines())
    missing = [c for c in CSV_COLUMNS if c not in (rows.fieldnames or [])]
    if missing:
        raise UserError(f"{path}: missing CSV columns {', '.join(missing)} (need {', '.join(CSV_COLUMNS)})")
    specs, problems = [], []
    for r in rows:
        n = rows.line_num
        cells = {c: str(r.get(c) or "").strip() or _DEFAULTS.get(c, "") for c in CSV_COLUMNS}
        cells["id"] = cells["id"].lower().replace("_", "-")
        where = f"{path}: line {n}" + (f" (job {cells['id'][:63]})" if cells["id"] else "")
        empty = next((c for c in CSV_COLUMNS if not cells[c]), None)
        if empty is not None:
            problems.append(f"{where}: field {empty}: is empty; row skipped")
            continue
        try:
            m = JobRow.model_validate(cells)
        except ValidationError as exc:
            problems.append(f"{where}: {_row_problem(exc)}; row skipped")
            continue
        specs.append(JobSpec(name=m.id, arrival=m.submit, queue=m.queue, priority=m.priority, tasks=m.tasks,
                             min_available=m.min_available, cpu=m.cpu, memory=m.memory, gpu=m.gpu,
                             duration=m.duration))
    return from_specs(specs, problems)


def check_spec(js: JobSpec) -> str | None:
    """What is wrong with a JobSpec (naming the field), or None: the ``JobRow`` model, as a CSV row is checked."""
    try:
        JobRow.model_validate({"id": js.name, "submit": js.arrival, "queue": js.queue, "priority": js.priority,
                               "tasks": js.tasks, "min_available": js.min_available, "cpu": js.cpu,
                               "memory": js.memory, "gpu": js.gpu, "duration": js.duration})
    except ValidationError as exc:
        return _row_problem(exc)
    return None


def synthetic(seed: int = 0, jobs: int = 200, rate: float = 0.2, queues: Mapping[str, float] | None = None,
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


#: the CPU sizes of ``services`` (cores; memory is 4 GiB per core)
SERVICE_CPUS = (8, 16, 24, 32, 48, 64, 96, 128, 192)
MONTH = 30 * 86400.0


def services(seed: int = 0, jobs: int = 24000, span: float = MONTH, queues: Mapping[str, float] | None = None,
             gpu_fraction: float = 0.1, min_life: float = 300.0) -> Workload:
    """An oversubscribed month of long-running services (issue 15's speed target): ``jobs`` single-pod jobs
    arriving as a Poisson process over ``span`` seconds, lifetimes log-uniform from ``min_life`` (minutes) to the
    whole span, ``SERVICE_CPUS`` cores (4 GiB each), and one GPU for a ``gpu_fraction`` of them.  On 250 nodes of
    256 cpu / 8 GPUs the services alive at once ask for about twice the cluster, so thousands wait at a time:
    the workload where every session used to re-sort and re-test the same backlog.  Same seed, same workload."""
    rnd = random.Random(seed)
    queues = queues or {"default": 1.0}
    names, weights = list(queues), list(queues.values())
    t = 0.0
    rate = jobs / span if span > 0 else 1.0
    lo, hi = math.log(min_life), math.log(max(span, min_life))
    specs = []
    for i in range(jobs):
        t += rnd.expovariate(rate)
        cpu = rnd.choice(SERVICE_CPUS)
        gpu = "1" if rnd.random() < gpu_fraction else "0"
        specs.append(JobSpec(name=f"svc-{i:06d}", arrival=round(t, 3), queue=rnd.choices(names, weights)[0],
                             priority=rnd.choice((0, 0, 100)), tasks=1, min_available=1, cpu=str(cpu),
                             memory=f"{4 * cpu}Gi", gpu=gpu, duration=round(math.exp(rnd.uniform(lo, hi)), 1)))
    return from_specs(specs)
