"""Simulator benchmarks (not part of `make test`): run with `make bench`.

Targets (issue 15): the whole bundled trace in under 15 s; a synthetic 1,000-node / 20,000-job workload in under
60 s; an oversubscribed month of ~24,000 single-pod services on 250 nodes of 256 cpu / 8 GPUs in under 2 minutes;
the README's `simulate --synthetic 2000` example in under 30 s (seconds, not minutes).
Each prints simulated events per second, the CPU seconds of this process (the machine is shared: wall time moves
with the load, printed beside it) and how many blocked jobs the memo skipped (``framework/incremental/memo.py``).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from pyvolcano.conf.loader import load_conf_file
from pyvolcano.sim import alibaba
from pyvolcano.sim.cluster import parse_cluster_spec
from pyvolcano.sim.engine import Simulator
from pyvolcano.sim.run import alibaba_inputs
from pyvolcano.sim.workload import services, synthetic


def _run(name: str, sim: Simulator, limit: float) -> None:
    t, c = time.perf_counter(), time.process_time()
    sim.run()
    wall, cpu = time.perf_counter() - t, time.process_time() - c
    memo = sim.cache.incremental.memo if sim.cache.incremental is not None else None
    print(f"\n{name}: {sim.events} events, {sim.cycles} cycles, {wall:.1f} s wall, {cpu:.1f} s CPU, "
          f"{sim.events / wall:.0f} events/s, {memo.skipped if memo else 0} blocked jobs skipped, "
          f"load {os.getloadavg()[0]:.1f}")
    assert wall < limit, f"{name}: {wall:.0f} s, the target is under {limit:.0f} s"


@pytest.mark.slow
def test_whole_bundled_trace() -> None:
    inp = alibaba_inputs(None, alibaba.AlibabaKnobs(nodes=0, pods=0, compress=1.0), None)
    _run("whole trace (1,523 nodes, 8,125 rows)", Simulator(inp.nodes, inp.queues, inp.workload, load_conf_file(None)),
         15)


@pytest.mark.slow
def test_synthetic_1000_nodes_20000_jobs() -> None:
    wl = synthetic(seed=1, jobs=20000, rate=2.0, queues={"a": 1, "b": 1, "c": 2}, mean_duration=600)
    queues = [{"kind": "Queue", "metadata": {"name": q}, "spec": {"weight": w}} for q, w in (("a", 1), ("b", 1), ("c", 2))]
    sim = Simulator(parse_cluster_spec("1000x{cpu: 32, memory: 256Gi, nvidia.com/gpu: 8}"), queues, wl,
                    load_conf_file(None))
    _run("synthetic 1,000 nodes / 20,000 jobs", sim, 60)


@pytest.mark.slow
def test_oversubscribed_month_of_services() -> None:
    queues = [{"kind": "Queue", "metadata": {"name": "default"}, "spec": {"weight": 1}}]
    sim = Simulator(parse_cluster_spec("250x{cpu: 256, memory: 1Ti, nvidia.com/gpu: 8}"), queues,
                    services(seed=0, jobs=24000), load_conf_file(None))
    _run("a month of 24,000 services on 250 nodes", sim, 120)


#: the plugins that make sense on the month of services, each in a conf of its own (``benchmarks/confs/``: Volcano's
#: default conf plus the plugin); issue 29 asks each to keep the month under 2 minutes.  Left out: rescheduling and tdm
#: need the shuffle action, whose conf runs a session every simulated second (2.6 million in a month); usage and
#: rescheduling read node metrics, which the simulator has none of; numa-aware needs Numatopology objects and
#: task-topology multi-role jobs, which single-pod services are not; extender needs a server; pdb needs
#: PodDisruptionBudgets; network-topology-aware, which declares the memo contract, has nothing to decide for single-pod
#: services with no networkTopology on a cluster without HyperNodes.  capacity, proportion's alternative (Volcano's
#: user guide), replaces proportion in its conf (``confs/capacity.conf``); on the month's one queue without deserved or
#: capability its realCapability is the cluster's total.  cdp acts only through preempt and reclaim, so its conf adds
#: those actions (as ``confs/preempt.conf``, the same conf without cdp); what those actions cost on the month is
#: theirs, not cdp's, and it is over the target (docs/performance.md, "The month with a plugin on", says by how much
#: and why).  ``benchmarks/simcheck.py svc4k OUT --conf benchmarks/confs/NAME.conf`` is the same run at a sixth of the
#: size.
MONTH_CONFS = ["resource-strategy-fit", "cdp", "capacity"]


@pytest.mark.slow
@pytest.mark.parametrize("conf", MONTH_CONFS)
def test_oversubscribed_month_of_services_per_plugin(conf: str) -> None:
    queues = [{"kind": "Queue", "metadata": {"name": "default"}, "spec": {"weight": 1}}]
    path = Path(__file__).parent / "confs" / f"{conf}.conf"
    sim = Simulator(parse_cluster_spec("250x{cpu: 256, memory: 1Ti, nvidia.com/gpu: 8}"), queues,
                    services(seed=0, jobs=24000), load_conf_file(str(path)))
    assert sim.cache.incremental is not None
    _run(f"a month of 24,000 services on 250 nodes, {conf}", sim, 120)
    assert sim.cache.incremental.memo.skipped > 0  # the plugin kept the memo on


@pytest.mark.slow
def test_readme_synthetic_example(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The README's `simulate --synthetic 2000` example end to end (report pages included) on 50 nodes of
    32 cpu / 8 GPUs: issue 15 asks for the README's examples in seconds, not minutes (3 minutes before)."""
    from click.testing import CliRunner

    from pyvolcano.cli import main

    t, c = time.perf_counter(), time.process_time()
    got = CliRunner().invoke(main, ["simulate", "--synthetic", "2000", "--rate", "0.5", "--queues", "a:2,b:1",
                                    "--cluster", "50x{cpu: 32, memory: 256Gi, nvidia.com/gpu: 8}",
                                    "--out", str(tmp_path)])
    wall, cpu = time.perf_counter() - t, time.process_time() - c
    assert got.exit_code == 0, got.output
    print(f"\nREADME --synthetic 2000: {wall:.1f} s wall, {cpu:.1f} s CPU, load {os.getloadavg()[0]:.1f}")
    assert (tmp_path / "report.html").is_file()
    assert wall < 30, f"README --synthetic 2000: {wall:.0f} s, the target is under 30 s"
