"""Bad workload input: every bad row or object is reported with its row/name and field, skipped, and the rest of
the workload runs; nothing ends in a traceback.  Tiny workloads only."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from pyvolcano.cli import main
from pyvolcano.commands.simulate import expand_multi
from pyvolcano.conf.loader import load_conf_file
from pyvolcano.sim import alibaba, metrics
from pyvolcano.sim.cluster import parse_cluster_spec
from pyvolcano.sim.engine import Simulator
from pyvolcano.sim.workload import DURATION, JobSpec, Workload, from_manifests, from_specs, load_csv, synthetic

QUEUE = [{"kind": "Queue", "metadata": {"name": "default"}, "spec": {"weight": 1}}]
CLUSTER = "1x{cpu: 4, memory: 16Gi}"
HEADER = "id,submit,queue,priority,tasks,min_available,cpu,memory,gpu,duration\n"


def vcjob(name: str, duration: Any = "5", *, queue: str = "default", replicas: int = 1, min_available: int = 1,
          requests: dict[str, Any] | None = None, arrival: Any = "0") -> dict[str, Any]:
    tmpl: dict[str, Any] = {"spec": {"containers": [{"name": "m", "image": "busybox",
                                                      "resources": {"requests": requests or {"cpu": "1"}}}]}}
    if duration is not None:
        tmpl["metadata"] = {"annotations": {DURATION: duration}}
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
            "metadata": {"name": name, "annotations": {"pyvolcano.io/arrival": arrival}},
            "spec": {"queue": queue, "minAvailable": min_available,
                     "tasks": [{"name": "w", "replicas": replicas, "template": tmpl}]}}


def simulate(wl: Workload, cluster: str = CLUSTER) -> tuple[dict[str, dict[str, Any]], list[str]]:
    res = Simulator(parse_cluster_spec(cluster), QUEUE, wl, load_conf_file(None)).run()
    return {r["job"]: r for r in metrics.job_rows(res)}, res.problems


def cli(tmp_path: Path, *args: str) -> Any:
    return CliRunner().invoke(main, ["simulate", "--no-progress", "--out", str(tmp_path / "out"), *args])


# --- 1. durations -----------------------------------------------------------------------------------------------
def test_bad_durations_in_job_manifests_are_reported_and_skipped() -> None:
    # negative and non-numeric durations used to give jct -1 and a ValueError traceback
    wl = from_manifests([vcjob("neg", "-1"), vcjob("abc", "abc"), vcjob("nan", "nan"), vcjob("late", arrival="-3"),
                         vcjob("ok", "5"), vcjob("nodur", None)])
    field = f"field spec.tasks[0].template.metadata.annotations[{DURATION}]"
    assert f"Job default/neg: {field}: '-1' is negative (expected seconds >= 0); job skipped" in wl.problems
    assert f"Job default/abc: {field}: 'abc' is not a number of seconds (expected seconds >= 0); job skipped" \
        in wl.problems
    assert any(p.startswith(f"Job default/nan: {field}: 'nan' is not a finite") for p in wl.problems)
    assert any(p.startswith("Job default/late: field metadata.annotations[pyvolcano.io/arrival]: '-3' is negative")
               for p in wl.problems)
    rows, _ = simulate(wl)
    assert set(rows) == {"default/ok", "default/nodur"}
    assert rows["default/ok"]["jct"] == 7  # bound at 1, running at 2, done at 7
    assert rows["default/nodur"]["phase"] == "Completed"


def test_bad_duration_in_a_handmade_workload_is_refused_by_the_simulator() -> None:
    # a Workload that bypassed the loaders: the simulator checks durations too instead of crashing mid-run
    rows, problems = simulate(Workload([(0.0, vcjob("abc", "abc")), (0.0, vcjob("ok"))]))
    assert any(p.startswith("Job default/abc: field spec.tasks[0].template.metadata.annotations") for p in problems)
    assert set(rows) == {"default/ok"}


def test_bad_durations_from_specs() -> None:
    # from_specs is what the synthetic and Alibaba loaders build on
    wl = from_specs([JobSpec("neg", 0, duration=-1.5), JobSpec("ok", 0, duration=3)])
    assert wl.problems == ["job neg: field duration: -1.5 is negative; skipped"]
    assert [j["metadata"]["name"] for _, j in wl.jobs] == ["ok"]


def test_alibaba_rows_with_negative_lifetime_or_junk_are_skipped(tmp_path: Path) -> None:
    cols = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time"
    (tmp_path / "openb_pod_list_default.csv").write_text(
        f"{cols}\n"
        "pod-a,1000,1024,0,0,,BE,Succeeded,0,100,10\n"
        "pod-neg,2000,1024,0,0,,BE,Succeeded,5,50,60\n"
        "pod-junk,x,1024,0,0,,BE,Succeeded,5,50,10\n"
        "pod-huge,64000,1024,0,0,,LS,Succeeded,7,100,10\n")
    wl = alibaba.load_workload(tmp_path, alibaba.AlibabaKnobs(skip=0, pods=0, compress=1))
    assert "trace row pod-neg: negative duration -10s; skipped" in wl.problems
    assert "trace row pod-junk: field cpu_milli: 'x' is not a number; skipped" in wl.problems
    # the request no node holds is the simulator's general check now, which knows the cluster
    sim = Simulator(parse_cluster_spec(CLUSTER), alibaba.queues(), wl, load_conf_file(None))
    assert any(p.startswith("Job default/pod-huge: task worker: requests cpu 64 per pod") for p in sim.problems)
    assert sim.total_jobs == 1


# --- 2. requests no node can hold --------------------------------------------------------------------------------
@pytest.mark.parametrize(("spec", "message"), [
    (JobSpec("big", 0, cpu="64"), "requests cpu 64 per pod, more than any node's allocatable (largest: 4)"),
    (JobSpec("mem", 0, memory="64Gi"), "requests memory 64Gi per pod, more than any node's allocatable (largest: 16Gi)"),
    (JobSpec("gpu", 0, gpu="1"), "requests nvidia.com/gpu 1 per pod, a resource no node has"),
])
def test_request_no_node_can_hold_is_reported_and_skipped(spec: JobSpec, message: str) -> None:
    rows, problems = simulate(from_specs([spec, JobSpec("ok", 0, duration=3)]))
    assert f"Job default/{spec.name}: task worker: {message}; job skipped" in problems
    assert set(rows) == {"default/ok"} and rows["default/ok"]["phase"] == "Completed"


def test_request_whose_combination_fits_no_single_node() -> None:
    # 3 cpu fits only the cpu node, 1 gpu only the gpu node: no node holds both
    cluster = "1x{cpu: 4, memory: 16Gi} + 1x{cpu: 2, memory: 16Gi, nvidia.com/gpu: 2}"
    rows, problems = simulate(from_specs([JobSpec("both", 0, cpu="3", gpu="1"), JobSpec("fits", 0, cpu="2", gpu="1",
                                                                                        duration=3)]), cluster)
    assert any(p.startswith("Job default/both: task worker: requests {cpu: 3, memory: 1Gi, nvidia.com/gpu: 1} per "
                            "pod, which no single node's allocatable holds") for p in problems)
    assert set(rows) == {"default/fits"}


def test_manifest_problems_found_by_the_simulator() -> None:
    wl = from_manifests([vcjob("q", queue="nosuch"), vcjob("gang", replicas=1, min_available=2),
                         vcjob("qty", requests={"cpu": "x1"}), vcjob("fpga", requests={"example.com/fpga": 1}),
                         vcjob("ok")])
    rows, problems = simulate(wl)
    assert "Job default/q: field spec.queue: unable to find job queue 'nosuch'; job skipped" in problems
    assert ("Job default/gang: field spec.minAvailable: (2) should not be greater than total replicas in tasks (1); "
            "job skipped") in problems
    assert any(p.startswith("Job default/qty: field spec.tasks[0].template.spec.containers[0].resources.requests.cpu: "
                            "'x1' is not a quantity") for p in problems)
    assert "Job default/fpga: task w: requests example.com/fpga 1 per pod, a resource no node has; job skipped" \
        in problems
    assert set(rows) == {"default/ok"}


def test_policy_entries_are_typed() -> None:
    """A policy's ``event`` given as a list was a TypeError deep in the webhook's rules; ``LifecyclePolicy`` types
    it and the job is refused naming the field (in a task's policies and in the job's)."""
    in_task, in_job = vcjob("t"), vcjob("j")
    in_task["spec"]["tasks"][0]["policies"] = [{"event": ["PodFailed"], "action": "RestartJob"}]
    in_job["spec"]["policies"] = [{"event": "PodFailed", "action": "RestartJob"}, {"exitCode": True}]
    wl = from_manifests([in_task, in_job, vcjob("ok")])
    assert any(p.startswith("Job default/t: field spec.tasks[0].policies[0].event: ") for p in wl.problems), \
        wl.problems
    assert any(p.startswith("Job default/j: field spec.policies[1].exitCode: True is not an integer")
               for p in wl.problems), wl.problems
    rows, _ = simulate(wl)
    assert set(rows) == {"default/ok"}


def test_a_null_namespace_is_defaulted_as_the_api_server_does() -> None:
    """``namespace: null`` (or "") is the request's namespace, ``default``: the job runs (it never started)."""
    nulls, empty = vcjob("n"), vcjob("e")
    nulls["metadata"]["namespace"] = None
    empty["metadata"]["namespace"] = ""
    rows, problems = simulate(from_manifests([nulls, empty]))
    assert not problems
    assert {k: r["phase"] for k, r in rows.items()} == {"default/n": "Completed", "default/e": "Completed"}


