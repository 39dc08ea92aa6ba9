"""Simulator benchmarks (not part of `make test`): run with `make bench`.

Targets (issue 15): the whole bundled trace in under 15 s; a synthetic 1,000-node / 20,000-job workload in under
60 s; an oversubscribed month of ~24,000 single-pod services on 250 nodes of 256 cpu / 8 GPUs in under 2 minutes;
the README's `simulate --synthetic 2000` example in under 30 s (seconds, not minutes).
Each simulation runs in a fresh interpreter (``_run``), as one ``pyvolcano simulate`` does, and prints simulated
events per second, its CPU seconds (the machine is shared: wall time moves with the load, printed beside it) and how
many blocked jobs the memo skipped (``framework/incremental/memo.py``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pyvolcano.conf.loader import load_conf_file
from pyvolcano.sim import alibaba
from pyvolcano.sim.cluster import parse_cluster_spec
from pyvolcano.sim.engine import Simulator
from pyvolcano.sim.run import alibaba_inputs
from pyvolcano.sim.workload import services, synthetic

ROOT = Path(__file__).resolve().parents[1]


def _whole_trace() -> Simulator:
    inp = alibaba_inputs(None, alibaba.AlibabaKnobs(nodes=0, pods=0, compress=1.0), None)
    return Simulator(inp.nodes, inp.queues, inp.workload, load_conf_file(None))


def _synthetic_20k() -> Simulator:
    wl = synthetic(seed=1, jobs=20000, rate=2.0, queues={"a": 1, "b": 1, "c": 2}, mean_duration=600)
    queues = [{"kind": "Queue", "metadata": {"name": q}, "spec": {"weight": w}} for q, w in (("a", 1), ("b", 1), ("c", 2))]
    return Simulator(parse_cluster_spec("1000x{cpu: 32, memory: 256Gi, nvidia.com/gpu: 8}"), queues, wl,
                     load_conf_file(None))


def _month(conf: str = "") -> Simulator:
    queues = [{"kind": "Queue", "metadata": {"name": "default"}, "spec": {"weight": 1}}]
    path = str(Path(__file__).parent / "confs" / f"{conf}.conf") if conf else None
    return Simulator(parse_cluster_spec("250x{cpu: 256, memory: 1Ti, nvidia.com/gpu: 8}"), queues,
                     services(seed=0, jobs=24000), load_conf_file(path))


#: the runs, by the name ``measure`` is given
MAKERS = {"whole-trace": _whole_trace, "synthetic-20k": _synthetic_20k, "month": _month}


def measure(make: str, *args: str) -> None:
    """Run one simulation (``MAKERS[make](*args)``) and print what ``_run`` reads, as one JSON line.  Called in a
    fresh interpreter (``_run``)."""
    sim = MAKERS[make](*args)
    t, c = time.perf_counter(), time.process_time()
    sim.run()
    wall, cpu = time.perf_counter() - t, time.process_time() - c
    memo = sim.cache.incremental.memo if sim.cache.incremental is not None else None
    print(json.dumps({"events": sim.events, "cycles": sim.cycles, "wall": wall, "cpu": cpu,
                      "skipped": memo.skipped if memo else 0, "incremental": sim.cache.incremental is not None}))


def _run(name: str, limit: float, make: str, *args: str) -> dict[str, float]:
    """One simulation in a fresh interpreter, as ``pyvolcano simulate`` runs one: in the interpreter of the earlier
    benchmarks a month runs about a tenth slower, by what they left behind (their freed memory, not their objects:
    the collector is frozen over them), so a figure would depend on the order of the tests."""
    code = "import sys; from benchmarks.test_bench_sim import measure; measure(*sys.argv[1:])"
    out = subprocess.run([sys.executable, "-c", code, make, *args], cwd=ROOT, capture_output=True, text=True,
                         check=False)
    assert out.returncode == 0, out.stderr[-4000:]
    got: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    wall, cpu = got["wall"], got["cpu"]
    print(f"\n{name}: {got['events']} events, {got['cycles']} cycles, {wall:.1f} s wall, {cpu:.1f} s CPU, "
          f"{got['events'] / wall:.0f} events/s, {got['skipped']} blocked jobs skipped, "
          f"load {os.getloadavg()[0]:.1f}")
    assert wall < limit, f"{name}: {wall:.0f} s, the target is under {limit:.0f} s"
    return got


@pytest.mark.slow
def test_whole_bundled_trace() -> None:
    _run("whole trace (1,523 nodes, 8,125 rows)", 15, "whole-trace")


@pytest.mark.slow
def test_synthetic_1000_nodes_20000_jobs() -> None:
    _run("synthetic 1,000 nodes / 20,000 jobs", 60, "synthetic-20k")


@pytest.mark.slow
def test_oversubscribed_month_of_services() -> None:
    _run("a month of 24,000 services on 250 nodes", 120, "month")


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
#: theirs, not cdp's (docs/performance.md, "The month with a plugin on", says how much and why).
#: ``benchmarks/simcheck.py svc4k OUT --conf benchmarks/confs/NAME.conf`` is the same run at a sixth of the size.
MONTH_CONFS = ["resource-strategy-fit", "cdp", "capacity"]


@pytest.mark.slow
@pytest.mark.parametrize("conf", MONTH_CONFS)
def test_oversubscribed_month_of_services_per_plugin(conf: str) -> None:
    got = _run(f"a month of 24,000 services on 250 nodes, {conf}", 120, "month", conf)
    assert got["incremental"] and got["skipped"] > 0  # the plugin kept the memo on


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
