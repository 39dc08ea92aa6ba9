"""The one validator of ``batch.volcano.sh/v1alpha1`` Jobs, used by the simulator (``sim/engine.py`` through
``controllers/vcjob.py: validate_job``), the job controller (``kube/controller.py``) and client-side admission
(``pyvolcano job run``, ``kube/validation.py``).

The rules are Volcano's admission webhook (``pkg/webhooks/admission/jobs/validate/admit_job.go``: validateJobCreate,
and ``util.go``: validatePolicies with its ``policyEventMap`` / ``policyActionMap``), with the events and actions of
``volcano.sh/apis`` (``pkg/apis/bus/v1alpha1/events.go``, ``actions.go``); messages use the webhook's words.
``_plugins`` checks ``spec.plugins`` (names, Go-flag arguments: ``api/job_plugin_args.py``);
``job_update_problems`` is the webhook's validateJobUpdate, for a change to a running Job.

Every rule here reads a typed Job (``api/job_model.py``, through ``typed_job``): a wrong type (``replicas: true``,
an ``event`` given as a list, plugin arguments that are not strings) is the one problem, naming the field, as the
API server's OpenAPI schema refuses it before the webhook runs; what is left here are Volcano's own rules, in
Volcano's words.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from pyvolcano.api.job_model import Job, JobNetworkTopology, Task, field_path
from pyvolcano.api.job_plugin_args import VOLCANO_PLUGINS, parse
from pyvolcano.api.models import LifecyclePolicy, first_error

_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")

#: every lifecycle event of Volcano's bus API -> whether a Job may name it in a policy (``policyEventMap``)
POLICY_EVENTS: dict[str, bool] = {
    "*": True, "PodFailed": True, "PodEvicted": True, "PodPending": True, "Unknown": True, "TaskCompleted": True,
    "TaskFailed": True, "JobUpdated": True, "OutOfSync": False, "CommandIssued": False, "PodRunning": False,
}
#: every lifecycle action -> whether a Job may name it in a policy (``policyActionMap``)
POLICY_ACTIONS: dict[str, bool] = {
    "AbortJob": True, "RestartJob": True, "RestartTask": True, "RestartPod": True, "RestartPartition": True,
    "TerminateJob": True, "CompleteJob": True, "ResumeJob": True, "SyncJob": False, "EnqueueJob": False,
    "SyncQueue": False, "OpenQueue": False, "CloseQueue": False,
}
ALLOWED_EVENTS = sorted(e for e, ok in POLICY_EVENTS.items() if ok)
ALLOWED_ACTIONS = sorted(a for a, ok in POLICY_ACTIONS.items() if ok)


@dataclass(frozen=True)
class JobProblem:
    """One reason a Job is refused: the Job (``Job ns/name``), the field and what is wrong with it."""

    ref: str
    field: str
    problem: str

    def __str__(self) -> str:
        """``Job ns/name: field: problem``; a problem that starts with the field's value in parentheses reads on
        from the field (``spec.minAvailable (3) should not be greater than ...``)."""
        sep = " " if self.problem.startswith("(") else ": "
        return f"{self.ref}: {self.field}{sep}{self.problem}"


def policy_events(policy: Mapping[str, Any]) -> list[str]:
    """A policy's ``event`` and ``events``, without repeats (Volcano's getEventList)."""
    out: list[str] = []
    for e in [*(policy.get("events") or []), *([policy["event"]] if policy.get("event") else [])]:
        if e not in out:
            out.append(e)
    return out


def _typed_events(p: LifecyclePolicy) -> list[str]:
    """``policy_events`` of a typed policy."""
    out: list[str] = []
    for e in [*(p.events or []), *([p.event] if p.event else [])]:
        if e not in out:
            out.append(e)
    return out


def _policies(ref: str, where: str, policies: list[LifecyclePolicy] | None) -> list[JobProblem]:
    """Volcano's validatePolicies over the typed entries (``api/models.py: LifecyclePolicy``): stops at the first
    bad policy, as the webhook does."""
    out: list[JobProblem] = []
    seen: set[str] = set()
    codes: set[int] = set()
    for i, m in enumerate(policies or []):
        at = f"{where}.policies[{i}]"
        events = _typed_events(m)
        code = m.exitCode
        if events and code is not None:
            return [*out, JobProblem(ref, at, "must not specify event and exitCode simultaneously")]
        if not events and code is None:
            return [*out, JobProblem(ref, at, "either event and exitCode should be specified")]
        if events:
            for e in events:
                if not POLICY_EVENTS.get(e, False):
                    return [*out, JobProblem(ref, f"{at}.event", f"invalid policy event {e!r} (allowed: "
                                                                   f"{', '.join(ALLOWED_EVENTS)})")]
                action = m.action
                if not POLICY_ACTIONS.get(str(action), False):
                    return [*out, JobProblem(ref, f"{at}.action", f"invalid policy action {action!r} (allowed: "
                                                                    f"{', '.join(ALLOWED_ACTIONS)})")]
                if e in seen:
                    return [*out, JobProblem(ref, f"{at}.event", f"duplicate event {e!r} across different policy")]
                seen.add(e)
        elif code == 0:
            return [*out, JobProblem(ref, f"{at}.exitCode", f"{code!r} is not a valid error code")]
        elif code is not None:
            if code in codes:
                return [*out, JobProblem(ref, f"{at}.exitCode", f"duplicate exitCode {code}")]
            codes.add(code)
    if "*" in seen and len(seen) > 1:
        out.append(JobProblem(ref, f"{where}.policies", "if there's * here, no other policy should be here"))
    return out


def _both_tiers(nt: JobNetworkTopology | None) -> bool:
    return nt is not None and nt.highestTierAllowed is not None and bool(nt.highestTierName)


def _network_topology(ref: str, at: str, nt: JobNetworkTopology | None) -> list[JobProblem]:
    """A job's or a partition's ``networkTopology`` (typed by ``api/job_model.py: JobNetworkTopology``): the CRD's
    ``highestTierAllowed`` >= 0 and the webhook's ``validateNetworkTopology`` (not both)."""
    if nt is None:
        return []
    out: list[JobProblem] = []
    if nt.highestTierAllowed is not None and nt.highestTierAllowed < 0:
        out.append(JobProblem(ref, f"{at}.highestTierAllowed", f"must be an integer >= 0, got "
                                                               f"{nt.highestTierAllowed!r}"))
    if _both_tiers(nt):
        out.append(JobProblem(ref, at, "must not specify 'highestTierAllowed' and 'highestTierName' in "
                                       "networkTopology simultaneously"))
    return out


