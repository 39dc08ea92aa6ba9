"""Preempt and reclaim walk only the jobs a session does not leave settled (``actions/preempt.py:
candidate_preemptors``), take their victim bounds when a task first tries nodes, and reclaim scans no node when
no other queue is reclaimable: none of it may change a decision.  Small oversubscribed months of single-pod
services (the workload of the month benchmark, ``benchmarks/test_bench_sim.py``) under the benchmark's
preempt+reclaim confs give every job, every eviction and every bind the same with the incremental layer on and with
``--full-sessions`` (nothing carried, every job walked), with one queue and with two (reclaim between them)."""

from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyvolcano.actions import _victims, preempt, reclaim
from pyvolcano.conf.loader import load_conf_file
from pyvolcano.framework.incremental import deltas
from pyvolcano.framework.session import Session
from pyvolcano.framework.victim_ledger import VictimProof
from pyvolcano.sim import metrics
from pyvolcano.sim.cluster import parse_cluster_spec
from pyvolcano.sim.engine import Simulator
from pyvolcano.sim.workload import JobSpec, from_specs, services
from tests.sim.recording import record_binds

CONFS = Path(__file__).resolve().parents[2] / "benchmarks" / "confs"


def _run(full: bool, conf: str, seed: int, jobs: int, queues: dict[str, float], nodes: int) -> tuple[Any, ...]:
    """One small month: ``jobs`` services over six simulated hours on ``nodes`` nodes of 64 cpu / 2 GPUs (about
    twice oversubscribed)."""
    qs = [{"kind": "Queue", "metadata": {"name": q}, "spec": {"weight": w, "reclaimable": True}}
          for q, w in queues.items()]
    sim = Simulator(parse_cluster_spec(f"{nodes}x{{cpu: 64, memory: 256Gi, nvidia.com/gpu: 2}}"), qs,
                    services(seed=seed, jobs=jobs, span=6 * 3600.0, queues=queues, min_life=600.0),
                    load_conf_file(str(CONFS / f"{conf}.conf")), full_sessions=full)
    binds = record_binds(sim, lambda task, node: f"{sim.now:.3f} {task.namespace}/{task.name} {node}")
    res = sim.run()
    return metrics.job_rows(res), res.evictions, [str(e) for e in res.eviction_log], res.cycles, binds


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conf=st.sampled_from(["preempt", "cdp"]), seed=st.integers(0, 10_000), jobs=st.integers(20, 50),
       queues=st.sampled_from([{"default": 1.0}, {"a": 1.0, "b": 1.0}, {"a": 1.0, "b": 3.0}]),
       nodes=st.integers(1, 2))
def test_preempt_and_reclaim_decide_the_same_with_sessions_carried(conf: str, seed: int, jobs: int,
                                                                    queues: dict[str, float], nodes: int) -> None:
    assert _run(False, conf, seed, jobs, queues, nodes) == _run(True, conf, seed, jobs, queues, nodes)


@pytest.mark.parametrize("queues", [{"default": 1.0}, {"a": 1.0, "b": 3.0}])
def test_preempt_and_reclaim_walk_only_the_unsettled_jobs(monkeypatch: pytest.MonkeyPatch,
                                                          queues: dict[str, float]) -> None:
    """The property above would hold trivially if no job were ever left out: the walks must be shorter than the
    sessions' job lists, and the two-queue run must evict (reclaim between the queues)."""
    walked: list[tuple[int, int]] = []
    real = preempt.candidate_preemptors

    def counting(ssn: Any) -> Any:
        jobs = list(real(ssn))
        walked.append((len(jobs), len(ssn.jobs)))
        return jobs
    monkeypatch.setattr(preempt, "candidate_preemptors", counting)  # reclaim's walk too (``starving_jobs``)
    carried = _run(False, "preempt", 5, 40, queues, 1)
    assert sum(w for w, _ in walked) * 4 < sum(n for _, n in walked), walked[-5:]
    walked.clear()
    full = _run(True, "preempt", 5, 40, queues, 1)
    assert all(w == n for w, n in walked)
    assert carried == full
    assert (carried[1] > 0) == (len(queues) > 1)


