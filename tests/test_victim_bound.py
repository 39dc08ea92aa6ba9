"""Preempt and reclaim skip nodes where even every candidate gone would not make room (``_victims.reachable``).
That must be a pure speed-up: the same binds, pipelined pods and victims as trying every node, on the default
greedy path of both actions and on preempt's topology-aware dry run (whose candidate count is still taken from
all feasible nodes)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pyvolcano.actions import _victims, preempt, reclaim
from pyvolcano.bench.run import build, decisions, run
from pyvolcano.commands.bench import _with_actions
from pyvolcano.conf.loader import load_conf

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(("actions", "conf", "seed"), [
    ("enqueue, allocate, preempt", None, 3),
    ("enqueue, reclaim, allocate, preempt", ROOT / "examples/confs/reclaim-preempt.conf", 5),
    ("enqueue, allocate, reclaim, preempt", ROOT / "examples/confs/reclaim-preempt.conf", 1),
    ("enqueue, allocate, preempt", "topology-aware", 3),
])
def test_skipping_unreachable_nodes_changes_no_decision(monkeypatch: pytest.MonkeyPatch, actions: str,
                                                        conf: Path | str | None, seed: int) -> None:
    text = _with_actions(str(conf) if isinstance(conf, Path) else None, actions)
    if conf == "topology-aware":  # every node a candidate: the dry run sees all the nodes the bound keeps
        text += ("configurations:\n- name: preempt\n  arguments:\n    enableTopologyAwarePreemption: true\n"
                 "    minCandidateNodesAbsolute: 100\n")
    c = load_conf(text, "test conf")
    objs = build(100, 200, 4, 4, running=500, seed=seed)
    pruned = 0

    def counting(ssn, need, order, bound):  # type: ignore[no-untyped-def]
        nonlocal pruned
        kept = _victims.reachable(ssn, need, order, bound)
        pruned += len(order) - len(kept)
        return kept

    monkeypatch.setattr(preempt, "reachable", counting)
    monkeypatch.setattr(reclaim, "reachable", counting)
    summary, with_bound = run(objs, c)
    monkeypatch.setattr(preempt, "reachable", lambda ssn, need, order, bound: order)
    monkeypatch.setattr(reclaim, "reachable", lambda ssn, need, order, bound: order)
    _, every_node = run(objs, c)
    assert decisions(with_bound) == decisions(every_node)
    assert summary["evictions"] > 0 and pruned > 0  # the case exercises both the victims and the skipping


def test_skipping_nodes_a_full_queue_cannot_use_changes_no_decision(monkeypatch: pytest.MonkeyPatch) -> None:
    """``evict_greedily`` drops nodes whose candidates free no more than a node that failed with its queue
    still not allocatable; the decisions must be those of trying every node (the bench's weight-1 queues hold
    twice what they deserve, so their preemptors fail on every node)."""
    c = load_conf(_with_actions(None, "enqueue, allocate, preempt"), "test conf")
    objs = build(100, 200, 4, 4, running=500, seed=3)
    dropped = 0
    real = _victims.evict_greedily

    def counting(ssn, stmt, task, nodes, offer, fits, reason, bound=None, blocked=None,  # type: ignore[no-untyped-def]
                 freed_only=False):
        nonlocal dropped
        tried = 0

        def offer_counted(i):  # type: ignore[no-untyped-def]
            nonlocal tried
            tried += 1
            return offer(i)
        got = real(ssn, stmt, task, nodes, offer_counted, fits, reason, bound, blocked, freed_only)
        if got is None:
            dropped += len(nodes) - tried
        return got

    monkeypatch.setattr(preempt, "evict_greedily", counting)
    summary, with_skip = run(objs, c)
    monkeypatch.setattr(preempt, "evict_greedily",
                        lambda ssn, stmt, task, nodes, offer, fits, reason, bound=None, blocked=None,
                        freed_only=False: real(ssn, stmt, task, nodes, offer, fits, reason, freed_only=freed_only))
    _, every_node = run(objs, c)
    assert decisions(with_skip) == decisions(every_node)
    assert summary["evictions"] > 0 and dropped > 0