def _partition_policy(ref: str, at: str, task: Task, replicas: int, job_name: str) -> list[JobProblem]:
    """A task's ``partitionPolicy``: the CRD's minimums (totalPartitions and partitionSize >= 1, minPartitions >=
    0) and the webhook's ``validatePartitionPolicy``, which stops at the first of: totalPartitions and
    partitionSize positive, replicas = totalPartitions * partitionSize, and (when minPartitions is set)
    minAvailable = minPartitions * partitionSize; then the partition's networkTopology."""
    pp = task.partitionPolicy
    if pp is None:
        return []
    where = f"{at}.partitionPolicy"
    total, size, min_parts = pp.totalPartitions or 0, pp.partitionSize or 0, pp.minPartitions or 0
    name = task.name or ""
    out: list[JobProblem] = []
    if min_parts < 0:
        out.append(JobProblem(ref, f"{where}.minPartitions", f"must be >= 0, got {min_parts!r}"))
        min_parts = 0
    tmin = task.minAvailable
    if total <= 0:
        out.append(JobProblem(ref, f"{where}.totalPartitions", f"'TotalPartitions' must be greater than 0 in task: "
                                                               f"{name}"))
    elif size <= 0:
        out.append(JobProblem(ref, f"{where}.partitionSize", f"'PartitionSize' must be greater than 0 in task: "
                                                             f"{name}"))
    elif replicas != total * size:
        out.append(JobProblem(ref, f"{where}", f"'Replicas' ({replicas}) are not equal to TotalPartitions*"
                                               f"PartitionSize ({total}*{size}) in task: {name}"))
    elif tmin is None and min_parts > 0 and min_parts * size > replicas:
        # the job webhook's mutateSpec sets a task's missing minAvailable to minPartitions * partitionSize, and
        # validateJobCreate then refuses a minAvailable above the replicas (admit_job.go); without it the
        # PodGroup would ask for more partitions than exist and pend forever
        out.append(JobProblem(ref, f"{where}.minPartitions", f"'minAvailable' is greater than 'replicas' in task: "
                                                             f"{name}, job: {job_name} (minAvailable defaults to "
                                                             f"MinPartitions*PartitionSize = {min_parts}*{size}, "
                                                             f"replicas are {replicas})"))
    elif tmin is not None and min_parts > 0 and min_parts * size != tmin:
        out.append(JobProblem(ref, f"{where}.minPartitions", f"'MinAvailable' ({tmin}) is not equal to "
                                                             f"MinPartitions*PartitionSize ({min_parts}*{size}) in "
                                                             f"task: {name}"))
    return out + _network_topology(ref, f"{where}.networkTopology", pp.networkTopology)


