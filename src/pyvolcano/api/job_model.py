"""The typed model of a Volcano ``batch.volcano.sh/v1alpha1`` Job: the boundary every vcjob passes before Volcano's
admission rules (``api/job_validate.py``) read it.

The fields and their types are the Job CRD's OpenAPI schema (``batch.volcano.sh_jobs.yaml`` of Volcano's
``config/crd``; ``volcano.sh/apis pkg/apis/batch/v1alpha1/job.go``): counts are int32, names strings, a task's
``template`` a pod template (``api/models.py: PodSpec``, whose requests and limits are quantities), ``policies``
lifecycle policies, ``plugins`` a map of plugin name to a list of string arguments, ``volumes`` volume specs.  A wrong
type (``replicas: true``, ``2.5``, ``"٣"``, an ``event`` given as a list, a plugin argument given as a number) is
refused here naming the field, as the API server's schema refuses it.

What the schema also bounds but Volcano's webhook words itself (a negative ``replicas`` or ``minAvailable``, a
``totalPartitions`` of 0, ``highestTierAllowed`` and ``highestTierName`` together, a task name that is not a
DNS-1123 label, an unknown policy event) is left to ``api/job_validate.py``, which keeps Volcano's messages; so
those fields are typed here as plain int32 or strings.

``WorkloadJob`` adds what the simulator reads on a Job of a workload file: the ``pyvolcano.io/arrival`` annotation
of the Job and the ``pyvolcano.io/duration`` annotation of each task's pod template, as seconds.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from pyvolcano.api.models import (
    INT32_MAX,
    Int32,
    LifecyclePolicy,
    Metadata,
    PodSpec,
    Scalar,
    StringMap,
    Text,
    _integer,
    seconds,
)

#: the simulator's annotations (docs/simulator.md): a Job's arrival, a task template's run time, in seconds
ARRIVAL = "pyvolcano.io/arrival"
DURATION = "pyvolcano.io/duration"
#: a CronJob's last tick in the simulator (simulated seconds; ``sim/flows.py``)
UNTIL = "pyvolcano.io/until"


class _J(BaseModel):
    model_config = ConfigDict(extra="allow", strict=False, populate_by_name=True)


class JobNetworkTopology(_J):
    """A Job's or a partition's ``networkTopology`` (the CRD: ``mode`` hard or soft, ``highestTierAllowed`` an
    integer, ``highestTierName`` at most 253 characters).  Its sign and "not both" rules are the webhook's
    ``validateNetworkTopology`` (``api/job_validate.py``)."""

    mode: Literal["hard", "soft", ""] | None = None
    highestTierAllowed: Int32 | None = None
    highestTierName: Annotated[Text, Field(max_length=253)] | None = None


class PartitionPolicy(_J):
    """A task's ``partitionPolicy`` (``batch/v1alpha1 PartitionPolicySpec``): int32 counts; the webhook's
    ``validatePartitionPolicy`` (positive, replicas = totalPartitions x partitionSize) is ``api/job_validate.py``."""

    totalPartitions: Int32 | None = None
    partitionSize: Int32 | None = None
    minPartitions: Int32 | None = None
    networkTopology: JobNetworkTopology | None = None


class DependsOn(_J):
    """A task's ``dependsOn`` (``batch/v1alpha1 DependsOn``): task names and ``any`` or ``all``."""

    name: list[Text] | None = None
    iteration: Literal["any", "all", ""] | None = None


class TemplateMeta(_J):
    labels: StringMap | None = None
    annotations: StringMap | None = None


class PodTemplate(_J):
    """A task's ``template`` (``core/v1 PodTemplateSpec``); ``spec`` may be missing here only so that the webhook's
    "at least one container" reads as Volcano words it (``api/job_validate.py``)."""

    metadata: TemplateMeta | None = None
    spec: PodSpec | None = None


class Task(_J):
    """One of ``spec.tasks`` (``batch/v1alpha1 TaskSpec``)."""

    name: Annotated[Text, Field(max_length=253)] | None = None
    replicas: Int32 = 1
    minAvailable: Int32 | None = None
    maxRetry: Annotated[int, _integer(0, INT32_MAX)] | None = None
    template: PodTemplate | None = None
    policies: list[LifecyclePolicy] | None = None
    topologyPolicy: Literal["none", "best-effort", "restricted", "single-numa-node", ""] | None = None
    dependsOn: DependsOn | None = None
    partitionPolicy: PartitionPolicy | None = None


class VolumeSpec(_J):
    """One of ``spec.volumes`` (``batch/v1alpha1 VolumeSpec``): a mount path and a claim name or a claim spec."""

    mountPath: Text | None = None
    volumeClaimName: Annotated[Text, Field(max_length=253)] | None = None
    volumeClaim: dict[str, Any] | None = None


