"""Extension points, each declared once with the rule that combines its plugins' answers.

Volcano's session_plugins.go writes one tier loop per extension point.  Here a point is a row in ``POINTS``
(name, the PluginOption flag that switches it, the combination rule) and ``combine`` implements each rule
once.  ``tiers`` is always a list of tiers, each a list of ``(plugin_name, fn)`` in conf order, already
filtered by the plugin's enable flag.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from pyvolcano.conf.flags import FLAGS

PERMIT, ABSTAIN, REJECT = 1, 0, -1

Tiers = Sequence[Sequence[tuple[str, Callable[..., Any]]]]


class Rule(Enum):
    FIRST_DECIDES = "first non-zero answer across tiers wins (orders)"
    ALL_PASS = "every plugin must pass (predicates, allocatable, jobReady, preemptive)"
    SUM = "answers add up (node scores)"
    VOTE = "permit/abstain/reject: a reject wins, else the first tier with a permit permits; default permit"
    TIER_ALL = "the first tier with any plugin decides; all of that tier must say yes; default no"
    ANY = "any plugin saying yes makes it yes (overused)"
    INTERSECT = "victims: intersect within a tier; the first tier ending with victims wins, an empty tier defers"
    UNION = "victims: union within a tier, first tier with any wins"
    FIRST_RESULT = "first non-None answer wins (bestNode, targetJob, jobValid, prePredicate)"
    CALL_ALL = "every plugin is called; no answer (events, jobEnqueued, reservedNodes)"


@dataclass(frozen=True)
class Point:
    name: str
    flag: str | None
    rule: Rule


POINTS: dict[str, Point] = {p.name: p for p in [
    Point("jobOrder", "enableJobOrder", Rule.FIRST_DECIDES),
    Point("queueOrder", "enableQueueOrder", Rule.FIRST_DECIDES),
    Point("taskOrder", "enableTaskOrder", Rule.FIRST_DECIDES),
    Point("namespaceOrder", "enableNamespaceOrder", Rule.FIRST_DECIDES),
    Point("clusterOrder", "enableClusterOrder", Rule.FIRST_DECIDES),
    Point("victimOrder", "enableTaskOrder", Rule.FIRST_DECIDES),
    Point("victimQueueOrder", None, Rule.FIRST_DECIDES),
    Point("predicate", "enablePredicate", Rule.ALL_PASS),
    Point("prePredicate", "enablePredicate", Rule.FIRST_RESULT),
    Point("nodeOrder", "enableNodeOrder", Rule.SUM),
    Point("batchNodeOrder", "enableNodeOrder", Rule.SUM),
    Point("bestNode", "enableBestNode", Rule.FIRST_RESULT),
    Point("jobValid", None, Rule.FIRST_RESULT),
    Point("jobReady", "enableJobReady", Rule.ALL_PASS),
    Point("jobPipelined", "enableJobPipelined", Rule.VOTE),
    Point("jobStarving", "enableJobStarving", Rule.TIER_ALL),
    Point("jobEnqueueable", "enableJobEnqueued", Rule.VOTE),
    Point("jobEnqueued", "enableJobEnqueued", Rule.CALL_ALL),
    Point("allocatable", "enabledAllocatable", Rule.ALL_PASS),
    Point("overused", "enabledOverused", Rule.ANY),
    Point("preemptable", "enablePreemptable", Rule.INTERSECT),
    Point("reclaimable", "enableReclaimable", Rule.INTERSECT),
    Point("preemptive", "enablePreemptive", Rule.ALL_PASS),
    Point("victimTasks", "enabledVictim", Rule.UNION),
    Point("targetJob", "enableTargetJob", Rule.FIRST_RESULT),
    Point("reservedNodes", "enableReservedNodes", Rule.CALL_ALL),
]}

_unknown = sorted({p.flag for p in POINTS.values() if p.flag} - set(FLAGS))
if _unknown:  # a point switched by a flag the conf loader would reject as unknown
    raise ImportError(f"extension point flags missing from pyvolcano.conf.flags.FLAGS: {', '.join(_unknown)}")


def combine(rule: Rule, tiers: Tiers, *args: Any) -> Any:
    """Apply ``rule`` to the registered functions with ``args`` (see ``Rule`` for each meaning)."""
    if rule is Rule.FIRST_DECIDES:
        for tier in tiers:
            for _, fn in tier:
                r = fn(*args)
                if r:
                    return r
        return 0
    if rule is Rule.ALL_PASS:
        for tier in tiers:
            for _, fn in tier:
                if not fn(*args):
                    return False
        return True
    if rule is Rule.SUM:
        return sum(fn(*args) for tier in tiers for _, fn in tier)
    if rule is Rule.VOTE:
        for tier in tiers:
            permitted = False
            for _, fn in tier:
                r = fn(*args)
                if r < 0:
                    return False
                permitted = permitted or r > 0
            if permitted:
                return True
        return True
    if rule is Rule.TIER_ALL:
        for tier in tiers:
            if tier:
                return all(fn(*args) for _, fn in tier)
        return False
    if rule is Rule.ANY:
        return any(fn(*args) for tier in tiers for _, fn in tier)
    if rule is Rule.INTERSECT:
        return _intersect(tiers, *args)
    if rule is Rule.UNION:
        for tier in tiers:
            found: dict[str, Any] = {}
            for _, fn in tier:
                for t in fn(*args) or ():
                    found[t.uid] = t
            if found:
                return list(found.values())
        return []
    if rule is Rule.FIRST_RESULT:
        for tier in tiers:
            for _, fn in tier:
                r = fn(*args)
                if r is not None:
                    return r
        return None
    for tier in tiers:  # CALL_ALL
        for _, fn in tier:
            fn(*args)
    return None


def _intersect(tiers: Tiers, actor: Any, candidates: list[Any]) -> list[Any]:
    """Volcano's ``Session.Preemptable`` / ``Session.Reclaimable`` (framework/session_plugins.go, master
    ed72c7c8): a plugin returns (victims, vote) and ABSTAIN skips it.  An empty answer resets the victim
    list and ends the tier; otherwise the answer is intersected with the tier's list so far (an empty
    intersection is Go's nil slice: the list is reset, and a later plugin of the tier starts it afresh).
    A tier that ends with victims gives them; a tier that ends with none leaves the decision to the next
    tier, which starts from scratch (since Volcano v1.11 an earlier empty answer no longer vetoes later
    tiers)."""
    for tier in tiers:
        victims: list[Any] | None = None
        for _, fn in tier:
            cands, vote = fn(actor, candidates)
            if vote == ABSTAIN:
                continue
            if not cands:
                victims = None
                break
            if victims is None:
                victims = list(cands)
            else:
                keep = {t.uid for t in cands}
                victims = [t for t in victims if t.uid in keep] or None
        if victims:
            return victims
    return []
