"""Volcano's admission rules for the kinds that ``api/job_validate.py`` (Jobs) and ``kube/validation.py`` (Queues)
do not cover, and every mutating default: the rule set the webhook (``kube/webhook.py``) serves, next to those
two, so that the webhook, the controllers, the simulator and ``pyvolcano job run`` share one set of rules.

Each validator returns Volcano's message ("" when the object is admitted); each mutator returns RFC 6902 JSON
patch operations, in Volcano's order.  Sources: ``pkg/webhooks/admission/`` of Volcano (file and function named on
each rule).
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pyvolcano.api.cron import CronError, parse, time_zone_problems
from pyvolcano.api.job_plugin_args import default_plugins
from pyvolcano.api.regex import compile_input
from pyvolcano.api.resource import amount
from pyvolcano.errors import UserError

Patch = list[dict[str, Any]]

DEFAULT_QUEUE = "default"
DEFAULT_MAX_RETRY = 3
DEFAULT_TASK_SPEC = "default"
HIERARCHY = "volcano.sh/hierarchy"
HIERARCHY_WEIGHTS = "volcano.sh/hierarchy-weights"
QUEUE_NAME_ANNOTATION = "scheduling.volcano.sh/queue-name"
JDB_MIN_AVAILABLE = "volcano.sh/jdb-min-available"
JDB_MAX_UNAVAILABLE = "volcano.sh/jdb-max-unavailable"
#: what Go's ``strconv.Atoi`` accepts (ASCII digits, one optional sign)
_ATOI = re.compile(r"[+-]?[0-9]+\Z")
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\Z")
_QUALIFIED_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]\Z")


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
    if isinstance(plugins, dict):  # Volcano replaces the plugins whenever the Job has any (even unchanged)
        patch.append({"op": "replace", "path": "/spec/plugins", "value": default_plugins(plugins)})
    return patch


# --- Jobs (validating: the webhook's rules that api/job_validate.py does not hold) ------------------------------
_QUALIFIED_MSG = ("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
                  "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
                  "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")


def _qualified_name_errors(name: str) -> list[str]:
    """apimachinery's ``validation.IsQualifiedName`` for a name without a prefix."""
    errs = []
    if len(name) > 63:
        errs.append("name part must be no more than 63 characters")
    if not _QUALIFIED_NAME.match(name):
        errs.append(_QUALIFIED_MSG)
    return errs


def _volumes_problem(volumes: Any) -> str:
    """``jobs/validate/util.go: validateIO``: each volume has a mountPath, no two the same, and either a
    ``volumeClaim`` (a PVC the controller makes) or a ``volumeClaimName`` (an existing one, a valid name), not
    both."""
    seen: set[str] = set()
    for vol in volumes if isinstance(volumes, list) else []:
        if not isinstance(vol, dict):
            continue
        mount = str(vol.get("mountPath") or "")
        if not mount:
            return "mountPath is required;"
        if mount in seen:
            return f"duplicated mountPath: {mount};"
        claim, claim_name = vol.get("volumeClaim"), str(vol.get("volumeClaimName") or "")
        if not claim and not claim_name:
            return "either VolumeClaim or VolumeClaimName must be specified;"
        if claim_name:
            if claim:
                return ("conflict: If you want to use an existing PVC, just specify VolumeClaimName.If you want to "
                        "create a new PVC, you do not need to specify VolumeClaimName")
            if len(claim_name) > 253 or not _DNS1123_SUBDOMAIN.match(claim_name):
                return (f"invalid VolumeClaimName {claim_name} : [a lowercase RFC 1123 subdomain must consist of lower "
                        "case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric "
                        "character]")
        seen.add(mount)
    return ""


def _tasks_form_a_dag(tasks: list[dict[str, Any]]) -> bool:
    """``jobs/validate/util.go: topoSort``: Kahn's sort of the tasks over their ``dependsOn.name`` edges reaches
    every task.  As in Volcano, a task that depends on a name that is no task, or names one task twice (its
    in-degree counts each mention, the edge is one), is never reached."""
    graph: dict[str, set[str]] = {}
    names = [str(t.get("name") or "") for t in tasks]
    indegree = dict.fromkeys(names, 0)
    for t, name in zip(tasks, names, strict=True):
        dep = t.get("dependsOn") if isinstance(t.get("dependsOn"), dict) else None
        before_names = (dep or {}).get("name")
        for before in before_names if isinstance(before_names, list) else []:
            graph.setdefault(str(before), set()).add(name)
            indegree[name] += 1
    ready = [n for n, d in indegree.items() if d == 0]
    done = 0
    while ready:
        n = ready.pop()
        done += 1
        for m in graph.get(n, ()):
            indegree[m] -= 1
            if indegree[m] == 0:
                ready.append(m)
    return done == len(names)


