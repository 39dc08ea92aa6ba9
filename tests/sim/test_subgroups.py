"""Sub-groups in the simulator (issue 14 items 3 and 9, ``sim/topology.py``): ``--partitions SIZE[:CONSTRAINT]``
puts a vcjob task ``partitionPolicy`` on the workload's full gangs (the job controller turns it into the PodGroup's
``subGroupPolicy`` and the pods' ``volcano.sh/partition-id``), Job manifests with a ``partitionPolicy`` pass a typed
boundary, and the per-sub-group spread metric (the LCA tier of each sub-group's pods, its largest and mean per job,
beside the job's own tier) is hand-computed on a tree of 8 nodes; end to end, a hard partition constraint keeps
every sub-group inside one leaf while the same jobs without it do not."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from pyvolcano.cli import main
from pyvolcano.conf.loader import load_conf_file
from pyvolcano.errors import UserError
from pyvolcano.sim import metrics
from pyvolcano.sim import topology as st
from pyvolcano.sim.cluster import parse_cluster_spec
from pyvolcano.sim.engine import Simulator
from pyvolcano.sim.workload import from_manifests, synthetic
from tests.sim.test_topology import NODES, NT_CONF, tree


def job(name: str, replicas: int = 4, pp: dict[str, Any] | None = None, nt: Any = None, cpu: str = "3",
        min_available: int | None = None, task_min: int | None = None) -> dict[str, Any]:
    task: dict[str, Any] = {"name": "w", "replicas": replicas, "template": {
        "metadata": {"annotations": {"pyvolcano.io/duration": "30"}},
        "spec": {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}]}}}
    if pp is not None:
        task["partitionPolicy"] = pp
    if task_min is not None:
        task["minAvailable"] = task_min
    spec: dict[str, Any] = {"minAvailable": replicas if min_available is None else min_available,
                            "queue": "default", "tasks": [task]}
    if nt is not None:
        spec["networkTopology"] = nt
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
            "metadata": {"name": name, "annotations": {"pyvolcano.io/arrival": "0"}}, "spec": spec}


# --- the metric, by hand ------------------------------------------------------------------------------------
def test_sub_group_of_reads_the_partition_labels() -> None:
    assert st.sub_group_of({"volcano.sh/task-spec": "w", "volcano.sh/partition-id": "2"}) == "w/2"
    assert st.sub_group_of({"volcano.sh/task-spec": "w"}) is None  # a task without partitions: default sub-group
    assert st.sub_group_of(None) is None


def test_sub_group_lca_tiers_by_hand() -> None:
    log = st.SpreadLog.of(tree(), NODES)
    log.arrived("j", job("j", 6, {"totalPartitions": 3, "partitionSize": 2, "minPartitions": 3,
                                  "networkTopology": {"mode": "hard", "highestTierName": "spine"}}))
    assert log.sub_constraint == {"j": {"w": "hard:spine"}} and log.constraint == {"j": "none"}
    for pod, node, sub in (("p0", "n0", "w/0"), ("p1", "n1", "w/0"),  # leaf-0: tier 1
                           ("p2", "n2", "w/1"), ("p3", "n2", "w/1"),  # one node: tier 0
                           ("p4", "n4", "w/2"), ("p5", "n6", "w/2"),  # leaf-2 and leaf-3: spine-1, tier 2
                           ("x", "n3", None)):                        # the job's default sub-group
        log.bound("j", pod, node, sub)
    assert [log.sub_tier_of("j", s) for s in ("w/0", "w/1", "w/2")] == [1, 0, 2]
    assert log.tier_of("j") == 3  # spine-0 and spine-1: only the virtual top holds them all
    log.started("j")
    assert log.sub_at_start == {"j": {"w/0": 1, "w/1": 0, "w/2": 2}}
    cols = st.job_columns(log, "j")
    assert (cols["sub_network_topology"], cols["sub_groups"], cols["sub_lca_tier_max"], cols["sub_lca_tier_mean"],
            cols["sub_max_lca_tier"], cols["lca_tier"]) == ("hard:spine", 3, 2, 1.0, 2, 3)
    # w/1's pod on n2 leaves and a new one lands on n4: w/1 now spans n2 and n4 (the virtual top), above spine
    log.gone("j", "p2")
    log.bound("j", "p6", "n4", "w/1")
    assert log.sub_tier_of("j", "w/1") == 3 and log.sub_widest[("j", "w/1")] == 3
    log.started("j")  # only the first start counts
    assert log.sub_at_start["j"]["w/1"] == 0
    assert st.job_columns(log, "j")["sub_max_lca_tier"] == 3
    assert log.sub_violations() == ["j/w/1"]  # hard:spine is tier 2; w/2 at tier 2 keeps it
    for p in ("p0", "p1"):
        log.gone("j", p)
    assert log.sub_tier_of("j", "w/0") is None and log.tier_of("j") == 3
    assert st.job_columns(log, "nosuch")["sub_groups"] is None


def test_sub_group_summary_by_hand() -> None:
    log = st.SpreadLog.of(tree(), NODES)
    pp = {"totalPartitions": 2, "partitionSize": 2, "minPartitions": 2}
    log.arrived("j", job("j", 4, {**pp, "networkTopology": {"mode": "hard", "highestTierAllowed": 1}}))
    log.arrived("k", job("k", 4, {**pp, "networkTopology": {"mode": "soft"}}))
    log.arrived("never", job("never", 4, {**pp, "networkTopology": {"mode": "soft"}}))
    log.arrived("plain", job("plain", 2))
    placed: dict[str, list[tuple[str, str | None]]] = {
        "j": [("n0", "w/0"), ("n1", "w/0"), ("n4", "w/1"), ("n6", "w/1")],  # tiers 1 and 2, job 3
        "k": [("n2", "w/0"), ("n2", "w/0"), ("n3", "w/1"), ("n3", "w/1")],  # tiers 0 and 0, job 1
        "plain": [("n5", None), ("n7", None)]}
    for j, pods in placed.items():
        for i, (node, sub) in enumerate(pods):
            log.bound(j, f"{j}{i}", node, sub)
        log.started(j)
    rows = [{"job": j, "tasks": 4, "wait": w, **st.job_columns(log, j)}
            for j, w in (("j", 5.0), ("k", 1.0), ("never", None), ("plain", 0.0))]
    assert [(r["sub_lca_tier_max"], r["sub_lca_tier_mean"]) for r in rows] == [(2, 1.5), (0, 0.0), (None, None),
                                                                               (None, None)]
    s = st.summary(log, rows)["sub_groups"]
    assert (s["jobs"], s["never_started"], s["sub_groups_at_start"]) == (3, 1, 4)  # plain has no sub-groups
    assert s["lca_tier_mean"] == 2.0  # jobs j (3) and k (1)
    assert s["sub_lca_tier_max_mean"] == 1.0 and s["sub_lca_tier_mean"] == 0.75  # (2 + 0) / 2, (1.5 + 0) / 2
    assert s["within_tier1"] == 0.5 and s["sub_lca_tier_max_at_start"] == {"0": 1, "2": 1}
    assert s["wait"]["mean"] == 3.0
    assert set(s["by_constraint"]) == {"hard:1", "soft"}
    assert s["by_constraint"]["soft"]["jobs"] == 2 and s["by_constraint"]["soft"]["never_started"] == 1
    assert s["hard_violations"] == 1 and s["hard_violation_sub_groups"] == ["j/w/1"]  # tier 2 > hard:1
    # a run without any sub-groups has no sub_groups block
    assert "sub_groups" not in st.summary(st.SpreadLog.of(tree(), NODES), [])


# --- the option and the workload ----------------------------------------------------------------------------
def test_parse_partitions() -> None:
    assert st.parse_partitions("4") == st.Partitions(4)
    assert str(st.parse_partitions(" 8:hard:leaf ")) == "8:hard:leaf"
    assert st.parse_partitions("4:hard:1").policy(12) == {"totalPartitions": 3, "partitionSize": 4,
                                                          "minPartitions": 3,
                                                          "networkTopology": {"mode": "hard", "highestTierAllowed": 1}}
    assert st.parse_partitions("2:soft").policy(4)["networkTopology"] == {"mode": "soft"}
    assert "networkTopology" not in st.parse_partitions("2:none").policy(4)
    for bad, msg in (("x", "'x' is not"), ("0", "between 1 and 100000"), ("4:", "expected a constraint"),
                     ("4:soft:1", "--partitions '4:soft:1': soft mode takes no tier"),
                     ("4:tight", "--partitions '4:tight': expected none, soft, hard:TIER"), ("", "expected SIZE")):
        with pytest.raises(UserError, match=msg):
            st.parse_partitions(bad)


def test_with_partitions_cuts_full_gangs_only() -> None:
    own = {"totalPartitions": 4, "partitionSize": 1}
    jobs = [(0.0, job("eight", 8)), (0.0, job("two", 2)), (0.0, job("odd", 6)), (0.0, job("one", 1)),
            (0.0, job("partial", 8, min_available=6)), (0.0, job("taskmin", 8, task_min=4)),
            (0.0, job("own", 4, own)), (0.0, job("four", 4))]
    out, n = st.with_partitions(jobs, st.parse_partitions("4:hard:leaf"))
    got = {j["metadata"]["name"]: j["spec"]["tasks"][0].get("partitionPolicy") for _, j in out}
    assert n == 1 and got["eight"] == {"totalPartitions": 2, "partitionSize": 4, "minPartitions": 2,
                                       "networkTopology": {"mode": "hard", "highestTierName": "leaf"}}
    # two and four are one partition at most, odd is no multiple of 4, one is no gang, partial and taskmin need fewer
    # than all their pods, own keeps the manifest's policy
    assert {k: v for k, v in got.items() if k != "eight"} == dict.fromkeys(
        ("two", "odd", "one", "partial", "taskmin", "four"), None) | {"own": own}
    assert all("partitionPolicy" not in j["spec"]["tasks"][0] for _, j in jobs[:2])  # the input is not changed
    _, n2 = st.with_partitions(jobs, st.parse_partitions("2"))
    assert n2 == 3  # eight, odd (3 partitions) and four; two is one partition, partial and taskmin not all pods
    wl = synthetic(seed=0, jobs=30, gang_sizes=(1, 2, 4, 8), gpu_fraction=0)
    cut, k = st.with_partitions(wl.jobs, st.parse_partitions("2"))
    assert k == sum(1 for _, j in wl.jobs if j["spec"]["minAvailable"] >= 4) > 0
    assert all(j["spec"]["tasks"][0]["partitionPolicy"]["totalPartitions"] == j["spec"]["minAvailable"] // 2
               for _, j in cut if j["spec"]["minAvailable"] >= 4)


def test_job_manifests_with_partitions_pass_a_typed_boundary() -> None:
    """Trace and workload files carry ``partitionPolicy`` as written; a non-integer is a problem naming the field
    (``.inf`` used to be a traceback), Volcano's own rules are a problem when the simulator starts."""
    pp = {"totalPartitions": 2, "partitionSize": 2, "networkTopology": {"mode": "hard", "highestTierAllowed": 1}}
    wl = from_manifests([job("ok", 4, pp), job("inf", 4, {**pp, "totalPartitions": float("inf")}),
                         job("nt", 4, {**pp, "networkTopology": {"mode": "tight"}}),
                         job("sum", 6, pp)])
    assert [j["metadata"]["name"] for _, j in wl.jobs] == ["ok", "sum"]
    assert any("Job default/inf: field spec.tasks[0].partitionPolicy.totalPartitions: inf is not an integer" in p
               for p in wl.problems), wl.problems
    assert any("Job default/nt: field spec.tasks[0].partitionPolicy.networkTopology.mode" in p
               for p in wl.problems), wl.problems
    from pyvolcano.api.job_validate import job_problems

    # the admission rules (shared with the Kubernetes mode) start from the same typed Job (api/job_model.py): an
    # infinite count is a type error naming the field, not a Volcano rule
    got = job_problems(job("inf", 4, {**pp, "totalPartitions": float("inf")}), None)
    assert [(p.field, p.problem) for p in got] == [("spec.tasks[0].partitionPolicy.totalPartitions",
                                                    "inf is not an integer")]
    nodes = parse_cluster_spec("8x{cpu: 4, memory: 16Gi}")
    hns = st.spec_hypernodes("leaf=2,spine=2", [n["metadata"]["name"] for n in nodes])
    sim = Simulator(nodes, [queue()], wl, load_conf_file(NT_CONF), hypernodes=hns)
    assert any("Job default/sum" in p and "'Replicas' (6) are not equal to TotalPartitions*PartitionSize (2*2)" in p
               for p in sim.problems), sim.problems


