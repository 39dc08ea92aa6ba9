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
- GPUs, per device (the default): a GPU node gets ``volcano.sh/gpu-number: G`` and ``volcano.sh/gpu-memory:
  1000*G`` (Volcano's gpushare device model: G GPUs of 1000 "memory" each, one unit standing for one milli-GPU);
  a row with ``num_gpu`` = 1 and ``gpu_milli`` < 1000 limits ``volcano.sh/gpu-memory: gpu_milli`` (a share of one
  GPU), a row asking whole GPUs (``num_gpu`` >= 2, or 1 with ``gpu_milli`` = 1000) limits
  ``volcano.sh/gpu-number: num_gpu``; ``gpu_spec`` (``|``-separated models) becomes a required node affinity on
  ``alibaba.com/gpu-model``.  The ``deviceshare`` plugin places them per GPU (docs/simulator.md);
- GPUs, pooled (``gpu_pool``, the ``--gpu-pool`` flag): ``num_gpu`` >= 2 asks for that many ``nvidia.com/gpu``;
  ``num_gpu`` = 1 asks for ``gpu_milli``/1000 of one, as a fractional scalar (``460m``) on a node-wide pool,
  without per-device placement (fragmentation across a node's GPUs is not modelled).
"""

from __future__ import annotations

import csv
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyvolcano.api import devices as dv
from pyvolcano.conf.loader import DEFAULT_CONF
from pyvolcano.errors import UserError
from pyvolcano.sim.workload import JobSpec, Workload, from_specs

QOS = {"LS": ("latency-sensitive", 1000), "Guaranteed": ("latency-sensitive", 1000),
       "Burstable": ("burstable", 500), "BE": ("best-effort", 0)}
#: the gpushare "memory" of one GPU: one unit per milli-GPU
MILLI = 1000
MODEL_LABEL = "alibaba.com/gpu-model"
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
    #: the old pooled fractional ``nvidia.com/gpu`` mapping instead of per-device gpushare requests
    gpu_pool: bool = False
    #: the node list's file name (``--fill`` uses the GPU nodes' list, as the FGD paper's experiments do)
    node_list: str = "openb_node_list_all_node.csv"
    #: > 0: the FGD paper's fill protocol (``fill_workload``): the pod list sampled to ``fill`` x the cluster's
    #: GPU capacity, one pod a second, no departures, one try each
    fill: float = 0.0


#: the conf ``simulate --alibaba`` runs without ``-c`` when GPUs are per device: Volcano's default conf with the
#: deviceshare plugin placing the gpushare requests per GPU (without it, Volcano checks them against node totals only)
DEVICE_CONF = DEFAULT_CONF + """\
  - name: deviceshare
    arguments:
      deviceshare.GPUSharingEnable: true
      deviceshare.GPUShareWholeGPUs: true
"""


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
    source = path / knobs.node_list
    if not source.is_file() and (path / GPU_NODE_LIST).is_file():  # a directory of the FGD repository's data
        source = path / GPU_NODE_LIST
    if not source.is_file():
        raise UserError(f"{path}: {knobs.node_list} not found")
    rows = list(csv.DictReader(source.read_text().splitlines()))
    if knobs.nodes and knobs.nodes < len(rows):
        rows = sorted(random.Random(knobs.seed).sample(rows, knobs.nodes), key=lambda r: r["sn"])
    nodes = []
    for r in rows:
        alloc = {"cpu": f"{int(r['cpu_milli'])}m", "memory": f"{int(r['memory_mib'])}Mi", "pods": "110"}
        gpus = int(r["gpu"])
        if gpus and knobs.gpu_pool:
            alloc["nvidia.com/gpu"] = r["gpu"]
        elif gpus:  # gpushare: G GPUs of 1000 each (``gpushare/device_info.go: NewGPUDevices`` divides the memory)
            alloc[dv.GPU_NUMBER] = str(gpus)
            alloc[dv.GPU_MEMORY] = str(MILLI * gpus)
        labels = {"kubernetes.io/hostname": r["sn"]}
        if r["model"]:
            labels[MODEL_LABEL] = r["model"]
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


def read_rows(path: Path, knobs: AlibabaKnobs, models: set[str] | None = None) -> tuple[list[dict[str, str]],
                                                                                    list[str]]:
    """The pod list's rows that can run: a row whose numbers do not parse, whose ``gpu_milli`` is outside
    [0, 1000] or ``num_gpu`` negative, or whose ``gpu_spec`` names no GPU model of the cluster (``models``, when
    known) is reported in the problems (row and field) and left out."""
    source = pod_list(path)
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
        if not 0 <= int(r["gpu_milli"]) <= MILLI:
            problems.append(f"trace row {r['name']}: field gpu_milli: {r['gpu_milli']} is not between 0 and "
                            f"{MILLI} (milli-GPU of one GPU); skipped")
            continue
        if int(r["num_gpu"]) < 0:
            problems.append(f"trace row {r['name']}: field num_gpu: {r['num_gpu']} is negative; skipped")
            continue
        spec = gpu_spec(r)
        if spec and models is not None and not set(spec) & models:
            problems.append(f"trace row {r['name']}: field gpu_spec: {r.get('gpu_spec')!r} names no GPU model of "
                            f"the cluster ({', '.join(sorted(models)) or 'none'}); skipped")
            continue
        good.append(r)
    return good, problems


def pod_list(path: Path) -> Path:
    """The directory's pod list: ``openb_pod_list_default.csv``, else its one ``openb_pod_list_*.csv`` (the FGD
    repository's trace folders hold one list each: ``openb_pod_list_gpushare40.csv``, ...)."""
    default = path / "openb_pod_list_default.csv"
    if default.is_file():
        return default
    found = sorted(path.glob("openb_pod_list_*.csv"))
    if len(found) == 1:
        return found[0]
    if not found:
        raise UserError(f"{path}: no pod list (openb_pod_list_*.csv) found")
    raise UserError(f"{path}: several pod lists ({', '.join(f.name for f in found)}); keep one, or name one "
                    "openb_pod_list_default.csv")


def gpu_spec(r: dict[str, str]) -> list[str]:
    """The GPU models a row may run on (its ``gpu_spec``, ``|``-separated; none: any)."""
    return [m for m in (r.get("gpu_spec") or "").split("|") if m]


def milli_gpu(r: dict[str, str]) -> int:
    """The milli-GPU a row asks for in all (``TotalMilliGpu`` of the FGD simulator: ``gpu_milli`` x ``num_gpu``)."""
    return int(r["gpu_milli"]) * int(r["num_gpu"])


def device_resources(r: dict[str, str], pool: bool) -> tuple[str, dict[str, str]]:
    """A row's GPU ask: (the ``gpu`` column of its JobSpec, the extended resources its container limits).
    Per device (the default): a share of one GPU is ``volcano.sh/gpu-memory`` in milli-GPU, whole GPUs
    ``volcano.sh/gpu-number``; pooled: ``nvidia.com/gpu`` (fractional for a share)."""
    ngpu, gmilli = int(r["num_gpu"]), int(r["gpu_milli"])
    if ngpu <= 0 or gmilli <= 0:
        return "0", {}
    if pool:
        gpu_m = ngpu * MILLI if ngpu >= 2 else gmilli
        return f"{gpu_m}m", {}
    if ngpu == 1 and gmilli < MILLI:
        return "0", {dv.GPU_MEMORY: str(gmilli)}
    return "0", {dv.GPU_NUMBER: str(ngpu)}


def pod_extra(r: dict[str, str], pool: bool) -> dict[str, Any]:
    """What a row's pod template carries beyond cpu, memory and ``nvidia.com/gpu`` (``workload.to_vcjob``): its
    gpushare limits and its ``gpu_spec`` as a required node affinity."""
    extra: dict[str, Any] = {}
    _, res = device_resources(r, pool)
    if res:
        extra["resources"] = res
    spec = gpu_spec(r)
    if spec:
        extra["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [
                {"key": MODEL_LABEL, "operator": "In", "values": spec}]}]}}}
    return extra


