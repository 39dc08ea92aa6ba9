"""Admission checks for Volcano Jobs and Queues (Volcano's validating webhooks, done client- and controller-side).

Each check returns one-line messages naming the object and the field, in the words of Volcano's webhook where
it has them, so the same text shows up in ``pyvolcano job run`` errors and in the status the controller writes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from pyvolcano.api.resource import amount
from pyvolcano.errors import QuantityError

_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
#: the lifecycle events and actions Volcano's job API defines
POLICY_EVENTS = {"*", "PodPending", "PodRunning", "PodFailed", "PodEvicted", "Unknown", "TaskCompleted",
                 "OutOfSync", "CommandIssued", "JobUpdated", "TaskFailed"}
POLICY_ACTIONS = {"AbortJob", "RestartJob", "RestartTask", "RestartPod", "TerminateJob", "CompleteJob",
                  "ResumeJob", "SyncJob", "EnqueueJob", "SyncQueue", "OpenQueue", "CloseQueue"}
QUEUE_STATES = {"Open", "Closed", "Closing", "Unknown"}


def _int(v: Any) -> int | None:
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


def _policies(where: str, policies: Any) -> list[str]:
    errs: list[str] = []
    if policies in (None, []):
        return errs
    if not isinstance(policies, list):
        return [f"{where}.policies: must be a list"]
    seen: set[str] = set()
    for i, p in enumerate(policies):
        at = f"{where}.policies[{i}]"
        if not isinstance(p, dict):
            errs.append(f"{at}: must be a mapping")
            continue
        events = ([p["event"]] if p.get("event") else []) + list(p.get("events") or [])
        if events and p.get("exitCode") is not None:
            errs.append(f"{at}: must not specify event and exitCode simultaneously")
        if not events and p.get("exitCode") is None:
            errs.append(f"{at}: either event and exitCode should be specified")
        if p.get("exitCode") is not None and _int(p.get("exitCode")) == 0:
            errs.append(f"{at}.exitCode: 0 is not a valid error code")
        for e in events:
            if e not in POLICY_EVENTS:
                errs.append(f"{at}.event: invalid policy event {e!r} (known: {', '.join(sorted(POLICY_EVENTS))})")
            elif e in seen:
                errs.append(f"{at}.event: duplicate policy event {e!r}")
            seen.add(e)
        action = p.get("action")
        if action not in POLICY_ACTIONS:
            errs.append(f"{at}.action: invalid policy action {action!r} (known: {', '.join(sorted(POLICY_ACTIONS))})")
    return errs


def validate_job(job: Mapping[str, Any], queues: Mapping[str, Mapping[str, Any]] | None = None,
                 known_plugins: Iterable[str] | None = None) -> list[str]:
    """Problems with a ``batch.volcano.sh/v1alpha1`` Job; ``queues`` (name -> Queue object) enables the
    queue checks, ``known_plugins`` the job-plugin check."""
    md = job.get("metadata") or {}
    ref = f"Job {md.get('namespace') or 'default'}/{md.get('name', '<unnamed>')}"
    spec = job.get("spec")
    if not isinstance(spec, dict):
        return [f"{ref}: spec is required"]
    errs: list[str] = []
    min_available = _int(spec.get("minAvailable", 0))
    if min_available is None or min_available < 0:
        errs.append(f"{ref}: spec.minAvailable must be >= 0, got {spec.get('minAvailable')!r}")
    for f in ("maxRetry", "ttlSecondsAfterFinished"):
        v = _int(spec[f]) if spec.get(f) is not None else 0
        if v is None or v < 0:
            errs.append(f"{ref}: spec.{f} must be >= 0, got {spec[f]!r}")
    tasks = spec.get("tasks")
    if not isinstance(tasks, list) or not tasks:
        errs.append(f"{ref}: spec.tasks: no task specified in job spec")
        tasks = []
    total = 0
    names: set[str] = set()
    for i, t in enumerate(tasks):
        at = f"{ref}: spec.tasks[{i}]"
        if not isinstance(t, dict):
            errs.append(f"{at}: must be a mapping")
            continue
        name = t.get("name") or ""
        if name:
            at = f"{ref}: task {name!r}"
            if not _DNS1123_LABEL.match(name) or len(name) > 63:
                errs.append(f"{at}: name must be a DNS-1123 label (lower case letters, digits and '-')")
            if name in names:
                errs.append(f"{at}: duplicated task name {name!r}")
            names.add(name)
        replicas = _int(t.get("replicas", 1))
        if replicas is None or replicas < 0:
            errs.append(f"{at}: replicas must be >= 0, got {t.get('replicas')!r}")
            replicas = 0
        total += replicas
        if t.get("minAvailable") is not None:
            tmin = _int(t["minAvailable"])
            if tmin is None or tmin < 0:
                errs.append(f"{at}: minAvailable must be >= 0, got {t['minAvailable']!r}")
            elif tmin > replicas:
                errs.append(f"{at}: minAvailable ({tmin}) is greater than replicas ({replicas})")
        template = t.get("template")
        pod_spec = template.get("spec") if isinstance(template, dict) else None
        if not isinstance(pod_spec, dict) or not pod_spec.get("containers"):
            errs.append(f"{at}: template.spec.containers: at least one container is required")
        else:
            for ci, c in enumerate(pod_spec["containers"]):
                for kind in ("requests", "limits"):
                    for rname, q in ((c or {}).get("resources") or {}).get(kind, {}).items():
                        try:
                            amount(str(rname), q)
                        except QuantityError as exc:
                            errs.append(f"{at}: template.spec.containers[{ci}].resources.{kind}.{rname}: {exc}")
        errs += _policies(at, t.get("policies"))
    if min_available is not None and min_available > total:
        errs.append(f"{ref}: spec.minAvailable ({min_available}) should not be greater than total replicas in "
                    f"tasks ({total})")
    errs += _policies(f"{ref}: spec", spec.get("policies"))
    if known_plugins is not None:
        known = set(known_plugins)
        for p in (spec.get("plugins") or {}):
            if p not in known:
                errs.append(f"{ref}: spec.plugins: unable to find job plugin {p!r} (known: {', '.join(sorted(known))})")
    if queues is not None:
        qname = spec.get("queue") or "default"
        q = queues.get(qname)
        if q is None:
            errs.append(f"{ref}: spec.queue: unable to find job queue {qname!r}")
        else:
            state = ((q.get("status") or {}).get("state")) or "Open"
            if state != "Open":
                errs.append(f"{ref}: spec.queue: can only submit job to queue with state Open, queue {qname!r} "
                            f"status is {state!r}")
    return errs


def validate_queue(queue: Mapping[str, Any], queues: Mapping[str, Mapping[str, Any]] | None = None) -> list[str]:
    """Problems with a ``scheduling.volcano.sh/v1beta1`` Queue (weight, state, resource lists, parent)."""
    md = queue.get("metadata") or {}
    ref = f"Queue {md.get('name', '<unnamed>')}"
    spec = queue.get("spec") or {}
    if not isinstance(spec, dict):
        return [f"{ref}: spec must be a mapping"]
    errs: list[str] = []
    weight = _int(spec.get("weight", 1))
    if weight is None or weight <= 0:
        errs.append(f"{ref}: spec.weight: queue weight must be a positive integer, got {spec.get('weight')!r}")
    state = (queue.get("status") or {}).get("state")
    if state and state not in QUEUE_STATES:
        errs.append(f"{ref}: status.state: {state!r} is not one of {', '.join(sorted(QUEUE_STATES))}")
    lists: dict[str, dict[str, float]] = {}
    for field, rl in (("capability", spec.get("capability")), ("deserved", spec.get("deserved")),
                      ("guarantee.resource", (spec.get("guarantee") or {}).get("resource"))):
        parsed: dict[str, float] = {}
        for rname, q in (rl or {}).items():
            try:
                parsed[str(rname)] = amount(str(rname), q)
            except QuantityError as exc:
                errs.append(f"{ref}: spec.{field}.{rname}: {exc}")
        lists[field] = parsed
    for low, high in (("guarantee.resource", "capability"), ("deserved", "capability"),
                      ("guarantee.resource", "deserved")):
        for rname, v in lists[low].items():
            if rname in lists[high] and v > lists[high][rname]:
                errs.append(f"{ref}: spec.{low}.{rname} must not be greater than spec.{high}.{rname}")
    parent = spec.get("parent")
    if parent and queues is not None and parent not in queues:
        errs.append(f"{ref}: spec.parent: parent queue {parent!r} does not exist")
    if parent and parent == md.get("name"):
        errs.append(f"{ref}: spec.parent: a queue cannot be its own parent")
    return errs



def validate_queue_tree(name: str, queues: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Parent/child problems of queue ``name`` (a child's guarantee or capability above its parent's, children's
    guarantees past the parent's, cycles), from the same validator ``pyvolcano queues`` uses."""
    if not any((q.get("spec") or {}).get("parent") for q in queues.values()):
        return []
    import numpy as np

    from pyvolcano.api import convert
    from pyvolcano.api.queue_validate import validate_hierarchy
    from pyvolcano.api.resource import ResourceIndex
    from pyvolcano.errors import UserError

    res = ResourceIndex.of(convert.resource_names(list(queues.values())))
    infos = {}
    for qname, obj in queues.items():
        try:
            infos[qname] = convert.queue(dict(obj), res)
        except (UserError, ValueError):
            continue  # its own problems are reported by validate_queue
    return [p.message for p in validate_hierarchy(infos, np.full(res.size, np.inf), res) if p.queue == name]
