"""Simulator benchmarks (not part of `make test`): run with `make bench`.

Targets (issue 4): the whole bundled trace in under 2 minutes; a synthetic 1,000-node / 20,000-job workload in
under 10 minutes.  Each prints simulated events per second.
"""

from __future__ import annotations

import time

import pytest

from pyvolcano.conf.loader import load_conf_file
from pyvolcano.sim import alibaba
from pyvolcano.sim.cluster import parse_cluster_spec
from pyvolcano.sim.engine import Simulator
from pyvolcano.sim.run import alibaba_inputs
from pyvolcano.sim.workload import synthetic


def _report(name: str, sim: Simulator, wall: float, limit: float) -> None:
    print(f"\n{name}: {sim.events} events, {sim.cycles} cycles, {wall:.1f} s wall, "
          f"{sim.events / wall:.0f} events/s")
    assert wall < limit, f"{name}: {wall:.0f} s, the target is under {limit:.0f} s"


@pytest.mark.slow
def test_whole_bundled_trace() -> None:
    inp = alibaba_inputs(None, alibaba.AlibabaKnobs(nodes=0, pods=0, compress=1.0), None)
    sim = Simulator(inp.nodes, inp.queues, inp.workload, load_conf_file(None))
    t = time.perf_counter()
    sim.run()
    _report("whole trace (1,523 nodes, 8,125 rows)", sim, time.perf_counter() - t, 120)


@pytest.mark.slow
def test_synthetic_1000_nodes_20000_jobs() -> None:
    wl = synthetic(seed=1, jobs=20000, rate=2.0, queues={"a": 1, "b": 1, "c": 2}, mean_duration=600)
    queues = [{"kind": "Queue", "metadata": {"name": q}, "spec": {"weight": w}} for q, w in (("a", 1), ("b", 1), ("c", 2))]
    sim = Simulator(parse_cluster_spec("1000x{cpu: 32, memory: 256Gi, nvidia.com/gpu: 8}"), queues, wl,
                    load_conf_file(None))
    t = time.perf_counter()
    sim.run()
    _report("synthetic 1,000 nodes / 20,000 jobs", sim, time.perf_counter() - t, 600)
