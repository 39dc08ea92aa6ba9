"""The network-topology benchmark (issue 14 "Speed"): a cluster under a 3-tier HyperNode tree and a backlog of
hard-constrained gangs plus unconstrained pods, as Kubernetes-shaped dicts, deterministic for a seed.

Nodes sit ``per_leaf`` to a leaf switch (tier 1), leaves ``per_spine`` to a spine (tier 2), every spine under one
top (tier 3).  Each gang is a PodGroup with ``networkTopology: {mode: hard, highestTierAllowed: 1 or 2}`` and
``minMember`` equal to its size (8 to 128 pods of 1, 2 or 4 cpu); the unconstrained pods are one-pod jobs, which
the ``network-topology-aware`` plugin scores by hypernode bin-packing.  The conf is Volcano's default with that
plugin added.  The same objects, written as a scenario (:func:`scenario`), run through the real Volcano oracle.

The HyperNodes come from the simulator's generator (``sim/topology.py: tree_hypernodes``).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import time
from typing import Any

from pyvolcano.conf.loader import DEFAULT_CONF
from pyvolcano.sim.topology import tree_hypernodes

Obj = dict[str, Any]

#: Volcano's default conf plus the network-topology-aware plugin
CONF = DEFAULT_CONF + "  - name: network-topology-aware\n"
NODE = {"cpu": "64", "memory": "256Gi", "pods": "110"}
SCHED_API = "scheduling.volcano.sh/v1beta1"


def hypernodes(node_names: list[str], per_leaf: int = 16, per_spine: int = 8) -> list[Obj]:
    """A leaf per ``per_leaf`` nodes (tier 1), a spine per ``per_spine`` leaves (tier 2), one top (tier 3): the
    simulator's ``tree_hypernodes`` with tiers named leaf, spine and top."""
    leaves = -(-len(node_names) // per_leaf)
    spines = -(-leaves // per_spine)
    return tree_hypernodes(node_names, per_leaf, per_spine, max(spines, 1), tier_names=("leaf", "spine", "top"))


def build(nodes: int = 5000, gangs: int = 1000, plain: int = 5000, *, per_leaf: int = 16, per_spine: int = 8,
          min_gang: int = 8, max_gang: int = 128, seed: int = 0) -> list[Obj]:
    """The benchmark's objects: a Queue, ``nodes`` nodes and their HyperNodes, ``gangs`` hard-constrained gangs
    (sizes uniform in [min_gang, max_gang], highest tier 1 or 2), then ``plain`` one-pod jobs."""
    rnd = random.Random(seed)
    names = [f"n{i:05d}" for i in range(nodes)]
    objs: list[Obj] = [{"apiVersion": SCHED_API, "kind": "Queue", "metadata": {"name": "default"},
                        "spec": {"weight": 1, "reclaimable": True}, "status": {"state": "Open"}}]
    objs += [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": n, "labels": {"kubernetes.io/hostname": n}},
              "status": {"allocatable": dict(NODE), "capacity": dict(NODE)}} for n in names]
    objs += hypernodes(names, per_leaf, per_spine)
    stamp = 0

    def job(name: str, size: int, cpu: int, topology: Obj | None) -> list[Obj]:
        nonlocal stamp
        stamp += 1
        spec: Obj = {"minMember": size, "queue": "default"}
        if topology:
            spec["networkTopology"] = topology
        out: list[Obj] = [{"apiVersion": SCHED_API, "kind": "PodGroup",
                           "metadata": {"name": name, "namespace": "bench", "creationTimestamp": _ts(stamp)},
                           "spec": spec, "status": {"phase": "Inqueue"}}]
        req = {"cpu": str(cpu), "memory": f"{4 * cpu}Gi"}
        for k in range(size):
            out.append({"apiVersion": "v1", "kind": "Pod",
                        "metadata": {"name": f"{name}-{k}", "namespace": "bench", "creationTimestamp": _ts(stamp),
                                     "annotations": {"scheduling.k8s.io/group-name": name}},
                        "spec": {"schedulerName": "volcano",
                                 "containers": [{"name": "c", "resources": {"requests": dict(req)}}]},
                        "status": {"phase": "Pending"}})
        return out

    for g in range(gangs):
        size = rnd.randint(min_gang, max_gang)
        objs += job(f"gang-{g:04d}", size, rnd.choice((1, 2, 4)),
                    {"mode": "hard", "highestTierAllowed": rnd.choice((1, 2))})
    for p in range(plain):
        objs += job(f"pod-{p:05d}", 1, 1, None)
    return objs


def _ts(k: int) -> str:
    """Distinct creation times one second apart (job order follows creation)."""
    return f"2026-01-{1 + k // 86400:02d}T{k // 3600 % 24:02d}:{k // 60 % 60:02d}:{k % 60:02d}Z"


def scenario(objs: list[Obj]) -> Obj:
    """The objects as a scenario file for the Volcano oracle (``../shared/tools/volcano/vc-oracle``)."""
    return {"name": "topology benchmark", "config": CONF, "objects": objs}


def time_oracle(objs: list[Obj], oracle: str, workdir: str, *, timeout: float = 3600.0,
                stall: float = 5.0) -> dict[str, Any]:
    """Time one real Volcano session (``vc-oracle``) on ``objs`` with :data:`CONF`, and the same snapshot with
    only ``enqueue`` (loading the objects and opening the session), so that their difference is Volcano's
    ``allocate`` + ``backfill``.

    The oracle's mock cache has an event recorder with a buffer of 100 (``cache/cache_mock.go:
    checkAndSetDefaultInterface``, ``record.NewFakeRecorder(100)``) that nothing drains, so after about 100
    bind/PodGroup events its bind goroutines and its job updater block for good and the process never exits.  The
    session itself runs on the main goroutine until then, so each run is timed until the process's CPU time stops
    growing for ``stall`` seconds (or it exits): ``{"seconds": wall to the last CPU tick, "cpu_seconds", ...}``.
    A run still busy after ``timeout`` is stopped and reported with ``"finished": False``."""

    out: dict[str, Any] = {}
    scen = os.path.join(workdir, "topology-bench.yaml")
    with open(scen, "w") as f:
        json.dump(scenario(objs), f)  # JSON is YAML
    for key, actions in (("session", None), ("enqueue_only", "enqueue")):
        cmd = [oracle, "-quiet", "100ms"]
        if actions:
            conf = os.path.join(workdir, "enqueue.conf")
            with open(conf, "w") as f:
                f.write(CONF.replace('"enqueue, allocate, backfill"', f'"{actions}"'))
            cmd += ["-conf", conf]
        out[key] = _watch([*cmd, scen], timeout, stall)
    s, e = out["session"], out["enqueue_only"]
    out["allocate_seconds"] = round(s["seconds"] - e["seconds"], 2)
    out["allocate_cpu_seconds"] = round(s["cpu_seconds"] - e["cpu_seconds"], 2)
    out["finished"] = s["finished"]
    return out


def _watch(cmd: list[str], timeout: float, stall: float) -> dict[str, Any]:
    """Run ``cmd``; wall and CPU seconds until its process tree's CPU stops growing (see :func:`time_oracle`)."""

    tick = os.sysconf("SC_CLK_TCK")
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)

    def cpu() -> float:
        try:
            with open(f"/proc/{proc.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / tick  # utime + stime
        except (OSError, IndexError, ValueError):
            return -1.0

    # (wall, cpu) samples; stalled once the last ``stall`` seconds added under 2 % of a core (the Go runtime's
    # background wake-ups keep adding a tick now and then)
    samples: list[tuple[float, float]] = [(t0, 0.0)]
    finished = True
    try:
        while proc.poll() is None:
            time.sleep(0.2)
            now, c = time.monotonic(), cpu()
            if c < 0:
                continue
            samples.append((now, c))
            old = next((s for s in reversed(samples) if now - s[0] >= stall), None)
            if old is not None and c - old[1] < 0.02 * stall + 0.05:
                break
            if now - t0 > timeout:
                finished = False
                break
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    last_cpu = samples[-1][1]
    last_change = next(t for t, c in samples if c >= last_cpu - 0.05)
    return {"seconds": round(last_change - t0, 2), "cpu_seconds": round(last_cpu, 2), "finished": finished}
