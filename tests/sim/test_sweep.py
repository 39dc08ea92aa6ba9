"""``pyvolcano sweep``: the sweep file, the points, overrides, statistics, resuming, and Ray = local processes."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from pyvolcano.cli import main
from pyvolcano.conf.loader import load_conf
from pyvolcano.errors import UserError
from pyvolcano.sim import sweep as sw
from pyvolcano.sim.run import Inputs, load_cluster, load_queues, queue_weights, run_one
from pyvolcano.sim.workload import synthetic

CLUSTER = "3x{cpu: 8, memory: 32Gi, nvidia.com/gpu: 2}"


def spec_dict(**over: Any) -> dict[str, Any]:
    d: dict[str, Any] = {
        "name": "tiny",
        "workload": {"synthetic": {"jobs": 12, "rate": 0.5, "gang_sizes": [1, 2], "mean_duration": 40}},
        "cluster": CLUSTER, "queues": "a:1,b:2",
        "confs": [{"name": "default"},
                  {"name": "preempt", "set": {"actions": "enqueue, allocate, preempt, backfill"}}],
        "grid": {"rate": [0.2, 0.5]}, "seeds": [0, 1],
    }
    d.update(over)
    return d


def write(tmp: Path, d: dict[str, Any]) -> Path:
    p = tmp / "sweep.yaml"
    p.write_text(yaml.safe_dump(d))
    return p


def test_points_are_the_full_grid_in_order(tmp_path: Path) -> None:
    spec = sw.load_spec(write(tmp_path, spec_dict()))
    pts = sw.points(spec)
    assert len(pts) == 2 * 2 * 2
    assert [p.folder for p in pts[:3]] == ["default__rate=0.2__seed=0", "default__rate=0.2__seed=1",
                                           "default__rate=0.5__seed=0"]
    assert len({p.folder for p in pts}) == len(pts)


@pytest.mark.parametrize(("change", "message"), [
    ({"grid": {"colour": [1, 2]}}, "grid.colour: unknown knob"),
    ({"grid": {"rate": []}}, "grid.rate: give at least one value"),
    ({"grid": {"rate": [0.2, 0.2]}}, "values must be distinct"),
    ({"confs": [{"name": "a"}, {"name": "a"}]}, "names must be unique"),
    ({"cluster": None}, "cluster: required"),
    ({"seeds": [-1]}, "seeds"),
    ({"workload": {"synthetic": {"jobs": 5, "rate": float("nan")}}}, "workload.synthetic.rate"),
    ({"workload": {"synthetic": {"jobs": 5}, "csv": "x.csv"}}, "exactly one of"),
    ({"grid": {"rate": [0.1 * i + 0.1 for i in range(200)], "jobs": list(range(1, 101))}}, "more than 10000"),
    ({"confs": [{"name": "../etc"}]}, "confs[0].name"),
    ({"objective": {"metric": "wait_p95", "goal": "most"}}, "objective.goal"),
    # a grid value meets the bounds of the simulate option it sets (sim/options.py): the hang (a NaN or
    # zero period, a zero mean duration), its 4 GB run (jobs: 1e8) and silently run values (a negative period)
    ({"grid": {"period": ["nan"]}}, "grid.period: 'nan' is not a finite number (as simulate --period takes it)"),
    ({"grid": {"period": [-1]}}, "grid.period: -1 must be >= 0.001"),
    ({"grid": {"mean_duration": [0]}}, "grid.mean_duration: 0 must be > 0 (as simulate --mean-duration"),
    ({"grid": {"jobs": ["abc"]}}, "grid.jobs: 'abc' is not an integer (as simulate --synthetic takes it)"),
    ({"grid": {"jobs": [100_000_000]}}, "grid.jobs: 100000000 is not between 1 and 1000000"),
    ({"grid": {"jobs": [True]}}, "grid.jobs: True is not an integer"),
    ({"grid": {"jobs": ["\u0663"]}}, "grid.jobs: '\u0663' is not an integer"),
    ({"grid": {"cluster_size": [0]}}, "grid.cluster_size: 0 is not between 1 and 100000"),
    ({"grid": {"node_failures": [-1]}}, "grid.node_failures: -1 is not between 0"),
    ({"grid": {"rate": [1, 1.0]}}, "grid.rate: values must be distinct"),
    ({"simulate": {"until": 1e12}}, "simulate.until: 1000000000000.0 must be <= 1e+11"),
    ({"seeds": [True]}, "seeds[0]: True is not an integer"),
    ({"workload": {"synthetic": {"jobs": 5, "gang_sizes": [0]}}}, "workload.synthetic.gang_sizes[0]"),
])
def test_bad_sweep_files_name_the_field(tmp_path: Path, change: dict[str, Any], message: str) -> None:
    with pytest.raises(UserError, match=re.escape(message)):
        sw.load_spec(write(tmp_path, spec_dict(**change)))


@pytest.mark.parametrize("text", ["[", "a: [1, *x]", "- 1\n- 2", "workload: !!float abc"])
def test_unreadable_sweep_file_is_one_error(tmp_path: Path, text: str) -> None:
    p = tmp_path / "s.yaml"
    p.write_text(text)
    with pytest.raises(UserError, match=str(p)):
        sw.load_spec(p)


def test_override_sets_actions_flags_and_arguments() -> None:
    base = "actions: \"enqueue, allocate\"\ntiers:\n- plugins:\n  - name: gang\n  - name: binpack\n"
    text = sw.override(base, {"actions": "enqueue, allocate, preempt", "plugins.binpack.binpack.weight": 5,
                              "plugins.gang.enablePreemptable": False}, "t")
    data = yaml.safe_load(text)
    assert data["actions"] == "enqueue, allocate, preempt"
    assert data["tiers"][0]["plugins"][1]["arguments"] == {"binpack.weight": 5}
    assert data["tiers"][0]["plugins"][0]["enablePreemptable"] is False
    conf = load_conf(text)
    assert [a for a in conf.actions] == ["enqueue", "allocate", "preempt"]
    with pytest.raises(UserError, match="no plugin 'drf'"):
        sw.override(base, {"plugins.drf.x": 1}, "t")
    with pytest.raises(UserError, match=r"expected 'actions' or 'plugins\.NAME\.KEY'"):
        sw.override(base, {"tiers": []}, "t")


def test_a_conf_the_loader_refuses_is_refused_before_running(tmp_path: Path) -> None:
    d = spec_dict(confs=[{"name": "bad", "set": {"actions": "enqueue, teleport"}}])
    r = CliRunner().invoke(main, ["sweep", str(write(tmp_path, d)), "--out", str(tmp_path / "o"), "--no-progress"])
    assert r.exit_code == 2, r.output
    assert "teleport" in r.output
    assert not (tmp_path / "o" / "points").exists() or not any((tmp_path / "o" / "points").iterdir())


def test_best_follows_the_goal() -> None:
    rows = [sw.Row("a", {}, [0], {"wait_p95": (5.0, 4.0, 6.0)}), sw.Row("b", {}, [0], {"wait_p95": (3.0, 2.0, 4.0)}),
            sw.Row("c", {}, [0], {"wait_p95": None})]
    assert sw.best(rows, sw.Objective(metric="wait_p95", goal="min")).conf == "b"  # type: ignore[union-attr]
    assert sw.best(rows, sw.Objective(metric="wait_p95", goal="max")).conf == "a"  # type: ignore[union-attr]
    assert sw.best(rows, sw.Objective(metric="nothing")) is None


def test_a_point_is_the_same_simulation_as_simulate(tmp_path: Path) -> None:
    """Same code path: one point's jobs.csv equals a direct run_one with the same workload, conf and settings."""
    spec = sw.load_spec(write(tmp_path, spec_dict()))
    point = next(p for p in sw.points(spec) if p.conf == "preempt" and dict(p.params)["rate"] == 0.5 and p.seed == 1)
    files = sw.run_point(sw.bundle_for(spec), spec, {}, point)
    wl = synthetic(seed=1, jobs=12, rate=0.5, queues=queue_weights("a:1,b:2"), gang_sizes=(1, 2), mean_duration=40)
    conf = load_conf(files["conf.yaml"].decode())
    run_one(Inputs(load_cluster(CLUSTER), load_queues("a:1,b:2", wl), wl), conf, "preempt", tmp_path / "direct",
            progress=False)
    assert files["jobs.csv"] == (tmp_path / "direct" / "jobs.csv").read_bytes()
    assert "preempt" in yaml.safe_load(files["conf.yaml"])["actions"]