def _whole_cpus(container: Any) -> bool:
    """``admit_job.go: guaranteedCPUs`` is not 0: the cpu request (the limit when there are no requests) is a whole,
    non-zero number of CPUs."""
    res = container.get("resources") if isinstance(container, dict) else None
    res = res if isinstance(res, dict) else {}
    requests = res.get("requests") or res.get("limits") or {}
    cpu = requests.get("cpu") if isinstance(requests, dict) else None
    if cpu is None:
        return False
    try:
        milli = amount("cpu", cpu)
    except (ValueError, TypeError, UserError):
        return False
    return milli >= 1000 and milli % 1000 == 0


def job_create_problems(job: Mapping[str, Any], queues: Mapping[str, Mapping[str, Any]] | None) -> list[str]:
    """The rules of ``jobs/validate/admit_job.go: validateJobCreate`` that the shared Job validator
    (``api/job_validate.py``, also the controller's and the simulator's) does not hold, in Volcano's words: each
    pod name ``<job>-<task>-<index>`` a qualified name (``validateK8sPodNameLength``), whole CPUs for a task with a
    ``topologyPolicy`` (``validateTaskTopoPolicy``), the volumes (``validateIO``), no job in the ``root`` queue or
    in a queue with child queues, and task dependencies that form a DAG.  Volcano checks these only at
    admission, so they are the webhook's alone."""
    spec = job.get("spec") if isinstance(job.get("spec"), dict) else {}
    assert isinstance(spec, dict)
    name = str((job.get("metadata") or {}).get("name") or "")
    tasks = [t for t in (spec.get("tasks") or []) if isinstance(t, dict)] if isinstance(spec.get("tasks"), list) \
        else []
    out: list[str] = []
    for index, task in enumerate(tasks):
        pod = f"{name}-{task.get('name') or ''}-{index}"
        errs = _qualified_name_errors(pod)
        if errs:
            out.append(f"create pod with name {pod} validate failed [{' '.join(errs)}];")
        policy = task.get("topologyPolicy")
        if policy and policy != "none":
            tmpl = task.get("template")
            pod_spec = tmpl.get("spec") if isinstance(tmpl, dict) else None
            containers: list[Any] = []
            for key in ("containers", "initContainers"):
                listed = pod_spec.get(key) if isinstance(pod_spec, dict) else None
                containers += listed if isinstance(listed, list) else []
            for cid, c in enumerate(containers):
                if not _whole_cpus(c):
                    out.append(f"the cpu request isn't an integer in spec.task[{index}] container[{cid}].")
                    break
    msg = _volumes_problem(spec.get("volumes"))
    if msg:
        out.append(msg)
    qname = str(spec.get("queue") or "")
    if queues is not None and qname in queues:
        if qname == "root":
            out.append("can not submit job to root queue;")
        else:
            children = _children(qname, queues)
            if children:
                out.append(f"can only submit job to leaf queue, queue `{qname}` has {len(children)} child queues;")
    if any(isinstance(t.get("dependsOn"), dict) for t in tasks) and not _tasks_form_a_dag(tasks):
        out.append("job has dependencies between tasks, but doesn't form a directed acyclic graph(DAG);")
    return out


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


@dataclass(frozen=True)
class QueueRules:
    """The queue webhook's options (``cmd/webhook-manager/app/options/options.go``), with Volcano's defaults:
    ``--enable-queue-allocated-pods-check`` (off), ``--max-queue-depth`` (5), ``--enable-root-queue-protection``
    (on)."""

    allocated_pods_check: bool = False
    max_depth: int = 5
    root_protection: bool = True


def _spec(q: Mapping[str, Any] | None) -> dict[str, Any]:
    spec = (q or {}).get("spec")
    return spec if isinstance(spec, dict) else {}


def _allocated_pods(q: Mapping[str, Any] | None) -> int:
    """``status.allocated.pods`` of a queue (0 when absent or not a quantity: nothing to protect)."""
    status = (q or {}).get("status")
    alloc = status.get("allocated") if isinstance(status, dict) else None
    if not isinstance(alloc, dict) or alloc.get("pods") is None:
        return 0
    try:
        return int(amount("pods", alloc["pods"]))
    except (ValueError, TypeError, UserError):
        return 0


