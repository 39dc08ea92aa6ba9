"""``pyvolcano forecast`` (issue 30 item 2): hand-computed starts, collapsing ranges, estimated durations, the
snapshot of a simulation part-way, the accuracy measurement on a tiny workload, the CLI and bad input."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from pyvolcano.cli import main
from pyvolcano.conf.loader import load_conf_file
from pyvolcano.sim import forecast as fc
from pyvolcano.sim.cluster import parse_cluster_spec
from pyvolcano.sim.run import load_queues
from pyvolcano.sim.workload import synthetic

T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z
Obj = dict[str, Any]


def node(name: str = "n1", cpu: str = "4") -> Obj:
    alloc = {"cpu": cpu, "memory": "8Gi", "pods": "110"}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
            "status": {"allocatable": alloc, "capacity": alloc}}


QUEUE = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "default"},
         "spec": {"weight": 1}, "status": {"state": "Open"}}


def group(name: str, phase: str, created: float, min_member: int = 1) -> Obj:
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default", "creationTimestamp": fc.stamp(created)},
            "spec": {"minMember": min_member, "queue": "default"}, "status": {"phase": phase}}


def pod(name: str, pg: str, cpu: str, created: float, *, node: str | None = None, phase: str = "Pending",
        start: float | None = None, end: float | None = None, duration: float | None = None) -> Obj:
    ann = {"scheduling.k8s.io/group-name": pg}
    if duration is not None:
        ann["pyvolcano.io/duration"] = f"{duration:g}"
    status: Obj = {"phase": phase}
    if start is not None:
        status["startTime"] = fc.stamp(start)
    if end is not None:
        status["containerStatuses"] = [{"name": "c", "state": {"terminated": {"finishedAt": fc.stamp(end)}}}]
    spec: Obj = {"schedulerName": "volcano",
                 "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}]}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default",
                                                            "creationTimestamp": fc.stamp(created),
                                                            "annotations": ann}, "spec": spec, "status": status}


def one_running_one_pending(duration: float | None = 600) -> list[Obj]:
    """One 4-cpu node; a 3-cpu pod started at T0 (running 600 s when annotated); a 2-cpu job pending since T0+100."""
    return [node(), QUEUE, group("run", "Running", T0),
            pod("run-0", "run", "3", T0, node="n1", phase="Running", start=T0, duration=duration),
            group("wait", "Pending", T0 + 100), pod("wait-0", "wait", "2", T0 + 100, duration=60)]


def test_start_is_the_running_pods_remaining_time() -> None:
    """At T0+100 the running pod has 500 s left; the pending job fits once it is gone: it starts in exactly 500 s,
    and with every duration annotated one run is exact (the range is that one point)."""
    f = fc.forecast(one_running_one_pending(), load_conf_file(None), T0 + 100, runs=30)
    assert f.runs == 1
    [j] = f.jobs
    assert j.podgroup == "default/wait"
    assert (j.quantile(0.5), j.quantile(0.05), j.quantile(0.95)) == (500.0, 500.0, 500.0)


def test_deterministic_durations_queue_behind_each_other() -> None:
    """Two pending 3-cpu jobs of 60 s behind the running pod: the first starts at 500 s, the second once the first
    has finished, at 560 s; the ranges collapse."""
    objs = [*one_running_one_pending()[:4],
            group("w1", "Pending", T0 + 10), pod("w1-0", "w1", "3", T0 + 10, duration=60),
            group("w2", "Pending", T0 + 20), pod("w2-0", "w2", "3", T0 + 20, duration=60)]
    f = fc.forecast(objs, load_conf_file(None), T0 + 100, runs=10)
    got = {j.podgroup: (j.quantile(0.05), j.quantile(0.5), j.quantile(0.95)) for j in f.jobs}
    assert got == {"default/w1": (500.0, 500.0, 500.0), "default/w2": (560.0, 560.0, 560.0)}
    assert f.as_dict()["jobs"][0]["start_median_time"] == "2026-01-01T00:10:00Z"


def test_durations_estimated_from_finished_pods_of_the_queue() -> None:
    """No annotation: the running pod (age 100 s) gets a drawn duration longer than its age from the finished pods
    (all ran 300 s), so 200 s remain; new jobs are not drawn here."""
    objs = [node(), QUEUE, group("run", "Running", T0),
            pod("run-0", "run", "3", T0, node="n1", phase="Running", start=T0),
            *[pod(f"old-{i}", "old", "1", T0 - 1000, node="n1", phase="Succeeded", start=T0 - 900 + i,
                  end=T0 - 600 + i) for i in range(3)],
            group("wait", "Pending", T0 + 50), pod("wait-0", "wait", "2", T0 + 50)]
    f = fc.forecast(objs, load_conf_file(None), T0 + 100, runs=5, arrivals="none")
    [j] = f.jobs
    assert (j.quantile(0.05), j.quantile(0.5), j.quantile(0.95)) == (200.0, 200.0, 200.0)
    assert fc.durations_of(objs, T0 + 100).finished == {"default": pytest.approx([300.0, 300.0, 300.0])}


def test_survival_counts_running_pods_as_at_least_their_age() -> None:
    """Kaplan-Meier by hand: ends at 10 and 30, one pod still running at 20.  S(10) = 1 - 1/3, S(30) = S(10) *
    (1 - 1/1) = 0: a pod aged 15 ends at 30, and a third of fresh draws end at 10 (1 - S(10))."""
    import numpy as np

    km = fc.Survival([10.0, 30.0], [20.0])
    assert km.survival(10) == pytest.approx(2 / 3) and km.survival(30) == 0.0
    rng = np.random.default_rng(0)
    assert {km.draw(rng, 15.0) for _ in range(20)} == {30.0}
    draws = [km.draw(rng) for _ in range(3000)]
    assert abs(draws.count(10.0) / 3000 - 1 / 3) < 0.03


def test_survival_of_five_durations_two_censored_with_its_tail() -> None:
    """Kaplan-Meier by hand on five jobs: ends at 10, 30 and 50, two still running at 20 and 40.  At 10 five are at
    risk: S = 4/5; at 30 three (30, 40, 50): S = 4/5 * 2/3 = 8/15; at 50 one: S = 0.  The censored-data mean is all
    seconds seen over the ends: (10 + 30 + 50 + 20 + 40) / 3 = 50.  Without the end at 50 (four jobs: S(10) = 3/4,
    S(30) = 3/4 * 1/2 = 3/8, mean (10 + 30 + 20 + 40) / 2 = 50), the survival past the last end decays as the
    exponential tail: S(50) = 3/8 * exp(-20 / 50)."""
    km = fc.Survival([10.0, 30.0, 50.0], [20.0, 40.0])
    assert [km.survival(a) for a in (5, 10, 25, 30, 45, 50)] == pytest.approx([1, 4 / 5, 4 / 5, 8 / 15, 8 / 15, 0])
    assert km.mean == pytest.approx(50.0)
    open_tail = fc.Survival([10.0, 30.0], [20.0, 40.0])
    assert open_tail.mean == pytest.approx(50.0)
    assert open_tail.survival_with_tail(25) == pytest.approx(3 / 4)
    assert open_tail.survival_with_tail(50) == pytest.approx(3 / 8 * math.exp(-20 / 50))


def test_a_queue_with_few_ends_is_pooled_with_every_queue() -> None:
    """Partial pooling by hand: queue ``a`` saw 5 ends of 100 s, queue ``b`` 15 ends of 1000 s.  With a prior of
    20 ends, ``a``'s own estimate weighs 5 / 25 = 1/5, the pooled one (15 of 20 ends at 1000 s: S(0) = 1) 4/5, so
    a fresh pod of ``a`` runs 100 s with chance 1/5 + 4/5 * 5/20 = 2/5.  A pod of ``a`` already 200 s old is past
    every end of ``a`` (S_a(200) = 0): it takes the pooled estimate only and ends at 1000 s."""
    import numpy as np

    d = fc.Durations({"a": [100.0] * 5, "b": [1000.0] * 15}, {}, pool_prior=20)
    rng = np.random.default_rng(1)
    fresh = [d.total("a", rng) for _ in range(4000)]
    assert set(fresh) == {100.0, 1000.0} and abs(fresh.count(100.0) / 4000 - 2 / 5) < 0.03
    assert {d.draw("a", 200.0, rng) for _ in range(50)} == {1000.0}
    alone = fc.Durations({"a": [100.0] * 5, "b": [1000.0] * 15}, {}, pool_prior=0)  # no pooling: a's own ends
    assert {alone.total("a", rng) for _ in range(50)} == {100.0}


def test_a_gangs_pods_count_once_and_the_bootstrap_keeps_each_queue() -> None:
    """Three pods of one job that started and ended together are one observed run time, not three (a gang's pods
    end together); the bootstrap resample draws as many jobs per queue as seen, finished and running together,
    and shares its notes with the estimate it came from."""
    import numpy as np

    objs = [*[pod(f"g-{i}", "g", "1", T0 - 1000, node="n1", phase="Succeeded", start=T0 - 900, end=T0 - 600)
              for i in range(3)],
            pod("solo-0", "solo", "1", T0 - 1000, node="n1", phase="Succeeded", start=T0 - 800, end=T0 - 700),
            *[pod(f"r-{i}", "r", "1", T0, node="n1", phase="Running", start=T0) for i in range(2)]]
    d = fc.durations_of(objs, T0 + 50)
    assert sorted(d.finished["default"]) == [100.0, 300.0] and d.ages == {"default": [50.0]}
    rng = np.random.default_rng(0)
    for _ in range(20):
        r = d.resampled(rng)
        assert len(r.finished.get("default", [])) + len(r.ages.get("default", [])) == 3
        assert set(r.finished.get("default", [])) <= {100.0, 300.0} and r.notes is d.notes
        assert r.finished.get("default")  # a queue with ends keeps at least one: no fall back to other queues


def test_a_finished_job_without_its_podgroup_arrives_again_as_a_gang() -> None:
    """New jobs are copies of the ones seen; a finished job whose PodGroup is gone is copied as a gang of all its
    pods (a Volcano Job's minAvailable defaults to its replicas), not as minAvailable 1, which would let the copy
    start pod by pod and take every fragment a waiting gang needs."""
    objs = [*[pod(f"j{k}-{i}", f"j{k}", "1", T0 + k, node="n1", phase="Succeeded", start=T0 + k, end=T0 + k + 5)
              for k in range(fc.MIN_SEEN) for i in range(3)]]
    arr = fc.arrivals_of(objs, T0 + 100)
    assert arr is not None
    assert {(j["spec"]["minAvailable"], len(j["spec"]["tasks"])) for j in arr.jobs["default"]} == {(3, 3)}


def test_recent_rate_and_jobs_whose_pods_are_not_created_yet() -> None:
    """The rate of new jobs is read over the ``recent`` latest submissions: 12 one-pod jobs submitted every 100 s
    (T0 .. T0+1100), 7 every 10 s (T0+1110 .. T0+1170) and a Volcano Job of 2 pods not created yet at T0+1180; now
    T0+1200.  Over the whole history that is 20 jobs in 1200 s (60/h); the 10th latest was submitted at T0+1000, so
    the recent rate is 10 jobs in 200 s (180/h).  The Job counts and is drawn as its own manifest; a PodGroup
    without pods (at T0+1190) counts in the rate only: the 10 latest then span 100 s (360/h)."""
    times = [T0 + 100 * k for k in range(12)] + [T0 + 1110 + 10 * k for k in range(7)]
    objs: list[Obj] = [pod(f"j{k}-0", f"j{k}", "1", t, node="n1", phase="Succeeded", start=t, end=t + 5)
                       for k, t in enumerate(times)]
    vj = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
          "metadata": {"name": "late", "namespace": "default", "creationTimestamp": fc.stamp(T0 + 1180)},
          "spec": {"queue": "default", "minAvailable": 2, "tasks": [
              {"name": "w", "replicas": 2, "template": {"spec": {"containers": [{"name": "c"}]}}}]},
          "status": {"state": {"phase": "Pending"}}}
    objs.append(vj)
    every = fc.arrivals_of(objs, T0 + 1200)
    recent = fc.arrivals_of(objs, T0 + 1200, recent=10)
    assert every is not None and recent is not None
    assert every.rate["default"] * 3600 == pytest.approx(20 / 1200 * 3600)
    assert recent.rate["default"] * 3600 == pytest.approx(180) and recent.window == pytest.approx(200)
    assert len(recent.jobs["default"]) == 20  # the manifests drawn: every one seen
    assert {j["spec"]["minAvailable"] for j in recent.jobs["default"]} == {1, 2}
    assert "at the rate of the 10 submitted in the last 200 s" in recent.note()
    objs.append(group("nopods", "Pending", T0 + 1190))
    more = fc.arrivals_of(objs, T0 + 1200, recent=10)
    assert more is not None and more.rate["default"] * 3600 == pytest.approx(360) and len(more.jobs["default"]) == 20


def test_higher_arrivals_draw_only_jobs_that_outrank_the_lowest_pending_one() -> None:
    """``arrivals="higher"``: with a pending job of priority 0, only the seen jobs of a higher priority are drawn
    again (a new job of its own rank queues behind it), at their own rate; ``"all"`` draws every job seen, the
    pending one too."""
    pc = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 100}
    seen = []
    for k in range(12):
        p = pod(f"j{k}-0", f"j{k}", "1", T0 + 10 * k, node="n1", phase="Succeeded", start=T0 + 10 * k,
                end=T0 + 10 * k + 5)
        if k % 3 == 0:
            p["spec"]["priorityClassName"] = "high"
        seen.append(p)
    objs = [node(), QUEUE, pc, *seen, group("wait", "Pending", T0 + 100), pod("wait-0", "wait", "2", T0 + 100)]
    plan = fc._plan(objs, "volcano")
    assert fc.waiting_priorities(plan, objs) == {"default/wait": 0}
    high = fc.arrivals_of(objs, T0 + 120, above=0)
    every = fc.arrivals_of(objs, T0 + 120)
    assert high is not None and every is not None
    assert len(high.jobs["default"]) == 4 and len(every.jobs["default"]) == 13  # with the pending one
    assert high.rate["default"] == pytest.approx(4 / 120) and "priority above 0" in high.note()
    assert fc.arrivals_of(objs, T0 + 120, above=100) is None  # nothing outranks a job of the top priority


def test_each_priority_level_draws_the_new_jobs_that_outrank_it() -> None:
    """Two pending jobs, of priority 0 and 100, every duration of the snapshot annotated: the high one's runs draw
    no new job (none outranks it) and nothing else, so one run is exact; the low one's runs draw the seen
    high-priority jobs again, so each of its runs differs."""
    pc = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 100}
    seen = []
    for k in range(12):
        p = pod(f"j{k}-0", f"j{k}", "1", T0 + 10 * k, node="n1", phase="Succeeded", start=T0 + 10 * k,
                end=T0 + 10 * k + 5, duration=5)
        p["spec"]["priorityClassName"] = "high"
        seen.append(p)
    hi_pg = group("hi", "Pending", T0 + 101)
    hi_pg["spec"]["priorityClassName"] = "high"
    hi_pod = pod("hi-0", "hi", "1", T0 + 101, duration=60)
    hi_pod["spec"]["priorityClassName"] = "high"
    objs = [*one_running_one_pending(), pc, *seen, hi_pg, hi_pod]
    f = fc.forecast(objs, load_conf_file(None), T0 + 120, runs=5, arrivals="higher")
    by = {j.podgroup: j for j in f.jobs}
    assert len(by["default/hi"].starts) == 1 and len(by["default/wait"].starts) == 5
    assert [n for n in f.notes if "drawn like" in n] == [
        "new jobs of priority above 0 drawn like the 13 seen over the last 120 s: default 390/h"]


def test_a_bound_pod_runs_the_start_latency_after_its_bind() -> None:
    """A pod bound (PodScheduled=True) before the snapshot runs at its bind plus the start latency, not a whole
    latency after the snapshot: bound 0.6 s before now with a latency of 1 s, it starts in 0.4 s."""
    objs = one_running_one_pending()
    objs[-1]["spec"]["nodeName"] = "n1"
    objs[-1]["status"]["conditions"] = [{"type": "PodScheduled", "status": "True",
                                         "lastTransitionTime": T0 + 99.4}]
    objs[-2]["status"]["phase"] = "Inqueue"
    f = fc.forecast(objs, load_conf_file(None), T0 + 100, runs=3, start_latency=1.0)
    [j] = f.jobs
    assert j.quantile(0.5) == pytest.approx(0.4)


def test_no_history_uses_the_stated_default() -> None:
    """Nothing to estimate from (no annotation, no start time, no finished pod): the default duration, said."""
    objs = [node(), QUEUE, group("run", "Running", T0), pod("run-0", "run", "3", T0, node="n1", phase="Running"),
            group("wait", "Pending", T0), pod("wait-0", "wait", "2", T0)]
    f = fc.forecast(objs, load_conf_file(None), T0, runs=3, default_duration=900)
    assert [j.quantile(0.5) for j in f.jobs] == [900.0]
    assert any("no finished or running pod" in n and "900 s" in n for n in f.notes)


def test_forecast_is_seeded() -> None:
    objs = [node(cpu="8"), QUEUE, group("run", "Running", T0),
            *[pod(f"run-{i}", "run", "2", T0, node="n1", phase="Running", start=T0 + 10 * i) for i in range(4)],
            *[pod(f"old-{i}", "old", "1", T0 - 1000, node="n1", phase="Succeeded", start=T0 - 900,
                  end=T0 - 900 + 60 * (i + 1)) for i in range(8)],
            *[x for k in range(3) for x in (group(f"w{k}", "Pending", T0 + k), pod(f"w{k}-0", f"w{k}", "4", T0 + k))]]
    a = fc.forecast(objs, load_conf_file(None), T0 + 100, runs=8, seed=3).as_dict()
    b = fc.forecast(objs, load_conf_file(None), T0 + 100, runs=8, seed=3).as_dict()
    assert a == b and a["runs"] == 8
    lo, hi = a["jobs"][-1]["start_p5_s"], a["jobs"][-1]["start_p95_s"]
    assert lo is not None and hi is not None and lo < hi  # drawn durations: a real range


def small_sim_snapshot() -> tuple[fc.RecordingSim, list[Obj]]:
    wl = synthetic(seed=2, jobs=30, rate=0.05, queues={"a": 2, "b": 1})
    nodes = parse_cluster_spec("1x{cpu: 32, memory: 256Gi, nvidia.com/gpu: 8}")
    sim = fc.RecordingSim(nodes, load_queues("a:2,b:1", wl), wl, load_conf_file(None))
    sim.run(until=1000)
    sim.now = 1000.0
    return sim, fc.export(sim)


def test_export_of_a_simulation_part_way() -> None:
    """The snapshot holds running pods with their start, finished pods with their container times, unfinished Jobs,
    and no duration annotation; forecasting it names the pending jobs."""
    sim, snap = small_sim_snapshot()
    pods = [o for o in snap if o["kind"] == "Pod"]
    assert all(fc.started_at(p) is not None for p in pods if p["status"]["phase"] in ("Running", "Succeeded"))
    assert any(fc.finished_at(p) is not None for p in pods)
    assert not any("pyvolcano.io/duration" in (p["metadata"].get("annotations") or {}) for p in pods)
    assert {o["kind"] for o in snap} >= {"Node", "Queue", "PodGroup", "Pod", "Job"}
    f = fc.forecast(snap, load_conf_file(None), 1000.0, runs=4, arrivals="all")
    waiting = {k for k, r in sim.records.items() if r.all_started is None}
    assert {j.podgroup for j in f.jobs} == waiting and waiting
    assert any(n.startswith("new jobs drawn like") for n in f.notes)
    assert not any("drawn like" in n for n in fc.forecast(snap, load_conf_file(None), 1000.0, runs=2,
                                                          arrivals="none").notes)


@pytest.fixture(scope="module")
def tiny() -> dict[str, Any]:
    """The accuracy measurement on the tiny workload, once for the module: ``bench --forecast`` runs the same."""
    from pyvolcano.bench.forecast import synthetic_case

    return synthetic_case("tiny")


def test_accuracy_measurement_on_a_tiny_workload(tiny: dict[str, Any]) -> None:
    from pyvolcano.bench.forecast import AT

    r = tiny
    assert r["jobs"] > 0 and r["snapshots"] == len(AT)
    assert 0.0 <= r["coverage90"] <= 1.0 and r["median_abs_error_ratio"] >= 0.0


def cli(*args: str, input: str | None = None) -> tuple[int, str]:
    r = CliRunner().invoke(main, list(args), input=input, env={"COLUMNS": "80", "KUBECONFIG": None})
    assert r.exception is None or isinstance(r.exception, SystemExit), r.output
    return r.exit_code, r.output


def test_cli_json_and_tables_in_80_columns(tmp_path: Path) -> None:
    path = tmp_path / "snap.yaml"
    path.write_text(yaml.safe_dump_all(one_running_one_pending()))
    code, out = cli("forecast", str(path), "-o", "json", "--now", "2026-01-01T00:01:40Z")
    assert code == 0, out
    data = json.loads(out)
    assert data["jobs"][0]["podgroup"] == "default/wait" and data["jobs"][0]["start_median_s"] == 500.0
    for fmt in ("table", "wide"):
        code, out = cli("forecast", str(path), "-o", fmt)  # now: the latest time the snapshot records (T0+100)
        assert code == 0, out
        assert "default/wait" in out and "8m20s" in out and "exactly" in out
        assert max(len(line) for line in out.splitlines()) <= 80, out


def test_cli_snapshot_of_a_simulation(tmp_path: Path) -> None:
    _, snap = small_sim_snapshot()
    path = tmp_path / "snap.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": snap}))
    code, out = cli("forecast", str(path), "--now", "1000", "--runs", "3", "-o", "wide")
    assert code == 0, out
    assert "pending job(s), 3 run(s)" in out and max(len(line) for line in out.splitlines()) <= 80


def test_cli_no_pending_job(tmp_path: Path) -> None:
    path = tmp_path / "snap.yaml"
    path.write_text(yaml.safe_dump_all(one_running_one_pending()[:4]))
    code, out = cli("forecast", str(path))
    assert code == 0 and "no pending job" in out and "nothing to forecast" in out


@pytest.mark.parametrize(("args", "text"), [
    ((), "give a SNAPSHOT file"),
    (("missing.yaml",), "missing.yaml"),
    (("SNAP", "--now", "yesterday"), "--now: 'yesterday' is not a time"),
    (("SNAP", "--now", "nan"), "--now: 'nan' is not a time"),
    (("SNAP", "--horizon", "0"), "--horizon"),
    (("SNAP", "--default-duration", "nan"), "--default-duration"),
    (("NONODE",), "no Node objects"),
])
def test_cli_bad_input(tmp_path: Path, args: tuple[str, ...], text: str) -> None:
    snap, nonode = tmp_path / "snap.yaml", tmp_path / "nonode.yaml"
    snap.write_text(yaml.safe_dump_all(one_running_one_pending()))
    nonode.write_text(yaml.safe_dump_all(one_running_one_pending()[1:]))
    args = tuple({"SNAP": str(snap), "NONODE": str(nonode)}.get(a, a) for a in args)
    code, out = cli("forecast", *args)
    assert code == 2 and text in out and "Traceback" not in out, out


def test_bench_forecast_json(tiny: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI's plumbing: it measures the tiny case with seed 1 (the fixture's measurement, not run twice) and
    prints its three figures."""
    from pyvolcano.bench import forecast

    calls: list[tuple[str, int]] = []

    def measured(case: str = "tiny", seed: int = 1) -> dict[str, Any]:
        calls.append((case, seed))
        return tiny

    monkeypatch.setattr(forecast, "synthetic_case", measured)
    code, out = cli("bench", "--forecast", "-o", "json")
    assert code == 0, out
    data = json.loads(out)
    assert calls == [("tiny", 1)]
    assert data == {k: tiny[k] for k in ("jobs", "median_abs_error_ratio", "coverage90")} and data["jobs"] > 0
