"""Queue settings that cannot do what they say (seed 004), checked once for every caller.

Volcano's admission accepts a Queue whose guarantee exceeds its capability or the whole cluster, guarantees
that add up to more than the cluster, a child larger than its parent, a weight of 0, and a scheduler config
with both proportion and capacity.  The scheduler then silently shrinks or ignores those numbers.  This
module names each such problem (queue, field, one-line message); ``pyvolcano queues`` prints them, the
capacity plugin refuses an invalid hierarchy as Volcano does, and the Kubernetes admission path reuses
``validate_queue_object`` to reject a bad Queue before it is stored.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from pyvolcano.api.quantity import format_quantity
from pyvolcano.api.queue_info import QueueInfo
from pyvolcano.api.resource import EPS, ResourceIndex
from pyvolcano.conf.loader import SchedulerConf

ROOT = "root"


@dataclass(frozen=True)
class Problem:
    queue: str
    field: str
    message: str

    def __str__(self) -> str:
        return self.message


def _over(left: np.ndarray, right: np.ndarray, res: ResourceIndex, dims: Iterable[str]) -> list[str]:
    """Resource names (among ``dims``) where ``left`` exceeds ``right``."""
    out = []
    for name in sorted(set(dims)):
        if name not in res.names:
            continue
        i = res.names.index(name)
        if left[i] > right[i] + EPS:
            out.append(name)
    return out


def _fmt(res: ResourceIndex, v: np.ndarray, names: list[str]) -> str:
    return ", ".join(f"{n}={format_quantity(n, float(v[res.names.index(n)]))}" for n in names)


def validate_queue(q: QueueInfo, total: np.ndarray, res: ResourceIndex) -> list[Problem]:
    """Problems of one queue on its own (weight, guarantee against capability and the cluster)."""
    out = []
    if q.weight <= 0:
        out.append(Problem(q.name, "spec.weight", f"queue {q.name}: spec.weight is {q.weight}; a queue of weight "
                                                  "0 deserves nothing under proportion (use weight >= 1)"))
    if q.guarantee is not None:
        if q.capability is not None:
            bad = _over(q.guarantee, q.capability, res, q.guarantee_set & q.capability_set)
            if bad:
                out.append(Problem(q.name, "spec.guarantee", f"queue {q.name}: spec.guarantee "
                                   f"({_fmt(res, q.guarantee, bad)}) is above spec.capability "
                                   f"({_fmt(res, q.capability, bad)})"))
        bad = _over(q.guarantee, total, res, q.guarantee_set)
        if bad:
            out.append(Problem(q.name, "spec.guarantee", f"queue {q.name}: spec.guarantee "
                               f"({_fmt(res, q.guarantee, bad)}) is above the cluster ({_fmt(res, total, bad)})"))
    return out


def parent_of(q: QueueInfo, queues: Mapping[str, QueueInfo]) -> str:
    return q.parent if q.parent and (q.parent in queues or q.parent == ROOT) else ROOT


def validate_hierarchy(queues: Mapping[str, QueueInfo], total: np.ndarray, res: ResourceIndex) -> list[Problem]:
    """Parent/child problems: unknown parent, a cycle, a child's guarantee or capability above its parent's,
    children's guarantees adding up to more than the parent's guarantee."""
    out = []
    for q in sorted(queues.values(), key=lambda q: q.name):
        if q.name == ROOT:
            continue
        if q.parent and q.parent != ROOT and q.parent not in queues:
            out.append(Problem(q.name, "spec.parent", f"queue {q.name}: spec.parent {q.parent!r} does not exist"))
            continue
        seen, p = {q.name}, q.parent
        while p and p != ROOT and p in queues:
            if p in seen:
                out.append(Problem(q.name, "spec.parent", f"queue {q.name}: spec.parent forms a cycle through {p}"))
                break
            seen.add(p)
            p = queues[p].parent
        parent = queues.get(parent_of(q, queues))
        if parent is None:
            continue
        if q.guarantee is not None and parent.guarantee is not None:
            bad = _over(q.guarantee, parent.guarantee, res, q.guarantee_set & parent.guarantee_set)
            if bad:
                out.append(Problem(q.name, "spec.guarantee", f"queue {q.name}: spec.guarantee "
                                   f"({_fmt(res, q.guarantee, bad)}) is above its parent {parent.name}'s "
                                   f"({_fmt(res, parent.guarantee, bad)})"))
        if q.capability is not None and parent.capability is not None:
            bad = _over(q.capability, parent.capability, res, q.capability_set & parent.capability_set)
            if bad:
                out.append(Problem(q.name, "spec.capability", f"queue {q.name}: spec.capability "
                                   f"({_fmt(res, q.capability, bad)}) is above its parent {parent.name}'s "
                                   f"({_fmt(res, parent.capability, bad)})"))
    for parent in sorted(queues.values(), key=lambda q: q.name):
        if parent.guarantee is None:
            continue
        kids = [q for q in queues.values() if q.name != parent.name and parent_of(q, queues) == parent.name
                and q.guarantee is not None]
        if not kids:
            continue
        s = sum((k.guarantee for k in kids), res.zeros())
        bad = _over(s, parent.guarantee, res, parent.guarantee_set)
        if bad:
            out.append(Problem(parent.name, "spec.guarantee", f"queue {parent.name}: its children's guarantees add "
                               f"up to {_fmt(res, s, bad)}, above its own guarantee "
                               f"({_fmt(res, parent.guarantee, bad)})"))
    return out


HIERARCHY = "metadata.annotations.volcano.sh/hierarchy"
HIERARCHY_WEIGHTS = "metadata.annotations.volcano.sh/hierarchy-weights"


def _levels(q: QueueInfo) -> tuple[list[str], list[str]]:
    """Path and weights as Volcano's webhook stores them (``root``/``1`` prepended when both are set)."""
    names, weights = q.hierarchy.split("/"), q.weights.split("/") if q.weights else []
    if q.hierarchy and q.weights and not q.hierarchy.startswith(ROOT):
        names, weights = [ROOT, *names], ["1", *weights]
    return names, weights


