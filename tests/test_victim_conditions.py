"""The plugins' declared victim conditions (``contracts.VictimCondition``) and the proof preempt and reclaim draw
from them (``framework/victim_ledger.py``).

For each declaring plugin: a candidate meeting its condition that the plugin offers, and one that does not meet it,
which the plugin does not offer -- whatever else it would say, a candidate outside the condition is never in its
answer.  Then the proof: a tier that starts with a plugin declaring nothing gives none, and the ledger follows an
eviction made in the session."""

from __future__ import annotations

from typing import Any

import pytest

from pyvolcano.api.job_info import TaskInfo
from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.conf.loader import load_conf
from pyvolcano.framework.points import ABSTAIN, PREEMPTABLE, RECLAIMABLE, Point
from pyvolcano.framework.session import Session
from pyvolcano.framework.statement import Statement
from pyvolcano.framework.victim_ledger import VictimLedger, session_ledger, victim_proof

PRIORITIES = {"low": 1, "high": 10}


def conf(*tiers: list[str], actions: str = "allocate, preempt, reclaim") -> str:
    out = f'actions: "{actions}"\ntiers:\n'
    for tier in tiers:
        out += "- plugins:\n" + "".join(f"  - name: {p}\n" for p in tier)
    return out


def pod(name: str, group: str, cpu: str = "1", node: str | None = None, *, ns: str = "ns",
        labels: dict[str, str] | None = None, prio: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulerName": "volcano",
                            "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}]}
    if node:
        spec["nodeName"] = node
    if prio:  # as the Priority admission plugin leaves it (the scheduler reads ``spec.priority``)
        spec["priorityClassName"], spec["priority"] = prio, PRIORITIES[prio]
    meta: dict[str, Any] = {"name": name, "namespace": ns, "annotations": {"scheduling.k8s.io/group-name": group}}
    if labels:
        meta["labels"] = labels
    return {"kind": "Pod", "metadata": meta, "spec": spec, "status": {"phase": "Running" if node else "Pending"}}


def group(name: str, min_member: int = 1, *, ns: str = "ns", queue: str = "default", prio: str = "",
          phase: str = "Running") -> dict[str, Any]:
    spec: dict[str, Any] = {"minMember": min_member, "queue": queue}
    if prio:
        spec["priorityClassName"] = prio
    return {"kind": "PodGroup", "metadata": {"name": name, "namespace": ns}, "spec": spec, "status": {"phase": phase}}


def cluster(*objs: dict[str, Any], queues: tuple[str, ...] = ("default",), cpu: str = "4") -> list[dict[str, Any]]:
    return [*({"kind": "Node", "metadata": {"name": n},
               "status": {"allocatable": {"cpu": cpu, "memory": "16Gi", "pods": "110"}}} for n in ("n1", "n2")),
            *({"kind": "Queue", "metadata": {"name": q}, "spec": {"weight": 1, "reclaimable": True}} for q in queues),
            {"kind": "PriorityClass", "metadata": {"name": "low"}, "value": 1},
            {"kind": "PriorityClass", "metadata": {"name": "high"}, "value": 10},
            *objs]


def session(objs: list[dict[str, Any]], text: str) -> Session:
    """A session that carries per-job values (the proof is taken only then: ``victims.session_ledger``)."""
    ssn = Session(SchedulerCache.from_objects(objs).snapshot(), load_conf(text))
    ssn.carry = True
    return ssn.open()


def task(ssn: Session, name: str) -> TaskInfo:
    return next(t for j in ssn.jobs.values() for t in j.tasks.values() if t.name == name)


def check(ssn: Session, point: Point[Any], plugin: str, actor: str, offered: str, refused: str) -> None:
    """``plugin`` offers ``offered`` to ``actor`` and its condition admits it; it does not offer ``refused``, and its
    condition does not admit it either (asked alone, so no other candidate changes the answer)."""
    fn = next(f for tier in ssn.fns[point.name] for name, f in tier if name == plugin)
    cond = ssn.victim_conditions[fn]
    a = task(ssn, actor)
    for name, want in ((offered, True), (refused, False)):
        t = task(ssn, name)
        got, vote = fn(a, [t])
        assert vote != ABSTAIN
        assert (t in got) is want, (plugin, name)
        assert cond.admits(a, cond.classify(ssn.jobs[t.job], t), t.job == a.job) is want, (plugin, name)


def test_gang_offers_only_tasks_of_jobs_above_min_available() -> None:
    objs = cluster(group("p"), pod("p-0", "p"), group("two"), pod("two-0", "two", node="n1"),
                   pod("two-1", "two", node="n1"), group("one"), pod("one-0", "one", node="n2"))
    ssn = session(objs, conf(["gang"]))
    check(ssn, PREEMPTABLE, "gang", "p-0", "two-0", "one-0")
    check(ssn, RECLAIMABLE, "gang", "p-0", "two-0", "one-0")


def test_priority_offers_only_lower_priority_jobs_and_own_lower_priority_tasks() -> None:
    objs = cluster(group("p", prio="high"), pod("p-0", "p", prio="high"), pod("p-1", "p", node="n1", prio="low"),
                   pod("p-2", "p", node="n1", prio="high"),
                   group("lo", prio="low"), pod("lo-0", "lo", node="n1"),
                   group("hi", prio="high"), pod("hi-0", "hi", node="n2"))
    ssn = session(objs, conf(["priority"]))
    check(ssn, PREEMPTABLE, "priority", "p-0", "lo-0", "hi-0")  # other jobs: by the jobs' priorities
    check(ssn, PREEMPTABLE, "priority", "p-0", "p-1", "p-2")  # its own job: by the tasks' priorities


def test_drf_offers_no_task_whose_job_would_hold_nothing() -> None:
    objs = cluster(group("p"), pod("p-0", "p"), group("two"), pod("two-0", "two", node="n1"),
                   pod("two-1", "two", node="n1"), group("one"), pod("one-0", "one", node="n2"))
    ssn = session(objs, conf(["drf"]))
    check(ssn, PREEMPTABLE, "drf", "p-0", "two-0", "one-0")


def test_drf_condition_counts_pipelined_tasks() -> None:
    """A job's pipelined task counts in drf's session allocation (its event handlers), so a job with one running
    and one pipelined task keeps something when the running one goes."""
    objs = cluster(group("one"), pod("one-0", "one", node="n1"), pod("one-1", "one"))
    ssn = session(objs, conf(["drf"]))
    fn = next(f for tier in ssn.fns["preemptable"] for _, f in tier)
    cond = ssn.victim_conditions[fn]
    t, job = task(ssn, "one-0"), ssn.jobs["ns/one"]
    assert not cond.classify(job, t)
    Statement(ssn).pipeline(task(ssn, "one-1"), 1, False)
    assert cond.classify(job, t)


def test_conformance_offers_no_critical_pod() -> None:
    objs = cluster(group("p"), pod("p-0", "p"), group("app"), pod("app-0", "app", node="n1"),
                   group("sys", ns="kube-system"), pod("sys-0", "sys", node="n2", ns="kube-system"))
    ssn = session(objs, conf(["conformance"]))
    check(ssn, PREEMPTABLE, "conformance", "p-0", "app-0", "sys-0")
    check(ssn, RECLAIMABLE, "conformance", "p-0", "app-0", "sys-0")


def test_pdb_offers_no_pod_without_labels() -> None:
    objs = cluster(group("p"), pod("p-0", "p"), group("l"), pod("l-0", "l", node="n1", labels={"app": "x"}),
                   group("u"), pod("u-0", "u", node="n2"))
    ssn = session(objs, conf(["pdb"]))
    check(ssn, PREEMPTABLE, "pdb", "p-0", "l-0", "u-0")
    check(ssn, RECLAIMABLE, "pdb", "p-0", "l-0", "u-0")


def test_proportion_offers_only_tasks_of_queues_over_their_share() -> None:
    """Queue ``a`` holds the whole cluster, ``c`` a little, and ``b`` waits: ``a`` is over what it deserves and
    gives a victim, ``c`` is within it."""
    objs = cluster(group("p", queue="b"), pod("p-0", "p", cpu="2"),
                   group("big", queue="a"), *(pod(f"big-{i}", "big", cpu="1", node="n1") for i in range(4)),
                   *(pod(f"big-{i}", "big", cpu="1", node="n2") for i in range(4, 7)),
                   group("small", queue="c"), pod("small-0", "small", cpu="1", node="n2"),
                   queues=("a", "b", "c"))
    ssn = session(objs, conf(["proportion"]))
    check(ssn, RECLAIMABLE, "proportion", "p-0", "big-0", "small-0")


def test_no_proof_when_a_tier_starts_with_a_plugin_that_declares_nothing() -> None:
    """cdp declares no condition (its answer reads the clock, and it warns about a malformed cooldown): first in
    its tier it would be asked before any declared plugin, so the tier, and the point, get no proof -- the search
    runs as Volcano's; after a declared plugin that proves the tier empty it is never reached."""
    objs = cluster(group("p"), pod("p-0", "p"), group("one"), pod("one-0", "one", node="n1"))
    first = session(objs, conf(["cdp", "gang"], ["drf"]))
    assert victim_proof(first, PREEMPTABLE) is None and victim_proof(first, RECLAIMABLE) is None
    assert session_ledger(first) is None
    plain = Session(SchedulerCache.from_objects(objs).snapshot(), load_conf(conf(["gang"], ["drf"]))).open()
    assert not plain.carry and victim_proof(plain, PREEMPTABLE) is None  # nothing carried: no ledger, no proof
    later = session(objs, conf(["priority", "gang", "conformance", "cdp"], ["drf"]))
    proof = victim_proof(later, PREEMPTABLE)
    assert proof is not None
    assert proof.none(task(later, "p-0"), ["default"], less="ns/p")
    alone = session(objs, conf(["gang"], ["cdp"]))  # a tier of cdp alone: no proof for that tier
    assert victim_proof(alone, PREEMPTABLE) is None


@pytest.mark.parametrize("one_pod", [True, False])
def test_the_proof_needs_every_tier(one_pod: bool) -> None:
    """A tier yields victims only if none of its plugins answers empty; the next tier is asked when it yields
    none: the proof holds only when every tier is shown empty.  Here gang (first tier) admits the two-pod job's
    task; drf (second tier) admits it too, so nothing is proven; with the job at one pod both refuse."""
    pods = [pod("two-0", "two", node="n1")] + ([] if one_pod else [pod("two-1", "two", node="n1")])
    objs = cluster(group("p"), pod("p-0", "p"), group("two"), *pods)
    ssn = session(objs, conf(["gang"], ["drf"]))
    proof = victim_proof(ssn, PREEMPTABLE)
    assert proof is not None
    assert proof.none(task(ssn, "p-0"), ["default"], less="ns/p") is one_pod


def test_the_ledger_follows_an_eviction_in_the_session() -> None:
    """gang admits a task of a job above its minimum; once one of its pods is evicted in the session the job is at
    its minimum, and the ledger (refreshed from the session's touched jobs) says so."""
    objs = cluster(group("p"), pod("p-0", "p"), group("two"), pod("two-0", "two", node="n1"),
                   pod("two-1", "two", node="n1"))
    ssn = session(objs, conf(["gang"]))
    proof = victim_proof(ssn, PREEMPTABLE)
    assert proof is not None and isinstance(proof.ledger, VictimLedger)
    p = task(ssn, "p-0")
    assert not proof.none(p, ["default"], less="ns/p")
    Statement(ssn).evict(task(ssn, "two-1"), "test")
    assert proof.none(p, ["default"], less="ns/p")