def _resources(rl: Any) -> dict[str, float] | None:
    """A resource list by value (Kubernetes' ``equality.Semantic``: ``1`` equals ``1000m``); None if unreadable."""
    if not rl:
        return {}
    if not isinstance(rl, dict):
        return None
    try:
        return {str(k): amount(str(k), v) for k, v in rl.items()}
    except (ValueError, TypeError, UserError):
        return None


def _queue_resources(q: Mapping[str, Any] | None) -> tuple[Any, ...]:
    spec = _spec(q)
    guarantee = spec.get("guarantee")
    return (_resources(spec.get("capability")), _resources(spec.get("deserved")),
            _resources(guarantee.get("resource") if isinstance(guarantee, dict) else None))


def _children(name: str, queues: Mapping[str, Mapping[str, Any]]) -> list[str]:
    return sorted(n for n, q in queues.items() if (_spec(q).get("parent") or "") == name and n != name)


def validate_queue_delete(name: str, queues: Mapping[str, Mapping[str, Any]],
                          old: Mapping[str, Any] | None = None, rules: QueueRules = QueueRules()) -> str:
    """``queues/validate/validate_queue.go: validateQueueDeleting``: ``default`` and ``root`` stay; with
    ``--enable-queue-allocated-pods-check``, a queue whose ``status.allocated`` still counts pods stays; a queue
    with child queues cannot go.  The queue is the request's ``oldObject`` (the API server's current copy),
    else the informer's: Volcano reads only its lister and refuses the delete of a queue its informer has not
    seen yet (docs/volcano-differences.md)."""
    if name in ("default", "root"):
        return f"`{name}` queue can not be deleted"
    queue = old if isinstance(old, Mapping) and old else queues.get(name)
    if queue is None:
        return f'queue.scheduling.volcano.sh "{name}" not found'
    if rules.allocated_pods_check:
        pods = _allocated_pods(queue)
        if pods:
            return f"queue {name} cannot be deleted because it has allocated Pods: {pods}"
    children = _children(name, queues)
    if children:
        return f"queue {name} can not be deleted because it has {len(children)} child queues: {', '.join(children)}"
    return ""


def _hierarchy_annotations(queue: Mapping[str, Any], queues: Mapping[str, Mapping[str, Any]]) -> str:
    """``validate_queue.go: validateHierarchicalAttributes``: ``volcano.sh/hierarchy`` and
    ``volcano.sh/hierarchy-weights`` have as many ``/``-separated parts, each weight a number > 0, and no other
    queue's hierarchy lies under this one's path."""
    md = queue.get("metadata") if isinstance(queue.get("metadata"), dict) else {}
    assert isinstance(md, dict)
    ann = md.get("annotations") if isinstance(md.get("annotations"), dict) else {}
    assert isinstance(ann, dict)
    hierarchy, weights = str(ann.get(HIERARCHY) or ""), str(ann.get(HIERARCHY_WEIGHTS) or "")
    if not hierarchy and not weights:
        return ""
    where = "requestBody.metadata.annotations"
    if len(hierarchy.split("/")) != len(weights.split("/")):
        return (f'{where}: Invalid value: "{hierarchy}": {HIERARCHY} must have the same length with '
                f"{HIERARCHY_WEIGHTS}")
    for w in weights.split("/"):
        try:
            value = float(w)
        except ValueError:
            return (f'{where}: Invalid value: "{weights}": {w} in the {weights} is invalid number: '
                    f'strconv.ParseFloat: parsing "{w}": invalid syntax')
        if not value > 0:
            return f'{where}: Invalid value: "{weights}": {w} in the {weights} must be larger than 0'
    name = md.get("name")
    for other_name in sorted(queues):
        other = queues[other_name].get("metadata") or {}
        in_tree = str((other.get("annotations") or {}).get(HIERARCHY) or "") if isinstance(other, dict) else ""
        if in_tree and other_name != name and in_tree.startswith(hierarchy + "/"):
            return (f'{where}: Invalid value: "{hierarchy}": {hierarchy} is not allowed to be in the sub path of '
                    f"{in_tree} of queue {other_name}")
    return ""