def validate_drf_hierarchy(queues: Mapping[str, QueueInfo]) -> list[Problem]:
    """The hierarchical-drf annotations Volcano's admission webhook rejects: a path and weights of different
    lengths, a weight that is not a number above 0, and a queue whose path lies inside another queue's (a queue
    is a leaf of the tree; ``root/sci`` and ``root/sci/dev`` cannot both be queues)."""
    out = []
    paths: dict[str, list[str]] = {}
    for q in sorted(queues.values(), key=lambda q: q.name):
        if not q.hierarchy and not q.weights:
            continue
        names, weights = _levels(q)
        if len(names) != len(weights):
            out.append(Problem(q.name, HIERARCHY_WEIGHTS, f"queue {q.name}: annotation volcano.sh/hierarchy "
                               f"{q.hierarchy!r} has {len(names)} levels but volcano.sh/hierarchy-weights "
                               f"{q.weights!r} has {len(weights)}"))
            continue
        bad = []
        for w in weights:
            try:
                ok = float(w) > 0
            except ValueError:
                ok = False
            if not ok:
                bad.append(w)
        if bad:
            out.append(Problem(q.name, HIERARCHY_WEIGHTS, f"queue {q.name}: volcano.sh/hierarchy-weights "
                               f"{q.weights!r}: {', '.join(repr(b) for b in bad)} is not a number above 0"))
            continue
        paths[q.name] = names
    for name, path in sorted(paths.items()):
        for other, opath in sorted(paths.items()):
            if other != name and len(opath) > len(path) and opath[:len(path)] == path:
                out.append(Problem(name, HIERARCHY, f"queue {name}: volcano.sh/hierarchy {'/'.join(path)!r} "
                                   f"contains queue {other}'s {'/'.join(opath)!r}; only leaves of the tree can "
                                   "be queues"))
    return out


def validate_queues(queues: Mapping[str, QueueInfo], total: np.ndarray, res: ResourceIndex, *,
                    hierarchy: bool = False) -> list[Problem]:
    """Every problem of these queues against a cluster of ``total`` allocatable resources."""
    out: list[Problem] = []
    for q in sorted(queues.values(), key=lambda q: q.name):
        out += validate_queue(q, total, res)
    top = [q for q in queues.values() if q.guarantee is not None and q.name != ROOT
           and (not hierarchy or parent_of(q, queues) == ROOT)]
    if top:
        s = sum((q.guarantee for q in top), res.zeros())
        dims = set().union(*(q.guarantee_set for q in top))
        bad = _over(s, total, res, dims)
        if bad:
            names = ", ".join(sorted(q.name for q in top))
            out.append(Problem("*", "spec.guarantee", f"queues {names}: guarantees add up to {_fmt(res, s, bad)}, "
                               f"above the cluster ({_fmt(res, total, bad)}); not every guarantee can be met"))
    if hierarchy:
        out += validate_hierarchy(queues, total, res)
    return out + validate_drf_hierarchy(queues)


def enabled_plugins(conf: SchedulerConf) -> set[str]:
    return {p.name for t in conf.tiers for p in t.plugins}


def validate_conf(conf: SchedulerConf) -> list[Problem]:
    """Scheduler-config problems about queues: proportion and capacity together."""
    names = enabled_plugins(conf)
    if {"proportion", "capacity"} <= names:
        return [Problem("*", "tiers", "scheduler config enables both proportion and capacity; they compute "
                                      "deserved differently and Volcano requires exactly one of them")]
    return []


def validate_queue_object(obj: dict[str, Any], queues: Mapping[str, QueueInfo], total: np.ndarray,
                          res: ResourceIndex, *, hierarchy: bool = False) -> list[Problem]:
    """Admission: the problems a new or changed Queue manifest would introduce, given the others."""
    from pyvolcano.api.convert import queue as to_queue
    q = to_queue(obj, res)
    merged = dict(queues)
    merged[q.name] = q
    before = {p.message for p in validate_queues(queues, total, res, hierarchy=hierarchy)}
    return [p for p in validate_queues(merged, total, res, hierarchy=hierarchy) if p.message not in before]