def _plugins(ref: str, job: Job, known_plugins: Iterable[str] | None) -> list[JobProblem]:
    """``spec.plugins`` (typed: a map of plugin name to a list of string arguments): every name one of Volcano's
    job plugins (``validateJobCreate``: "unable to find job plugin"); the mpi plugin's master task among the
    tasks (the same function); and, where Volcano only logs a flag-parse failure when the controller builds the
    plugin (``addFlags``) and goes on with the defaults, each plugin's arguments parsing
    (``api/job_plugin_args.py``), and the ray plugin's head task existing (Volcano's controller fails every pod
    creation without it): such a Job is refused here, with Go's message."""
    plugins = job.spec.plugins
    if not plugins:
        return []
    known = set(VOLCANO_PLUGINS if known_plugins is None else known_plugins)
    names = {t.name or f"task{i}" for i, t in enumerate(job.spec.tasks or [])}
    out: list[JobProblem] = []
    for name, args in plugins.items():
        if name not in known:
            out.append(JobProblem(ref, "spec.plugins", f"unable to find job plugin {name!r} (known: "
                                                       f"{', '.join(sorted(known))})"))
            continue
        parsed = parse(name, args)
        if parsed.error:
            out.append(JobProblem(ref, f"spec.plugins.{name}", f"plugin {name} flagset parse failed, err: "
                                                               f"{parsed.error}"))
        elif name == "mpi" and parsed.text("master") not in names:
            out.append(JobProblem(ref, "spec.plugins.mpi", "The specified mpi master task was not found"))
        elif name == "ray" and parsed.text("head") not in names:
            out.append(JobProblem(ref, "spec.plugins.ray", f"job {job.metadata.name} doesn't have head task "
                                                           f"{parsed.text('head')}"))
    return out


def typed_job(job: Mapping[str, Any], model: type[Job] = Job) -> Job | JobProblem:
    """``job`` through the boundary (``api/job_model.py``): the typed Job, or the first type mistake as a
    problem naming the Job and the field."""
    try:
        return model.model_validate(job)
    except ValidationError as exc:
        path, msg = first_error(exc)
        return JobProblem(job_ref(job), field_path((path or "(object)").replace(".[", "[")), msg)