def _gangs(seed: int, jobs: int) -> Any:
    """Jobs of one to four pods with ``minAvailable`` from one to all of them, two priorities, over two queues:
    victims exist (a job above its minimum, of a lower priority, gives pods up), unlike on the services."""
    rnd = random.Random(seed)
    specs, t = [], 0.0
    for i in range(jobs):
        t += rnd.expovariate(jobs / (6 * 3600.0))
        size = rnd.choice((1, 2, 4))
        specs.append(JobSpec(name=f"g-{i:04d}", arrival=round(t, 3), queue=rnd.choice(("a", "b")),
                             priority=rnd.choice((0, 100)), tasks=size, min_available=rnd.randint(1, size),
                             cpu=str(rnd.choice((4, 8, 16))), memory="8Gi",
                             duration=round(math.exp(rnd.uniform(math.log(600.0), math.log(6 * 3600.0))), 1)))
    return from_specs(specs)


def _run_gangs(full: bool, check: bool, conf: str, seed: int) -> tuple[Any, ...]:
    qs = [{"kind": "Queue", "metadata": {"name": q}, "spec": {"weight": w, "reclaimable": True}}
          for q, w in (("a", 1), ("b", 3))]
    sim = Simulator(parse_cluster_spec("2x{cpu: 64, memory: 256Gi, nvidia.com/gpu: 2}"), qs, _gangs(seed, 40),
                    load_conf_file(str(CONFS / f"{conf}.conf")), full_sessions=full)
    binds = record_binds(sim, lambda task, node: f"{sim.now:.3f} {task.namespace}/{task.name} {node}")
    with deltas.checking(check):
        res = sim.run()
    return metrics.job_rows(res), res.evictions, [str(e) for e in res.eviction_log], res.cycles, binds


@pytest.mark.parametrize(("conf", "seed"), [("cdp", 1), ("preempt", 2)])
def test_victim_ledger_where_victims_exist(monkeypatch: pytest.MonkeyPatch, conf: str, seed: int) -> None:
    """Preempt and reclaim skip the victim search where the plugins' declared conditions prove it empty
    (``framework/victim_ledger.py``), from a ledger carried between sessions.  On gangs above their minimum
    over two queues victims exist, so the ledger moves with evictions and the proof goes both ways: the shortcut
    with the ledger carried (``deltas.CHECK`` off) decides as ``--full-sessions`` with every search run and every
    answer checked empty where proven so (``deltas.CHECK`` on, which also compares the ledger with a fresh count
    after every change), and as the carried ledger under that check."""
    proven: list[bool] = []
    real = VictimProof.none

    def counting(self: VictimProof, *args: Any, **kwargs: Any) -> bool:
        got = real(self, *args, **kwargs)
        proven.append(got)
        return got
    monkeypatch.setattr(VictimProof, "none", counting)
    shortcut = _run_gangs(False, False, conf, seed)
    assert True in proven and False in proven
    assert shortcut[1] > 0  # evictions
    assert shortcut == _run_gangs(True, True, conf, seed)
    assert shortcut == _run_gangs(False, True, conf, seed)