def test_min_partitions_above_the_replicas_is_refused_as_volcano_does() -> None:
    """The job webhook defaults a task's minAvailable to minPartitions * partitionSize and refuses one above the
    replicas (admit_job.go): the job was admitted and pended forever."""
    job = vcjob("p", replicas=4, min_available=4)
    job["spec"]["tasks"][0]["partitionPolicy"] = {"totalPartitions": 2, "partitionSize": 2, "minPartitions": 3}
    rows, problems = simulate(from_manifests([job, vcjob("ok")]))
    assert ("Job default/p: field spec.tasks[0].partitionPolicy.minPartitions: 'minAvailable' is greater than "
            "'replicas' in task: w, job: p (minAvailable defaults to MinPartitions*PartitionSize = 3*2, replicas "
            "are 4); job skipped") in problems, problems
    assert set(rows) == {"default/ok"}


@pytest.mark.parametrize(("cell", "value"), [("tasks", "\u0663"), ("priority", "1_0"), ("submit", "\u0661"),
                                             ("cpu", "\u0663"), ("duration", "1e12"),
                                             # a PriorityClass value, a DNS-1123 job name, a queue's object name
                                             ("priority", "99999999999999999999"), ("id", "j!x"), ("id", "j" * 64),
                                             ("queue", "Bad Queue")])