class JobSpec(_J):
    """A Job's ``spec`` (``batch/v1alpha1 JobSpec``).  ``tasks`` may be missing or empty here only so that the
    webhook's "no task specified in job spec" reads as Volcano words it."""

    tasks: list[Task] | None = None
    minAvailable: Int32 | None = None
    minSuccess: Annotated[int, _integer(1, INT32_MAX)] | None = None
    queue: Annotated[Text, Field(max_length=253)] | None = None
    schedulerName: Annotated[Text, Field(max_length=63)] | None = None
    priorityClassName: Annotated[Text, Field(max_length=253)] | None = None
    maxRetry: Int32 | None = None
    ttlSecondsAfterFinished: Int32 | None = None
    policies: list[LifecyclePolicy] | None = None
    #: job plugins and their Go-flag arguments (``map[string][]string``; a plugin with no arguments may be null)
    plugins: dict[str, list[Text] | None] | None = None
    volumes: list[VolumeSpec] | None = None
    networkTopology: JobNetworkTopology | None = None
    runningEstimate: Text | None = None


class Job(_J):
    """A ``batch.volcano.sh/v1alpha1`` Job, typed (``api/job_validate.py: job_problems`` validates it first)."""

    metadata: Metadata
    spec: JobSpec


# --- what the simulator reads on a workload's Job ---------------------------------------------------------------
def _annotation_seconds(v: Any) -> float | None:
    """An annotation holding seconds (``api/models.py: seconds``); empty means unset."""
    if v is None or v == "":
        return None
    try:
        return seconds(v)
    except ValueError as exc:
        raise ValueError(f"{exc} (expected seconds >= 0)") from None


AnnotationSeconds = Annotated[float | None, BeforeValidator(_annotation_seconds)]


class _JobAnnotations(_J):
    arrival: AnnotationSeconds = Field(default=None, alias="pyvolcano.io/arrival")
    __pydantic_extra__: dict[str, Scalar] = Field(init=False)


class _TemplateAnnotations(_J):
    duration: AnnotationSeconds = Field(default=None, alias="pyvolcano.io/duration")
    __pydantic_extra__: dict[str, Scalar] = Field(init=False)


class _FlowAnnotations(_J):
    arrival: AnnotationSeconds = Field(default=None, alias="pyvolcano.io/arrival")
    until: AnnotationSeconds = Field(default=None, alias="pyvolcano.io/until")
    __pydantic_extra__: dict[str, Scalar] = Field(init=False)


class _FlowMeta(Metadata):
    annotations: _FlowAnnotations | None = None  # type: ignore[assignment]


class WorkloadFlow(_J):
    """A CronJob, JobFlow or JobTemplate of a simulator workload (``sim/flows.py``): named, with a spec, and its
    ``pyvolcano.io/arrival`` and ``pyvolcano.io/until`` annotations as seconds >= 0.  Volcano's admission rules of
    the kinds are ``api/admission.py``."""

    metadata: _FlowMeta
    spec: dict[str, Any]

    @property
    def arrival(self) -> float:
        ann = self.metadata.annotations
        return (ann.arrival if ann is not None else None) or 0.0


class _WorkloadMeta(Metadata):
    annotations: _JobAnnotations | None = None  # type: ignore[assignment]


class _WorkloadTemplateMeta(TemplateMeta):
    annotations: _TemplateAnnotations | None = None  # type: ignore[assignment]


class _WorkloadTemplate(PodTemplate):
    metadata: _WorkloadTemplateMeta | None = None


class _WorkloadTask(Task):
    template: _WorkloadTemplate | None = None


class _WorkloadSpec(JobSpec):
    tasks: list[_WorkloadTask] | None = None  # type: ignore[assignment]


class WorkloadJob(Job):
    """A Job of a simulator workload: a ``Job`` whose ``pyvolcano.io/arrival`` annotation and whose task templates'
    ``pyvolcano.io/duration`` annotations are seconds >= 0 (``api/models.py: seconds``)."""

    metadata: _WorkloadMeta
    spec: _WorkloadSpec

    @property
    def arrival(self) -> float:
        ann = self.metadata.annotations
        return (ann.arrival if ann is not None else None) or 0.0


def field_path(path: str) -> str:
    """A field path from ``api/models.py: first_error`` with an annotation key written as Kubernetes writes a map
    key that is not a name (``metadata.annotations[pyvolcano.io/arrival]``)."""
    for key in (ARRIVAL, DURATION, UNTIL):
        path = path.replace(f".{key}", f"[{key}]")
    return path

