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
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, model_validator

from pyvolcano.api import models
from pyvolcano.api.models import LifecyclePolicy, Metadata, NetworkTopologySpec, PodSpec, StringMap, _integer
from pyvolcano.errors import ManifestError, UserError

ARRIVAL = "pyvolcano.io/arrival"
#: a CronJob's last tick in the simulator (simulated seconds; ``sim/flows.py``)
UNTIL = "pyvolcano.io/until"
FLOW_KINDS = ("CronJob", "JobFlow", "JobTemplate")
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
    #: (arrival, CronJob / JobFlow / JobTemplate manifest), sorted (``sim/flows.py``)
    flows: list[tuple[float, dict[str, Any]]] = field(default_factory=list)

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


#: the largest time or duration a workload or option may name (``api/models.py: MAX_TIME``, about 3,170 years):
#: an arrival plus a duration stays within what ``datetime`` formats
MAX_SECONDS = models.MAX_TIME


def seconds(value: object) -> float:
    """A duration or time in seconds: a finite number >= 0 (ValueError naming the value otherwise)."""
    if isinstance(value, bool) or (isinstance(value, str) and (not value.isascii() or "_" in value)):
        raise ValueError(f"{str(value)[:80]!r} is not a number of seconds (ASCII digits)")
    try:
        x = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"{value!r} is not a number of seconds") from None
    if not math.isfinite(x):
        raise ValueError(f"{value!r} is not a finite number of seconds")
    if x < 0:
        raise ValueError(f"{value!r} is negative")
    if x > MAX_SECONDS:  # beyond it float time stops advancing by a second (t + 1 == t) and runs lose meaning
        raise ValueError(f"{value!r} is more than {MAX_SECONDS:g} seconds")
    return x


def job_ref(job: dict[str, Any]) -> str:
    meta = job.get("metadata")
    md: dict[str, Any] = meta if isinstance(meta, dict) else {}
    return f"Job {md.get('namespace') or 'default'}/{md.get('name') or '<unnamed>'}"


def duration_problem(job: dict[str, Any]) -> str | None:
    """The first task template whose ``pyvolcano.io/duration`` annotation is not a number of seconds >= 0, as a
    message naming the job and the field; None when every duration is good (a missing one means 0 s)."""
    tasks = (job.get("spec") or {}).get("tasks") if isinstance(job.get("spec"), dict) else None
    for i, t in enumerate(tasks if isinstance(tasks, list) else []):
        tmpl = t.get("template") if isinstance(t, dict) else None
        md = tmpl.get("metadata") if isinstance(tmpl, dict) else None
        ann = md.get("annotations") if isinstance(md, dict) else None
        if not isinstance(ann, dict) or ann.get(DURATION) in (None, ""):
            continue
        try:
            seconds(ann[DURATION])
        except ValueError as exc:
            return (f"{job_ref(job)}: field spec.tasks[{i}].template.metadata.annotations[{DURATION}]: {exc} "
                    f"(expected seconds >= 0)")
    return None


#: pods one simulated Job may ask for; ``replicas: 100000000`` would otherwise build that many pod manifests
MAX_JOB_PODS = 100_000


class _TemplateMeta(BaseModel):
    model_config = ConfigDict(extra="allow")
    labels: StringMap | None = None
    annotations: StringMap | None = None


class _Template(BaseModel):
    model_config = ConfigDict(extra="allow")
    metadata: _TemplateMeta | None = None
    spec: PodSpec


class _SimPartitionPolicy(BaseModel):
    """A task's ``partitionPolicy`` (Volcano's vcjob ``PartitionPolicySpec``), typed: whole numbers within the
    simulator's job size (``1e30`` or ``.inf`` is refused here, naming the field) and a valid ``networkTopology``.
    Volcano's own rules (replicas = totalPartitions x partitionSize, ...) stay in ``api/job_validate.py``, which
    words them as Volcano's webhook does."""

    model_config = ConfigDict(extra="allow")
    totalPartitions: Annotated[int, _integer(0, MAX_JOB_PODS)] | None = None
    partitionSize: Annotated[int, _integer(0, MAX_JOB_PODS)] | None = None
    minPartitions: Annotated[int, _integer(0, MAX_JOB_PODS)] | None = None
    networkTopology: NetworkTopologySpec | None = None