def test_csv_numbers_are_ascii_and_bounded(tmp_path: Path, cell: str, value: str) -> None:
    """Python reads ``int("٣")`` as 3 and ``int("1_0")`` as 10; Kubernetes and Volcano read ASCII digits only.
    A time beyond ``MAX_TIME`` (1e11 s) could not be formatted as a status stamp."""
    row = dict(id="bad", submit="0", queue="default", priority="0", tasks="1", min_available="1", cpu="1",
               memory="1Gi", gpu="0", duration="3")
    row[cell] = value
    p = tmp_path / "w.csv"
    p.write_text(HEADER + "ok,0,default,0,1,1,1,1Gi,0,3\n" + ",".join(row.values()) + "\n")
    wl = load_csv(str(p))
    assert len(wl.problems) == 1 and f"field {cell}: " in wl.problems[0], wl.problems
    assert [j["metadata"]["name"] for _, j in wl.jobs] == ["ok"]


# --- 3. one bad CSV cell -----------------------------------------------------------------------------------------
def test_bad_quantity_in_a_csv_row_skips_only_that_row(tmp_path: Path) -> None:
    p = tmp_path / "w.csv"
    p.write_text(HEADER + "ok,0,default,0,1,1,1,1Gi,0,3\n"
                          "badcpu,0,default,0,1,1,abc,1Gi,0,3\n"
                          "badmem,0,default,0,1,1,1,lots,0,3\n"
                          "neggpu,0,default,0,1,1,1,1Gi,-1,3\n"
                          "short,0\n")
    wl = load_csv(str(p))
    assert any(x.startswith(f"{p}: line 3 (job badcpu): field cpu: 'abc' is not a quantity") for x in wl.problems)
    assert any(x.startswith(f"{p}: line 4 (job badmem): field memory: 'lots' is not a quantity") for x in wl.problems)
    assert f"{p}: line 5 (job neggpu): field gpu: '-1' is negative (quantities must be >= 0); row skipped" in wl.problems
    assert f"{p}: line 6 (job short): field tasks: is empty; row skipped" in wl.problems
    rows, _ = simulate(wl)
    assert set(rows) == {"default/ok"} and rows["default/ok"]["phase"] == "Completed"


