"""The simulator's openb GPU mapping (per device by default, ``--gpu-pool`` pooled), the FGD paper's fill protocol
(``--fill``: tuning, one try each, the fill curve), the GPU metrics, and the device pools carried between
sessions (``plugins/deviceshare.py``), on tiny traces written to a temporary directory."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from pyvolcano.api import devices as dv
from pyvolcano.cli import main
from pyvolcano.conf.loader import load_conf
from pyvolcano.sim import alibaba
from pyvolcano.sim.engine import Simulator
from pyvolcano.sim.metrics import fill_curve
from pyvolcano.sim.run import alibaba_inputs
from tests.sim.recording import record_binds

NODE_COLS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
POD_COLS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "qos", "pod_phase",
            "creation_time", "deletion_time", "scheduled_time")


def trace(tmp: Path, nodes: list[tuple[Any, ...]], pods: list[tuple[Any, ...]]) -> Path:
    """A trace directory with the three CSVs (the GPU nodes' list is the node list's GPU rows)."""
    for fname, rows in (("openb_node_list_all_node.csv", nodes),
                        ("openb_node_list_gpu_node.csv", [n for n in nodes if int(n[3])])):
        with (tmp / fname).open("w", newline="") as f:
            w = csv.writer(f)
            w.writerow(NODE_COLS)
            w.writerows(rows)
    with (tmp / "openb_pod_list_default.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(POD_COLS)
        for k, (name, cpu, ngpu, milli, spec) in enumerate(pods):
            w.writerow((name, cpu, 1024, ngpu, milli, spec, "LS", "Running", k * 10, k * 10 + 100000, k * 10))
    return tmp


def container(job: dict[str, Any]) -> dict[str, Any]:
    return job["spec"]["tasks"][0]["template"]["spec"]["containers"][0]


def test_openb_rows_map_to_gpushare_requests(tmp_path: Path) -> None:
    """A share of one GPU limits gpu-memory in milli-GPU, whole GPUs gpu-number, gpu_spec is a required node
    affinity; bad rows are named (row, field) and left out, the rest loads."""
    d = trace(tmp_path, [("n0", 8000, 65536, 2, "A"), ("n1", 8000, 65536, 4, "B"), ("c0", 8000, 65536, 0, "")],
              [("p-share", 1000, 1, 460, ""), ("p-one", 1000, 1, 1000, ""), ("p-two", 1000, 2, 1000, "B"),
               ("p-cpu", 1000, 0, 0, ""), ("p-big", 1000, 1, 1500, ""), ("p-neg", 1000, 1, -5, ""),
               ("p-nomodel", 1000, 1, 500, "Z|Y")])
    knobs = alibaba.AlibabaKnobs(nodes=0, pods=0, skip=0, gang_window=0)
    inp = alibaba_inputs(str(d), knobs, None)
    n0 = next(n for n in inp.nodes if n["metadata"]["name"] == "n0")
    assert n0["status"]["allocatable"][dv.GPU_NUMBER] == "2"
    assert n0["status"]["allocatable"][dv.GPU_MEMORY] == "2000"
    assert "nvidia.com/gpu" not in n0["status"]["allocatable"]
    jobs = {j["metadata"]["name"]: j for _, j in inp.workload.jobs}
    assert sorted(jobs) == ["p-cpu", "p-one", "p-share", "p-two"]
    assert container(jobs["p-share"])["resources"]["limits"] == {dv.GPU_MEMORY: "460"}
    assert container(jobs["p-share"])["resources"]["requests"][dv.GPU_MEMORY] == "460"
    assert container(jobs["p-one"])["resources"]["limits"] == {dv.GPU_NUMBER: "1"}
    assert container(jobs["p-two"])["resources"]["limits"] == {dv.GPU_NUMBER: "2"}
    assert "limits" not in container(jobs["p-cpu"])["resources"]
    terms = jobs["p-two"]["spec"]["tasks"][0]["template"]["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms == [{"matchExpressions": [{"key": alibaba.MODEL_LABEL, "operator": "In", "values": ["B"]}]}]
    probs = "\n".join(inp.workload.problems)
    assert "trace row p-big: field gpu_milli: 1500" in probs
    assert "trace row p-neg: field gpu_milli: -5" in probs
    assert "trace row p-nomodel: field gpu_spec: 'Z|Y' names no GPU model" in probs
    assert inp.default_conf == alibaba.DEVICE_CONF
    pooled = alibaba_inputs(str(d), alibaba.AlibabaKnobs(nodes=0, pods=0, skip=0, gang_window=0, gpu_pool=True), None)
    pj = {j["metadata"]["name"]: j for _, j in pooled.workload.jobs}
    assert container(pj["p-share"])["resources"]["requests"]["nvidia.com/gpu"] == "460m"
    assert pooled.default_conf is None


def test_tune_rows_cuts_and_inflates_to_the_target() -> None:
    """tuneDownPods removes random rows while above the target; tuneUpPods appends copies ``-tuned-I`` until the
    next drawn row's per-GPU milli would pass it; both seeded."""
    rows = [{"name": f"p{k}", "num_gpu": "1", "gpu_milli": "500"} for k in range(10)]  # 5,000 milli-GPU
    down = alibaba.tune_rows(rows, 2000, seed=1)
    assert sum(alibaba.milli_gpu(r) for r in down) == 2000 and len(down) == 4
    assert down == alibaba.tune_rows(rows, 2000, seed=1)
    up = alibaba.tune_rows(rows, 6400, seed=1)
    assert [r["name"] for r in up[10:]] == ["p" + r["name"].split("-")[0][1:] + f"-tuned-{i}"
                                            for i, r in enumerate(up[10:])]
    assert sum(alibaba.milli_gpu(r) for r in up) == 6000  # a 7th copy would pass 6,400
    assert sorted(r["name"] for r in up[:10]) == sorted(r["name"] for r in rows)


