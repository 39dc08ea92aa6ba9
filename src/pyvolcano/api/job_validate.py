"""The one validator of ``batch.volcano.sh/v1alpha1`` Jobs, used by the simulator (``sim/engine.py`` through
``controllers/vcjob.py: validate_job``), the job controller (``kube/controller.py``) and client-side admission
(``pyvolcano job run``, ``kube/validation.py``).

The rules are Volcano's admission webhook (``pkg/webhooks/admission/jobs/validate/admit_job.go``: validateJobCreate,
and ``util.go``: validatePolicies with its ``policyEventMap`` / ``policyActionMap``), with the events and actions of
``volcano.sh/apis`` (``pkg/apis/bus/v1alpha1/events.go``, ``actions.go``); messages use the webhook's words.
``_plugins`` checks ``spec.plugins`` (names, Go-flag arguments: ``api/job_plugin_args.py``);
``job_update_problems`` is the webhook's validateJobUpdate, for a change to a running Job.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from pyvolcano.api.job_plugin_args import VOLCANO_PLUGINS, parse
from pyvolcano.api.models import LifecyclePolicy, ascii_int, first_error
from pyvolcano.api.resource import amount
from pyvolcano.errors import QuantityError

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


def _int(v: Any) -> int | None:
    """An integer field as the API server reads it (``api/models.py: _integer`` without bounds): an int, an
    integral finite float (YAML ``1e3``) or ASCII digits; None for anything else (``true``, ``2.5``, ``"٣"``)."""
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float):
        return int(v) if math.isfinite(v) and v == int(v) else None
    if isinstance(v, str):
        try:
            return ascii_int(v)
        except ValueError:
            return None
    return None


def policy_events(policy: Mapping[str, Any]) -> list[str]:
    """A policy's ``event`` and ``events``, without repeats (Volcano's getEventList)."""
    out: list[str] = []
    for e in [*(policy.get("events") or []), *([policy["event"]] if policy.get("event") else [])]:
        if e not in out:
            out.append(e)
    return out


def _policies(ref: str, where: str, policies: Any) -> list[JobProblem]:
    """Volcano's validatePolicies: stops at the first bad policy, as the webhook does.  Each entry is first typed
    by ``api/models.py: LifecyclePolicy`` (an ``event`` given as a list, an ``exitCode`` of ``true`` is refused
    there, naming the field)."""
    if policies in (None, []):
        return []
    if not isinstance(policies, list):
        return [JobProblem(ref, f"{where}.policies", "must be a list")]
    out: list[JobProblem] = []
    seen: set[str] = set()
    codes: set[int] = set()
    for i, p in enumerate(policies):
        at = f"{where}.policies[{i}]"
        try:
            m = LifecyclePolicy.model_validate(p)
        except ValidationError as exc:
            sub, msg = first_error(exc)
            return [*out, JobProblem(ref, f"{at}.{sub}".rstrip(".").replace(".[", "["), msg)]
        events = policy_events(p)
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


def _network_topology(ref: str, at: str, nt: Any) -> list[JobProblem]:
    """A job's or a partition's ``networkTopology``: the CRD's schema (mode hard or soft, ``highestTierAllowed``
    >= 0, ``highestTierName`` at most 253 characters) and the webhook's ``validateNetworkTopology`` (not both)."""
    if nt is None:
        return []
    if not isinstance(nt, dict):
        return [JobProblem(ref, at, "must be a mapping")]
    out: list[JobProblem] = []
    if nt.get("mode") not in (None, "", "hard", "soft"):
        out.append(JobProblem(ref, f"{at}.mode", f"must be hard or soft, got {nt['mode']!r}"))
    tier = nt.get("highestTierAllowed")
    if tier is not None and (_int(tier) is None or (_int(tier) or 0) < 0):
        out.append(JobProblem(ref, f"{at}.highestTierAllowed", f"must be an integer >= 0, got {tier!r}"))
    name = nt.get("highestTierName")
    if name is not None and (not isinstance(name, str) or len(name) > 253):
        out.append(JobProblem(ref, f"{at}.highestTierName", "must be a string of at most 253 characters"))
    if tier is not None and name:
        out.append(JobProblem(ref, at, "must not specify 'highestTierAllowed' and 'highestTierName' in "
                                       "networkTopology simultaneously"))
    return out


