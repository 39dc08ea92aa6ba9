"""Preempt and reclaim walk only the jobs a session does not leave settled (``actions/preempt.py:
candidate_preemptors``), take their victim bounds when a task first tries nodes, and reclaim scans no node when
no other queue is reclaimable: none of it may change a decision.  Small oversubscribed months of single-pod
services (the workload of the month benchmark, ``benchmarks/test_bench_sim.py``) under the benchmark's
preempt+reclaim confs give every job, every eviction and every bind the same with the incremental layer on and with
``--full-sessions`` (nothing carried, every job walked), with one queue and with two (reclaim between them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyvolcano.actions import preempt, reclaim
from pyvolcano.conf.loader import load_conf_file
from pyvolcano.sim import metrics
from pyvolcano.sim.cluster import parse_cluster_spec
from pyvolcano.sim.engine import Simulator
from pyvolcano.sim.workload import services
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
    monkeypatch.setattr(preempt, "candidate_preemptors", counting)
    monkeypatch.setattr(reclaim, "candidate_preemptors", counting)
    carried = _run(False, "preempt", 5, 40, queues, 1)
    assert sum(w for w, _ in walked) * 4 < sum(n for _, n in walked), walked[-5:]
    walked.clear()
    full = _run(True, "preempt", 5, 40, queues, 1)
    assert all(w == n for w, n in walked)
    assert carried == full
    assert (carried[1] > 0) == (len(queues) > 1)