def job_update_problems(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[JobProblem]:
    """Why Volcano's webhook refuses changing Job ``old`` into ``new`` (``admit_job.go: validateJobUpdate``, which
    stops at the first problem): a task's replicas and minAvailable, the job's minAvailable and its priority
    class may change, within the create-time bounds; tasks may not be added or removed; nothing else under
    ``spec`` may change (a task's template, the queue, the plugins, the policies...).  Both Jobs are typed first
    (``api/job_model.py``)."""
    ref = job_ref(new)
    typed_new, typed_old = typed_job(new), typed_job(old)
    if isinstance(typed_new, JobProblem):
        return [typed_new]
    if isinstance(typed_old, JobProblem):
        return [JobProblem(ref, f"(the stored Job) {typed_old.field}", typed_old.problem)]
    otasks, ntasks = typed_old.spec.tasks or [], typed_new.spec.tasks or []
    total = 0
    for i, t in enumerate(ntasks):
        at, name = f"spec.tasks[{i}]", t.name or ""
        replicas = t.replicas
        if replicas < 0:
            return [JobProblem(ref, f"{at}.replicas", f"'replicas' must be >= 0 in task: {name}")]
        if t.minAvailable is not None:
            if t.minAvailable < 0:
                return [JobProblem(ref, f"{at}.minAvailable", f"'minAvailable' must be >= 0 in task: {name}")]
            if t.minAvailable > replicas:
                return [JobProblem(ref, f"{at}.minAvailable", f"'minAvailable' must be <= 'replicas' in task: "
                                                              f"{name}")]
        partition = _partition_policy(ref, at, t, replicas, typed_new.metadata.name)
        if partition:
            return partition[:1]
        total += replicas
    min_available = typed_new.spec.minAvailable or 0
    if min_available > total:
        return [JobProblem(ref, "spec.minAvailable", "job 'minAvailable' must not be greater than total replicas")]
    if min_available < 0:
        return [JobProblem(ref, "spec.minAvailable", "job 'minAvailable' must be >= 0")]
    if _both_tiers(typed_new.spec.networkTopology):
        return [JobProblem(ref, "spec.networkTopology", "must not specify 'highestTierAllowed' and "
                                                        "'highestTierName' in networkTopology simultaneously")]
    if len(otasks) != len(ntasks):
        return [JobProblem(ref, "spec.tasks", "job updates may not add or remove tasks")]
    if _frozen_spec(old["spec"]) != _frozen_spec(new["spec"]):
        return [JobProblem(ref, "spec", "job updates may not change fields other than `minAvailable`, "
                                        "`tasks[*].replicas under spec` and `PriorityClassName`")]
    return []


def _frozen_spec(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The part of a Job's spec an update may not change: all of it but minAvailable, priorityClassName, each
    task's replicas and minAvailable, and the claim names the controller fills in for ``volumes[*].volumeClaim``
    (``validateJobUpdate`` copies those from the old spec before comparing)."""
    out = {k: v for k, v in spec.items() if k not in ("minAvailable", "priorityClassName")}
    out["tasks"] = [{k: v for k, v in t.items() if k not in ("replicas", "minAvailable")}
                    for t in spec.get("tasks") or []]
    if spec.get("volumes"):
        out["volumes"] = [{k: v for k, v in vol.items() if not (k == "volumeClaimName" and vol.get("volumeClaim"))}
                          for vol in spec["volumes"]]
    return out


def job_ref(job: Mapping[str, Any]) -> str:
    meta = job.get("metadata")
    md: Mapping[str, Any] = meta if isinstance(meta, dict) else {}
    return f"Job {md.get('namespace') or 'default'}/{md.get('name') or '<unnamed>'}"


def job_problems(job: Mapping[str, Any], queues: Mapping[str, Mapping[str, Any]] | Iterable[str] | None = None,
                 known_plugins: Iterable[str] | None = None, model: type[Job] = Job) -> list[JobProblem]:
    """Everything wrong with a Job, in the webhook's order (validateJobCreate), after the Job passed the typed
    boundary (``model``: ``api/job_model.py: Job``, or the simulator's ``WorkloadJob``; a type mistake is the one
    problem).  ``queues``: the Queue objects by name (their state is checked too) or just the names that exist;
    None skips the queue checks.  ``known_plugins``: the job plugins (``spec.plugins``) there are; None: Volcano's."""
    typed = typed_job(job, model)
    if isinstance(typed, JobProblem):
        return [typed]
    ref = job_ref(job)
    name = typed.metadata.name
    if len(name) > 63 or not _DNS1123_SUBDOMAIN.fullmatch(name):
        # the API server's object name rule (a DNS-1123 subdomain) and the webhook's validateJobName
        # (IsQualifiedName: at most 63 characters), both in one message
        return [JobProblem(ref, "metadata.name", f"create job with name {name[:80]!r} validate failed: a "
                                                 "lower case DNS-1123 name of at most 63 characters is required")]
    spec = typed.spec
    out: list[JobProblem] = _network_topology(ref, "spec.networkTopology", spec.networkTopology)
    min_available = spec.minAvailable or 0
    if min_available < 0:
        out.append(JobProblem(ref, "spec.minAvailable", f"must be >= 0, got {min_available!r}"))
    for f in ("maxRetry", "ttlSecondsAfterFinished"):
        v = getattr(spec, f)
        if v is not None and v < 0:
            out.append(JobProblem(ref, f"spec.{f}", f"must be >= 0, got {v!r}"))
    tasks = spec.tasks or []
    if not tasks:
        out.append(JobProblem(ref, "spec.tasks", "no task specified in job spec"))
    total = 0
    names: set[str] = set()
    for i, t in enumerate(tasks):
        at = f"spec.tasks[{i}]"
        tname = t.name or ""
        if tname:
            if not _DNS1123_LABEL.fullmatch(tname) or len(tname) > 63:
                out.append(JobProblem(ref, f"{at}.name", f"{tname!r} must be a DNS-1123 label (lower case letters, "
                                                         "digits and '-')"))
            elif tname in names:
                out.append(JobProblem(ref, f"{at}.name", f"duplicated task name {tname!r}"))
            names.add(tname)
        replicas = t.replicas
        if replicas < 0:
            out.append(JobProblem(ref, f"{at}.replicas", f"must be >= 0, got {replicas!r}"))
            replicas = 0
        total += replicas
        if t.minAvailable is not None:
            if t.minAvailable < 0:
                out.append(JobProblem(ref, f"{at}.minAvailable", f"must be >= 0, got {t.minAvailable!r}"))
            elif t.minAvailable > replicas:
                out.append(JobProblem(ref, f"{at}.minAvailable", f"({t.minAvailable}) is greater than replicas "
                                                                 f"({replicas})"))
        if t.template is None or t.template.spec is None:
            out.append(JobProblem(ref, f"{at}.template.spec.containers", "at least one container is required"))
        out += _partition_policy(ref, at, t, replicas, name)
        out += _policies(ref, at, t.policies)
    if min_available > total:
        out.append(JobProblem(ref, "spec.minAvailable", f"({min_available}) should not be greater than total "
                                                        f"replicas in tasks ({total})"))
    out += _policies(ref, "spec", spec.policies)
    out += _plugins(ref, typed, known_plugins)
    if queues is not None:
        qname = spec.queue or "default"
        if isinstance(queues, Mapping):
            q = queues.get(qname)
            if q is None:
                out.append(JobProblem(ref, "spec.queue", f"unable to find job queue {qname!r}"))
            else:
                state = ((q.get("status") or {}).get("state")) or "Open"
                if state != "Open":
                    out.append(JobProblem(ref, "spec.queue", f"can only submit job to queue with state Open, queue "
                                                             f"{qname!r} status is {state!r}"))
        elif qname not in set(queues):
            out.append(JobProblem(ref, "spec.queue", f"unable to find job queue {qname!r}"))
    return out
