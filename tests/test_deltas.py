"""What carries the left-alone jobs between sessions in place (``framework/incremental/deltas.py``): the settled view, the
lender, and the promise that a caller who keeps a snapshot or a ``SessionResult`` sees it unchanged by later sessions (the
maps the next session moves in place are copied for it first), with the same decisions either way."""

from __future__ import annotations

import gc
from typing import Any

import pytest

from pyvolcano.cache import cache as cache_mod
from pyvolcano.conf.loader import load_conf_file
from pyvolcano.framework.incremental import deltas
from pyvolcano.framework.incremental import plan as plan_mod
from pyvolcano.framework.incremental.deltas import Lender, SettledView
from pyvolcano.framework.result import SessionResult
from pyvolcano.sim import engine as engine_mod
from pyvolcano.sim.cluster import parse_cluster_spec
from pyvolcano.sim.engine import Simulator
from pyvolcano.sim.workload import services


def test_settled_view_reads_both_maps_and_writes_the_first() -> None:
    only, parked = {"a": 1, "b": 2}, {"c": 3}
    v = SettledView(only, parked)
    assert len(v) == 3 and list(v) == ["a", "b", "c"] and bool(v)
    assert v["a"] == 1 and v["c"] == 3 and v.get("c") == 3 and v.get("x") is None and v.get("x", 7) == 7
    assert "c" in v and "x" not in v
    with pytest.raises(KeyError):
        v["x"]
    v["d"] = 4  # the snapshot's own settled finds go to the settled-only map
    assert only == {"a": 1, "b": 2, "d": 4} and parked == {"c": 3}
    assert v.pop("c") == 3 and parked == {} and v.pop("c", None) is None  # as ``Plan.unpark`` takes one out
    del v["a"]
    assert only == {"b": 2, "d": 4}
    with pytest.raises(KeyError):
        del v["zz"]
    assert v.keys() - {"b"} == {"d"}
    assert not SettledView({}, {})


def test_lender_says_borrowed_while_the_result_lives() -> None:
    lender = Lender()
    assert not lender.borrowed()
    res = SessionResult()
    lender.lend(res)
    assert lender.borrowed()
    lender.returned()
    assert not lender.borrowed()
    lender.lend(res)
    del res
    gc.collect()
    assert not lender.borrowed()


def _month(keep: bool) -> tuple[list[Any], dict[str, int], list[tuple[SessionResult, dict[str, Any], dict[str, str]]],
                                list[tuple[Any, list[str]]]]:
    """A small oversubscribed month (a parked backlog, sums kept between sessions); with ``keep``, every result and
    snapshot is kept alive, with what it held when it was made."""
    sim = Simulator(parse_cluster_spec("3x{cpu: 256, memory: 1Ti, nvidia.com/gpu: 8}"),
                    [{"kind": "Queue", "metadata": {"name": "default"}, "spec": {"weight": 1}}],
                    services(seed=3, jobs=300), load_conf_file(None))
    seen: list[Any] = []
    kept: list[tuple[SessionResult, dict[str, Any], dict[str, str]]] = []
    snaps: list[tuple[Any, list[str]]] = []
    count = {"borrowed": 0, "copied": 0}
    real_apply = engine_mod.apply

    def apply(result: SessionResult, writer: Any) -> None:
        seen.append((sorted((uid, st.phase, st.reason) for uid, st in result.podgroups.items()),
                     sorted(result.binds.items()), sorted(result.unschedulable.items())))
        if keep:
            kept.append((result, dict(result.podgroups), dict(result.unschedulable)))
        real_apply(result, writer)
    real_borrowed = Lender.borrowed

    def borrowed(self: Lender) -> bool:
        got = real_borrowed(self)
        count["borrowed"] += got
        return got
    real_snapshot = cache_mod.SchedulerCache.snapshot

    def snapshot(self: cache_mod.SchedulerCache) -> Any:
        snap = real_snapshot(self)
        if keep:
            snaps.append((snap, list(snap.jobs)))
        return snap
    mp = pytest.MonkeyPatch()
    try:
        mp.setattr(plan_mod, "SUMS_FROM", 1)  # close's carried sums on every session, as at scale
        mp.setattr(engine_mod, "apply", apply)
        mp.setattr(Lender, "borrowed", borrowed)
        mp.setattr(cache_mod.SchedulerCache, "snapshot", snapshot)
        sim.run(until=1_500_000)
    finally:
        mp.undo()
    return seen, count, kept, snaps


def test_kept_results_and_snapshots_do_not_move_and_decisions_are_the_same() -> None:
    assert deltas.CHECK  # tests/conftest.py: every session also checks its delta-moved maps
    plain, plain_count, _, _ = _month(keep=False)
    held, held_count, kept, snaps = _month(keep=True)
    assert held == plain  # the same decisions, statuses and reasons, in place or copied
    assert plain_count["borrowed"] == 0  # a simulation drops each result and snapshot: nothing is ever copied
    assert held_count["borrowed"] > 0  # kept results: the maps they hold were copied before they moved
    assert len(kept) > 100
    assert any(len(res.carried_podgroups) > 0 for res, _, _ in kept)
    for res, podgroups, unschedulable in kept:  # every kept result reads what it read when it was made
        assert dict(res.podgroups) == podgroups and dict(res.unschedulable) == unschedulable
    for snap, uids in snaps:  # and every kept snapshot its own job map
        assert list(snap.jobs) == uids