def _partition_policy(ref: str, at: str, task: Mapping[str, Any], replicas: int, job_name: str) -> list[JobProblem]:
    """A task's ``partitionPolicy``: the CRD's minimums (totalPartitions and partitionSize >= 1, minPartitions >=
    0) and the webhook's ``validatePartitionPolicy``, which stops at the first of: totalPartitions and
    partitionSize positive, replicas = totalPartitions * partitionSize, and (when minPartitions is set)
    minAvailable = minPartitions * partitionSize; then the partition's networkTopology."""
    pp = task.get("partitionPolicy")
    if pp is None:
        return []
    where = f"{at}.partitionPolicy"
    if not isinstance(pp, dict):
        return [JobProblem(ref, where, "must be a mapping")]
    total, size = _int(pp.get("totalPartitions", 0)), _int(pp.get("partitionSize", 0))
    min_parts = _int(pp.get("minPartitions", 0))
    name = task.get("name") or ""
    out: list[JobProblem] = []
    if min_parts is None or min_parts < 0:
        out.append(JobProblem(ref, f"{where}.minPartitions", f"must be >= 0, got {pp.get('minPartitions')!r}"))
        min_parts = 0
    tmin = _int(task["minAvailable"]) if task.get("minAvailable") is not None else None
    if total is None or total <= 0:
        out.append(JobProblem(ref, f"{where}.totalPartitions", f"'TotalPartitions' must be greater than 0 in task: "
                                                               f"{name}"))
    elif size is None or size <= 0:
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
    return out + _network_topology(ref, f"{where}.networkTopology", pp.get("networkTopology"))


def _plugins(ref: str, job: Mapping[str, Any], known_plugins: Iterable[str] | None) -> list[JobProblem]:
    """``spec.plugins``: every name one of Volcano's job plugins (``validateJobCreate``: "unable to find job
    plugin"); the mpi plugin's master task among the tasks (the same function); and, where Volcano only logs a
    flag-parse failure when the controller builds the plugin (``addFlags``) and goes on with the defaults, each
    plugin's arguments parsing (``api/job_plugin_args.py``), and the ray plugin's head task existing (Volcano's
    controller fails every pod creation without it): such a Job is refused here, with Go's message."""
    plugins = job["spec"].get("plugins")
    if plugins in (None, {}):
        return []
    if not isinstance(plugins, dict):
        return [JobProblem(ref, "spec.plugins", "must be a mapping of plugin name to its list of arguments")]
    known = set(VOLCANO_PLUGINS if known_plugins is None else known_plugins)
    tasks = job["spec"].get("tasks")
    names = {t.get("name") or f"task{i}" for i, t in enumerate(tasks) if isinstance(t, dict)} \
        if isinstance(tasks, list) else set()
    out: list[JobProblem] = []
    for name, args in plugins.items():
        if name not in known:
            out.append(JobProblem(ref, "spec.plugins", f"unable to find job plugin {name!r} (known: "
                                                       f"{', '.join(sorted(known))})"))
            continue
        parsed = parse(str(name), args)
        if parsed.error:
            out.append(JobProblem(ref, f"spec.plugins.{name}", f"plugin {name} flagset parse failed, err: "
                                                               f"{parsed.error}"))
        elif name == "mpi" and parsed.text("master") not in names:
            out.append(JobProblem(ref, "spec.plugins.mpi", "The specified mpi master task was not found"))
        elif name == "ray" and parsed.text("head") not in names:
            out.append(JobProblem(ref, "spec.plugins.ray", f"job {job['metadata']['name']} doesn't have head task "
                                                           f"{parsed.text('head')}"))
    return out


