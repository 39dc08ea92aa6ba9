"""The Alibaba ``openb`` GPU trace (cluster-trace-gpu-v2023) as a simulator workload.

The trace has one pod per row, no gangs, queues or priorities, and replayed at its own rate it fills about 1% of
its cluster.  These knobs (all documented in docs/simulator.md) turn it into a scheduling problem:

- ``nodes``: down-sample the 1,523-node cluster to this many nodes (seeded uniform sample);
- ``pods`` / ``skip``: take this many rows after skipping the first ``skip`` (the first 27 rows are spread over
  115 days; the default skips them);
- ``compress``: divide inter-arrival times by this factor (the load factor);
- ``duration_scale``: multiply pod lifetimes (``deletion_time - scheduled_time``, or ``- creation_time`` for rows
  never scheduled) by this, then clip to [``min_duration``, ``max_duration``];
- gangs: consecutive rows with the same (cpu, memory, num_gpu, gpu_milli, qos) created within ``gang_window``
  seconds of the group's first row form one gang of at most ``max_gang`` pods, minAvailable = its size;
- qos -> queue and priority: LS and Guaranteed -> queue ``latency-sensitive`` (priority 1000), Burstable ->
  ``burstable`` (500), BE -> ``best-effort`` (0); queue weights 2 / 1 / 1;
- GPUs: ``num_gpu`` >= 2 asks for that many ``nvidia.com/gpu``; ``num_gpu`` = 1 asks for ``gpu_milli``/1000 of
  one, as a fractional scalar (``460m``): the GPU-sharing rows share a node's GPU capacity as one pool, without
  per-device placement.  That keeps every row schedulable with the same plugins Volcano users run, and is exact
  for whole-GPU rows; fragmentation across devices inside a node is not modelled.
"""

from __future__ import annotations

import csv
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyvolcano.errors import UserError
from pyvolcano.sim.workload import JobSpec, Workload, from_specs

QOS = {"LS": ("latency-sensitive", 1000), "Guaranteed": ("latency-sensitive", 1000),
       "Burstable": ("burstable", 500), "BE": ("best-effort", 0)}
QUEUE_WEIGHTS = {"latency-sensitive": 2, "burstable": 1, "best-effort": 1}


@dataclass
class AlibabaKnobs:
    nodes: int = 120
    pods: int = 1500
    skip: int = 27
    compress: float = 20.0
    duration_scale: float = 1.0
    min_duration: float = 30.0
    max_duration: float = 4 * 3600.0
    gang_window: float = 60.0
    max_gang: int = 8
    seed: int = 0


def default_dir() -> Path:
    """The bundled copy under examples/, or ../shared/traces next to a checkout."""
    here = Path(__file__).resolve()
    for root in here.parents:
        cand = root / "examples" / "traces" / "alibaba-openb-v2023"
        if cand.is_dir():
            return cand
    raise UserError("the bundled Alibaba trace (examples/traces/alibaba-openb-v2023) was not found; "
                    "pass --trace-dir")


def load_nodes(path: Path, knobs: AlibabaKnobs) -> list[dict[str, Any]]:
    rows = list(csv.DictReader((path / "openb_node_list_all_node.csv").read_text().splitlines()))
    if knobs.nodes and knobs.nodes < len(rows):
        rows = sorted(random.Random(knobs.seed).sample(rows, knobs.nodes), key=lambda r: r["sn"])
    nodes = []
    for r in rows:
        alloc = {"cpu": f"{int(r['cpu_milli'])}m", "memory": f"{int(r['memory_mib'])}Mi", "pods": "110"}
        if int(r["gpu"]):
            alloc["nvidia.com/gpu"] = r["gpu"]
        labels = {"kubernetes.io/hostname": r["sn"]}
        if r["model"]:
            labels["alibaba.com/gpu-model"] = r["model"]
        nodes.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": r["sn"], "labels": labels},
                      "spec": {}, "status": {"allocatable": alloc, "capacity": dict(alloc),
                                             "conditions": [{"type": "Ready", "status": "True"}]}})
    return nodes


