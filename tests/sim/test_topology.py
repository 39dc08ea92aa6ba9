"""The simulator's network topology (issue 14 item 9, ``sim/topology.py``): the compact spec and its HyperNode
generator, ``--hypernodes`` validation, ``--network-topology`` constraints on a workload, the LCA-tier spread metric
(hand-computed on a tree of 8 nodes), option errors, and an end-to-end run in which hard-constrained gangs never span
above their tier while the same jobs without the constraint do."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from pyvolcano.api.hypernode import Topology, parse_hypernode
from pyvolcano.api.job_validate import job_problems
from pyvolcano.cli import main
from pyvolcano.conf.loader import load_conf_file
from pyvolcano.errors import UserError
from pyvolcano.sim import metrics
from pyvolcano.sim import topology as st
from pyvolcano.sim.cluster import parse_cluster_spec
from pyvolcano.sim.engine import Simulator
from pyvolcano.sim.workload import from_manifests, synthetic

ROOT = Path(__file__).resolve().parents[2]
NT_CONF = str(ROOT / "examples/confs/network-topology.conf")
NODES = [f"n{i}" for i in range(8)]


def tree() -> Topology:
    """leaf=2,spine=2 over n0..n7: leaves {n0,n1} {n2,n3} {n4,n5} {n6,n7} (tier 1), spines {leaf-0, leaf-1} and
    {leaf-2, leaf-3} (tier 2), the virtual top (tier 3)."""
    hns = [parse_hypernode(o) for o in st.tree_hypernodes(NODES, 2, 2, tier_names=["leaf", "spine"])]
    return Topology.build(hns, NODES, [{} for _ in NODES])


# --- the generator and the compact spec ---------------------------------------------------------------------
def test_tree_hypernodes_groups_consecutive_nodes_tier_by_tier() -> None:
    objs = st.tree_hypernodes(["a", "b", "c", "d", "e"], 2, 2, tier_names=["leaf", "spine"])
    got = {o["metadata"]["name"]: (o["spec"]["tier"], o["spec"]["tierName"],
                                   [(m["type"], m["selector"]["exactMatch"]["name"]) for m in o["spec"]["members"]])
           for o in objs}
    assert got == {
        "leaf-0": (1, "leaf", [("Node", "a"), ("Node", "b")]),
        "leaf-1": (1, "leaf", [("Node", "c"), ("Node", "d")]),
        "leaf-2": (1, "leaf", [("Node", "e")]),  # the last group of a tier may be smaller
        "spine-0": (2, "spine", [("HyperNode", "leaf-0"), ("HyperNode", "leaf-1")]),
        "spine-1": (2, "spine", [("HyperNode", "leaf-2")]),
    }
    for o in objs:  # every one passes the scheduler's boundary
        parse_hypernode(o)
    assert [o["metadata"]["name"] for o in st.tree_hypernodes(["a", "b", "c"], 2)] == ["tier1-0", "tier1-1"]
    with pytest.raises(ValueError):
        st.tree_hypernodes(["a"], 0)


def test_tree_topology_counts_and_tiers() -> None:
    topo = tree()
    assert topo.ready
    assert topo.tier_names() == {"leaf": 1, "spine": 2}
    assert int(topo.tier[topo.top]) == 3
    assert [topo.node_count(topo.idx(n)) for n in ("leaf-0", "leaf-3", "spine-0", "spine-1")] == [2, 2, 4, 4]
    assert topo.names[int(topo.parent[topo.idx("leaf-2")])] == "spine-1"


def test_compact_spec_parses_from_the_lowest_tier_up() -> None:
    assert st.parse_topology_spec("leaf=16,spine=8") == [("leaf", 16), ("spine", 8)]
    assert st.parse_topology_spec(" leaf = 4 , spine=2, pod=3") == [("leaf", 4), ("spine", 2), ("pod", 3)]
    objs = st.spec_hypernodes("leaf=16,spine=8", [f"node-{i:04d}" for i in range(300)])
    tiers = [o["spec"]["tier"] for o in objs]
    assert tiers.count(1) == 19 and tiers.count(2) == 3  # 300 / 16 = 18.75 leaves, 19 / 8 = 2.4 spines


@pytest.mark.parametrize(("spec", "message"), [
    ("", "expected NAME=COUNT"),
    ("leaf", "'leaf': expected NAME=COUNT"),
    ("leaf=0", "the count must be at least 1"),
    ("leaf=x", "'x' is not an integer (nodes per hypernode)"),
    ("leaf=4,spine=two", "(tier-1 hypernodes per hypernode)"),
    ("Leaf=4", "lowercase DNS label"),
    ("leaf=4,leaf=2", "tier name 'leaf' is used twice"),
    ("leaf=4,,spine=2", "expected NAME=COUNT"),
    (",".join(f"t{i}=2" for i in range(9)), "9 tiers, at most 8"),
])
def test_bad_compact_specs_are_clear_errors(spec: str, message: str) -> None:
    with pytest.raises(UserError, match="--topology") as exc:
        st.parse_topology_spec(spec)
    assert message in str(exc.value)


def test_hypernode_files_are_validated(tmp_path: Path) -> None:
    nodes = parse_cluster_spec("4x{cpu: 4, memory: 8Gi}")
    good = st.tree_hypernodes([n["metadata"]["name"] for n in nodes], 2)
    f = tmp_path / "hn.yaml"
    f.write_text(yaml.safe_dump_all([*nodes, *good]))  # the cluster file may hold them: other kinds are ignored
    assert [o["metadata"]["name"] for o in st.load_hypernodes(str(f), nodes)] == ["tier1-0", "tier1-1"]
    bad = dict(good[0], spec={"tier": -1, "members": good[0]["spec"]["members"]})
    f.write_text(yaml.safe_dump_all([bad]))
    with pytest.raises(UserError, match=r"HyperNode tier1-0.*spec\.tier"):
        st.load_hypernodes(str(f), nodes)
    cycle = [{"apiVersion": st.API_VERSION, "kind": "HyperNode", "metadata": {"name": a},
              "spec": {"tier": 2, "members": [{"type": "HyperNode", "selector": {"exactMatch": {"name": b}}}]}}
             for a, b in (("x", "y"), ("y", "x"))]
    f.write_text(yaml.safe_dump_all(cycle))
    with pytest.raises(UserError, match=r"not usable.*own ancestor"):
        st.load_hypernodes(str(f), nodes)
    f.write_text(yaml.safe_dump_all(nodes))
    with pytest.raises(UserError, match="no HyperNode objects"):
        st.load_hypernodes(str(f), nodes)
    f.write_text(yaml.safe_dump_all([good[0], good[0]]))
    with pytest.raises(UserError, match="appears twice"):
        st.load_hypernodes(str(f), nodes)


# --- the spread metric, by hand -----------------------------------------------------------------------------
def test_lca_tier_by_hand() -> None:
    log = st.SpreadLog.of(tree(), NODES)
    assert log.top_tier == 3
    log.bound("j", "p0", "n0")
    assert log.tier_of("j") == 0  # one pod: one node
    log.bound("j", "p1", "n0")
    assert log.tier_of("j") == 0  # two pods, still one node
    log.bound("j", "p2", "n1")
    assert log.tier_of("j") == 1  # n0, n1: leaf-0
    log.started("j")
    log.bound("j", "p3", "n3")
    assert log.tier_of("j") == 2  # n3 is in leaf-1: spine-0
    log.bound("j", "p4", "n6")
    assert log.tier_of("j") == 3  # n6 under spine-1: only the virtual top holds both
    log.gone("j", "p4")
    assert log.tier_of("j") == 2  # the widest pod left: recomputed from n0, n1, n3
    log.gone("j", "p3")
    log.gone("j", "p2")
    assert log.tier_of("j") == 0
    log.bound("j", "p5", "n1")  # a bind after pods left rebuilds the holders from the live nodes
    assert log.tier_of("j") == 1
    assert log.at_start == {"j": 1} and log.widest == {"j": 3}
    log.started("j")  # only the first start counts
    assert log.at_start == {"j": 1}
    for p in ("p0", "p1", "p5"):
        log.gone("j", p)
    assert log.tier_of("j") is None
    log.bound("k", "q0", "n4")
    log.bound("k", "q1", "n7")  # leaf-2 and leaf-3: spine-1
    log.bound("k", "q2", "not-a-node")  # ignored
    assert log.tier_of("k") == 2


def test_violations_read_the_hard_tier_and_tier_names() -> None:
    log = st.SpreadLog.of(tree(), NODES)
    jobs = {"a": "hard:1", "b": "hard:leaf", "c": "hard:spine", "d": "soft", "e": "hard:nosuch", "f": "none"}
    for j, label in jobs.items():
        log.constraint[j] = label
        log.bound(j, f"{j}0", "n0")
        log.bound(j, f"{j}1", "n2")  # spine-0: tier 2
    assert [log.hard_tier(v) for v in jobs.values()] == [1, 1, 2, None, None, None]
    assert log.violations() == ["a", "b"]


def test_summary_and_job_columns() -> None:
    log = st.SpreadLog.of(tree(), NODES)
    log.constraint.update({"a": "hard:1", "b": "none", "c": "none"})
    for j, nodes in {"a": ["n0", "n1"], "b": ["n0", "n4"], "c": ["n5"]}.items():
        for i, n in enumerate(nodes):
            log.bound(j, f"{j}{i}", n)
        log.started(j)
    rows = [{"job": j, "tasks": t, "wait": w, **st.job_columns(log, j)}
            for j, t, w in (("a", 2, 10.0), ("b", 2, 2.0), ("c", 1, 0.0), ("d", 4, None))]
    assert [r["lca_tier"] for r in rows] == [1, 3, 0, None]
    s = st.summary(log, rows)
    assert s["lca_tier_at_start"] == {"1": 1, "3": 1}  # multi-pod jobs only; d never started
    assert s["by_constraint"]["none"]["jobs"] == 3 and s["by_constraint"]["none"]["never_started"] == 1
    assert s["by_constraint"]["none"]["lca_tier_at_start"] == {"0": 1, "3": 1}
    assert s["by_constraint"]["hard:1"]["wait"]["p50"] == 10.0
    assert s["hard_violations"] == 0
    assert st.job_columns(None, "a") == dict.fromkeys(("network_topology", "lca_tier", "max_lca_tier",
                                                       *st.SUB_COLUMNS))
    assert all(rows[0][k] is None for k in st.SUB_COLUMNS)  # no sub-groups: no per-sub-group figures


# --- constraints on a workload ------------------------------------------------------------------------------
def test_parse_constraint() -> None:
    assert st.parse_constraint("none").spec() is None
    assert st.parse_constraint("soft").spec() == {"mode": "soft"}
    assert st.parse_constraint("hard:1").spec() == {"mode": "hard", "highestTierAllowed": 1}
    assert st.parse_constraint("hard:leaf").spec() == {"mode": "hard", "highestTierName": "leaf"}
    assert [str(st.parse_constraint(x)) for x in ("none", "soft", "hard:2", "hard:leaf")] == \
        ["none", "soft", "hard:2", "hard:leaf"]
    for bad, msg in (("soft:1", "soft mode takes no tier"), ("hard", "expected none, soft, hard:TIER"),
                     ("hard:", "expected none"), ("hard:-1", "between 0 and 1000"), ("tight", "expected none")):
        with pytest.raises(UserError, match=msg):
            st.parse_constraint(bad)


def test_with_constraint_picks_the_same_gangs_whatever_the_constraint() -> None:
    wl = synthetic(seed=1, jobs=60, gang_sizes=(1, 2, 4), gpu_fraction=0)
    gangs = {f"default/{j['metadata']['name']}" for _, j in wl.jobs if j["spec"]["minAvailable"] > 1}
    half = {c: st.with_constraint(wl.jobs, st.parse_constraint(c), 0.5, seed=7) for c in ("hard:1", "soft")}
    chosen = {c: {f"default/{j['metadata']['name']}" for _, j in jobs if "networkTopology" in j["spec"]}
              for c, jobs in half.items()}
    assert chosen["hard:1"] == chosen["soft"] and chosen["hard:1"] < gangs and len(chosen["hard:1"]) > 5
    assert all("networkTopology" not in j["spec"] for _, j in wl.jobs)  # the input is not changed
    every = st.with_constraint(wl.jobs, st.parse_constraint("hard:leaf"), 1.0)
    assert {f"default/{j['metadata']['name']}" for _, j in every if "networkTopology" in j["spec"]} == gangs
    assert all(j["spec"]["networkTopology"] == {"mode": "hard", "highestTierName": "leaf"}
               for _, j in every if "networkTopology" in j["spec"])
    none = st.with_constraint(every, st.parse_constraint("none"))  # removes what the workload said
    assert all("networkTopology" not in j["spec"] for _, j in none)
    assert [t for t, _ in none] == [t for t, _ in wl.jobs]
    with pytest.raises(UserError, match="between 0 and 1"):
        st.with_constraint(wl.jobs, st.parse_constraint("soft"), 1.5)


def job_manifest(name: str, nt: Any, replicas: int = 2) -> dict[str, Any]:
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
            "metadata": {"name": name, "annotations": {"pyvolcano.io/arrival": "0"}},
            "spec": {"minAvailable": replicas, "queue": "default", "networkTopology": nt, "tasks": [
                {"name": "w", "replicas": replicas, "template": {
                    "metadata": {"annotations": {"pyvolcano.io/duration": "30"}},
                    "spec": {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "3"}}}]}}}]}}


def test_job_manifests_carry_network_topology_through_a_validated_boundary() -> None:
    wl = from_manifests([job_manifest("ok", {"mode": "hard", "highestTierName": "leaf"}),
                         job_manifest("both", {"mode": "hard", "highestTierAllowed": 1, "highestTierName": "leaf"}),
                         job_manifest("mode", {"mode": "tight"})])
    # the typed boundary refuses a wrong type when the file is read; a tier and a tier name together is Volcano's
    # webhook rule (validateNetworkTopology), checked with its words when the Job arrives (Simulator.job_problem)
    assert [j["metadata"]["name"] for _, j in wl.jobs] == ["both", "ok"]
    both = next(j for _, j in wl.jobs if j["metadata"]["name"] == "both")
    assert [str(p) for p in job_problems(both)] == [
        "Job default/both: spec.networkTopology: must not specify 'highestTierAllowed' and 'highestTierName' in "
        "networkTopology simultaneously"]
    assert any("Job default/mode: field spec.networkTopology.mode" in p for p in wl.problems), wl.problems


# --- end to end ---------------------------------------------------------------------------------------------
def run(constraint: str, cluster: str = "8x{cpu: 4, memory: 16Gi}") -> Any:
    nodes = parse_cluster_spec(cluster)
    hns = st.spec_hypernodes("leaf=2,spine=2", [n["metadata"]["name"] for n in nodes])
    wl = synthetic(seed=4, jobs=40, rate=0.2, gang_sizes=(2, 3, 4), mean_duration=120, cpu_choices=("1", "2"),
                   gpu_fraction=0)
    wl.jobs = st.with_constraint(wl.jobs, st.parse_constraint(constraint))
    queues = [{"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "default"},
               "spec": {"weight": 1}, "status": {"state": "Open"}}]
    return Simulator(nodes, queues, wl, load_conf_file(NT_CONF), hypernodes=hns).run()


def test_hard_constrained_gangs_never_span_above_their_tier() -> None:
    res = run("hard:1")
    rows = metrics.job_rows(res)
    assert all(r["network_topology"] == "hard:1" for r in rows)
    started = [r for r in rows if r["wait"] is not None]
    assert len(started) == len(rows) == 40  # every gang fits a leaf (2 nodes x 4 cpu)
    assert all(r["lca_tier"] <= 1 and r["max_lca_tier"] <= 1 for r in started), \
        [(r["job"], r["max_lca_tier"]) for r in started if r["max_lca_tier"] > 1]
    s = metrics.summary(res, rows)
    assert s["topology"]["hard_violations"] == 0
    assert set(s["topology"]["lca_tier_at_start"]) <= {"0", "1"}
    # the same jobs without the constraint: some gangs do span leaves, so the assertion above can fail
    free = metrics.job_rows(run("none"))
    assert {r["network_topology"] for r in free} == {"none"}
    assert max(r["max_lca_tier"] for r in free if r["max_lca_tier"] is not None) >= 2


def test_simulate_cli_compares_constraints(tmp_path: Path) -> None:
    r = CliRunner().invoke(main, [
        "simulate", "--no-progress", "--out", str(tmp_path / "out"), "--cluster", "8x{cpu: 4, memory: 16Gi}",
        "--topology", "leaf=2,spine=2", "--synthetic", "12", "--gang-sizes", "2,4", "--rate", "0.5",
        "--mean-duration", "30", "-c", NT_CONF, "--network-topology", "none", "hard:leaf",
        "--network-topology-fraction", "0.5", "-o", "json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)["runs"]
    assert [set(d["topology"]["by_constraint"]) for d in data] == [{"none"}, {"none", "hard:leaf"}]
    assert data[1]["topology"]["hard_violations"] == 0
    out = tmp_path / "out"
    head = (out / "run1-hard-leaf" / "jobs.csv").read_text().splitlines()[0]
    assert head.endswith(",preempted,network_topology,lca_tier,max_lca_tier,why")
    assert (out / "run0-none" / "jobs.csv").is_file()
    page = (out / "compare.html").read_text()
    assert "Network topology: spread vs wait" in page and "hard:leaf" in page
    assert "tier 1 (leaf): 4 hypernodes of 2 nodes; tier 2 (spine): 2 hypernodes of 4 nodes" in page


@pytest.mark.parametrize(("args", "message"), [
    (["--topology", "leaf=0"], "--topology 'leaf=0': 'leaf=0': the count must be at least 1"),
    (["--topology", "leaf=2", "--hypernodes", "x.yaml"], "--hypernodes FILE or --topology SPEC, not both"),
    (["--hypernodes", "no-such-file.yaml"], "--hypernodes no-such-file.yaml: no such file"),
    (["--network-topology", "hard:1"], "--network-topology needs a topology"),
    (["--topology", "leaf=2", "--network-topology", "soft:1"], "soft mode takes no tier"),
    (["--topology", "leaf=2", "--network-topology", "soft", "soft"], "a value is given twice"),
    (["--network-topology-fraction", "0.5"], "--network-topology-fraction needs --network-topology"),
    (["--topology", "leaf=2", "--network-topology", "soft", "--network-topology-fraction", "2"], "2"),
])
def test_bad_topology_options_are_one_clear_error(tmp_path: Path, args: list[str], message: str) -> None:
    r = CliRunner().invoke(main, ["simulate", "--no-progress", "--out", str(tmp_path / "out"), "--cluster",
                                  "2x{cpu: 4, memory: 16Gi}", "--synthetic", "3", *args])
    assert r.exception is None or isinstance(r.exception, SystemExit), r.output
    assert r.exit_code == 2, r.output
    assert message in r.output, r.output
    assert "Traceback" not in r.output


def test_unknown_tier_name_is_a_warning(tmp_path: Path) -> None:
    r = CliRunner().invoke(main, ["simulate", "--no-progress", "--out", str(tmp_path / "out"), "--cluster",
                                  "2x{cpu: 4, memory: 16Gi}", "--synthetic", "3", "--gang-sizes", "2",
                                  "--topology", "leaf=2", "--network-topology", "hard:rack"])
    assert r.exit_code == 0, r.output
    assert "no HyperNode has tierName 'rack' (leaf); Volcano then sets no hard limit" in r.output


# --- sweeps -------------------------------------------------------------------------------------------------
def sweep_file(tmp_path: Path, **over: Any) -> Path:
    d: dict[str, Any] = {"name": "topo", "cluster": "8x{cpu: 4, memory: 16Gi}", "topology": "leaf=2,spine=2",
                         "workload": {"synthetic": {"jobs": 10, "rate": 0.5, "gang_sizes": [2, 4],
                                                    "mean_duration": 30, "gpu_fraction": 0}},
                         "confs": [{"name": "nt", "file": NT_CONF}],
                         "grid": {"network_topology": ["none", "hard:1"]}, "seeds": [0]}
    d.update(over)
    p = tmp_path / "sweep.yaml"
    p.write_text(yaml.safe_dump(d))
    return p


@pytest.mark.parametrize(("change", "message"), [
    ({"topology": "leaf=0"}, "topology 'leaf=0': 'leaf=0': the count must be at least 1"),
    ({"hypernodes": "hn.yaml"}, "not both"),
    ({"topology": None}, "grid.network_topology: 'hard:1' needs a topology"),
    ({"grid": {"network_topology": ["soft:2"]}}, "grid.network_topology 'soft:2': soft mode takes no tier"),
    ({"grid": {"network_topology_fraction": [1.5]}}, "grid.network_topology_fraction: 1.5 must be <= 1"),
])
def test_bad_topology_in_sweep_files(tmp_path: Path, change: dict[str, Any], message: str) -> None:
    from pyvolcano.sim import sweep as sw

    (tmp_path / "hn.yaml").write_text("")
    with pytest.raises(UserError) as exc:
        sw.load_spec(sweep_file(tmp_path, **change))
    assert message in str(exc.value)


def test_sweep_over_constraints(tmp_path: Path) -> None:
    from pyvolcano.sim import sweep as sw

    pl = sw.plan(sw.load_spec(sweep_file(tmp_path)))
    assert [p.folder for p in pl.points] == ["nt__network_topology=none__seed=0", "nt__network_topology=hard-1__seed=0"]
    sw.run_sweep(pl, tmp_path / "out", workers=1)
    got = {}
    for p in pl.points:
        s = json.loads((tmp_path / "out" / "points" / p.folder / "summary.json").read_text())
        got[dict(p.params)["network_topology"]] = s["topology"]
    assert set(got["none"]["by_constraint"]) == {"none"} and set(got["hard:1"]["by_constraint"]) == {"hard:1"}
    assert got["hard:1"]["within_tier1"] == 1.0 and got["hard:1"]["hard_violations"] == 0
    rows = sw.aggregate(pl, tmp_path / "out")
    assert {r.params["network_topology"]: r.metrics["within_tier1"][0] for r in rows}["hard:1"] == 1.0


def test_simulate_with_a_hypernode_file(tmp_path: Path) -> None:
    """``--hypernodes`` with the cluster file itself: two racks by label and regex under one spine; every gang of
    ``hard:rack`` runs inside one rack."""
    nodes = parse_cluster_spec("2x{cpu: 4, memory: 16Gi, labels: {rack: a}} + 2x{cpu: 4, memory: 16Gi, labels: "
                               "{rack: b}}")
    hns = [{"apiVersion": st.API_VERSION, "kind": "HyperNode", "metadata": {"name": "rack-a"},
            "spec": {"tier": 1, "tierName": "rack", "members": [
                {"type": "Node", "selector": {"labelMatch": {"matchLabels": {"rack": "a"}}}}]}},
           {"apiVersion": st.API_VERSION, "kind": "HyperNode", "metadata": {"name": "rack-b"},
            "spec": {"tier": 1, "tierName": "rack", "members": [
                {"type": "Node", "selector": {"regexMatch": {"pattern": "node-000[23]"}}}]}},
           {"apiVersion": st.API_VERSION, "kind": "HyperNode", "metadata": {"name": "spine"},
            "spec": {"tier": 2, "members": [{"type": "HyperNode", "selector": {"exactMatch": {"name": n}}}
                                             for n in ("rack-a", "rack-b")]}}]
    f = tmp_path / "cluster.yaml"
    f.write_text(yaml.safe_dump_all([*nodes, *hns]))
    r = CliRunner().invoke(main, ["simulate", "--no-progress", "--out", str(tmp_path / "out"), "--cluster", str(f),
                                  "--hypernodes", str(f), "--synthetic", "10", "--gang-sizes", "2,3",
                                  "--rate", "0.5", "--mean-duration", "30", "-c", NT_CONF,
                                  "--network-topology", "hard:rack", "-o", "json"])
    assert r.exit_code == 0, r.output
    topo = json.loads(r.stdout)["topology"]
    assert topo["tier_names"] == {"rack": 1} and topo["hard_violations"] == 0
    assert topo["by_constraint"]["hard:rack"]["jobs"] == 10 and topo["within_tier1"] == 1.0
    assert "tier 1 (rack): 2 hypernodes of 2 nodes; tier 2: 1 hypernode of 4 nodes" in \
        (tmp_path / "out" / "report.html").read_text()
