"""Volcano's admission rules for the kinds that ``api/job_validate.py`` (Jobs) and ``kube/validation.py`` (Queues)
do not cover, and every mutating default: the rule set the webhook (``kube/webhook.py``) serves, next to those
two, so that the webhook, the controllers, the simulator and ``pyvolcano job run`` share one set of rules.

Each validator returns Volcano's message ("" when the object is admitted); each mutator returns RFC 6902 JSON
patch operations, in Volcano's order.  Sources: ``pkg/webhooks/admission/`` of Volcano (file and function named on
each rule).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Mapping
from typing import Any

from pyvolcano.api.cron import CronError, parse, time_zone_problems

Patch = list[dict[str, Any]]

DEFAULT_QUEUE = "default"
DEFAULT_MAX_RETRY = 3
DEFAULT_TASK_SPEC = "default"
HIERARCHY = "volcano.sh/hierarchy"
HIERARCHY_WEIGHTS = "volcano.sh/hierarchy-weights"
QUEUE_NAME_ANNOTATION = "scheduling.volcano.sh/queue-name"
JDB_MIN_AVAILABLE = "volcano.sh/jdb-min-available"
JDB_MAX_UNAVAILABLE = "volcano.sh/jdb-max-unavailable"
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")


def _int(v: Any, default: int = 0) -> int:
    if v is None or isinstance(v, bool):
        return default
    try:
        return int(v)
    except (TypeError, ValueError, OverflowError):
        return default


def _escape(key: str) -> str:
    """A map key as one JSON-pointer segment (RFC 6901)."""
    return key.replace("~", "~0").replace("/", "~1")


# --- Jobs (mutating) ---------------------------------------------------------------------------------------------
def mutate_job(job: Mapping[str, Any], scheduler_name: str = "volcano") -> Patch:
    """``jobs/mutate/mutate_job.go: createPatch``: queue ``default``, the scheduler name, ``maxRetry`` 3, task
    defaults (name ``default<i>``, ClusterFirstWithHostNet DNS for host networking, minAvailable = replicas or
    minPartitions*partitionSize, maxRetry 3; the tasks are replaced whole when any changed), the job's
    minAvailable as the sum of the tasks', and the ``svc`` (tensorflow, mpi, pytorch, ray) and ``ssh`` (mpi)
    plugins those plugins need."""
    spec = job.get("spec") if isinstance(job.get("spec"), dict) else {}
    assert isinstance(spec, dict)
    patch: Patch = []
    if not spec.get("queue"):
        patch.append({"op": "add", "path": "/spec/queue", "value": DEFAULT_QUEUE})
    if not spec.get("schedulerName"):
        patch.append({"op": "add", "path": "/spec/schedulerName", "value": scheduler_name})
    if _int(spec.get("maxRetry")) == 0:
        patch.append({"op": "add", "path": "/spec/maxRetry", "value": DEFAULT_MAX_RETRY})
    raw_tasks = spec.get("tasks")
    tasks: list[Any] = copy.deepcopy(raw_tasks) if isinstance(raw_tasks, list) else []
    patched = False
    for i, t in enumerate(tasks):
        if not isinstance(t, dict):
            continue
        if not t.get("name"):
            t["name"], patched = f"{DEFAULT_TASK_SPEC}{i}", True
        pod_spec = (t.get("template") or {}).get("spec") if isinstance(t.get("template"), dict) else None
        if isinstance(pod_spec, dict) and pod_spec.get("hostNetwork") and not pod_spec.get("dnsPolicy"):
            pod_spec["dnsPolicy"], patched = "ClusterFirstWithHostNet", True
        if t.get("minAvailable") is None:
            pp = t.get("partitionPolicy") if isinstance(t.get("partitionPolicy"), dict) else {}
            assert isinstance(pp, dict)
            if _int(pp.get("minPartitions")) > 0:
                t["minAvailable"] = _int(pp.get("minPartitions")) * _int(pp.get("partitionSize"))
            else:
                t["minAvailable"] = _int(t.get("replicas"))
            patched = True
        if _int(t.get("maxRetry")) == 0:
            t["maxRetry"], patched = DEFAULT_MAX_RETRY, True
    if patched:
        patch.append({"op": "replace", "path": "/spec/tasks", "value": tasks})
    if _int(spec.get("minAvailable")) == 0:
        # Volcano sums the tasks as they were before the task defaults (its tasks slice is mutated in place first,
        # so a task without minAvailable counts its defaulted minAvailable, i.e. its replicas)
        total: int = sum(_int(t.get("minAvailable"), _int(t.get("replicas"))) for t in tasks if isinstance(t, dict))
        patch.append({"op": "add", "path": "/spec/minAvailable", "value": total})
    plugins = spec.get("plugins")
    if isinstance(plugins, dict):
        merged = dict(plugins)
        if {"tensorflow", "mpi", "pytorch", "ray"} & set(plugins):
            merged.setdefault("svc", [])
        if "mpi" in plugins:
            merged.setdefault("ssh", [])
        patch.append({"op": "replace", "path": "/spec/plugins", "value": merged})
    return patch


# --- Queues ------------------------------------------------------------------------------------------------------
def mutate_queue(queue: Mapping[str, Any]) -> Patch:
    """``queues/mutate/mutate_queue.go: createQueuePatch``: a hierarchy not rooted at ``root`` gets ``root/`` and a
    weight of 1 in front; ``reclaimable`` defaults to true and ``weight`` to 1."""
    md = queue.get("metadata") if isinstance(queue.get("metadata"), dict) else {}
    spec = queue.get("spec") if isinstance(queue.get("spec"), dict) else {}
    assert isinstance(md, dict) and isinstance(spec, dict)
    ann = md.get("annotations") or {}
    patch: Patch = []
    hierarchy, weights = ann.get(HIERARCHY) or "", ann.get(HIERARCHY_WEIGHTS) or ""
    if hierarchy and weights and not hierarchy.startswith("root"):
        patch.append({"op": "add", "path": f"/metadata/annotations/{_escape(HIERARCHY)}", "value": f"root/{hierarchy}"})
        patch.append({"op": "add", "path": f"/metadata/annotations/{_escape(HIERARCHY_WEIGHTS)}",
                      "value": f"1/{weights}"})
    if spec.get("reclaimable") is None:
        patch.append({"op": "add", "path": "/spec/reclaimable", "value": True})
    if _int(spec.get("weight")) == 0:
        patch.append({"op": "add", "path": "/spec/weight", "value": 1})
    return patch


def validate_queue_delete(name: str, queues: Mapping[str, Mapping[str, Any]]) -> str:
    """``queues/validate/validate_queue.go: validateQueueDeleting``: ``default`` and ``root`` stay; a queue with
    child queues cannot go (the allocated-pods check needs the scheduler's numbers and is left to it)."""
    if name in ("default", "root"):
        return f"`{name}` queue can not be deleted"
    children = sorted(n for n, q in queues.items() if ((q.get("spec") or {}).get("parent") or "") == name)
    if children:
        return f"queue {name} can not be deleted because it has {len(children)} child queues: {', '.join(children)}"
    return ""


# --- PodGroups ---------------------------------------------------------------------------------------------------
def mutate_podgroup(pg: Mapping[str, Any], namespace_annotations: Mapping[str, str] | None) -> Patch:
    """``podgroups/mutate/mutate_podgroup.go: createPodGroupPatch``: a PodGroup in queue ``default`` goes to the
    queue its namespace names in ``scheduling.volcano.sh/queue-name``."""
    spec = pg.get("spec") if isinstance(pg.get("spec"), dict) else {}
    assert isinstance(spec, dict)
    if (spec.get("queue") or "") != DEFAULT_QUEUE or not namespace_annotations:
        return []
    val = namespace_annotations.get(QUEUE_NAME_ANNOTATION)
    return [] if val is None else [{"op": "add", "path": "/spec/queue", "value": val}]


def _topology_both(nt: Any) -> bool:
    return isinstance(nt, dict) and nt.get("highestTierAllowed") is not None and bool(nt.get("highestTierName"))


def validate_podgroup(pg: Mapping[str, Any], queues: Mapping[str, Mapping[str, Any]]) -> str:
    """``podgroups/validate/validate_podgroup.go: validatePodGroup``: its queue must exist and be Open; its
    network topology (and the first subGroupPolicy's) must not set both a tier and a tier name."""
    spec = pg.get("spec") if isinstance(pg.get("spec"), dict) else {}
    assert isinstance(spec, dict)
    errs: list[str] = []
    qname = spec.get("queue") or ""
    if qname:
        q = queues.get(qname)
        if q is None:
            errs.append(f'unable to find queue: queue.scheduling.volcano.sh "{qname}" not found')
        else:
            state = (q.get("status") or {}).get("state") or ""
            if state != "Open":
                errs.append(f"can only submit PodGroup to queue with state `Open`, queue `{qname}` status is "
                            f"`{state}`.")
    topo: list[str] = []
    if _topology_both(spec.get("networkTopology")):
        topo.append("must not specify 'highestTierAllowed' and 'highestTierName' in networkTopology simultaneously.")
    for policy in spec.get("subGroupPolicy") or []:
        if isinstance(policy, dict) and _topology_both(policy.get("networkTopology")):
            topo.append(f"in subGroupPolicy '{policy.get('name', '')}': must not specify 'highestTierAllowed' and "
                        "'highestTierName' in networkTopology simultaneously.")
            break
    if topo:
        errs.append(" ".join(topo))
    return "; ".join(errs)


# --- Pods --------------------------------------------------------------------------------------------------------
def _int_or_percent(key: str, value: str) -> str:
    """``pods/validate/admit_pod.go: validateIntPercentageStr`` (intstr.Parse: an integer, else a string)."""
    try:
        n = int(value)
    except ValueError:
        s = value.replace("%", "")
        try:
            v = int(s)
        except ValueError:
            return f'invalid value strconv.Atoi: parsing "{s}": invalid syntax for {key}'
        if v <= 0 or v >= 100:
            return f"invalid value <{value!r}> for {key}, it must be a valid percentage which between 1% ~ 99%"
        return ""
    if n <= 0:
        return f"invalid value <{value!r}> for {key}, it must be a positive integer"
    return ""


def validate_pod(pod: Mapping[str, Any], scheduler_names: tuple[str, ...] = ("volcano",)) -> str:
    """``pods/validate/admit_pod.go: validatePod``: a pod for a Volcano scheduler may carry one of the
    job-disruption-budget annotations (an integer > 0 or a percentage 1%-99%), not both."""
    if ((pod.get("spec") or {}).get("schedulerName") or "") not in scheduler_names:
        return ""
    ann = (pod.get("metadata") or {}).get("annotations") or {}
    keys = [JDB_MIN_AVAILABLE, JDB_MAX_UNAVAILABLE]
    found = 0
    for key in keys:
        if key in ann:
            found += 1
            msg = _int_or_percent(key, str(ann[key]))
            if msg:
                return msg
    if found > 1:
        return f"not allow configure multiple annotations <[{' '.join(keys)}]> at same time"
    return ""


# --- HyperNodes --------------------------------------------------------------------------------------------------
def validate_hypernode(hn: Mapping[str, Any]) -> str:
    """``hypernodes/validate/admit_hypernode.go: validateHyperNode``: at least one member; each member's
    ``regexMatch.pattern`` compiles (with Python's ``re``, as the HyperNode controller matches members with it)."""
    spec = hn.get("spec") if isinstance(hn.get("spec"), dict) else {}
    assert isinstance(spec, dict)
    members = spec.get("members") or []
    errs: list[str] = []
    if not members:
        errs.append("spec.members: Invalid value: null: member must have at least one member")
    for m in members if isinstance(members, list) else []:
        pattern = (((m or {}).get("selector") or {}).get("regexMatch") or {}).get("pattern") if isinstance(m, dict) \
            else None
        if pattern:
            try:
                re.compile(str(pattern))
            except re.error as exc:
                errs.append(f'spec.members.selector.regexMatch.pattern: Invalid value: "{pattern}": member regexMatch '
                            f"pattern is invalid: {exc}")
    if len(errs) > 1:
        return "[" + ", ".join(errs) + "]"
    return errs[0] if errs else ""


# --- CronJobs ----------------------------------------------------------------------------------------------------
def validate_cronjob(cj: Mapping[str, Any]) -> str:
    """``cronjobs/validate/admit_cronjob.go: validateCronJob``: a schedule that parses (five fields or a
    descriptor, no TZ), a valid IANA ``timeZone``, and a name short enough for the jobs' ``-<minutes>`` suffix.
    The job template itself is a Job and is checked by the Job rules when the controller creates it."""
    spec = cj.get("spec") if isinstance(cj.get("spec"), dict) else {}
    assert isinstance(spec, dict)
    msgs: list[str] = []
    schedule = spec.get("schedule") or ""
    if not schedule:
        msgs.append("schedule is required, but got empty")
    elif "TZ" in str(schedule):
        msgs.append("schedule should not contain TZ or CRON_TZ, TZ should only be set in the timeZone field")
    else:
        try:
            parse(str(schedule), None)
        except CronError:
            msgs.append("schedule is not a valid cron expression")
    tz = spec.get("timeZone")
    msgs += time_zone_problems(None if tz is None else str(tz))
    errs = [" ".join(msgs)] if msgs else []
    name = str((cj.get("metadata") or {}).get("name") or "")
    if len(name) > 52:
        errs.append("cronJob name must be no more than 52 characters to accommodate job name suffix (max 63 total)")
    elif len(name) > 63 or not _QUALIFIED_NAME.match(name):
        errs.append(f'invalid cronJob name "{name}": name part must consist of alphanumeric characters, \'-\', \'_\' '
                    "or '.', and must start and end with an alphanumeric character")
    return "; ".join(errs)


# --- JobFlows ----------------------------------------------------------------------------------------------------
def flow_graph(jf: Mapping[str, Any]) -> dict[str, list[str]]:
    """flow name -> the flows it depends on (``dependsOn.targets``)."""
    out: dict[str, list[str]] = {}
    for f in ((jf.get("spec") or {}).get("flows") or []):
        if isinstance(f, dict):
            out[str(f.get("name") or "")] = [str(t) for t in ((f.get("dependsOn") or {}).get("targets") or [])]
    return out


def validate_jobflow(jf: Mapping[str, Any]) -> str:
    """``jobflows/validate/validate_jobflow.go: validateJobFlowDAG``: every dependency names a flow of the JobFlow,
    and the flows form a DAG."""
    graph = flow_graph(jf)
    for name in sorted(graph):
        for t in graph[name]:
            if t not in graph:
                return f"jobflow Flow is not DAG: vertex is not defined: {t}"
    state: dict[str, int] = {}  # 1 on the path, 2 done

    def cyclic(v: str) -> bool:
        state[v] = 1
        for w in graph[v]:
            if state.get(w) == 1 or (w not in state and cyclic(w)):
                return True
        state[v] = 2
        return False

    if any(v not in state and cyclic(v) for v in sorted(graph)):
        return "jobflow Flow is not DAG"
    return ""


#: validators that need nothing but the object
SIMPLE_VALIDATORS: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "HyperNode": validate_hypernode, "CronJob": validate_cronjob, "JobFlow": validate_jobflow,
}