def _hierarchical_queue(queue: Mapping[str, Any], queues: Mapping[str, Mapping[str, Any]], rules: QueueRules) -> str:
    """``validate_queue.go: validateHierarchicalQueue`` (on create, or when the parent changes): not its own
    parent, at most ``--max-queue-depth`` levels below root, and a leaf parent holding pods cannot take a child
    (its pods would sit in a non-leaf queue)."""
    name = str((queue.get("metadata") or {}).get("name") or "")
    parent = str(_spec(queue).get("parent") or "")
    if parent in ("", "root"):
        return ""
    if parent == name:
        return f"queue {name} cannot use itself as parent"
    depth, up, seen = 1, parent, {name}
    while up not in ("", "root"):
        depth += 1
        if depth > rules.max_depth:
            return f"queue {name} exceeds the maximum allowed depth of {rules.max_depth}"
        if up in seen or up not in queues:
            break  # a missing parent or a cycle is reported by the queue rules (kube/validation.py)
        seen.add(up)
        up = str(_spec(queues[up]).get("parent") or "")
    parent_q = queues.get(parent)
    if parent_q is not None and not _children(parent, {k: v for k, v in queues.items() if k != name}):
        pods = _allocated_pods(parent_q)
        if pods:
            return f"queue {parent} cannot be the parent queue of queue {name} because it has allocated Pods: {pods}"
    return ""


def _guarantee_needs_deserved(queue: Mapping[str, Any]) -> str:
    """``validate_queue.go: validateResourceQuantityOfQueue``: every resource of ``guarantee.resource`` needs a
    ``deserved`` amount too (the amounts themselves are compared by ``kube/validation.validate_queue``)."""
    spec = _spec(queue)
    guarantee = spec.get("guarantee") if isinstance(spec.get("guarantee"), dict) else {}
    resources = (guarantee or {}).get("resource")
    deserved = spec.get("deserved") if isinstance(spec.get("deserved"), dict) else {}
    errs = [f'requestBody.spec.deserved.{r}: Invalid value: "<nil>": deserved[{r}] must be >= guarantee[{r}]={q}'
            for r, q in (resources.items() if isinstance(resources, dict) else ()) if r not in (deserved or {})]
    return errs[0] if len(errs) == 1 else ("[" + ", ".join(errs) + "]" if errs else "")


def validate_queue_change(op: str, queue: Mapping[str, Any], old: Mapping[str, Any] | None,
                          queues: Mapping[str, Mapping[str, Any]], rules: QueueRules = QueueRules()) -> tuple[str, bool]:
    """The rules of ``validate_queue.go: AdmitQueues`` on CREATE and UPDATE that ``kube/validation.validate_queue``
    (shape, weight, guarantee <= deserved <= capability, parent) does not hold: a ``deserved`` amount for each
    guaranteed resource, the queue state (``Open`` or
    ``Closed``), the hierarchy annotations, the hierarchical parent (on create or a parent change), the root
    queue's resources (``--enable-root-queue-protection``).  Returns the message and whether the tree's resource
    rules apply (``needsValidateHierarchicalQueue``: not for root; on update only when the parent or a resource
    list changed)."""
    name = str((queue.get("metadata") or {}).get("name") or "")
    msg = _guarantee_needs_deserved(queue)
    if msg:
        return msg, False
    status = queue.get("status") if isinstance(queue.get("status"), dict) else {}
    assert isinstance(status, dict)
    state = status.get("state")
    if state not in (None, "", "Open", "Closed"):
        return f'requestBody.spec.state: Invalid value: "{state}": queue state must be in [Open Closed]', False
    msg = _hierarchy_annotations(queue, queues)
    if msg:
        return msg, False
    parent_changed = old is not None and (_spec(old).get("parent") or "") != (_spec(queue).get("parent") or "")
    if op == "CREATE" or parent_changed:
        msg = _hierarchical_queue(queue, queues, rules)
        if msg:
            return msg, False
    resources_changed = old is not None and _queue_resources(old) != _queue_resources(queue)
    if rules.root_protection and op == "UPDATE" and name == "root" and resources_changed:
        return "root queue's resource attributes (capability, deserved, guarantee) cannot be modified", False
    return "", name != "root" and (op == "CREATE" or parent_changed or resources_changed)


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
    """``pods/validate/admit_pod.go: validateIntPercentageStr`` (intstr.Parse: an integer as ``strconv.Atoi``
    reads it, else a string; values quoted as Go's ``%q``)."""
    if _ATOI.match(value):
        if int(value) <= 0:
            return f"invalid value <{json.dumps(value)}> for {key}, it must be a positive integer"
        return ""
    s = value.replace("%", "")
    if not _ATOI.match(s):
        return f"invalid value strconv.Atoi: parsing {json.dumps(s)}: invalid syntax for {key}"
    v = int(s)
    if v <= 0 or v >= 100:
        return f"invalid value <{json.dumps(value)}> for {key}, it must be a valid percentage which between 1% ~ 99%"
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
    ``regexMatch.pattern`` compiles with RE2 (``api/regex.py``: Go's regexp syntax, the one the HyperNode
    controller matches members with)."""
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
                compile_input(str(pattern))
            except ValueError as exc:
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