def test_fill_curve_by_hand() -> None:
    """Four arrivals on 2,000 milli-GPU: 500 (placed), 1000 (failed), a pod without GPUs, 500 (placed).
    Arrived after each: 500, 1500, 1500, 2000 -> 25, 75, 75, 100 %; allocated: 500, 500, 500, 1000 -> 25, 25, 25,
    50 %.  At 25 %: 25; at 75 %: mean(25, 25) = 25; at 100 %: 50; at 24 % none exactly, within +-1: the 25 % one
    -> 25; at 50 % none within +-1 -> None; at 101 %: the 100 % one -> 50."""
    c = fill_curve([500, 1000, 0, 500], [True, False, True, True], 2000)
    a = c["allocated_gpu_pct"]
    assert c["arrived_gpu_pct"] == list(range(131))
    assert (a[25], a[75], a[100], a[24], a[50], a[101], a[0]) == (25.0, 25.0, 50.0, 25.0, None, 50.0, None)


FILL_PODS = [(f"p{k:02d}", 500, *g) for k, g in enumerate(
    [(1, 500, ""), (2, 1000, ""), (1, 1000, ""), (1, 700, ""), (0, 0, ""), (1, 300, ""), (4, 1000, ""),
     (1, 250, ""), (1, 900, "A"), (2, 1000, "B"), (1, 600, ""), (1, 100, "")])]
FILL_NODES = [("n0", 4000, 65536, 2, "A"), ("n1", 4000, 65536, 4, "B"), ("n2", 2000, 65536, 2, "B")]


def test_fill_run_tries_each_pod_once(tmp_path: Path) -> None:
    """simulate --fill: 8 GPUs (8,000 milli); the pods sampled to 1.3 x that, one a second, each tried once: every
    job is placed or failed, none waits; the placed ones hold devices as deviceshare chose them; summary.json has
    the fill curve and the GPU metrics."""
    (tmp_path / "t").mkdir()
    d = trace(tmp_path / "t", FILL_NODES, FILL_PODS)
    out = tmp_path / "out"
    r = CliRunner().invoke(main, ["simulate", "--alibaba", "--trace-dir", str(d), "--ali-nodes", "0", "--ali-pods", "0",
                                  "--fill", "1.3", "--seed", "3", "--out", str(out), "--no-progress", "-o", "json"])
    assert r.exit_code == 0, r.output
    s = json.loads((out / "summary.json").read_text())
    assert s["jobs"] == s["failed"] + s["unfinished"]  # placed pods never finish in a fill run
    assert s["never_started"] == s["failed"]
    assert len(s["fill_curve"]["allocated_gpu_pct"]) == 131
    assert s["gpu"]["gpus"] == 8 and s["gpu"]["frag_gpus_final"] is not None
    placed = 8000 * s["gpu"]["allocation_final"]
    assert s["fill_curve"]["allocated_gpu_pct"][-1] is None or placed > 0
    rows = list(csv.DictReader((out / "jobs.csv").open()))
    assert all(r["phase"] in ("Failed", "Running") for r in rows)


