"""How accurate ``pyvolcano forecast`` is: simulated runs snapshotted part-way, forecast, and compared with when
each job started later in the same run (``sim/forecast.py: measure``).  ``bench --forecast`` runs the synthetic
case; ``benchmarks/test_forecast_accuracy.py`` (under ``make bench``) runs the realistic synthetic workload and
the openb replay, with and without the duration annotations, and asserts the targets (docs/forecast.md)."""

from __future__ import annotations

from typing import Any

from pyvolcano.conf.loader import load_conf_file
from pyvolcano.sim import alibaba
from pyvolcano.sim.cluster import parse_cluster_spec
from pyvolcano.sim.forecast import measure
from pyvolcano.sim.run import load_queues
from pyvolcano.sim.workload import synthetic

#: the synthetic cases: (jobs, nodes of 32 cpu / 256 GiB / 8 GPUs, arrivals per second, forecast runs: the
#: command's default for the realistic one); "tiny"
#: is what ``bench --forecast`` and the unit test run, "realistic" a cluster kept near full for hours
CASES = {"tiny": (40, 2, 0.02, 8), "realistic": (300, 8, 0.06, 40)}
#: where each run is snapshotted, as fractions of the workload's arrival span
AT = (0.2, 0.35, 0.5, 0.65, 0.8)


def synthetic_case(case: str = "tiny", seed: int = 1, durations: bool = False) -> dict[str, Any]:
    """The forecast's accuracy on a seeded synthetic workload (two queues 2:1, Volcano's default conf);
    ``durations`` keeps the pods' duration annotations in the snapshots (a user who knows the run times)."""
    jobs, nodes, rate, runs = CASES[case]
    wl = synthetic(seed=seed, jobs=jobs, rate=rate, queues={"a": 2, "b": 1})
    cluster = parse_cluster_spec(f"{nodes}x{{cpu: 32, memory: 256Gi, nvidia.com/gpu: 8}}")
    span = wl.jobs[-1][0]
    acc = measure(cluster, load_queues("a:2,b:1", wl), wl, load_conf_file(None), at=[span * f for f in AT],
                  runs=runs, seed=seed, durations=durations)
    return {"case": f"synthetic-{case}" + ("-annotated" if durations else ""), **acc.as_dict()}


def openb_case(runs: int = 40, durations: bool = False) -> dict[str, Any]:
    """The forecast's accuracy on the bundled Alibaba openb replay as ``make demo`` runs it (400 rows, 30 nodes);
    ``durations`` as in :func:`synthetic_case`."""
    knobs = alibaba.AlibabaKnobs(nodes=30, pods=400, compress=250, max_duration=7200.0)
    d = alibaba.default_dir()
    nodes, wl = alibaba.load_nodes(d, knobs), alibaba.load_workload(d, knobs)
    span = wl.jobs[-1][0]
    acc = measure(nodes, alibaba.queues(), wl, load_conf_file(None), at=[span * f for f in AT], runs=runs,
                  durations=durations)
    return {"case": "openb" + ("-annotated" if durations else ""), **acc.as_dict()}