class _DependsOn(BaseModel):
    """A task's ``dependsOn`` (``batch/v1alpha1 DependsOn``): task names and ``any`` or ``all``."""

    model_config = ConfigDict(extra="allow")
    name: list[Annotated[str, Field(strict=True)]] | None = None
    iteration: Literal["any", "all", ""] | None = None


class _SimTask(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str | None = None
    replicas: Annotated[int, _integer(0, MAX_JOB_PODS)] = 1
    minAvailable: Annotated[int, _integer(0, MAX_JOB_PODS)] | None = None
    template: _Template
    policies: list[LifecyclePolicy] | None = None
    dependsOn: _DependsOn | None = None
    #: Volcano's ``partitionPolicy``: the job controller makes one PodGroup sub-group per partition
    partitionPolicy: _SimPartitionPolicy | None = None


class _SimJobSpec(BaseModel):
    model_config = ConfigDict(extra="allow")
    tasks: list[_SimTask] = Field(min_length=1)
    minAvailable: Annotated[int, _integer(0, MAX_JOB_PODS)] | None = None
    queue: str | None = None
    schedulerName: str | None = None
    priorityClassName: str | None = None
    maxRetry: Annotated[int, _integer(0, 1000)] | None = None
    policies: list[LifecyclePolicy] | None = None
    #: job plugins and their arguments (``map[string][]string``)
    plugins: dict[str, list[str]] | None = None
    volumes: list[dict[str, Any]] | None = None
    #: Volcano's vcjob ``spec.networkTopology`` (mode, highestTierAllowed or highestTierName), which the job
    #: controller copies to the PodGroup
    networkTopology: NetworkTopologySpec | None = None


class _SimJob(BaseModel):
    """The shape of a Volcano Job read from a workload file: what the simulator's job controller
    (``controllers/vcjob.py``) reads, typed, so a wrong type is refused here naming the field; Volcano's own
    admission rules (minAvailable <= replicas, known queue, policies) stay in ``vcjob.validate_job``."""

    model_config = ConfigDict(extra="allow")
    metadata: Metadata
    spec: _SimJobSpec


def size_problem(job: dict[str, Any]) -> str | None:
    """What is wrong with the shape or the sizes of a Job read from a workload file (``_SimJob``), naming the
    job and the field: not ``1e30`` or ``.inf`` replicas, not a count that would build millions of pods."""
    try:
        m = _SimJob.model_validate(job)
    except ValidationError as exc:
        where, msg = models.first_error(exc)
        return f"{job_ref(job)}: field {where}: {msg}"
    total = sum(t.replicas for t in m.spec.tasks)
    if total > MAX_JOB_PODS:
        return f"{job_ref(job)}: field spec.tasks: {total} replicas in all, more than {MAX_JOB_PODS} pods"
    return None


def from_manifests(objects: list[dict[str, Any]]) -> Workload:
    """Volcano Job manifests (plus any PriorityClass objects) with the arrival annotation.  A Job whose arrival
    or duration annotation is not a number of seconds >= 0 is reported in ``problems`` and left out."""
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
            md = o.get("metadata")
            if not isinstance(md, dict):
                problems.append(f"{job_ref(o)}: field metadata: must be a mapping; job skipped")
                continue
            ann = md.get("annotations") or {}
            try:
                t = seconds(ann.get(ARRIVAL, 0) if isinstance(ann, dict) else 0)
            except ValueError as exc:
                problems.append(f"{job_ref(o)}: field metadata.annotations[{ARRIVAL}]: {exc} "
                                f"(expected seconds >= 0); job skipped")
                continue
            bad = size_problem(o) or duration_problem(o)
            if bad:
                problems.append(f"{bad}; job skipped")
                continue
            if not md.get("namespace"):  # the API server puts a namespaced object without one (or with null or
                md["namespace"] = "default"  # "") in the request's namespace, kubectl's "default"
            jobs.append((t, o))
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
    if not isinstance(md, dict) or not md.get("name"):
        return 0.0, f"{ref}: field metadata.name: is required"
    if not isinstance(o.get("spec"), dict):
        return 0.0, f"{ref}: field spec: must be a mapping"
    ann = md.get("annotations") or {}
    if not isinstance(ann, dict):
        return 0.0, f"{ref}: field metadata.annotations: must be a mapping"
    try:
        t = seconds(ann.get(ARRIVAL, 0))
        if ann.get(UNTIL) not in (None, ""):
            seconds(ann[UNTIL])
    except ValueError as exc:
        return 0.0, f"{ref}: field metadata.annotations: {exc} (expected seconds >= 0)"
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
