"""Simulator tests on tiny workloads whose answers are worked out by hand in the comments."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pyvolcano.conf.loader import load_conf_file
from pyvolcano.sim import metrics
from pyvolcano.sim.cluster import parse_cluster_spec
from pyvolcano.sim.engine import Simulator
from pyvolcano.sim.workload import JobSpec, from_specs, load_csv, synthetic
from tests.confs import PREEMPT_CONF

QUEUE = [{"kind": "Queue", "metadata": {"name": "default"}, "spec": {"weight": 1}}]


def run(specs: list[JobSpec], cluster: str = "1x{cpu: 4, memory: 16Gi}", **kw: object) -> dict[str, metrics.Any]:
    sim = Simulator(parse_cluster_spec(cluster), QUEUE, from_specs(specs), load_conf_file(None), **kw)  # type: ignore[arg-type]
    res = sim.run()
    return {r["job"]: r for r in metrics.job_rows(res)}, res  # type: ignore[return-value]


def test_two_gangs_on_one_node_exact_waits() -> None:
    # 4 cpu. a: 2x2 cpu for 100 s, b: 2x2 cpu for 50 s, both at t=0.
    # t=0 enqueue admits a (4 <= 1.2*4) but not b (4+4 > 4.8); t=1 a's pods bind, Running at 2, done at 102.
    # t=102 b is admitted, binds at 103, runs at 104, done at 154.
    rows, _ = run([JobSpec("a", 0, tasks=2, min_available=2, cpu="2", memory="1Gi", duration=100),
                   JobSpec("b", 0, tasks=2, min_available=2, cpu="2", memory="1Gi", duration=50)])
    a, b = rows["default/a"], rows["default/b"]
    assert (a["enqueued"], a["all_started"], a["finished"], a["wait"], a["jct"]) == (0, 2, 102, 2, 102)
    assert (b["enqueued"], b["all_started"], b["finished"], b["wait"], b["jct"]) == (102, 104, 154, 104, 154)


def test_restart_job_after_eviction() -> None:
    # One node; the gang (2x1 cpu, 100 s) runs from t=2.  The node fails at t=10 for 5 s: both pods are evicted,
    # the PodEvicted -> RestartJob policy restarts the job (restarts=1).  RestartJob deleted the PodGroup; the
    # failed node is tainted not-ready but, as in Volcano master, still counts towards what enqueue may admit
    # (node conditions are ignored: docs/volcano-differences.md), so the re-created group is enqueued while the node
    # is down and the controller creates the pods; the node is back at t=15, the session at 15 binds them, Running
    # at 16, done at 116.  The gang first started at 2: its wait.
    sim = Simulator(parse_cluster_spec("1x{cpu: 4, memory: 16Gi}"), QUEUE,
                    from_specs([JobSpec("g", 0, tasks=2, min_available=2, cpu="1", memory="1Gi", duration=100)]),
                    load_conf_file(None), node_failures=[(10.0, "node-0000", 5.0)])
    rows = {r["job"]: r for r in metrics.job_rows(sim.run())}
    g = rows["default/g"]
    assert g["restarts"] == 1
    assert (g["all_started"], g["wait"], g["finished"], g["phase"]) == (2, 2, 116, "Completed")


def test_max_retry_fails_the_job() -> None:
    # maxRetry is 3: Volcano's restarting state fails the job when retryCount reaches it: the third eviction.
    fails = [(10.0 + 20 * i, "node-0000", 1.0) for i in range(4)]
    sim = Simulator(parse_cluster_spec("1x{cpu: 4, memory: 16Gi}"), QUEUE,
                    from_specs([JobSpec("g", 0, tasks=2, min_available=2, cpu="1", memory="1Gi", duration=1000)]),
                    load_conf_file(None), node_failures=fails)
    rows = {r["job"]: r for r in metrics.job_rows(sim.run())}
    assert rows["default/g"]["phase"] == "Failed"
    assert rows["default/g"]["restarts"] == 3


def test_same_seed_same_result(tmp_path: Path) -> None:
    outs = []
    for i in range(2):
        sim = Simulator(parse_cluster_spec("3x{cpu: 8, memory: 32Gi, nvidia.com/gpu: 2}"), QUEUE,
                        synthetic(seed=7, jobs=40, rate=0.1), load_conf_file(None))
        metrics.write(tmp_path / str(i), sim.run())
        outs.append((tmp_path / str(i) / "jobs.csv").read_text())
    assert outs[0] == outs[1]
    assert outs[0].count("\n") == 41


def test_bad_rows_are_reported_and_the_rest_runs(tmp_path: Path) -> None:
    p = tmp_path / "w.csv"
    p.write_text("id,submit,queue,priority,tasks,min_available,cpu,memory,gpu,duration\n"
                 "ok,0,default,0,1,1,1,1Gi,0,10\n"
                 "neg,0,default,0,1,1,1,1Gi,0,-5\n"
                 "gang,0,default,0,2,3,1,1Gi,0,10\n"
                 "huge,0,default,0,1,1,64,1Gi,0,10\n"
                 "badq,0,nosuch,0,1,1,1,1Gi,0,10\n"
                 "junk,zero,default,0,1,1,1,1Gi,0,10\n")
    wl = load_csv(str(p))
    assert f"{p}: line 3 (job neg): field duration: '-5' is negative; row skipped" in wl.problems
    assert any("line 4 (job gang): field min_available: 3 must be between 0 and tasks 2" in x for x in wl.problems)
    assert any("line 7 (job junk): field submit: 'zero' is not a number of seconds" in x for x in wl.problems)
    assert [j["metadata"]["name"] for _, j in wl.jobs] == ["badq", "huge", "ok"]
    sim = Simulator(parse_cluster_spec("1x{cpu: 4, memory: 16Gi}"), QUEUE, wl, load_conf_file(None))
    res = sim.run()
    rows = {r["job"]: r for r in metrics.job_rows(res)}
    assert rows["default/ok"]["phase"] == "Completed"
    assert "Job default/badq: field spec.queue: unable to find job queue 'nosuch'; job skipped" in res.problems
    # a request no node can hold is reported (job, resource, amounts) and skipped, not left pending forever
    assert ("Job default/huge: task worker: requests cpu 64 per pod, more than any node's allocatable (largest: 4); "
            "job skipped") in res.problems
    assert set(rows) == {"default/ok"}


def test_cli_outputs_and_bad_input(tmp_path: Path) -> None:
    exe = str(Path(sys.executable).with_name("pyvolcano"))
    out = subprocess.run([exe, "simulate", "--synthetic", "20", "--cluster", "2x{cpu: 8, memory: 32Gi}",
                          "--out", str(tmp_path / "o"), "--no-progress"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    for f in ("jobs.csv", "summary.json", "report.html"):
        assert (tmp_path / "o" / f).stat().st_size > 0
    assert "data:image/png;base64" in (tmp_path / "o" / "report.html").read_text()
    bad = subprocess.run([exe, "simulate", "--cluster", "2x{cpu: 8"], capture_output=True, text=True)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr and "workload" in bad.stderr
    bad = subprocess.run([exe, "simulate", "--synthetic", "2", "--cluster", "2x[cpu]"], capture_output=True, text=True)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr


@pytest.mark.slow
def test_bundled_trace_runs() -> None:
    from pyvolcano.sim import alibaba
    from pyvolcano.sim.run import alibaba_inputs

    inp = alibaba_inputs(None, alibaba.AlibabaKnobs(nodes=20, pods=100), None)
    sim = Simulator(inp.nodes, inp.queues, inp.workload, load_conf_file(None))
    assert sim.run().records


@pytest.mark.parametrize("conf", [None, "examples/confs/reclaim-preempt.conf"])
def test_reusing_unchanged_job_clones_changes_nothing(conf: str | None) -> None:
    # The simulator's cache hands unchanged jobs' clones to the next session (SchedulerCache.reuse_clones); a
    # contended cluster with preemption and reclaim must come out exactly as with fresh clones every cycle.
    root = Path(__file__).resolve().parents[2]
    queues = [{"kind": "Queue", "metadata": {"name": q}, "spec": {"weight": w, "reclaimable": True}}
              for q, w in (("a", 1), ("b", 2))]
    outcomes = []
    for reuse in (True, False):
        wl = synthetic(seed=3, jobs=120, rate=0.5, queues={"a": 1, "b": 2}, mean_duration=120)
        sim = Simulator(parse_cluster_spec("6x{cpu: 8, memory: 32Gi, nvidia.com/gpu: 2}"), queues, wl,
                        load_conf_file(str(root / conf) if conf else None))
        sim.cache.reuse_clones = reuse
        res = sim.run()
        outcomes.append((metrics.job_rows(res), res.evictions, res.rollbacks, res.cycles))
    assert outcomes[0] == outcomes[1]
    assert outcomes[0][3] > 50  # a real run, many cycles


def test_utilisation_is_exact_between_sessions() -> None:
    # As above: a holds 2x2 cpu and 2x1Gi from its bind at t=1 until it finishes at 102; b from 103 to 154; the
    # run ends at 154. Sessions stop while nothing is pending (102-103 aside), but utilisation is integrated over
    # every bind and finish: cpu (4*101 + 4*51) / (4*154), memory (2*101 + 2*51) / (16*154).
    _, res = run([JobSpec("a", 0, tasks=2, min_available=2, cpu="2", memory="1Gi", duration=100),
                  JobSpec("b", 0, tasks=2, min_available=2, cpu="2", memory="1Gi", duration=50)])
    s = metrics.summary(res, metrics.job_rows(res))
    assert res.end_time == 154
    assert s["utilisation"]["cpu"] == pytest.approx(round((4 * 101 + 4 * 51) / (4 * 154), 4))
    assert s["utilisation"]["memory"] == pytest.approx(round((2 * 101 + 2 * 51) / (16 * 154), 4))
    assert s["utilisation"]["gpu"] == 0
    assert res.usage.total.at(50).tolist() == [4.0, 2.0, 0.0] and res.usage.total.at(102.5).tolist() == [0, 0, 0]


def test_compared_runs_share_one_time_window(tmp_path: Path) -> None:
    """--compare and the demo average utilisation over the longest run's window: a run that ends early counts as
    idle until the other ends (it was averaged over its own makespan, so the two were not comparable)."""
    from pyvolcano.sim.run import Inputs, Run, common_window, run_one

    def inputs(duration: float) -> Inputs:
        wl = from_specs([JobSpec("a", 0, cpu="2", memory="1Gi", duration=duration)])
        return Inputs(parse_cluster_spec("1x{cpu: 4, memory: 16Gi}"), QUEUE, wl)

    runs: list[Run] = []
    short = run_one(inputs(49), load_conf_file(None), "short", tmp_path / "short", progress=False, keep=runs)
    run_one(inputs(199), load_conf_file(None), "long", tmp_path / "long", progress=False, keep=runs)
    # one pod of 2 cpu on 4: enqueued at t=0, bound at 1 (holding its cpu), running at 2, done at 51 (short) or
    # 201 (long)
    assert short["window_s"] == 51 and short["utilisation"]["cpu"] == pytest.approx(round(2 * 50 / (4 * 51), 4))
    both = common_window(runs)
    assert [s["window_s"] for s in both] == [201, 201]
    assert both[0]["utilisation"]["cpu"] == pytest.approx(round(2 * 50 / (4 * 201), 4))
    assert both[1]["utilisation"]["cpu"] == pytest.approx(round(2 * 200 / (4 * 201), 4))
    assert json.loads((tmp_path / "short" / "summary.json").read_text())["window_s"] == 201
    # each run's own page is over its own window: the short run's 51 s (0.01 h), its 49 % of the cpu; not the
    # long run's 201 s
    short_page = (tmp_path / "short" / "report.html").read_text()
    assert "; window 0.01 h." in short_page and "49.0% / " in short_page
    assert "; window 0.06 h." in (tmp_path / "long" / "report.html").read_text()




def test_preemptor_is_nominated_and_victims_carry_the_disruption_condition() -> None:
    # The node is full of a low-priority job; a high-priority one arrives at t=5.  preempt evicts a victim and
    # pipelines the new pod: the SimWriter writes its status.nominatedNodeName (through the API, so the cache sees
    # it) and marks the victim as Volcano's evictor does (DisruptionTarget / PreemptionByScheduler), which the
    # next sessions read (allocate takes the nominated node first; preempt waits for the terminating victim).
    from pyvolcano.conf.loader import load_conf

    sim = Simulator(parse_cluster_spec("1x{cpu: 4, memory: 16Gi}"), QUEUE,
                    from_specs([JobSpec("lo", 0, priority=1, tasks=4, min_available=1, cpu="1", duration=1000),
                                JobSpec("hi", 5, priority=100, tasks=1, min_available=1, cpu="1", duration=10)]),
                    load_conf(PREEMPT_CONF, "conf"), grace=30.0)
    sim.run(until=8)
    pods = {k[1]: p for k, p in sim.api.objects.items() if k[0] == "Pod"}
    hi = [p for name, p in pods.items() if name.startswith("default/hi-")]
    assert len(hi) == 1 and hi[0]["status"].get("nominatedNodeName") == "node-0000"
    assert not hi[0]["spec"].get("nodeName")  # still waiting for the victim (grace 30 s)
    victims = [p for p in pods.values() if p["metadata"].get("deletionTimestamp")]
    assert len(victims) == 1
    assert [(c["type"], c.get("reason") or c["status"]) for c in victims[0]["status"]["conditions"]] == [
        ("PodScheduled", "True"), ("DisruptionTarget", "PreemptionByScheduler")]  # PodScheduled from its start
    assert sim.cache.tasks[f"default/{hi[0]['metadata']['name']}"].nominated_node == "node-0000"
    assert sim.evictions == 1  # later sessions evict no more for it