def fill_sim(d: Path, full: bool, seed: int = 5) -> tuple[list[str], list[tuple[str, ...]]]:
    inp = alibaba_inputs(str(d), alibaba.AlibabaKnobs(nodes=0, pods=0, fill=1.3, seed=seed), None)
    sim = Simulator(inp.nodes, inp.queues, inp.workload, load_conf(alibaba.DEVICE_CONF), full_sessions=full,
                    one_try=True)
    binds, res = recorded_run(sim, len(inp.workload.jobs) + 3.0)
    return binds, sorted((k, r.phase, str(r.first_start)) for k, r in res.records.items())


def recorded_run(sim: Simulator, until: float | None = None) -> tuple[list[str], Any]:
    """Run ``sim``, recording each bind with its time, node and GPU indexes (what must not differ)."""
    binds = record_binds(sim, lambda task, node:
                         f"{sim.now} {task.name} {node} {(task.pod_annotations or {}).get(dv.GPU_INDEX)}")
    return binds, (sim.run(until) if until is not None else sim.run())


@pytest.mark.parametrize("seed", [5, 6])
def test_carried_device_pools_change_no_decision(tmp_path: Path, seed: int) -> None:
    """The pools carried between sessions (only the nodes whose pods changed are read again) give the very
    placements and GPUs of ``--full-sessions``, which reads every node's pods every session."""
    d = trace(tmp_path, FILL_NODES, [(f"{p[0]}-{i}", *p[1:]) for i in range(3) for p in FILL_PODS])
    fast, full = fill_sim(d, False, seed), fill_sim(d, True, seed)
    assert fast == full
    assert any(b.split()[-1] != "None" for b in fast[0])  # GPUs were chosen


def gpu_node(name: str, gpus: int, cpu: str = "4") -> dict[str, Any]:
    alloc = {"cpu": cpu, "memory": "16Gi", dv.GPU_NUMBER: str(gpus), dv.GPU_MEMORY: str(1000 * gpus)}
    return {"metadata": {"name": name, "labels": {alibaba.MODEL_LABEL: "A"}}, "status": {"allocatable": alloc}}


def gpu_task(uid: str, cpu_milli: int, lim: dict[str, str], index: str | None) -> Any:
    from types import SimpleNamespace

    pod = {"spec": {"containers": [{"resources": {"limits": lim}}]}}
    return SimpleNamespace(uid=uid, resreq=[cpu_milli], pod=pod,
                           pod_annotations={dv.GPU_INDEX: index} if index is not None else None)


def test_gpu_ledger_fragmentation_by_hand() -> None:
    """One node of 2 GPUs and 4 cpus; the task mix is one class: 1 cpu, 500 milli of one GPU.  A share of 700 on
    GPU 0 leaves [300, 1000] and 3 cpus: the class fits (GPU 1), so the node's fragmentation is the milli-GPU on
    the GPUs with less than 500 left: 300 = 0.3 GPU.  A whole-GPU pod on GPU 1 then leaves [300, 0]: the class
    fits nowhere, every milli left counts: 0.3 GPU, allocated 1,700 of 2,000.  Releasing the share leaves [1000,
    0], which the class can use: 0."""
    from pyvolcano.api.gpufrag import TaskClass, TaskMix
    from pyvolcano.sim.gpus import GpuLedger

    led = GpuLedger([gpu_node("n0", 2)], TaskMix.from_classes([TaskClass(1000, 1, 500, "")]))
    led.hold(gpu_task("a", 1000, {dv.GPU_MEMORY: "700"}, "0"), "n0")  # type: ignore[arg-type]
    assert led.frag() == pytest.approx(0.3) and led.allocated == 700
    led.hold(gpu_task("b", 1000, {dv.GPU_NUMBER: "1"}, "1"), "n0")  # type: ignore[arg-type]
    assert led.frag() == pytest.approx(0.3) and led.allocated == 1700
    led.release("a")
    assert led.frag() == 0.0 and led.allocated == 1000
    led.hold(gpu_task("c", 1000, {dv.GPU_MEMORY: "100"}, None), "n0")  # type: ignore[arg-type]
    assert led.frag() is None  # a GPU pod whose GPUs were not chosen by deviceshare: not known