def test_cluster_size_and_node_failures_knobs(tmp_path: Path) -> None:
    spec = sw.load_spec(write(tmp_path, spec_dict(confs=[{"name": "default"}],
                                                  grid={"cluster_size": [2, 4], "node_failures": [1]}, seeds=[3])))
    pts = sw.points(spec)
    assert [dict(p.params) for p in pts] == [{"cluster_size": 2, "node_failures": 1},
                                             {"cluster_size": 4, "node_failures": 1}]
    wl = synthetic(seed=3, jobs=12, rate=0.5, gang_sizes=(1, 2), mean_duration=40)
    inputs = Inputs(load_cluster(CLUSTER), load_queues(None, wl), wl)
    fails = sw.node_failures(inputs, 2, 3)
    assert len(fails) == 2 and len({n for _, n, _ in fails}) == 2
    assert fails == sw.node_failures(inputs, 2, 3)  # same seed, same failures
    with pytest.raises(UserError, match="only 3 nodes"):
        sw.node_failures(inputs, 4, 3)


def _metrics(out: Path) -> dict[str, dict[str, Any]]:
    res = {}
    for d in sorted((out / "points").iterdir()):
        s = json.loads((d / "summary.json").read_text())
        res[d.name] = {"metrics": sw.point_metrics(s), "jobs": (d / "jobs.csv").read_text()}
    return res


