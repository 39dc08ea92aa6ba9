"""The one-node rule of the blocked-job memo (``framework/incremental/memo.py``) by room classes and at a job's
turn: one-pod jobs that no node could take are decided class by class (``SessionMemo._class_blocked``), and one
looked at again because its pod fitted a node given room back is kept blocked without a turn once the turns
before it took that room (``SessionMemo.room_taken``); a job the room is still there for takes its turn."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.conf.loader import load_conf_file
from pyvolcano.framework.cycle import run_session
from pyvolcano.framework.incremental import deltas
from pyvolcano.framework.incremental import memo as memo_mod
from pyvolcano.sim import metrics
from pyvolcano.sim.cluster import parse_cluster_spec
from pyvolcano.sim.engine import Simulator
from pyvolcano.sim.workload import services
from tests.sim.test_memo import _pod


def _group(name: str, queue: str, phase: str) -> dict[str, Any]:
    return {"kind": "PodGroup", "metadata": {"name": name, "namespace": "default"},
            "spec": {"minMember": 1, "queue": queue}, "status": {"phase": phase}}


def _cache() -> SchedulerCache:
    """Two 6-cpu nodes full with pods of queue ``other`` (n1: ``f1`` 6 cpu; n2: ``f2`` 5 cpu and ``g`` 1 cpu) and
    three one-pod jobs of 3 cpu admitted in queue ``default``, whose deserved share holds them all: only the
    nodes refuse them."""
    cache = SchedulerCache(memo=True)
    for n in ("n1", "n2"):
        cache.upsert({"kind": "Node", "metadata": {"name": n},
                      "status": {"allocatable": {"cpu": "6", "memory": "32Gi", "pods": "110"}}})
    cache.upsert({"kind": "Queue", "metadata": {"name": "default"}, "spec": {"weight": 3}})
    cache.upsert({"kind": "Queue", "metadata": {"name": "other"}, "spec": {"weight": 1}})
    for name, cpu, node in (("f1", "6", "n1"), ("f2", "5", "n2"), ("g", "1", "n2")):
        cache.upsert(_group(name, "other", "Running"))
        cache.upsert(_pod(name, cpu, "Running", node))
    for name in ("a", "b", "c"):
        cache.upsert(_group(name, "default", "Inqueue"))
        cache.upsert(_pod(name, "3"))
    return cache


@pytest.mark.parametrize("check", [False, True])
def test_room_taken_at_the_turn(check: bool) -> None:
    """Room back on n2 (1 cpu) that the 3-cpu template fits nowhere: the three jobs stay blocked, their class
    stamped with the new room.  Room back on n1 (6 cpu): every job is looked at again; a and b take it in turn,
    and c's room is taken by then: kept blocked without a turn (with ``deltas.CHECK``: its turn, which must place
    nothing, allocate asserts it)."""
    conf = load_conf_file(None)
    with deltas.checking(check):
        cache = _cache()
        assert cache.incremental is not None
        memo = cache.incremental.memo
        first = run_session(cache, conf)
        assert not first.binds and {"default/a", "default/b", "default/c"} <= first.unschedulable.keys()
        # one class: the three jobs' entries, one pod template, every node refused them
        (cls,) = memo.classes.values()
        assert sorted(cls.members) == ["default/a", "default/b", "default/c"]
        for _ in range(2):
            assert not run_session(cache, conf).binds
        assert memo.skipped == 6  # the same fingerprint: kept blocked without a turn, whatever CHECK says
        cache.upsert(_pod("g", "1", "Succeeded", "n2"))
        room = cache.room_seq
        assert room > 0
        assert not run_session(cache, conf).binds
        assert memo.skipped == (9 if not check else 6)
        assert {c.room for c in memo.classes.values()} == {room}
        assert sorted(u for c in memo.classes.values() for u in c.members) == \
            ["default/a", "default/b", "default/c"]
        cache.upsert(_pod("f1", "6", "Succeeded", "n1"))
        last = run_session(cache, conf)
        assert last.binds == {"default/a": "n1", "default/b": "n1"}
        assert "default/c" in last.unschedulable
        assert memo.skipped == (10 if not check else 6)
        (cls,) = memo.classes.values()
        assert list(cls.members) == ["default/c"] and cls.room == cache.room_seq


def _services(full: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Counter[str]]:
    """A month of 200 one-pod services on two nodes (a backlog of admitted services blocked by room), counting
    the jobs the room classes decided at once and the turns ``room_taken`` skipped."""
    seen: Counter[str] = Counter()
    real_class, real_taken = memo_mod.SessionMemo._class_blocked, memo_mod.SessionMemo.room_taken

    def class_blocked(self: memo_mod.SessionMemo, cls: Any, uids: Any, jobs: Any, fits: Any, blocked: set[str],
                      done: set[str], made_again: Any = None) -> None:
        before = len(done)
        real_class(self, cls, uids, jobs, fits, blocked, done, made_again)
        seen["decided"] += len(done) - before

    def room_taken(self: memo_mod.SessionMemo, job: Any, fits: Any) -> bool:
        got = real_taken(self, job, fits)
        seen["taken"] += got or job.uid in self.must_fail
        return got
    monkeypatch.setattr(memo_mod.SessionMemo, "_class_blocked", class_blocked)
    monkeypatch.setattr(memo_mod.SessionMemo, "room_taken", room_taken)
    queues = [{"kind": "Queue", "metadata": {"name": "default"}, "spec": {"weight": 1}}]
    sim = Simulator(parse_cluster_spec("2x{cpu: 256, memory: 1Ti, nvidia.com/gpu: 8}"), queues,
                    services(seed=0, jobs=200), load_conf_file(None), full_sessions=full)
    return metrics.job_rows(sim.run()), seen


@pytest.mark.slow  # three simulated months of 200 services: seconds
def test_room_classes_change_no_outcome(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every job's outcome is that of ``--full-sessions``, with the room classes deciding much of the blocked
    backlog, with ``deltas.CHECK`` (which checks each decided member) and without."""
    full, _ = _services(True, monkeypatch)
    for check in (True, False):
        with deltas.checking(check):
            rows, seen = _services(False, monkeypatch)
        assert rows == full
        assert seen["decided"] > 100


def test_a_job_whose_room_is_still_there_takes_its_turn() -> None:
    """The skip at the turn must not apply while a node given room back still fits the pod: with 6 cpu back on
    n1 and nothing before them, both one-pod jobs looked at again are placed there."""
    conf = load_conf_file(None)
    cache = _cache()
    cache.delete(_pod("c", "3"))
    run_session(cache, conf)
    cache.upsert(_pod("f1", "6", "Succeeded", "n1"))
    got = run_session(cache, conf)
    assert got.binds == {"default/a": "n1", "default/b": "n1"}
