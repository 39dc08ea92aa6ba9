"""Admission checks for Volcano Jobs and Queues (Volcano's validating webhooks, done client- and controller-side).

Each check returns one-line messages naming the object and the field, in the words of Volcano's webhook where
it has them, so the same text shows up in ``pyvolcano job run`` errors and in the status the controller writes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pyvolcano.api import models
from pyvolcano.api.job_validate import job_problems
from pyvolcano.api.resource import amount
from pyvolcano.errors import ManifestError


def validate_job(job: Mapping[str, Any], queues: Mapping[str, Mapping[str, Any]] | None = None,
                 known_plugins: Iterable[str] | None = None) -> list[str]:
    """Problems with a ``batch.volcano.sh/v1alpha1`` Job (``api.job_validate``, the one Job validator, shared with
    the simulator and the controller); ``queues`` (name -> Queue object) enables the queue checks,
    ``known_plugins`` the job-plugin check."""
    return [str(p) for p in job_problems(job, queues, known_plugins)]


def validate_queue(queue: Mapping[str, Any], queues: Mapping[str, Mapping[str, Any]] | None = None) -> list[str]:
    """Problems with a ``scheduling.volcano.sh/v1beta1`` Queue: first its shape, as the cache would read it
    (``api/models.py: Queue``: types, quantities, state, node-group affinity), then the webhook's rules (a weight
    above 0, guarantee <= deserved <= capability, an existing parent)."""
    md = queue.get("metadata") or {}
    ref = f"Queue {md.get('name', '<unnamed>')}"
    try:
        models.validate({**queue, "kind": "Queue"})
    except ManifestError as exc:
        return [str(exc)]
    spec = queue.get("spec") or {}
    errs: list[str] = []
    weight = int(spec.get("weight", 1))  # an integer: the model checked it
    if weight <= 0:
        errs.append(f"{ref}: spec.weight: queue weight must be a positive integer, got {spec.get('weight')!r}")
    lists: dict[str, dict[str, float]] = {}
    for field, rl in (("capability", spec.get("capability")), ("deserved", spec.get("deserved")),
                      ("guarantee.resource", (spec.get("guarantee") or {}).get("resource"))):
        lists[field] = {str(rname): amount(str(rname), q) for rname, q in (rl or {}).items()}  # checked above
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

    from pyvolcano.api import convert, models
    from pyvolcano.api.queue_validate import validate_hierarchy
    from pyvolcano.api.resource import ResourceIndex
    from pyvolcano.errors import UserError

    res = ResourceIndex.of(convert.resource_names(list(queues.values())))
    infos = {}
    for qname, obj in queues.items():
        try:
            models.validate(obj)
            infos[qname] = convert.queue(dict(obj), res)
        except (UserError, ValueError):
            continue  # its own problems are reported by validate_queue
    return [p.message for p in validate_hierarchy(infos, np.full(res.size, np.inf), res) if p.queue == name]