@pytest.mark.parametrize("queues", [{"default": 1.0}, {"a": 1.0, "b": 3.0}])
def test_idle_turns_are_skipped_and_decide_the_same(monkeypatch: pytest.MonkeyPatch,
                                                    queues: dict[str, float]) -> None:
    """Preempt and reclaim skip every starving job's turn when each of them provably evicts and pipelines nothing
    (``actions/_victims.py: turns_idle``: no victim possible, no node's future idle holds the task).  The skip
    must be taken on the services (waiting jobs that fit nowhere), must not be taken where reclaim evicts (two
    queues), and must decide as the turns taken: with ``deltas.CHECK`` (on in the suite) the turns run and are
    checked to leave the session unchanged, and ``--full-sessions`` takes every turn as Volcano does."""
    answers: list[bool] = []

    def counting(*args: Any, **kwargs: Any) -> bool:
        got = _victims.turns_idle(*args, **kwargs)
        answers.append(got)
        return got
    monkeypatch.setattr(preempt, "turns_idle", counting)
    monkeypatch.setattr(reclaim, "turns_idle", counting)
    with deltas.checking(False):
        skipped = _run(False, "cdp", 7, 50, queues, 2)
    assert True in answers
    assert (False in answers) == (len(queues) > 1)
    assert (skipped[1] > 0) == (len(queues) > 1)
    answers.clear()
    checked = _run(False, "cdp", 7, 50, queues, 2)
    assert True in answers
    assert skipped == checked == _run(True, "cdp", 7, 50, queues, 2)


def test_carried_verdicts_and_walk_answers_are_used_and_decide_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    """The idle proofs are carried between sessions in the victim ledger (``VictimProof.verdict``) and with a waiting
    job (``preempt.IdleJobs``), and an unchanged job's valid+starving answer in the job (``preempt.valid_starving``).
    On the services both must be reused (fewer jobs proved than checked, fewer jobStarving asks by the walk than jobs
    walked), reclaim must take preempt's walk when preempt changed nothing (``preempt.walk``), and the run must
    decide as with every proof and ask made (``deltas.CHECK``: each reused answer made again and compared) and as
    ``--full-sessions``."""
    counts = {"verdict": 0, "none": 0, "walked": 0, "starving": 0, "idle-job": 0, "proved": 0, "walks": 0, "made": 0}

    def counting(name: str, real: Any) -> Any:
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            counts[name] += 1
            return real(*args, **kwargs)
        return wrapped
    monkeypatch.setattr(VictimProof, "verdict", counting("verdict", VictimProof.verdict))
    monkeypatch.setattr(VictimProof, "none", counting("none", VictimProof.none))
    walking = [False]
    real_walk, real_starving = preempt.valid_starving, Session.job_starving

    def valid_starving(*args: Any) -> bool:  # the walk both actions share (``preempt.walk``)
        counts["walked"] += 1
        walking[0] = True
        try:
            return real_walk(*args)
        finally:
            walking[0] = False

    def job_starving(*args: Any) -> bool:  # asked by the walk, not by the turns
        counts["starving"] += walking[0]
        return real_starving(*args)
    monkeypatch.setattr(preempt, "valid_starving", valid_starving)
    monkeypatch.setattr(preempt, "walk", counting("walks", preempt.walk))
    monkeypatch.setattr(reclaim, "walk", counting("walks", reclaim.walk))
    monkeypatch.setattr(preempt, "starving_jobs", counting("made", preempt.starving_jobs))
    monkeypatch.setattr(Session, "job_starving", job_starving)
    monkeypatch.setattr(preempt.IdleJobs, "__call__", counting("idle-job", preempt.IdleJobs.__call__))
    monkeypatch.setattr(preempt.IdleJobs, "_proved", counting("proved", preempt.IdleJobs._proved))
    with deltas.checking(False):
        carried = _run(False, "cdp", 7, 50, {"default": 1.0}, 2)
    assert counts["none"] <= counts["verdict"], counts  # (a verdict reused by another job of the same key)
    assert counts["proved"] * 2 < counts["idle-job"], counts  # a waiting job's proof carried with it (``IdleJobs``)
    assert counts["starving"] < counts["walked"], counts  # unchanged jobs' answers carried (``valid_starving``)
    assert counts["made"] * 2 <= counts["walks"], counts  # reclaim takes preempt's walk when nothing changed between
    assert carried == _run(False, "cdp", 7, 50, {"default": 1.0}, 2) == _run(True, "cdp", 7, 50, {"default": 1.0}, 2)