def load_workload(path: Path, knobs: AlibabaKnobs, models: set[str] | None = None) -> Workload:
    """The trace's pod rows as gangs of vcjobs.  A row that does not parse or has a negative lifetime is reported
    in ``problems`` and left out (``read_rows``); a request no node can hold is reported by the simulator, which
    knows the cluster (``Simulator.job_problem``)."""
    rows, problems = read_rows(path, knobs, models)
    groups: list[list[dict[str, str]]] = []
    for r in rows:
        key = _key(r)
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
        cpu, mem = int(r["cpu_milli"]), int(r["memory_mib"])
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
        gpu, _ = device_resources(r, knobs.gpu_pool)
        specs.append(JobSpec(name=name.lower(), arrival=round((float(r["creation_time"]) - t0) / knobs.compress, 3),
                             queue=queue, priority=prio, tasks=len(lifetimes), min_available=len(lifetimes),
                             cpu=f"{cpu}m", memory=f"{mem}Mi", gpu=gpu, duration=round(dur, 1),
                             extra=pod_extra(r, knobs.gpu_pool)))
    return _with_mix(from_specs(specs, problems), rows)


def _with_mix(wl: Workload, rows: list[dict[str, str]]) -> Workload:
    """The workload with its task mix: FGD's, from the pod rows as their simulator reads the pod list."""
    from pyvolcano.api.gpufrag import TaskMix

    wl.task_mix = TaskMix.from_openb_rows(rows) if rows else None
    return wl


def node_models(nodes: list[dict[str, Any]]) -> set[str]:
    """The GPU models the cluster's nodes are labelled with (``alibaba.com/gpu-model``)."""
    return {str(m) for n in nodes if (m := ((n.get("metadata") or {}).get("labels") or {}).get(MODEL_LABEL))}


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
    return (r["cpu_milli"], r["memory_mib"], r["num_gpu"], r["gpu_milli"], r["qos"], r.get("gpu_spec") or "")