# --- 4. problems on stderr ---------------------------------------------------------------------------------------
def test_cli_prints_every_problem_on_stderr(tmp_path: Path) -> None:
    import yaml

    jobs = tmp_path / "jobs.yaml"
    jobs.write_text(yaml.safe_dump_all([vcjob("q", queue="nosuch"), vcjob("gang", min_available=2),
                                        vcjob("big", requests={"cpu": "64"}), vcjob("neg", "-1"), vcjob("ok")]))
    r = cli(tmp_path, "--workload", str(jobs), "--cluster", CLUSTER, "--queues", "default:1")
    assert r.exit_code == 0, r.output
    err = r.stderr.splitlines()
    assert "Traceback" not in r.stderr
    for job in ("q", "gang", "big", "neg"):
        assert sum(line.startswith(f"pyvolcano: warning: Job default/{job}: ") for line in err) == 1, r.stderr
    assert "pyvolcano: warning: Job default/q: field spec.queue: unable to find job queue 'nosuch'; job skipped" in err
    csv = tmp_path / "w.csv"
    csv.write_text(HEADER + "ok,0,default,0,1,1,1,1Gi,0,3\nbadcpu,0,default,0,1,1,abc,1Gi,0,3\n")
    r = cli(tmp_path, "--csv", str(csv), "--cluster", CLUSTER)
    assert r.exit_code == 0, r.output
    assert any(x.startswith(f"pyvolcano: warning: {csv}: line 3 (job badcpu): field cpu:") for x in r.stderr.splitlines())


def test_cli_refuses_when_nothing_can_run(tmp_path: Path) -> None:
    csv = tmp_path / "w.csv"
    csv.write_text(HEADER + "big,0,default,0,1,1,64,1Gi,0,3\n")
    r = cli(tmp_path, "--csv", str(csv), "--cluster", CLUSTER)
    assert r.exit_code == 2
    assert "warning: Job default/big: task worker: requests cpu 64" in r.stderr
    assert "error: nothing to simulate: none of the workload's 1 jobs can run here" in r.stderr


# --- 5. the synthetic generator's knobs --------------------------------------------------------------------------
def test_synthetic_draws_queues_from_the_mix() -> None:
    wl = synthetic(seed=1, jobs=300, queues={"a": 2, "b": 1})
    counts = {q: sum(j["spec"]["queue"] == q for _, j in wl.jobs) for q in ("a", "b")}
    assert counts["a"] + counts["b"] == 300 and 1.6 < counts["a"] / counts["b"] < 2.5


