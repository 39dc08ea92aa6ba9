"""Queue settings that cannot do what they say (docs/queues.md), checked once for every caller.

Volcano's admission accepts a Queue whose guarantee exceeds its capability or the whole cluster, guarantees
that add up to more than the cluster, a child larger than its parent, a weight of 0, and a scheduler config
with both proportion and capacity.  The scheduler then silently shrinks or ignores those numbers.  This
module names each such problem (queue, field, one-line message); ``pyvolcano queues`` prints them, the
capacity plugin reports the same tree rules as warnings (Volcano master only logs them), and the Kubernetes
admission path reuses ``validate_queue_object`` to reject a bad Queue before it is stored.
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


def validate_parents(queues: Mapping[str, QueueInfo]) -> list[Problem]:
    """``spec.parent`` naming a queue that does not exist, or parents that form a cycle (Volcano's capacity
    plugin then refuses the whole hierarchy)."""
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
    return out


def validate_hierarchy(queues: Mapping[str, QueueInfo], total: np.ndarray, res: ResourceIndex) -> list[Problem]:
    """Parent/child problems in the specs, by the rules of Volcano's hierarchical capacity plugin: an unknown
    parent or a cycle; a child's capability above its parent's (a queue without a capability has its parent's,
    the root's is its spec, unlimited when unset, as Volcano master's capacity plugin reads it); a child's
    guarantee above its parent's; children whose guarantees, or
    whose deserved (at least their guarantee), add up to more than their parent's (0 where the parent sets
    none; the cluster for the root).  The capacity plugin itself reports the same rules on the computed
    numbers (``realCapability`` cuts deserved first)."""
    out = validate_parents(queues)
    broken = {p.queue for p in out}
    kids: dict[str, list[QueueInfo]] = {}
    for q in queues.values():
        if q.name != ROOT and q.name not in broken:
            kids.setdefault(parent_of(q, queues), []).append(q)
    root = queues.get(ROOT)
    inf = res.infinite()

    def cap(q: QueueInfo | None, inherited: np.ndarray) -> np.ndarray:
        own = q.capability if q is not None and q.capability is not None else inf
        return np.where(np.isinf(own), inherited, own)

    def floor(q: QueueInfo) -> np.ndarray:
        d = q.deserved if q.deserved is not None else res.zeros()
        return np.maximum(d, q.guarantee) if q.guarantee is not None else d

    def walk(name: str, q: QueueInfo | None, eff_cap: np.ndarray, seen: set[str]) -> None:
        children = sorted(kids.get(name, []), key=lambda c: c.name)
        for c in children:
            if q is not None and c.guarantee is not None and q.guarantee is not None:
                bad = _over(c.guarantee, q.guarantee, res, c.guarantee_set & q.guarantee_set)
                if bad:
                    out.append(Problem(c.name, "spec.guarantee", f"queue {c.name}: spec.guarantee "
                                       f"({_fmt(res, c.guarantee, bad)}) is above its parent {name}'s "
                                       f"({_fmt(res, q.guarantee, bad)})"))
            if c.capability is not None:
                bad = _over(c.capability, eff_cap, res, c.capability_set)
                if bad:
                    out.append(Problem(c.name, "spec.capability", f"queue {c.name}: spec.capability "
                                       f"({_fmt(res, c.capability, bad)}) is above its parent {name}'s "
                                       f"({_fmt(res, eff_cap, bad)})"))
        if children:
            g = sum((c.guarantee for c in children if c.guarantee is not None), res.zeros())
            own_g = total if name == ROOT and q is None else (q.guarantee if q is not None and q.guarantee
                                                               is not None else res.zeros())
            bad = _over(g, own_g, res, res.names)
            if bad and name != ROOT:
                out.append(Problem(name, "spec.guarantee", f"queue {name}: its children's guarantees add up to "
                                   f"{_fmt(res, g, bad)}, above its own guarantee ({_fmt(res, own_g, bad)})"))
            d = sum((floor(c) for c in children), res.zeros())
            own_d = total if name == ROOT else (floor(q) if q is not None else res.zeros())
            bad = _over(d, own_d, res, res.names)
            if bad:
                out.append(Problem(name, "spec.deserved", f"queue {name}: its children's deserved add up to "
                                   f"{_fmt(res, d, bad)}, above its own ({_fmt(res, own_d, bad)})"))
        for c in children:
            if c.name not in seen:
                walk(c.name, c, cap(c, eff_cap), seen | {c.name})

    walk(ROOT, root, cap(root, inf), {ROOT})  # the root is unlimited unless its spec says otherwise
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
    guarantees = [q.guarantee for q in top if q.guarantee is not None]
    if top:
        s = sum(guarantees, res.zeros())
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
    """Admission: the problems a new or changed Queue manifest would introduce, given the others (a malformed
    manifest raises ManifestError from ``api/models.py``, the one validated boundary)."""
    from pyvolcano.api import models
    from pyvolcano.api.convert import queue as to_queue
    models.validate(obj)
    q = to_queue(obj, res)
    merged = dict(queues)
    merged[q.name] = q
    before = {p.message for p in validate_queues(queues, total, res, hierarchy=hierarchy)}
    return [p for p in validate_queues(merged, total, res, hierarchy=hierarchy) if p.message not in before]
