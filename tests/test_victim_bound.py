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