def test_gpu_summary_by_hand() -> None:
    """4 GPUs; samples at t = 0, 10, 30 with 0, 2, 3 GPUs allocated and fragmentation 0, 0.5, 0.25 GPU; the
    time-averaged allocation (``utilisation.gpu``) given as 0.4.  At the end: allocation 3/4 = 0.75, 1 GPU
    unallocated, fragmentation 0.25; on average: 4 x (1 - 0.4) = 2.4 GPUs unallocated and fragmentation
    (0 x 10 + 0.5 x 20) / 30 = 1/3 GPU."""
    from types import SimpleNamespace

    import numpy as np

    from pyvolcano.sim.engine import Sample
    from pyvolcano.sim.metric_registry import METRICS
    from pyvolcano.sim.metrics import gpu_summary

    samples = [Sample(t, np.array([0.0, 0.0, u]), {}, f) for t, u, f in ((0, 0, 0.0), (10, 2, 0.5), (30, 3, 0.25))]
    g = gpu_summary(SimpleNamespace(capacity=np.array([8.0, 32.0, 4.0]), samples=samples,  # type: ignore[arg-type]
                                    gpu_series=None), 0.4)
    assert g is not None
    assert (g["allocation_final"], g["unallocated_gpus_final"], g["frag_gpus_final"]) == (0.75, 1.0, 0.25)
    assert (g["unallocated_gpus_mean"], g["frag_gpus_mean"]) == (2.4, 0.333)
    assert g["series"]["allocation"] == [0.0, 0.5, 0.75]
    summary = {"gpu": g, "fill_curve": {"allocated_at_130": 91.5}}
    assert METRICS["gpu_unallocated"].value(summary) == 1.0
    assert METRICS["gpu_frag"].value(summary) == 0.25
    assert METRICS["fill_alloc_130"].value(summary) == 91.5
    assert METRICS["gpu_frag"].improved(0.2, 0.25) is True


def test_gpu_summary_from_the_ledger_by_hand() -> None:
    """With the gpushare ledger the series are its changes, not the session samples: 4 GPUs (4,000 milli-GPU),
    changes at t = 0, 10, 30 to 0, 2,000 and 3,000 milli-GPU with fragmentation 0, 0.5 and 0.25 GPU, the run ending
    at t = 50 (one session sample only, at 0).  At the end 3/4 allocated and 0.25 GPU fragmented; the fragmentation's
    time average over [0, 50] is (0 x 10 + 0.5 x 20 + 0.25 x 20) / 50 = 0.3 GPU, its last state lasting to the end."""
    from types import SimpleNamespace

    import numpy as np

    from pyvolcano.sim.engine import Sample
    from pyvolcano.sim.metrics import gpu_summary

    series = [(0.0, 0, 0.0), (10.0, 2000, 0.5), (30.0, 3000, 0.25)]
    got = gpu_summary(SimpleNamespace(capacity=np.array([8.0, 32.0, 4.0]), end_time=50.0,  # type: ignore[arg-type]
                                      samples=[Sample(0.0, np.zeros(3), {}, 0.0)], gpu_series=(series, 4000)), 0.4)
    assert got is not None
    assert (got["allocation_final"], got["frag_gpus_final"], got["frag_gpus_mean"]) == (0.75, 0.25, 0.3)
    assert got["series"]["t"] == [0.0, 10.0, 30.0, 50.0]
    assert got["series"]["allocation"] == [0.0, 0.5, 0.75, 0.75]


def test_the_ledger_records_a_point_per_change() -> None:
    """``GpuLedger.record`` adds a point only when a pod was bound or left since the last one, one per time."""
    from pyvolcano.api.gpufrag import TaskClass, TaskMix
    from pyvolcano.sim.gpus import GpuLedger

    led = GpuLedger([gpu_node("n0", 2)], TaskMix.from_classes([TaskClass(1000, 1, 500, "")]))
    led.record(0.0)
    led.hold(gpu_task("a", 1000, {dv.GPU_MEMORY: "700"}, "0"), "n0")  # type: ignore[arg-type]
    led.record(5.0)
    led.record(6.0)  # nothing moved: no point
    led.release("a")
    led.record(9.0)
    assert [(t, a) for t, a, _ in led.series] == [(0.0, 0), (5.0, 700), (9.0, 0)]


def test_a_conf_without_deviceshare_is_warned_once(tmp_path: Path) -> None:
    """The per-device mapping under a conf whose deviceshare does not place the requests: one warning naming the
    fix (Volcano would check them against the nodes' totals only); with the default conf, none."""
    d = trace(tmp_path, FILL_NODES, FILL_PODS)
    conf = tmp_path / "plain.conf"
    conf.write_text("actions: enqueue, allocate\ntiers:\n- plugins:\n  - name: gang\n  - name: predicates\n"
                    "  - name: deviceshare\n    arguments:\n      deviceshare.GPUSharingEnable: true\n")
    args = ["simulate", "--alibaba", "--trace-dir", str(d), "--ali-nodes", "0", "--ali-pods", "0", "--no-progress",
            "-o", "json"]
    r = CliRunner().invoke(main, [*args, "-c", str(conf), "--fill", "1.3", "--out", str(tmp_path / "a")])
    assert r.exit_code == 0, r.output
    text = r.stderr
    assert text.count("checked against each node's totals only") == 1
    assert "GPUShareWholeGPUs" in text
    r = CliRunner().invoke(main, [*args, "--fill", "1.3", "--out", str(tmp_path / "b")])
    assert r.exit_code == 0 and "totals only" not in r.stderr


