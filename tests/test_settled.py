"""Settled jobs (``Session._settled_jobs``): a session leaves alone the jobs that closed the last session ready,
valid, with nothing pending and a quiet status, and are unchanged since.  Every session's result must be what it
is when every job is looked at: each PodGroup's status (phase, conditions, counts, reason, Event, pod
conditions), each queue's status, the binds and the evictions, on contended workloads with preempt and reclaim
(evictions of settled jobs' pods included) and node failures."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pyvolcano.conf.loader import load_conf_file
from pyvolcano.framework import session as session_mod
from pyvolcano.framework.result import SessionResult
from pyvolcano.sim import engine as engine_mod
from pyvolcano.sim.cluster import parse_cluster_spec
from pyvolcano.sim.engine import Simulator
from pyvolcano.sim.workload import synthetic

ROOT = Path(__file__).resolve().parents[1]


def _sig(res: SessionResult) -> tuple[Any, ...]:
    pgs = tuple((uid, st.phase, tuple((c["type"], c["status"], c["reason"], c["message"]) for c in st.conditions),
                 st.running, st.succeeded, st.failed, st.event, st.reason, tuple(st.pod_conditions.items()),
                 tuple(st.nominated.items())) for uid, st in res.podgroups.items())
    queues = tuple((name, tuple(sorted(q.allocated.items())),
                    None if q.allocated_vector is None else q.allocated_vector.tolist(),
                    q.pending, q.inqueue, q.running, q.unknown) for name, q in res.queues.items())
    return (pgs, queues, tuple(sorted(res.binds.items())), tuple((e.task.uid, e.reason) for e in res.evictions),
            tuple(sorted(res.unschedulable.items())), res.pods)


def _run(monkeypatch: pytest.MonkeyPatch, settle: bool, conf: str | None, seed: int) -> tuple[list[Any], int]:
    seen: list[Any] = []
    settled = [0]
    real_apply = engine_mod.apply
    real_settled = session_mod.Session._settled_jobs

    def apply(result: SessionResult, writer: Any) -> None:
        seen.append(_sig(result))
        real_apply(result, writer)

    def settled_jobs(self: session_mod.Session) -> dict[str, Any]:
        got = real_settled(self)
        if not settle:
            return {}
        settled[0] += len(got)
        return got
    monkeypatch.setattr(engine_mod, "apply", apply)
    monkeypatch.setattr(session_mod.Session, "_settled_jobs", settled_jobs)
    queues = [{"kind": "Queue", "metadata": {"name": q}, "spec": {"weight": w, "reclaimable": True}}
              for q, w in (("a", 1), ("b", 3))]
    wl = synthetic(seed=seed, jobs=70, rate=1.0, queues={"a": 1, "b": 3}, gang_sizes=(1, 1, 2, 4),
                   mean_duration=150, gpu_fraction=0.5)
    sim = Simulator(parse_cluster_spec("4x{cpu: 8, memory: 32Gi, nvidia.com/gpu: 2}"), queues, wl,
                    load_conf_file(str(ROOT / conf) if conf else None),
                    node_failures=[(40.0, "node-0000", 90.0), (150.0, "node-0003", 60.0)])
    res = sim.run()
    monkeypatch.undo()
    return seen + [res.evictions], settled[0]


@pytest.mark.parametrize("conf", [None, "examples/confs/reclaim-preempt.conf"])
@pytest.mark.parametrize("seed", [1, 7])
def test_settled_sessions_give_the_same_results(monkeypatch: pytest.MonkeyPatch, conf: str | None,
                                                seed: int) -> None:
    fast, settled = _run(monkeypatch, True, conf, seed)
    slow, none = _run(monkeypatch, False, conf, seed)
    assert none == 0
    assert settled > 100  # the comparison would hold trivially if no job were ever left alone
    assert len(fast) == len(slow)
    for k, (a, b) in enumerate(zip(fast, slow, strict=True)):
        assert a == b, f"session {k} differs"
    if conf is not None:
        assert fast[-1] > 0  # evictions happened


def test_a_settled_job_evicted_in_the_session_is_looked_at_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """An eviction moves the clone's version: gang's close and ``close`` then treat the job as any other (its
    status shows the Releasing pod's effect), not as the carried record."""
    seen: list[tuple[int, int]] = []
    real_close = session_mod.Session.close

    def close(self: session_mod.Session) -> SessionResult:
        evicted = {ev.task.job for ev in self.evictions}
        hit = [uid for uid in evicted if uid in self.settled]
        out = real_close(self)
        for uid in hit:
            st, _ = self.settled[uid]
            seen.append((int(out.podgroups[uid] is st), len(hit)))
        return out
    monkeypatch.setattr(session_mod.Session, "close", close)
    queues = [{"kind": "Queue", "metadata": {"name": q}, "spec": {"weight": w, "reclaimable": True}}
              for q, w in (("a", 1), ("b", 3))]
    wl = synthetic(seed=7, jobs=70, rate=1.0, queues={"a": 1, "b": 3}, gang_sizes=(1, 1, 2, 4),
                   mean_duration=150, gpu_fraction=0.5)
    Simulator(parse_cluster_spec("4x{cpu: 8, memory: 32Gi, nvidia.com/gpu: 2}"), queues, wl,
              load_conf_file(str(ROOT / "examples/confs/reclaim-preempt.conf"))).run()
    assert seen, "no settled job lost a pod to an eviction: the case is not exercised"
    assert all(same == 0 for same, _ in seen)
    assert np.all(np.array([n for _, n in seen]) > 0)


@pytest.mark.parametrize("seed", range(6))
def test_queue_held_sums_are_the_sums_in_job_order(seed: int) -> None:
    """``session._held``: bit for bit what adding the jobs' vectors one after the other gives, whole amounts (one
    NumPy sum) or not (fractions of a GPU, huge amounts: one after the other)."""
    rng = np.random.default_rng(seed)
    for _ in range(50):
        rows: dict[str, list[np.ndarray]] = {}
        for q in ("a", "b", "c"):
            n = int(rng.integers(1, 40))
            kind = rng.integers(0, 3)
            if kind == 0:
                m = rng.integers(0, 10**12, size=(n, 4)).astype(float)
            elif kind == 1:
                m = rng.random((n, 4)) * 10.0 ** rng.integers(-3, 4)
            else:
                m = rng.integers(0, 10**15, size=(n, 4)).astype(float) * 64.0
            rows[q] = list(m)
        got = session_mod._held(rows)
        for q, rs in rows.items():
            want = rs[0].copy()
            for r in rs[1:]:
                want += r
            assert got[q].tobytes() == want.tobytes()
