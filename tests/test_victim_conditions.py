"""The plugins' declared victim conditions (``contracts.VictimCondition``) and the proof preempt and reclaim draw
from them (``framework/victim_ledger.py``).

For each declaring plugin: a candidate meeting its condition that the plugin offers, and one that does not meet it,
which the plugin does not offer -- whatever else it would say, a candidate outside the condition is never in its
answer.  Then the proof: a tier that starts with a plugin declaring nothing gives none, and the ledger follows an
eviction made in the session."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from pyvolcano.actions._victims import FitsNowhere, fitting
from pyvolcano.actions.preempt import valid_starving
from pyvolcano.api.job_info import TaskInfo
from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.conf.loader import load_conf
from pyvolcano.framework.incremental import deltas
from pyvolcano.framework.points import ABSTAIN, PREEMPTABLE, RECLAIMABLE, Point
from pyvolcano.framework.session import Session
from pyvolcano.framework.statement import Statement
from pyvolcano.framework.victim_ledger import VictimLedger, VictimProof, session_ledger, victim_proof, walk_by_version

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


def _verdict(objs: list[dict[str, Any]], ledger: VictimLedger | None, text: str) -> tuple[bool, bool, VictimLedger]:
    """A session over ``objs`` whose proof uses ``ledger`` (carried from an earlier session, as
    ``session_ledger`` carries it; a new one when None): the verdict for the pending pod ``p-0`` of job ``p`` (both
    scopes of preempt's turns), and the proof made afresh."""
    ssn = session(objs, text)
    fresh = session_ledger(ssn)
    assert fresh is not None
    if ledger is None:
        ledger = fresh
    ledger.sync(ssn)
    proof = VictimProof(ssn, PREEMPTABLE, ledger)
    p = task(ssn, "p-0")
    return proof.verdict(p, ["default"], less="ns/p", job="ns/p"), \
        proof.none(p, ["default"], less="ns/p") and proof.none(p, job="ns/p", own=True), ledger


def test_a_carried_verdict_is_not_used_once_a_victim_class_appears() -> None:
    """A verdict carried between sessions is keyed by the classes present in the queue (``VictimLedger.present``):
    while only jobs of the preemptor's priority run it holds; when a lower-priority job starts running (a class
    priority admits) the next session proves again and finds a victim possible, so the turn is taken."""
    text = conf(["priority"])
    base = cluster(group("p", prio="high"), pod("p-0", "p", prio="high"),
                   group("hi", prio="high"), pod("hi-0", "hi", node="n1", prio="high"))
    idle, fresh, ledger = _verdict(base, None, text)
    assert idle and fresh and ledger.verdicts
    again, fresh, _ = _verdict(base, ledger, text)  # nothing changed: the verdict is reused, and still right
    assert again and fresh
    more = [*base, group("lo", prio="low"), pod("lo-0", "lo", node="n2", prio="low")]
    stamps = dict(ledger.present)
    idle, fresh, _ = _verdict(more, ledger, text)
    assert ledger.present["default"] != stamps["default"]
    assert not idle and not fresh


def test_a_carried_verdict_is_not_used_for_a_preemptor_that_changed() -> None:
    """The verdict is keyed by what each condition's ``admits`` reads of the preemptor (``VictimCondition.actor``):
    the same low-priority job running, a waiting job of low priority can evict nothing; re-created at high
    priority (the same uid, the same classes present) it can, and the turn is taken."""
    text = conf(["priority"], ["drf"])
    running = [group("lo", prio="low"), pod("lo-0", "lo", node="n1", prio="low"),
               group("lo2", prio="low"), pod("lo2-0", "lo2", node="n1", prio="low")]
    low = cluster(group("p", prio="low"), pod("p-0", "p", prio="low"), *running)
    idle, fresh, ledger = _verdict(low, None, text)
    assert idle and fresh
    high = cluster(group("p", prio="high"), pod("p-0", "p", prio="high"), *running)
    stamps = dict(ledger.present)
    idle, fresh, _ = _verdict(high, ledger, text)
    assert ledger.present == stamps  # the classes present did not move: only the preemptor's key tells them apart
    assert not idle and not fresh
    # a request is what drf's ``admits`` reads: another request is another key, proved on its own
    kept = len(ledger.verdicts)
    bigger = cluster(group("p", prio="low"), pod("p-0", "p", cpu="3", prio="low"), *running)
    idle, fresh, _ = _verdict(bigger, ledger, text)
    assert idle and fresh and len(ledger.verdicts) == kept + 1


def test_no_carried_verdict_for_a_job_with_candidates() -> None:
    """A preemptor whose own job has running candidates is proved as it is (its own scope and the queue less it
    are not the queue's classes alone): no verdict is stored for it."""
    objs = cluster(group("p", prio="high"), pod("p-0", "p", prio="high"), pod("p-1", "p", node="n1", prio="low"))
    idle, fresh, ledger = _verdict(objs, None, conf(["priority"]))
    assert idle == fresh and not idle  # its own lower-priority task is a possible victim
    assert not ledger.verdicts


def test_valid_starving_is_carried_only_for_an_unchanged_job(monkeypatch: pytest.MonkeyPatch) -> None:
    """preempt and reclaim carry an unchanged job's jobValid/jobStarving answers under its version and the conf
    (``actions/preempt.py: valid_starving``): asked once for a job that waits, asked again once the session changed
    the job (its version moved), and under another conf object."""
    objs = cluster(group("p"), pod("p-0", "p"), group("r"), pod("r-0", "r", node="n1"))
    text = conf(["priority", "gang"])
    ssn = session(objs, text)
    asked: list[str] = []
    real = Session.job_starving

    def counting(self: Session, job: Any) -> bool:
        asked.append(job.uid)
        return real(self, job)
    monkeypatch.setattr(Session, "job_starving", counting)
    assert walk_by_version(ssn)
    job = ssn.jobs["ns/p"]
    with deltas.checking(False):
        assert valid_starving(ssn, job, True) and valid_starving(ssn, job, True)
        assert asked == ["ns/p"]
        Statement(ssn).pipeline(task(ssn, "p-0"), 0, False)  # the session changes the job: asked as it is now
        assert not valid_starving(ssn, job, True)
        assert asked == ["ns/p", "ns/p"]
        other = Session(ssn.snapshot, load_conf(text))  # another conf object: its callbacks may differ
        other.carry = True
        other.open()
        clone = other.jobs["ns/r"]
        assert not valid_starving(other, clone, True)
        assert not valid_starving(other, clone, True)
        assert asked.count("ns/r") == 1


def test_fits_nowhere_agrees_with_fitting() -> None:
    """``FitsNowhere`` first compares a request with the largest future idle per resource; its answer must be
    ``fitting``'s over every node, whatever the nodes hold."""
    objs = cluster(*(pod(f"p-{c}", "p", cpu=str(c)) for c in (1, 2, 3, 4, 5)), group("p"))
    ssn = session(objs, conf(["gang"]))
    rnd = random.Random(3)
    everyone = np.arange(len(ssn.nodes))
    unit = np.array([1000.0, 2.0**30, 1.0])  # cpu (milli), memory, pods: the cluster's resources
    assert ssn.nodes.future.shape[1] == len(unit)
    seen: set[tuple[bool, bool]] = set()
    for _ in range(60):
        future = ssn.nodes.future
        future[:] = [[rnd.choice((0.0, 0.5, 1.0, 1.0 + 1e-12, 2.0, 3.0, 5.0)) * u for u in unit]
                     for _ in range(future.shape[0])]
        nowhere = FitsNowhere(ssn)
        for t in ssn.jobs["ns/p"].tasks.values():
            want = not len(fitting(ssn, t.init_resreq, everyone))
            assert nowhere(t) == want, (future, t.init_resreq)
            seen.add((nowhere._above_top(t.init_resreq.tobytes(), t.init_resreq), want))
    assert seen == {(True, True), (False, True), (False, False)}  # both ways, and fitting asked when not above


def test_a_waiting_jobs_carried_idle_proof_is_used_only_while_nothing_it_read_moved(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """preempt carries a waiting job's idle proof with the job (``preempt.IdleJobs``): proved once while the job
    and its queue's classes stay as they were, its answer always the task-by-task one; a lower-priority job starting
    to run (a victim class appears) makes it proved again and the turn taken, and so does a node given room back
    (the carried proof stands, the fit is asked in each session)."""
    from functools import partial

    from pyvolcano.actions import preempt
    proved: list[str] = []
    real = preempt.IdleJobs._proved

    def counting(self: preempt.IdleJobs, job: Any) -> Any:
        proved.append(job.uid)
        return real(self, job)
    monkeypatch.setattr(preempt.IdleJobs, "_proved", counting)
    text = conf(["priority", "gang"], ["drf"])
    parsed = load_conf(text)
    cache = SchedulerCache.from_objects(cluster(
        group("p", prio="high", phase="Inqueue"), pod("p-0", "p", cpu="3", prio="high"),
        group("hi", prio="high"), pod("hi-0", "hi", cpu="2", node="n1", prio="high"),
        group("hi2", prio="high"), pod("hi2-0", "hi2", cpu="2", node="n2", prio="high")))
    ledger: list[VictimLedger] = []

    def idle() -> bool:
        ssn = Session(cache.snapshot(), parsed)
        ssn.carry = True
        ssn.open()
        fresh = session_ledger(ssn)
        assert fresh is not None
        if not ledger:
            ledger.append(fresh)
        ledger[0].sync(ssn)
        proof = VictimProof(ssn, PREEMPTABLE, ledger[0])
        assert proof.actor_session is not None  # priority, gang and drf declare it
        nowhere = FitsNowhere(ssn)
        one = partial(preempt._idle_preemptor, ssn, proof, preempt.PreemptOptions(), nowhere)
        job = ssn.jobs["ns/p"]
        got = preempt.IdleJobs(ssn, proof, preempt.PreemptOptions(), nowhere, one)(job)
        assert got == all(one(job, t) for t in job.tasks.values())
        return got
    with deltas.checking(False):
        assert idle() and idle() and idle()
        assert proved == ["ns/p"]  # proved once, carried twice
        low = [pod(f"lo-{i}", "lo", cpu="1", node="n2", prio="low") for i in (0, 1)]
        cache.upsert(group("lo", prio="low"))
        for p in low:  # above its minAvailable: gang, priority and drf may offer one
            cache.upsert(p)
        assert not idle()  # a lower-priority job runs in the queue: a victim is possible, the turn is taken
        assert proved == ["ns/p", "ns/p"]
        for p in low:
            cache.delete(p)
        assert idle() and proved == ["ns/p"] * 3
        cache.delete(pod("hi2-0", "hi2", cpu="2", node="n2", prio="high"))
        assert not idle()  # n2 has room for p-0 now: the carried proof stands, the fit does not
        assert proved == ["ns/p"] * 3


def test_what_preempt_leaves_to_reclaim_is_made_again_after_any_change() -> None:
    """``while_unchanged`` keeps a value (the starving walk, ``FitsNowhere``) for the session while nothing has
    changed, and makes it again after a node change, an eviction, a job put back by the plan or a job changed."""
    from pyvolcano.framework.state import StateKey
    from pyvolcano.framework.victim_ledger import while_unchanged

    objs = cluster(pod("r", "r", cpu="1", node="n1"), group("r"), pod("p", "p", cpu="1"), group("p"))
    ssn = session(objs, conf(["gang"]))
    key: StateKey[Any] = StateKey("test")
    made: list[int] = []

    def make() -> int:
        made.append(1)
        return len(made)
    assert while_unchanged(ssn, key, make) == while_unchanged(ssn, key, make) == 1
    with deltas.checking(True):
        first = FitsNowhere.shared(ssn)
        assert FitsNowhere.shared(ssn) is first
    task = next(iter(ssn.jobs["ns/r"].tasks.values()))
    changes = [lambda: Statement(ssn).evict(task, "test"),  # an eviction, a node change, a job changed
               lambda: ssn.plan.unparked_uids.append("ns/p"),
               lambda: ssn.touched.add("ns/other")]
    for k, change in enumerate(changes, start=2):
        change()
        assert while_unchanged(ssn, key, make) == while_unchanged(ssn, key, make) == k
    with deltas.checking(True):
        assert FitsNowhere.shared(ssn) is not first