def test_cli_synthetic_uses_queues_and_knobs(tmp_path: Path) -> None:
    r = cli(tmp_path, "--synthetic", "12", "--queues", "a:2,b:1", "--gang-sizes", "2", "--mean-duration", "5",
            "--gpu-fraction", "0", "--rate", "1", "--seed", "3", "--cluster", "2x{cpu: 8, memory: 32Gi}")
    assert r.exit_code == 0, r.output
    lines = (tmp_path / "out" / "jobs.csv").read_text().splitlines()
    header = lines[0].split(",")
    rows = [dict(zip(header, line.split(","), strict=True)) for line in lines[1:]]
    assert len(rows) == 12
    assert {x["queue"] for x in rows} == {"a", "b"}
    assert {x["tasks"] for x in rows} == {"2"}
    assert all(x["phase"] == "Completed" for x in rows)
    for bad in (["--gang-sizes", "0,2"], ["--gang-sizes", "x"], ["--queues", "a:0"], ["--rate", "0"],
                ["--mean-duration", "-1"]):
        r = cli(tmp_path, "--synthetic", "2", "--cluster", CLUSTER, *bad)
        assert r.exit_code == 2 and "Traceback" not in r.output, (bad, r.output)


# --- 6. --compare with several confs after one flag --------------------------------------------------------------
def test_expand_multi() -> None:
    assert expand_multi(["--compare", "a", "b", "--period", "2", "--compare=c", "d"]) == \
        ["--compare", "a", "--compare", "b", "--period", "2", "--compare=c", "--compare", "d"]
    assert expand_multi(["--compare"]) == ["--compare"]


@pytest.mark.parametrize("form", ["one-flag", "repeated"])
def test_cli_compare_several_confs(tmp_path: Path, form: str) -> None:
    root = Path(__file__).resolve().parents[2]
    a, b = str(root / "examples/confs/reclaim-preempt.conf"), str(tmp_path / "b.conf")
    Path(b).write_text(Path(a).read_text())
    confs = ["--compare", a, b] if form == "one-flag" else ["--compare", a, "--compare", b]
    r = cli(tmp_path, "--synthetic", "4", "--gpu-fraction", "0", "--mean-duration", "5", "--cluster", CLUSTER,
            *confs, "--period", "1")
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == \
        ["compare.html", "run0-default", "run1-reclaim-preempt", "run2-b"]
    assert "b.conf" in r.stdout


def test_a_queue_file_with_a_bad_weight_is_refused_naming_the_field(tmp_path: Path) -> None:
    """``--queues FILE``: each Queue through the typed model (api/models.py: Queue); a weight of "x" was read as 1."""
    from pyvolcano.errors import UserError
    from pyvolcano.sim.run import queue_weights

    f = tmp_path / "q.yaml"
    f.write_text("apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: a}\nspec: {weight: x}\n")
    with pytest.raises(UserError, match=r"Queue a: field spec\.weight: 'x' is not an integer"):
        queue_weights(str(f))
    f.write_text("apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: a}\nspec: {weight: 3}\n")
    assert queue_weights(str(f)) == {"a": 3}


def test_request_no_node_can_hold_is_judged_once_per_request() -> None:
    """Every job asking for the same shape gets the same verdict, worked out once (``Simulator._unfit_memo``)."""
    from pyvolcano.conf.loader import load_conf_file
    from pyvolcano.sim.cluster import parse_cluster_spec
    from pyvolcano.sim.engine import Simulator

    wl = from_specs([JobSpec("big1", 0, cpu="64"), JobSpec("big2", 0, cpu="64"), JobSpec("ok1", 0, duration=3),
                     JobSpec("ok2", 0, duration=3)])
    sim = Simulator(parse_cluster_spec("1x{cpu: 4, memory: 16Gi}"), [], wl, load_conf_file(None))
    big = [p for p in sim.problems if "requests cpu 64 per pod, more than any node's allocatable" in p]
    assert [p.split(":")[0] for p in big] == ["Job default/big1", "Job default/big2"]
    assert sorted(v is None for v in sim._unfit_memo.values()) == [False, True]