def queue() -> dict[str, Any]:
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "default"},
            "spec": {"weight": 1}, "status": {"state": "Open"}}


# --- end to end ---------------------------------------------------------------------------------------------
def run(partitions: str) -> Any:
    """40 jobs of 1, 2 or 6 pods of 3 cpu (one per 4-cpu node) on leaf=2,spine=2: the 6-pod gangs are cut into 3
    partitions of 2, which the single pods around them can push apart."""
    nodes = parse_cluster_spec("8x{cpu: 4, memory: 16Gi}")
    hns = st.spec_hypernodes("leaf=2,spine=2", [n["metadata"]["name"] for n in nodes])
    wl = synthetic(seed=1, jobs=40, rate=0.2, gang_sizes=(1, 1, 2, 6), mean_duration=60, cpu_choices=("3",),
                   gpu_fraction=0)
    wl.jobs, _ = st.with_partitions(wl.jobs, st.parse_partitions(partitions))
    return Simulator(nodes, [queue()], wl, load_conf_file(NT_CONF), hypernodes=hns).run()


def test_hard_partitions_keep_every_sub_group_in_a_leaf() -> None:
    res = run("2:hard:leaf")
    rows = [r for r in metrics.job_rows(res) if r["sub_network_topology"]]
    assert len(rows) == 12 and all(r["tasks"] == 6 and r["sub_network_topology"] == "hard:leaf" for r in rows)
    assert all(r["wait"] is not None and r["sub_groups"] == 3 for r in rows)
    assert all(r["sub_max_lca_tier"] <= 1 for r in rows), [(r["job"], r["sub_max_lca_tier"]) for r in rows]
    assert all(r["lca_tier"] >= r["sub_lca_tier_max"] for r in rows)  # a job is never lower than a sub-group
    assert max(r["lca_tier"] for r in rows) >= 2  # six nodes never fit one leaf: the job spans, its partitions not
    s = metrics.summary(res, metrics.job_rows(res))["topology"]["sub_groups"]
    assert s["hard_violations"] == 0 and s["within_tier1"] == 1.0
    # the same jobs with sub-groups but no partition constraint: some sub-groups do span leaves
    free = [r for r in metrics.job_rows(run("2")) if r["sub_network_topology"]]
    assert {r["sub_network_topology"] for r in free} == {"none"}
    assert max(r["sub_max_lca_tier"] for r in free) >= 2


