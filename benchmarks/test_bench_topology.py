"""Network-topology allocate at scale (issue 14 "Speed"), run by ``make bench``, never by ``make test``.

5,000 nodes under leaves of 16 and spines of 8 (``bench/topology.py``), 1,000 gangs of 8-128 pods with a hard
constraint (tier 1 or 2) and 5,000 one-pod jobs, Volcano's default conf plus ``network-topology-aware``
(``pyvolcano bench --topology``).  Targets: at least 5,000 pods placed per second, and faster than Volcano on the
same snapshot.  Both are judged on process CPU seconds: this 2-core machine is shared by several engineers, and at
a load average of 10-30 wall times stretch 5-15x while CPU time barely moves (the wall figures are printed too).

The oracle part runs the real Volcano (``../shared/tools/volcano/vc-oracle``) on the same objects; it is skipped
when the oracle is absent.  At full size Volcano needs hours (it dry-runs each gang in every candidate leaf), so it
is stopped after ``ORACLE_BUDGET`` seconds: the CPU it had used by then is a lower bound on its time, which is all
"faster than Volcano" needs.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from pyvolcano.bench import topology
from pyvolcano.bench.run import run
from pyvolcano.conf.loader import load_conf

ORACLE = Path(__file__).resolve().parents[1].parent / "shared" / "tools" / "volcano" / "vc-oracle"
ORACLE_BUDGET = 600.0


@pytest.mark.slow
def test_topology_5000_nodes_1000_gangs(benchmark: Any, tmp_path: Path) -> None:
    objs = topology.build(5000, 1000, 5000)
    conf = load_conf(topology.CONF, "topology bench conf")
    out, result = benchmark.pedantic(run, args=(objs, conf), rounds=1, iterations=1)
    benchmark.extra_info.update(out)
    pods = sum(1 for o in objs if o["kind"] == "Pod")
    cpu = out["session_cpu_seconds"]
    print(f"\ntopology: {out['placed']}/{pods} pods placed, session {cpu} s CPU ({out['placed'] / cpu:.0f} pods per "
          f"CPU second), wall {out['seconds']} ({out['pods_per_second']} pods/s)")
    assert out["placed"] == pods == len(result.binds)
    assert out["placed"] / cpu >= 5000
    if not (ORACLE.is_file() and os.access(ORACLE, os.X_OK)):
        pytest.skip(f"no Volcano oracle at {ORACLE}: pyvolcano's side only")
    o = topology.time_oracle(objs, str(ORACLE), str(tmp_path), timeout=ORACLE_BUDGET)
    benchmark.extra_info["oracle"] = o
    print(f"Volcano on the same snapshot: {o}")
    assert o["allocate_cpu_seconds"] > cpu
