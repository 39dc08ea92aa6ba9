"""Scheduler scale benchmarks (issue 6), run by ``make bench``, never by ``make test``.

Targets on the 2-core machine, one process, Volcano's default conf:
- 5,000 nodes, 20,000 pending pods in gangs of 10: allocate < 5 s (issue 2);
- 5,000 nodes, 50,000 pending pods in gangs of 10 over 10 queues: enqueue + allocate <= 5 s, >= 10,000 pods
  placed per second, peak RSS <= 1.5 GB;
- 10,000 nodes, 100,000 pods: enqueue + allocate <= 12 s;
- preempt with 20,000 running and 2,000 starving pods (5,000 nodes): <= 10 s.
Each case runs once (a session mutates its snapshot) inside pytest-benchmark, which records the figures.
"""

from __future__ import annotations

from typing import Any

import pytest

from pyvolcano.bench.run import build, run
from pyvolcano.commands.bench import _with_actions
from pyvolcano.conf.loader import load_conf, load_conf_file


def _once(benchmark: Any, objs: list[dict[str, Any]], actions: str | None = None) -> dict[str, Any]:
    conf = load_conf(_with_actions(None, actions), "bench conf") if actions else load_conf_file(None)
    out, _ = benchmark.pedantic(run, args=(objs, conf), rounds=1, iterations=1)
    benchmark.extra_info.update(out)
    print(f"\n{out}")
    return out


@pytest.mark.slow
def test_5000_nodes_20000_pods_allocate(benchmark: Any) -> None:
    """Issue 2's benchmark: allocate on 5,000 nodes and 20,000 pending pods in gangs of 10, aim under 5 s."""
    out = _once(benchmark, build(5000, 20000, 10, 10))
    assert out["placed"] == 20000
    assert out["seconds"]["allocate"] < 5.0


@pytest.mark.slow
def test_5000_nodes_50000_pods(benchmark: Any) -> None:
    out = _once(benchmark, build(5000, 50000, 10, 10))
    s = out["seconds"]
    assert out["placed"] == 50000
    assert s["enqueue"] + s["allocate"] <= 5.0
    assert out["pods_per_second"] >= 10000
    assert out["peak_rss_mb"] <= 1500


@pytest.mark.slow
def test_10000_nodes_100000_pods(benchmark: Any) -> None:
    out = _once(benchmark, build(10000, 100000, 10, 10))
    s = out["seconds"]
    assert out["placed"] == 100000
    assert s["enqueue"] + s["allocate"] <= 12.0


@pytest.mark.slow
def test_preempt_20000_running_2000_starving(benchmark: Any) -> None:
    out = _once(benchmark, build(5000, 2000, 10, 10, running=20000), "enqueue, allocate, preempt")
    assert out["evictions"] > 0 and out["placed"] > 0
    assert out["seconds"]["preempt"] <= 10.0