def cli(tmp_path: Path, *args: str) -> Any:
    return CliRunner().invoke(main, ["simulate", "--no-progress", "--out", str(tmp_path / "out"), *args])


def test_simulate_cli_compares_partitions(tmp_path: Path) -> None:
    r = cli(tmp_path, "--cluster", "8x{cpu: 4, memory: 16Gi}", "--topology", "leaf=2,spine=2", "--synthetic", "12",
            "--gang-sizes", "1,4", "--rate", "0.5", "--mean-duration", "30", "-c", NT_CONF,
            "--partitions", "none", "2:hard:leaf")
    assert r.exit_code == 0, r.output
    assert "sub-groups within tier 1" in r.output  # the compact table's row
    data = [json.loads((tmp_path / "out" / d / "summary.json").read_text())
            for d in ("run0-p-none", "run1-p-2-hard-leaf")]
    assert "sub_groups" not in data[0]["topology"]
    sub = data[1]["topology"]["sub_groups"]
    assert sub["hard_violations"] == 0 and set(sub["by_constraint"]) == {"hard:leaf"}
    out = tmp_path / "out"
    lines = (out / "run1-p-2-hard-leaf" / "jobs.csv").read_text().splitlines()[1:]
    assert sub["jobs"] == sum(line.split(",")[2] == "4" for line in lines) > 0  # every gang of 4: two partitions
    head = (out / "run1-p-2-hard-leaf" / "jobs.csv").read_text().splitlines()[0]
    assert head.endswith(",max_lca_tier,sub_network_topology,sub_groups,sub_lca_tier_max,sub_lca_tier_mean,"
                         "sub_max_lca_tier,why")
    assert (out / "run0-p-none" / "jobs.csv").read_text().splitlines()[0].endswith(",lca_tier,max_lca_tier,why")
    page = (out / "compare.html").read_text()
    assert "Sub-groups (partitions)" in page and "partitioned jobs with every sub-group within one" in page
    assert "none, 2:hard:leaf (none; 2 pods each, hard:leaf per partition on " in page and "one run each" in page


