"""``pyvolcano simulate``'s output and options (issue 15 item 5): a compact summary table (80 columns) or the whole
summary with ``-o json``/``-o yaml``; ``--gpu-fraction`` follows the cluster; failures and cancellations must name
what exists; every bad option value is one clear error with exit status 2 (never a traceback or a run that does not
end); ``--horizon`` sets the utilisation window.  Tiny workloads only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from pyvolcano.cli import main

CPU = "2x{cpu: 8, memory: 32Gi}"
GPU = "2x{cpu: 8, memory: 32Gi, nvidia.com/gpu: 2}"


def sim(tmp_path: Path, *args: str, columns: int = 80) -> Any:
    r = CliRunner().invoke(main, ["simulate", "--no-progress", "--out", str(tmp_path / "out"), *args],
                           env={"COLUMNS": str(columns)})
    assert r.exception is None or isinstance(r.exception, SystemExit), r.output  # never a traceback
    return r


def test_table_is_compact_and_fits_80_columns(tmp_path: Path) -> None:
    r = sim(tmp_path, "--synthetic", "8", "--cluster", CPU)
    assert r.exit_code == 0, r.output
    lines = [line for line in r.stdout.splitlines() if not line.startswith("report: ")]  # a path
    assert max(len(line) for line in lines) <= 80
    text = r.stdout
    for label in ("jobs", "completed", "failed", "aborted", "unfinished", "never started", "wait p95 (s)",
                  "utilisation cpu"):
        assert label in text
    assert "{" not in text  # a table, not raw JSON


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_json_and_yaml_are_the_whole_summary(tmp_path: Path, fmt: str) -> None:
    r = sim(tmp_path, "--synthetic", "8", "--cluster", CPU, "-o", fmt)
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout) if fmt == "json" else yaml.safe_load(r.stdout)
    assert data["jobs"] == 8 and data["completed"] + data["failed"] + data["aborted"] + data["unfinished"] == 8
    assert data == {k: v for k, v in json.loads((tmp_path / "out" / "summary.json").read_text()).items()
                    if k != "problems"}
    assert "report:" in r.stderr


def test_gpu_fraction_defaults_to_zero_without_gpus(tmp_path: Path) -> None:
    # with the old default 0.5, half the jobs asked for GPUs no node has and were all skipped as problems
    r = sim(tmp_path, "--synthetic", "20", "--cluster", CPU, "-o", "json")
    assert r.exit_code == 0 and "nvidia.com/gpu" not in r.stderr
    assert json.loads(r.stdout)["jobs"] == 20
    gpu = sim(tmp_path, "--synthetic", "20", "--cluster", GPU, "--out", str(tmp_path / "g"), "-o", "json")
    jobs = (tmp_path / "g" / "jobs.csv").read_text()
    assert gpu.exit_code == 0 and jobs.count("\n") == 21
    refused = sim(tmp_path, "--synthetic", "5", "--cluster", CPU, "--gpu-fraction", "0.5")
    assert refused.exit_code == 2 and "the cluster has no nvidia.com/gpu" in refused.output


@pytest.mark.parametrize(("opt", "message"), [
    (["--node-failures", "10:node-9:5"], "--node-failures: 10:node-9: no node 'node-9' in the cluster (2 nodes: "
                                         "node-0000, node-0001)"),
    (["--cancel", "10:nosuch"], "--cancel: 10:default/nosuch: no job 'default/nosuch' in the workload (3 jobs: "),
    (["--cancel", "10:other/syn-000000"], "no job 'other/syn-000000'"),
    (["--node-failures", "10:node-0000:nan"], "--node-failures: '10:node-0000:nan': 'nan' is not a finite number"),
    (["--node-failures", "10:node-0000"], "expected TIME:NODE:DOWNTIME"),
    (["--node-failures", "-1:node-0000:5"], "'-1' is negative"),
    (["--node-failures", "1e13:node-0000:5"], "is more than 1e+11 seconds"),
    (["--cancel", "inf:syn-000000"], "--cancel: 'inf:syn-000000': 'inf' is not a finite number"),
    (["--cancel", "5:"], "expected TIME:[NAMESPACE/]JOB"),
    (["--horizon", "0"], "'0' must be > 0"),
    (["--horizon", "nan"], "is not a finite number"),
    (["--period", "0"], "must be >= 0.001"),
    (["--period", "nan"], "is not a finite number"),
    (["--rate", "inf"], "is not a finite number"),
    (["--rate", "1e-300"], "must be >= 1e-06"),
    (["--mean-duration", "0"], "must be > 0"),
    (["--grace", "-1"], "must be >= 0"),
    (["--until", "nan"], "is not a finite number"),
    (["--gang-sizes", "2,-1"], "--gang-sizes: '2,-1': -1 is not between 1 and 100000"),
    (["--gang-sizes", "1,nan"], "expected comma-separated integers"),
    (["--queues", "a:0"], "weight must be between 1 and 1000000"),
    (["--queues", "a:nan"], "weight must be an integer"),
    (["--gpu-fraction", "2"], "must be <= 1"),
    # numbers in ASCII digits only, as Kubernetes and Go read them (Python's int("٣") is 3)
    (["--queues", "a:\u0663"], "weight must be an integer"),
    (["--gang-sizes", "1,\u0663"], "is not an integer"),
    (["--synthetic", "\u0663"], "'\u0663' is not an integer"),
    (["--period", "1_0"], "is not a number (ASCII digits only)"),
    (["--topology", "leaf=\u0663"], "is not an integer"),
    (["--gang-sizes", "100000000"], "100000000 is not between 1 and 100000"),
    (["--until", "1e12"], "must be <= 1e+11"),
])
def test_bad_option_values_are_one_clear_error(tmp_path: Path, opt: list[str], message: str) -> None:
    r = sim(tmp_path, "--synthetic", "3", "--cluster", CPU, *opt)
    assert r.exit_code == 2, r.output
    assert message in r.output
    assert not (tmp_path / "out" / "summary.json").exists()  # refused before anything ran


@pytest.mark.parametrize(("cluster", "message"), [
    ("3x{cpu: nan, memory: 1Gi}", "Node node-0000: field status.allocatable.cpu: 'nan' is not a quantity"),
    ("3x{cpu: -1, memory: 1Gi}", "field status.allocatable.cpu: '-1' is negative"),
    ("2x{cpu: .inf}", "'inf' is not a quantity"),
    ("0x{cpu: 1}", "cluster spec group 1 '0x{cpu: 1}': the count must be at least 1"),
    ("2x[1, 2]", "expected COUNTx{cpu: .., memory: ..}"),
    ("2x{cpu: 1", "expected COUNTx{cpu: .., memory: ..}"),
    ("2x{labels: 5, cpu: 1}", "cluster spec group 1: labels: expected a mapping"),
    ("2x{taints: 7, cpu: 1}", "field spec.taints: must be a list"),
    ("2x{cpu: 4, labels: {a: [1]}}", "field metadata.labels.a: must be a string"),
    ("2x{cpu: 4, {x}: 1}", "cluster spec group 1: YAML error"),
    ("99999999999x{cpu: 1}", "more than 100000 nodes"),
    ("+", "cluster spec group 1 '': expected COUNTx"),
])
def test_malformed_cluster_maps_are_one_clear_error(tmp_path: Path, cluster: str, message: str) -> None:
    r = sim(tmp_path, "--synthetic", "3", "--cluster", cluster, "--gpu-fraction", "0")
    assert r.exit_code == 2, r.output
    assert message in r.output


def test_failures_and_cancellations_of_known_targets_run(tmp_path: Path) -> None:
    # syn-000001 arrives at 11.5 and runs from 15: cancelled at 20 it is aborted; syn-000002 (arrives at 15.3) is
    # cancelled at 1, before it arrived: a warning, and it runs
    r = sim(tmp_path, "--synthetic", "3", "--cluster", CPU, "--node-failures", "5:node-0000:10",
            "--cancel", "20:default/syn-000001,1:syn-000002", "-o", "json")
    assert r.exit_code == 0, r.output
    s = json.loads(r.stdout)
    assert (s["aborted"], s["completed"] + s["failed"] + s["aborted"] + s["unfinished"]) == (1, s["jobs"])
    assert "cancel default/syn-000002 at 1 s: the job has not arrived yet; nothing cancelled" in r.stderr


def test_horizon_sets_the_utilisation_window(tmp_path: Path) -> None:
    # one 1-cpu pod of 100 s on 16 cpus: bound at 1, held until 102 (101 cpu-s).  Over the run [0, 102]:
    # 101 / (16 * 102); over --horizon 202: 101 / (16 * 202); over --horizon 52: held 1..52 = 51 cpu-s / (16 * 52)
    job = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
           "metadata": {"name": "one", "annotations": {"pyvolcano.io/arrival": "0"}},
           "spec": {"minAvailable": 1, "tasks": [{"name": "w", "replicas": 1, "template": {
               "metadata": {"annotations": {"pyvolcano.io/duration": "100"}},
               "spec": {"containers": [{"name": "m", "resources": {"requests": {"cpu": "1"}}}]}}}]}}
    wl = tmp_path / "jobs.yaml"
    wl.write_text(yaml.safe_dump(job))
    got = {}
    for h in (None, "202", "52"):
        r = sim(tmp_path, "--workload", str(wl), "--cluster", CPU, "-o", "json", *(["--horizon", h] if h else []))
        assert r.exit_code == 0, r.output
        s = json.loads(r.stdout)
        got[h] = (s["window_s"], s["utilisation"]["cpu"])
    assert got[None] == (102.0, round(101 / (16 * 102), 4))
    assert got["202"] == (202.0, round(101 / (16 * 202), 4))
    assert got["52"] == (52.0, round(51 / (16 * 52), 4))


def test_compare_with_a_horizon_shares_it(tmp_path: Path) -> None:
    conf = Path(__file__).resolve().parents[2] / "examples" / "confs" / "volcano-default.conf"
    r = sim(tmp_path, "--synthetic", "4", "--cluster", CPU, "--compare", str(conf), "--horizon", "5000", "-o", "json")
    assert r.exit_code == 0, r.output
    assert [s["window_s"] for s in json.loads(r.stdout)["runs"]] == [5000.0, 5000.0]
    # the runs are paired job by job (the same conf twice: every job waits the same)
    assert [(p["what"], p["jobs"], p["diff"], p["verdict"]) for p in json.loads(r.stdout)["paired"]] == [
        ("mean wait, job by job", 4, 0.0, "the same on all 4 jobs"), ("p95 wait", 4, 0.0, "the same on all 4 jobs")]