def job_update_problems(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[JobProblem]:
    """Why Volcano's webhook refuses changing Job ``old`` into ``new`` (``admit_job.go: validateJobUpdate``, which
    stops at the first problem): a task's replicas and minAvailable, the job's minAvailable and its priority
    class may change, within the create-time bounds; tasks may not be added or removed; nothing else under
    ``spec`` may change (a task's template, the queue, the plugins, the policies...)."""
    ref = job_ref(new)
    ospec, nspec = old.get("spec"), new.get("spec")
    if not isinstance(ospec, dict) or not isinstance(nspec, dict):
        return [JobProblem(ref, "spec", "is required")]
    otasks, ntasks = ospec.get("tasks") or [], nspec.get("tasks") or []
    if not isinstance(otasks, list) or not isinstance(ntasks, list) or \
            not all(isinstance(t, dict) for t in [*otasks, *ntasks]):
        return [JobProblem(ref, "spec.tasks", "must be a list of tasks")]
    total = 0
    for i, t in enumerate(ntasks):
        at, name = f"spec.tasks[{i}]", t.get("name") or ""
        replicas = _int(t.get("replicas", 1))
        if replicas is None or replicas < 0:
            return [JobProblem(ref, f"{at}.replicas", f"'replicas' must be >= 0 in task: {name}")]
        if t.get("minAvailable") is not None:
            tmin = _int(t["minAvailable"])
            if tmin is None or tmin < 0:
                return [JobProblem(ref, f"{at}.minAvailable", f"'minAvailable' must be >= 0 in task: {name}")]
            if tmin > replicas:
                return [JobProblem(ref, f"{at}.minAvailable", f"'minAvailable' must be <= 'replicas' in task: "
                                                              f"{name}")]
        partition = _partition_policy(ref, at, t, replicas, str((new.get("metadata") or {}).get("name") or ""))
        if partition:
            return partition[:1]
        total += replicas
    min_available = _int(nspec.get("minAvailable", 0))
    if min_available is not None and min_available > total:
        return [JobProblem(ref, "spec.minAvailable", "job 'minAvailable' must not be greater than total replicas")]
    if min_available is None or min_available < 0:
        return [JobProblem(ref, "spec.minAvailable", "job 'minAvailable' must be >= 0")]
    nt = nspec.get("networkTopology")
    if isinstance(nt, dict) and nt.get("highestTierAllowed") is not None and nt.get("highestTierName"):
        return [JobProblem(ref, "spec.networkTopology", "must not specify 'highestTierAllowed' and "
                                                        "'highestTierName' in networkTopology simultaneously")]
    if len(otasks) != len(ntasks):
        return [JobProblem(ref, "spec.tasks", "job updates may not add or remove tasks")]
    if _frozen_spec(ospec) != _frozen_spec(nspec):
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
    if isinstance(spec.get("volumes"), list):
        out["volumes"] = [{k: v for k, v in vol.items() if not (k == "volumeClaimName" and vol.get("volumeClaim"))}
                          if isinstance(vol, dict) else vol for vol in spec["volumes"]]
    return out


def job_ref(job: Mapping[str, Any]) -> str:
    meta = job.get("metadata")
    md: Mapping[str, Any] = meta if isinstance(meta, dict) else {}
    return f"Job {md.get('namespace') or 'default'}/{md.get('name') or '<unnamed>'}"


def job_problems(job: Mapping[str, Any], queues: Mapping[str, Mapping[str, Any]] | Iterable[str] | None = None,
                 known_plugins: Iterable[str] | None = None) -> list[JobProblem]:
    """Everything wrong with a Job, in the webhook's order (validateJobCreate).  ``queues``: the Queue objects by
    name (their state is checked too) or just the names that exist; None skips the queue checks.
    ``known_plugins``: the job plugins (``spec.plugins``) there are; None: Volcano's."""
    ref = job_ref(job)
    meta = job.get("metadata")
    if not isinstance(meta, dict) or not meta.get("name"):
        return [JobProblem(ref, "metadata.name", "is required")]
    name = meta["name"]
    if not isinstance(name, str) or len(name) > 63 or not _DNS1123_SUBDOMAIN.fullmatch(name):
        # the API server's object name rule (a DNS-1123 subdomain) and the webhook's validateJobName
        # (IsQualifiedName: at most 63 characters), both in one message
        return [JobProblem(ref, "metadata.name", f"create job with name {str(name)[:80]!r} validate failed: a "
                                                 "lower case DNS-1123 name of at most 63 characters is required")]
    spec = job.get("spec")
    if not isinstance(spec, dict):
        return [JobProblem(ref, "spec", "is required")]
    out: list[JobProblem] = _network_topology(ref, "spec.networkTopology", spec.get("networkTopology"))
    min_available = _int(spec.get("minAvailable", 0))
    if min_available is None or min_available < 0:
        out.append(JobProblem(ref, "spec.minAvailable", f"must be >= 0, got {spec.get('minAvailable')!r}"))
    for f in ("maxRetry", "ttlSecondsAfterFinished"):
        v = _int(spec[f]) if spec.get(f) is not None else 0
        if v is None or v < 0:
            out.append(JobProblem(ref, f"spec.{f}", f"must be >= 0, got {spec[f]!r}"))
    tasks = spec.get("tasks")
    if not isinstance(tasks, list) or not tasks:
        out.append(JobProblem(ref, "spec.tasks", "no task specified in job spec"))
        tasks = []
    total = 0
    names: set[str] = set()
    for i, t in enumerate(tasks):
        at = f"spec.tasks[{i}]"
        if not isinstance(t, dict):
            out.append(JobProblem(ref, at, "must be a mapping"))
            continue
        name = t.get("name") or ""
        if name:
            if not isinstance(name, str) or not _DNS1123_LABEL.fullmatch(name) or len(name) > 63:
                out.append(JobProblem(ref, f"{at}.name", f"{name!r} must be a DNS-1123 label (lower case letters, "
                                                         "digits and '-')"))
            elif name in names:
                out.append(JobProblem(ref, f"{at}.name", f"duplicated task name {name!r}"))
            names.add(str(name))
        replicas = _int(t.get("replicas", 1))
        if replicas is None or replicas < 0:
            out.append(JobProblem(ref, f"{at}.replicas", f"must be >= 0, got {t.get('replicas')!r}"))
            replicas = 0
        total += replicas
        if t.get("minAvailable") is not None:
            tmin = _int(t["minAvailable"])
            if tmin is None or tmin < 0:
                out.append(JobProblem(ref, f"{at}.minAvailable", f"must be >= 0, got {t['minAvailable']!r}"))
            elif tmin > replicas:
                out.append(JobProblem(ref, f"{at}.minAvailable", f"({tmin}) is greater than replicas ({replicas})"))
        template = t.get("template")
        pod_spec = template.get("spec") if isinstance(template, dict) else None
        if not isinstance(pod_spec, dict) or not pod_spec.get("containers"):
            out.append(JobProblem(ref, f"{at}.template.spec.containers", "at least one container is required"))
        else:
            for ci, c in enumerate(pod_spec["containers"]):
                res = (c or {}).get("resources") if isinstance(c, dict) else None
                for kind in ("requests", "limits"):
                    amounts = (res or {}).get(kind) if isinstance(res, dict) else None
                    for rname, q in (amounts.items() if isinstance(amounts, dict) else ()):
                        try:
                            amount(str(rname), q)
                        except QuantityError as exc:
                            out.append(JobProblem(ref, f"{at}.template.spec.containers[{ci}].resources.{kind}."
                                                       f"{rname}", str(exc)))
        out += _partition_policy(ref, at, t, replicas, str(meta["name"]))
        out += _policies(ref, at, t.get("policies"))
    if min_available is not None and min_available > total:
        out.append(JobProblem(ref, "spec.minAvailable", f"({min_available}) should not be greater than total "
                                                        f"replicas in tasks ({total})"))
    out += _policies(ref, "spec", spec.get("policies"))
    out += _plugins(ref, job, known_plugins)
    if queues is not None:
        qname = spec.get("queue") or "default"
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