def test_partitions_and_constraints_make_one_run_each() -> None:
    """``--partitions`` values under ``--network-topology`` values: every pair, the same jobs, labelled."""
    from pyvolcano.commands.simulate import _variants
    from pyvolcano.sim.run import Inputs, load_queues

    nodes = parse_cluster_spec("8x{cpu: 4, memory: 16Gi}")
    wl = synthetic(seed=0, jobs=10, gang_sizes=(1, 4), gpu_fraction=0)
    inputs = Inputs(nodes, load_queues(None, wl), wl,
                    hypernodes=st.spec_hypernodes("leaf=2,spine=2", [n["metadata"]["name"] for n in nodes]))
    got = _variants(inputs, ("none", "2:hard:leaf"), ("none", "hard:spine"), None, 0)
    assert [label for label, _ in got] == ["none,p:none", "hard:spine,p:none", "none,p:2:hard:leaf",
                                           "hard:spine,p:2:hard:leaf"]
    for label, inp in got:
        specs = [j["spec"] for _, j in inp.workload.jobs]
        assert [j["metadata"]["name"] for _, j in inp.workload.jobs] == [j["metadata"]["name"] for _, j in wl.jobs]
        assert any("partitionPolicy" in sp["tasks"][0] for sp in specs) == label.endswith("leaf"), label
        assert any("networkTopology" in sp for sp in specs) == label.startswith("hard"), label
    one = _variants(inputs, ("2:hard:leaf",), ("none", "soft"), None, 0)
    assert [label for label, _ in one] == ["none", "soft"]
    assert one[0][1].settings["partitions"].startswith("2 pods each, hard:leaf per partition on ")
    assert [label for label, _ in _variants(inputs, (), (), None, 0)] == ["as written"]