#: the fill protocol's node list: the cluster's GPU nodes (1,213 nodes, 6,212 GPUs), as the paper's experiments use
GPU_NODE_LIST = "openb_node_list_gpu_node.csv"
#: a fill run's pods never leave: a lifetime no run reaches (the run stops after the last try)
FILL_DURATION = 1e9


def cluster_milli_gpu(nodes: list[dict[str, Any]]) -> int:
    """The cluster's milli-GPU: 1000 per GPU (gpushare ``volcano.sh/gpu-number`` or ``nvidia.com/gpu``)."""
    total = 0
    for n in nodes:
        alloc = (n.get("status") or {}).get("allocatable") or {}
        g = alloc.get(dv.GPU_NUMBER, alloc.get("nvidia.com/gpu", 0))
        total += MILLI * int(str(g) or 0)
    return total


def tune_rows(rows: list[dict[str, str]], target: float, seed: int) -> list[dict[str, str]]:
    """The FGD simulator's workload tuning (``simulator.go: SortClusterPods`` with ``--shuffle-pod``, then
    ``TunePodsByNodeTotalResource``), with Python's seeded RNG (not Go's, so the sample differs from theirs):
    the rows sorted by name and shuffled; then, while their milli-GPU (``TotalMilliGpu``: ``gpu_milli`` x
    ``num_gpu``) exceeds ``target``, a random row is removed (``tuneDownPods``); or, while below, random rows of
    the original list are appended as copies named ``NAME-tuned-I`` (``tuneUpPods``) until the next drawn row's
    ``gpu_milli`` (per GPU, as their check reads it) would pass ``target``.  Rows without GPUs stay and are drawn
    like the others."""
    rnd = random.Random(seed)
    out = sorted(rows, key=lambda r: r["name"])
    rnd.shuffle(out)
    total = sum(milli_gpu(r) for r in out)
    if not rows or total == target:
        return out
    if total > target:
        while total > target and out:
            r = out.pop(rnd.randrange(len(out)))
            total -= milli_gpu(r)
        return out
    i = 0
    while True:
        r = rows[rnd.randrange(len(rows))]
        if total + int(r["gpu_milli"]) > target:
            return out
        out.append({**r, "name": f"{r['name']}-tuned-{i}"})
        total += milli_gpu(r)
        i += 1


def fill_workload(path: Path, knobs: AlibabaKnobs, cluster_milli: int, models: set[str] | None = None) -> Workload:
    """The FGD paper's protocol: the pod list tuned to ``knobs.fill`` x ``cluster_milli`` (``tune_rows``), one
    single-pod job per row arriving one a second in that order, in one queue, never leaving; the simulator tries
    each once (``Simulator(one_try=True)``)."""
    rows, problems = read_rows(path, knobs, models)
    if not any(milli_gpu(r) for r in rows) or cluster_milli <= 0:
        raise UserError(f"{path}: --fill needs GPU pods and GPU nodes (pods' milli-GPU "
                        f"{sum(milli_gpu(r) for r in rows)}, cluster's {cluster_milli})")
    specs = []
    for k, r in enumerate(tune_rows(rows, knobs.fill * cluster_milli, knobs.seed)):
        gpu, _ = device_resources(r, knobs.gpu_pool)
        specs.append(JobSpec(name=r["name"].lower(), arrival=float(k), queue="default", priority=0, tasks=1,
                             min_available=1, cpu=f"{int(r['cpu_milli'])}m", memory=f"{int(r['memory_mib'])}Mi",
                             gpu=gpu, duration=FILL_DURATION, extra=pod_extra(r, knobs.gpu_pool)))
    return _with_mix(from_specs(specs, problems), rows)


def job_milli_gpu(job: dict[str, Any]) -> int:
    """The milli-GPU one pod of a vcjob asks for: ``volcano.sh/gpu-memory``, 1000 x ``volcano.sh/gpu-number``, or
    1000 x ``nvidia.com/gpu`` of its first task's first container (the simulator's trace jobs have one)."""
    from pyvolcano.api.quantity import parse_quantity

    try:
        c = job["spec"]["tasks"][0]["template"]["spec"]["containers"][0]
    except (KeyError, IndexError, TypeError):
        return 0
    res = c.get("resources") or {}
    lim, req = res.get("limits") or {}, res.get("requests") or {}
    if dv.GPU_MEMORY in lim:
        return int(parse_quantity(lim[dv.GPU_MEMORY]))
    if dv.GPU_NUMBER in lim:
        return MILLI * int(parse_quantity(lim[dv.GPU_NUMBER]))
    if "nvidia.com/gpu" in req:
        return int(parse_quantity(req["nvidia.com/gpu"]) * MILLI)
    return 0