def queues() -> list[dict[str, Any]]:
    return [{"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": q},
             "spec": {"weight": w, "reclaimable": True}, "status": {"state": "Open"}}
            for q, w in QUEUE_WEIGHTS.items()]


POD_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "qos", "creation_time", "scheduled_time",
               "deletion_time")


def load_workload(path: Path, knobs: AlibabaKnobs) -> Workload:
    """The trace's pod rows as gangs of vcjobs.  A row that does not parse or has a negative lifetime is reported
    in ``problems`` and left out; a request no node can hold is reported by the simulator, which knows the
    cluster (``Simulator.job_problem``)."""
    source = path / "openb_pod_list_default.csv"
    reader = csv.DictReader(source.read_text().splitlines())
    missing = [c for c in POD_COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        raise UserError(f"{source}: missing CSV columns {', '.join(missing)}")
    rows = list(reader)
    rows = rows[knobs.skip: knobs.skip + knobs.pods] if knobs.pods else rows[knobs.skip:]
    problems: list[str] = []
    good = []
    for r in rows:
        bad = _bad_field(r)
        if bad:
            problems.append(f"trace row {r.get('name')}: field {bad}: {r.get(bad)!r} is not a number; skipped")
            continue
        good.append(r)
    rows = good
    groups: list[list[dict[str, str]]] = []
    for r in rows:
        key = (r["cpu_milli"], r["memory_mib"], r["num_gpu"], r["gpu_milli"], r["qos"])
        g = groups[-1] if groups else None
        if (g and len(g) < knobs.max_gang and _key(g[0]) == key
                and float(r["creation_time"]) - float(g[0]["creation_time"]) <= knobs.gang_window):
            g.append(r)
        else:
            groups.append([r])
    t0 = float(rows[0]["creation_time"]) if rows else 0.0
    specs = []
    for g in groups:
        r = g[0]
        name = r["name"]
        cpu, mem, ngpu, gmilli = int(r["cpu_milli"]), int(r["memory_mib"]), int(r["num_gpu"]), int(r["gpu_milli"])
        gpu_m = ngpu * 1000 if ngpu >= 2 else (gmilli if ngpu == 1 else 0)
        lifetimes = []
        for row in g:
            start = float(row["scheduled_time"] or row["creation_time"])
            life = float(row["deletion_time"]) - start
            if life < 0:
                problems.append(f"trace row {row['name']}: negative duration {life:g}s; skipped")
                continue
            lifetimes.append(life)
        if not lifetimes:
            continue
        dur = min(max(max(lifetimes) * knobs.duration_scale, knobs.min_duration), knobs.max_duration)
        queue, prio = QOS.get(r["qos"], ("best-effort", 0))
        specs.append(JobSpec(name=name.lower(), arrival=round((float(r["creation_time"]) - t0) / knobs.compress, 3),
                             queue=queue, priority=prio, tasks=len(lifetimes), min_available=len(lifetimes),
                             cpu=f"{cpu}m", memory=f"{mem}Mi", gpu=f"{gpu_m}m" if gpu_m else "0",
                             duration=round(dur, 1)))
    return from_specs(specs, problems)


def _bad_field(r: dict[str, str]) -> str | None:
    """The first numeric column of a pod row that does not parse, or None."""
    for c in ("cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "creation_time", "scheduled_time", "deletion_time"):
        if c == "scheduled_time" and not r.get(c):
            continue
        try:
            int(r[c]) if c in ("cpu_milli", "memory_mib", "num_gpu", "gpu_milli") else float(r[c])
        except (TypeError, ValueError):
            return c
    return None


def _key(r: dict[str, str]) -> tuple[str, ...]:
    return (r["cpu_milli"], r["memory_mib"], r["num_gpu"], r["gpu_milli"], r["qos"])