def test_manifest_workload_with_partitions(tmp_path: Path) -> None:
    """A Job file written as a Volcano user writes a training job: 8 workers in partitions of 4, each partition
    within a leaf (hard tier 1), the job within a spine: the job spans two leaves, each partition stays in one."""
    pp = {"totalPartitions": 2, "partitionSize": 4, "minPartitions": 2,
          "networkTopology": {"mode": "hard", "highestTierAllowed": 1}}
    f = tmp_path / "jobs.yaml"
    f.write_text(yaml.safe_dump(job("train", 8, pp, nt={"mode": "hard", "highestTierAllowed": 2}, cpu="2")))
    r = cli(tmp_path, "--cluster", "8x{cpu: 4, memory: 16Gi}", "--topology", "leaf=2,spine=2", "--workload", str(f),
            "-c", NT_CONF, "-o", "json")
    assert r.exit_code == 0, r.output
    topo = json.loads(r.stdout)["topology"]
    assert topo["lca_tier_at_start"] == {"2": 1}  # 8 pods of 2 cpu: 4 nodes, two leaves under one spine
    assert topo["sub_groups"]["sub_lca_tier_max_at_start"] == {"1": 1} and topo["sub_groups"]["hard_violations"] == 0
    row = (tmp_path / "out" / "jobs.csv").read_text().splitlines()[1]
    assert row.endswith(",hard:2,2,2,hard:1,2,1,1.0,1,")  # then the empty why of a job that started