def replay(full: bool) -> tuple[list[str], list[tuple[str, ...]]]:
    inp = alibaba_inputs(None, alibaba.AlibabaKnobs(nodes=6, pods=80, compress=400, duration_scale=0.05, seed=2), None)
    sim = Simulator(inp.nodes, inp.queues, inp.workload, load_conf(alibaba.DEVICE_CONF), full_sessions=full)
    binds, res = recorded_run(sim)
    return binds, sorted((k, r.phase, str(r.first_start), str(r.finished)) for k, r in res.records.items())


def test_carried_device_pools_on_a_replay_with_departures() -> None:
    """The bundled trace replayed per device on 6 nodes (pods finish and free their GPUs, gangs wait): the carried
    pools give the placements and GPUs of ``--full-sessions``."""
    fast, full = replay(False), replay(True)
    assert fast == full
    assert sum(b.split()[-1] != "None" for b in fast[0]) > 10


def test_check_mode_catches_a_carried_pool_gone_stale(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under ``deltas.CHECK`` (the suite's) the carried pools are compared with every node read afresh at each
    open: a node whose pods changed but was not read again (here: its read dropped once) is caught."""
    from pyvolcano.framework.incremental import deltas
    from pyvolcano.plugins.deviceshare import DeviceShare

    assert deltas.CHECK
    read = DeviceShare._read_node
    calls = {"n": 0}

    def dropping(self: DeviceShare, ssn: Any, pool: Any, i: int, quiet: bool = False) -> list[str]:
        if not quiet and self.nodes.tasks[i]:
            calls["n"] += 1
            if calls["n"] == 3:  # the carried pool misses this node's pods
                return []
        return read(self, ssn, pool, i, quiet)

    monkeypatch.setattr(DeviceShare, "_read_node", dropping)
    with pytest.raises(AssertionError, match="deviceshare: carried"):
        replay(False)


def test_a_trace_dir_of_the_fgd_repository_runs_unchanged(tmp_path: Path) -> None:
    """Their trace folders hold the GPU nodes' list and one ``openb_pod_list_*.csv``: --trace-dir takes them as
    they are; two pod lists are refused naming both."""
    trace(tmp_path, FILL_NODES, FILL_PODS)
    (tmp_path / "openb_node_list_all_node.csv").unlink()
    (tmp_path / "openb_pod_list_default.csv").rename(tmp_path / "openb_pod_list_gpushare40.csv")
    for knobs in (alibaba.AlibabaKnobs(nodes=0, pods=0, fill=1.3), alibaba.AlibabaKnobs(nodes=0, pods=0, skip=0)):
        inp = alibaba_inputs(str(tmp_path), knobs, None)
        assert len(inp.nodes) == 3 and inp.workload.jobs
    (tmp_path / "openb_pod_list_cpu050.csv").write_text("name\n")
    from pyvolcano.errors import UserError

    with pytest.raises(UserError, match=r"several pod lists.*cpu050.*gpushare40"):
        alibaba_inputs(str(tmp_path), alibaba.AlibabaKnobs(nodes=0, pods=0, fill=1.3), None)


def test_gpu_allocation_counts_shares_and_whole_gpus_by_hand(tmp_path: Path) -> None:
    """One node of 2 GPUs; a share of 500 milli-GPU and one whole GPU arrive (a replay compressed to the same
    second) and both are placed: 500 + 1,000 = 1,500 milli-GPU, 1.5 of the node's 2 GPUs.  The capacity is 2 GPUs
    (its gpu-memory is the same GPUs, not counted twice); the share counts its gpu-memory over one GPU's 1,000."""
    d = trace(tmp_path, [("n0", 64000, 262144, 2, "A")], [("a-share", 1000, 1, 500, ""), ("b-whole", 1000, 1, 1000, "")])
    inp = alibaba_inputs(str(d), alibaba.AlibabaKnobs(nodes=0, pods=0, skip=0, compress=1e6, gang_window=0), None)
    sim = Simulator(inp.nodes, inp.queues, inp.workload, load_conf(alibaba.DEVICE_CONF))
    res = sim.run(5.0)
    assert float(res.capacity[2]) == 2.0
    assert float(res.samples[-1].used[2]) == pytest.approx(1.5)
    assert sim.gpus is not None and sim.gpus.allocated == 1500