def test_sweep_runs_resumes_and_summarises(tmp_path: Path) -> None:
    f = write(tmp_path, spec_dict())
    out = tmp_path / "out"
    r = CliRunner().invoke(main, ["sweep", str(f), "--out", str(out), "-j", "2", "-o", "json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert (doc["ran"], doc["skipped"], doc["failed"]) == (8, 0, {})
    assert len(doc["rows"]) == 4 and all(row["seeds"] == [0, 1] for row in doc["rows"])
    for name in ("sweep.html", "summary.csv", "results.csv", "sweep.json"):
        assert (out / name).is_file()
    assert len((out / "results.csv").read_text().splitlines()) == 1 + 8
    assert len((out / "summary.csv").read_text().splitlines()) == 1 + 4
    # the aggregate is the mean of the two seeds' summaries
    row = next(x for x in doc["rows"] if x["conf"] == "preempt" and x["params"] == {"rate": 0.5})
    waits = [json.loads((out / "points" / f"preempt__rate=0.5__seed={s}" / "summary.json").read_text())
             ["wait_s"]["p95"] for s in (0, 1)]
    assert row["metrics"]["wait_p95"]["mean"] == pytest.approx(sum(waits) / 2, abs=1e-3)
    # the best conf within each rate, never across rates
    assert [b["knobs"] for b in doc["best"]] == [{"rate": 0.2}, {"rate": 0.5}]
    for b in doc["best"]:
        assert b["metrics"]["wait_p95"]["mean"] == min(x["metrics"]["wait_p95"]["mean"] for x in doc["rows"]
                                                       if x["params"] == b["knobs"] and x["metrics"]["wait_p95"])
    # every cell's interval holds its mean and lies within the metric's range
    from pyvolcano.sim.metric_registry import metric

    for x in doc["rows"]:
        for name, cell in x["metrics"].items():
            if cell is not None:
                lo, hi = cell["ci"]
                assert metric(name).low <= lo <= cell["mean"] + 1e-3 and cell["mean"] - 1e-3 <= hi <= metric(name).high
    # the two confs paired seed by seed at each rate, for every metric both have
    pairs = [p for p in doc["paired"] if p["metric"] == "wait_p95"]
    assert [(p["a"], p["b"], p["knobs"], p["seeds"]) for p in pairs] == [
        ("default", "preempt", {"rate": 0.2}, [0, 1]), ("default", "preempt", {"rate": 0.5}, [0, 1])]
    for p in pairs:
        rate = p["knobs"]["rate"]
        diffs = [json.loads((out / "points" / f"{c}__rate={rate}__seed={s}" / "summary.json").read_text())
                 ["wait_s"]["p95"] for s in (0, 1) for c in ("default", "preempt")]
        assert p["diff_mean"] == pytest.approx(((diffs[1] - diffs[0]) + (diffs[3] - diffs[2])) / 2, abs=1e-3)
        assert p["diff_ci"][0] <= p["diff_mean"] <= p["diff_ci"][1]
        assert p["verdict"].startswith(("no clear difference (only 2 seeds", "the same on all 2 seeds"))
    assert "Paired comparisons" in (out / "sweep.html").read_text()
    page = (out / "sweep.html").read_text()
    assert "data:image/png;base64," in page and "http" not in page.replace("http-equiv", "")
    before = _metrics(out)
    # resuming: nothing reruns; a deleted point reruns alone and comes out the same
    import shutil

    shutil.rmtree(out / "points" / "default__rate=0.5__seed=1")
    r = CliRunner().invoke(main, ["sweep", str(f), "--out", str(out), "-o", "json"])
    doc = json.loads(r.output)
    assert (doc["ran"], doc["skipped"]) == (1, 7)
    assert _metrics(out) == before
    # a changed sweep (one more seed) runs only the new points
    f = write(tmp_path, spec_dict(seeds=[0, 1, 2]))
    r = CliRunner().invoke(main, ["sweep", str(f), "--out", str(out), "-o", "json", "-j", "2"])
    assert (json.loads(r.output)["ran"], json.loads(r.output)["skipped"]) == (4, 8)
    r = CliRunner().invoke(main, ["sweep", str(f), "--out", str(out), "--list"])
    assert r.output.count("done ") == 12
    # an edited conf reruns exactly its own points
    confs = [{"name": "default"}, {"name": "preempt", "set": {"actions": "enqueue, allocate, preempt, reclaim"}}]
    f = write(tmp_path, spec_dict(seeds=[0, 1, 2], confs=confs))
    r = CliRunner().invoke(main, ["sweep", str(f), "--out", str(out), "--list"])
    assert r.output.count("to do") == 6 and all("preempt__" in x for x in r.output.splitlines() if "to do" in x)


def test_sweep_on_ray_equals_local_processes(tmp_path: Path) -> None:
    ray = pytest.importorskip("ray", reason="Ray is not installed: pip install 'pyvolcano[ray]'")
    # two points (two seeds): two Ray tasks on the same bundle reference, each compared with its local twin
    f = write(tmp_path, spec_dict(confs=[{"name": "default"}], grid={"rate": [0.5]}, seeds=[0, 1]))
    spec = sw.load_spec(f)
    sw.run_sweep(spec, tmp_path / "local", workers=2)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        run = sw.run_sweep(spec, tmp_path / "ray", ray_address="")
    finally:
        ray.shutdown()
    assert not run.failed and len(run.done) == 2
    assert _metrics(tmp_path / "ray") == _metrics(tmp_path / "local")
