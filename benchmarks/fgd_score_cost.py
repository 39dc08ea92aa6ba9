"""The CPU cost of the FGD policies' node scoring per pod on the FGD paper's cluster (a measurement, not a test).

Builds the 1,213 GPU nodes of ``openb_node_list_gpu_node.csv`` as Volcano gpushare nodes (1000 milli-GPU of
``volcano.sh/gpu-memory`` per GPU, the model as label ``alibaba.com/gpu-model``), puts ``--pods`` pods drawn from
``openb_pod_list_default.csv`` (seeded) in one session under ``examples/confs/fgd/<policy>.conf`` with the workload's
task mix, and reports the session time and the time spent in the policy's score function per pod::

    .venv/bin/python benchmarks/fgd_score_cost.py --pods 2000 --policy fgd
"""

from __future__ import annotations

import argparse
import csv
import random
import time
from pathlib import Path
from typing import Any

from pyvolcano.api.gpufrag import GPU_MODEL_LABEL, TaskMix
from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.conf.loader import load_conf
from pyvolcano.framework.cycle import run_session
from pyvolcano.plugins._gpushare import GpuPolicy

ROOT = Path(__file__).resolve().parents[1]
TRACE = ROOT.parent / "shared" / "traces" / "alibaba-openb-v2023"


def nodes(rows: list[dict[str, str]]) -> list[dict[str, Any]]:
    out = []
    for r in rows:
        g = int(r["gpu"])
        res = {"cpu": f"{r['cpu_milli']}m", "memory": f"{r['memory_mib']}Mi", "pods": "1000",
               "volcano.sh/gpu-number": str(g), "volcano.sh/gpu-memory": str(1000 * g)}
        out.append({"apiVersion": "v1", "kind": "Node",
                    "metadata": {"name": r["sn"], "labels": {GPU_MODEL_LABEL: r["model"]}},
                    "status": {"allocatable": dict(res), "capacity": dict(res)}})
    return out


def pods(rows: list[dict[str, str]], n: int, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    out: list[dict[str, Any]] = []
    for k in range(n):
        r = rng.choice(rows)
        res = {"cpu": f"{r['cpu_milli']}m", "memory": f"{r['memory_mib']}Mi"}
        ng, gm = int(r["num_gpu"]), int(r["gpu_milli"])
        if ng == 1 and gm < 1000:
            res["volcano.sh/gpu-memory"] = str(gm)
        elif ng:
            res["volcano.sh/gpu-number"] = str(ng)
        name, ts = f"p{k:05d}", f"2026-01-01T{k // 3600:02d}:{k // 60 % 60:02d}:{k % 60:02d}Z"
        out.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                    "metadata": {"name": name, "namespace": "ns", "creationTimestamp": ts},
                    "spec": {"minMember": 1}, "status": {"phase": "Inqueue"}})
        out.append({"apiVersion": "v1", "kind": "Pod",
                    "metadata": {"name": name, "namespace": "ns", "creationTimestamp": ts,
                                 "annotations": {"scheduling.k8s.io/group-name": name}},
                    "spec": {"schedulerName": "volcano",
                             "containers": [{"name": "c", "resources": {"requests": res, "limits": res}}]},
                    "status": {"phase": "Pending"}})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pods", type=int, default=2000)
    ap.add_argument("--policy", default="fgd")
    ap.add_argument("--seed", type=int, default=42)
    a = ap.parse_args()
    node_rows = list(csv.DictReader((TRACE / "openb_node_list_gpu_node.csv").open()))
    pod_rows = list(csv.DictReader((TRACE / "openb_pod_list_default.csv").open()))
    cache = SchedulerCache.from_objects(nodes(node_rows) + pods(pod_rows, a.pods, a.seed), "volcano")
    cache.task_mix = TaskMix.from_openb_rows(pod_rows)
    conf = load_conf((ROOT / "examples" / "confs" / "fgd" / f"{a.policy}.conf").read_text(), a.policy)
    spent = [0.0, 0.0]

    def timed(fn: Any, k: int) -> Any:
        def run(self: GpuPolicy, *args: Any) -> Any:
            c = time.process_time()
            try:
                return fn(self, *args)
            finally:
                spent[k] += time.process_time() - c
        return run
    GpuPolicy.scores = timed(GpuPolicy.scores, 0)  # type: ignore[method-assign]
    GpuPolicy.device_choice = timed(GpuPolicy.device_choice, 1)  # type: ignore[method-assign]
    t0, c0 = time.perf_counter(), time.process_time()
    result = run_session(cache, conf, "vector", False)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    n = max(a.pods, 1)
    print(f"{a.policy}: {a.pods} pods, {len(result.binds)} bound on {len(node_rows)} nodes; session {wall:.2f} s wall, "
          f"{cpu:.2f} s CPU; node scores {spent[0]:.2f} s CPU = {1000 * spent[0] / n:.2f} ms/pod, "
          f"GPU choice {1000 * spent[1] / n:.3f} ms/pod")

if __name__ == "__main__":
    main()