@pytest.mark.parametrize(("args", "message"), [
    (["--partitions", "x"], "--partitions 'x': expected SIZE[:CONSTRAINT]"),
    (["--partitions", "0"], "the partition size must be between 1 and 100000"),
    (["--partitions", "2:hard:1"], "--partitions '2:hard:1': a partition constraint needs a topology"),
    (["--topology", "leaf=2", "--partitions", "2:soft:1"], "soft mode takes no tier"),
    (["--topology", "leaf=2", "--partitions", "2", "2"], "--partitions: a value is given twice"),
])
def test_bad_partition_options_are_one_clear_error(tmp_path: Path, args: list[str], message: str) -> None:
    r = cli(tmp_path, "--cluster", "2x{cpu: 4, memory: 16Gi}", "--synthetic", "3", *args)
    assert r.exception is None or isinstance(r.exception, SystemExit), r.output
    assert r.exit_code == 2, r.output
    assert message in r.output, r.output
    assert "Traceback" not in r.output


def test_partition_warnings(capsys: pytest.CaptureFixture[str]) -> None:
    """An unknown tier name and a workload without a gang to cut are warnings (the run goes on)."""
    from pyvolcano.commands.simulate import _partition_variants
    from pyvolcano.sim.run import Inputs, load_queues

    nodes = parse_cluster_spec("2x{cpu: 4, memory: 16Gi}")
    wl = synthetic(seed=0, jobs=3, gang_sizes=(2,), gpu_fraction=0)
    inputs = Inputs(nodes, load_queues(None, wl), wl, hypernodes=st.spec_hypernodes("leaf=2", ["node-0000",
                                                                                               "node-0001"]))
    got = _partition_variants(inputs, ("2:hard:rack",))
    err = capsys.readouterr().err
    assert "--partitions 2:hard:rack: no HyperNode has tierName 'rack' (leaf)" in err
    assert "no gang has a task of at least two partitions of 2 pods" in err
    assert got[0][0] is None and got[0][1].settings["partitions"].startswith("2 pods each, hard:rack per partition "
                                                                             "on 0 of 3 gangs")


def test_sweep_over_partitions(tmp_path: Path) -> None:
    from pyvolcano.sim import sweep as sw

    d: dict[str, Any] = {"name": "parts", "cluster": "8x{cpu: 4, memory: 16Gi}", "topology": "leaf=2,spine=2",
                         "workload": {"synthetic": {"jobs": 8, "rate": 0.5, "gang_sizes": [4],
                                                    "mean_duration": 30, "gpu_fraction": 0}},
                         "confs": [{"name": "nt", "file": NT_CONF}],
                         "grid": {"partitions": ["none", "2:hard:leaf"]}, "seeds": [0]}
    p = tmp_path / "sweep.yaml"
    p.write_text(yaml.safe_dump(d))
    pl = sw.plan(sw.load_spec(p))
    sw.run_sweep(pl, tmp_path / "out", workers=1)
    got = {dict(pt.params)["partitions"]: sw.point_metrics(json.loads(
        (tmp_path / "out" / "points" / pt.folder / "summary.json").read_text())) for pt in pl.points}
    assert got["none"]["sub_within_tier1"] is None and got["2:hard:leaf"]["sub_within_tier1"] == 1.0
    d["grid"] = {"partitions": ["2:soft:1"]}
    p.write_text(yaml.safe_dump(d))
    with pytest.raises(UserError, match=r"grid\.partitions '2:soft:1': soft mode takes no tier"):
        sw.load_spec(p)
    d["topology"] = None
    d["grid"] = {"partitions": ["2:hard:1"]}
    p.write_text(yaml.safe_dump(d))
    with pytest.raises(UserError, match=r"grid\.partitions: '2:hard:1' needs a topology"):
        sw.load_spec(p)
