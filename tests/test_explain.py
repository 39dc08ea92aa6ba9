"""``pyvolcano explain`` and the fix search (issue 30 items 1 and 4): why a job is pending, the fixes each checked
by running the session again with the change, the short reason in ``cycle -o wide``, ``cycle -v`` ranking only
nodes with room, unused kinds named and repeated warnings collapsed."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from pyvolcano.analysis.whatif import explain
from pyvolcano.cache.cache import KINDS, SchedulerCache
from pyvolcano.cache.manifests import unused_kinds
from pyvolcano.cli import main
from pyvolcano.collapse import collapse
from pyvolcano.conf.loader import load_conf
from pyvolcano.errors import UserError
from pyvolcano.framework.cycle import run_session

CONF = load_conf("""
actions: "enqueue, allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: overcommit}, {name: drf}, {name: predicates}, {name: proportion}, {name: nodeorder},
            {name: binpack}]
""", "test")


def node(name: str, cpu: str = "8", **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
            "status": {"allocatable": {"cpu": cpu, "memory": "32Gi", "pods": "110"}}}


def gang(name: str, n: int, cpu: str, *, queue: str = "default", min_member: int | None = None,
         priority: int | None = None, ns: str = "ns", **spec: Any) -> list[dict[str, Any]]:
    pg = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
          "metadata": {"name": name, "namespace": ns},
          "spec": {"minMember": n if min_member is None else min_member, "queue": queue, **spec}}
    pods = []
    for i in range(n):
        pod_spec: dict[str, Any] = {"schedulerName": "volcano",
                                    "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}
        if priority is not None:
            pod_spec["priority"] = priority
        pods.append({"apiVersion": "v1", "kind": "Pod",
                     "metadata": {"name": f"{name}-{i}", "namespace": ns,
                                  "annotations": {"scheduling.k8s.io/group-name": name}},
                     "spec": pod_spec, "status": {"phase": "Pending"}})
    return [pg, *pods]


def queue(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name},
            "spec": {"weight": 1, **spec}, "status": {"state": "Open"}}


GANG = [node("n1"), node("n2"), node("n3"), *gang("g", 4, "6")]
BIG = [node("n1"), node("n2"), *gang("b", 1, "10")]


def started(objects: list[dict[str, Any]], uid: str) -> bool:
    """The independent check of a fix: a fresh session on the changed objects places the job."""
    r = run_session(SchedulerCache.from_objects(objects), CONF)
    pods = [p for p in (*r.binds, *r.pipelined) if p.startswith(uid.split("/")[0] + "/" + uid.split("/")[1])]
    return bool(pods) and uid not in r.unschedulable


def with_pg(objects: list[dict[str, Any]], change: dict[str, Any]) -> list[dict[str, Any]]:
    out = copy.deepcopy(objects)
    for o in out:
        if o["kind"] == "PodGroup":
            o["spec"].update(change)
    return out


def test_gang_that_does_not_fit_together() -> None:
    """4 pods of 6 cpu on three empty 8-cpu nodes: each fits a node alone, 3 fit at once."""
    e = explain(GANG, CONF, "ns/g")
    assert (e.placed, e.needed) == (3, 4)
    assert e.reason.startswith("3 of 4 placed")
    assert "0/3 nodes are available: 3 Insufficient cpu" in e.message  # Volcano's own text is kept apart
    fixes = {f.kind: f for f in e.fixes}
    assert fixes["minAvailable"].data == {"value": 3} and fixes["minAvailable"].verified
    assert fixes["nodes"].data == {"count": 1, "resources": {"cpu": "6"}} and fixes["nodes"].verified
    assert fixes["requests"].data == {"resources": {"cpu": "4"}} and fixes["requests"].verified
    assert "minAvailable 3" in e.short()
    # each fix verified again here, independently, and the situation before it is really stuck
    assert not started(GANG, "ns/g")
    assert started(with_pg(GANG, {"minMember": 3}), "ns/g")
    assert started([*GANG, node("extra", "6")], "ns/g")
    more = copy.deepcopy(GANG)
    for o in more:
        if o["kind"] == "Pod":
            o["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "4"
    assert started(more, "ns/g")
    # 4.1 cpu does not fit two to a node: 4 is the largest request that does
    for o in more:
        if o["kind"] == "Pod":
            o["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "4100m"
    assert not started(more, "ns/g")


def test_pod_larger_than_any_node() -> None:
    e = explain(BIG, CONF, "ns/b-0")  # a pod names its job
    assert e.podgroup == "ns/b"
    assert "larger than any node" in e.reason and "10 cpu" in e.reason and "8" in e.reason
    assert e.path.tasks[0].too_big == {"cpu": (10000.0, 8000.0)}
    fixes = {f.kind: f for f in e.fixes}
    assert fixes["requests"].data == {"resources": {"cpu": "8"}}
    assert fixes["nodes"].data == {"count": 1, "resources": {"cpu": "10"}}
    assert "minAvailable" not in fixes  # nothing of it fits: a smaller gang does not help


def test_path_lists_every_refusal_with_its_plugin() -> None:
    tainted = node("t1", "16")
    tainted["spec"] = {"taints": [{"key": "dedicated", "value": "infra", "effect": "NoSchedule"}]}
    e = explain([*BIG, tainted], CONF, "ns/b")
    refused = {g.reasons: g.nodes for g in e.path.tasks[0].refused}
    assert refused[(("resources", "Insufficient cpu"),)] == ["n1", "n2"]
    assert any(plugin == "predicates" and "taint" in text for r in refused for plugin, text in r)
    assert [v.plugin for v in e.path.enqueue] == ["overcommit", "proportion"]
    # the tainted node is large enough: no "larger than any node"; a new node copies no taint it cannot pass
    assert not e.path.tasks[0].too_big


def test_queue_fix_moves_to_a_queue_with_room() -> None:
    objs = [node("n1", "16"), queue("small", capability={"cpu": "2"}), queue("big"),
            *gang("q", 1, "4", queue="small")]
    e = explain(objs, CONF, "ns/q")
    assert e.reason == "0 of 1 placed: queue small has no room for the task (allocatable check failed)"
    fix = next(f for f in e.fixes if f.kind == "queue")
    assert fix.verified and fix.data["queue"] in ("big", "default")
    assert started(with_pg(objs, {"queue": fix.data["queue"]}), "ns/q")


def test_topology_fix_loosens_the_tier() -> None:
    objs = [node("a1", "8"), node("b1", "8"),
            {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": {"name": "s-a"},
             "spec": {"tier": 1, "members": [{"type": "Node", "selector": {"exactMatch": {"name": "a1"}}}]}},
            {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": {"name": "s-b"},
             "spec": {"tier": 1, "members": [{"type": "Node", "selector": {"exactMatch": {"name": "b1"}}}]}},
            {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": {"name": "top"},
             "spec": {"tier": 2, "members": [{"type": "HyperNode", "selector": {"exactMatch": {"name": "s-a"}}},
                                             {"type": "HyperNode", "selector": {"exactMatch": {"name": "s-b"}}}]}},
            *gang("t", 2, "6", networkTopology={"mode": "hard", "highestTierAllowed": 1})]
    conf = load_conf("""
actions: "enqueue, allocate"
tiers:
- plugins: [{name: priority}, {name: gang}]
- plugins: [{name: predicates}, {name: proportion}, {name: nodeorder}, {name: network-topology-aware}]
""", "test")
    e = explain(objs, conf, "ns/t")
    fix = next((f for f in e.fixes if f.kind == "topology"), None)
    assert fix is not None and fix.verified, e.fixes
    assert fix.data["networkTopology"] == {"mode": "hard", "highestTierAllowed": 2}


def test_preempt_fix_names_the_victims() -> None:
    classes = [{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": n},
                "value": v} for n, v in (("low", 1), ("high", 1000))]
    # low runs 2 pods of 4 cpu on n1 with minMember 1: gang lets one go
    objs = [node("n1", "8"), *classes, *gang("low", 2, "4", min_member=1, priority=1, priorityClassName="low"),
            *gang("high", 1, "4", priority=1000, priorityClassName="high")]
    for o in objs:
        if o["kind"] == "Pod" and o["metadata"]["name"].startswith("low-"):
            o["spec"]["nodeName"], o["status"]["phase"] = "n1", "Running"
        if o["kind"] == "PodGroup":  # high admitted already (else overcommit keeps it Pending: nothing to take)
            o["status"] = {"phase": "Running" if o["metadata"]["name"] == "low" else "Inqueue"}
    e = explain(objs, CONF, "ns/high")
    fix = next(f for f in e.fixes if f.kind == "preempt")
    assert len(fix.data["victims"]) == 1 and fix.data["victims"][0].startswith("ns/low-") and fix.verified
    assert e.victims == fix.data["victims"] and "a conf with preempt and reclaim" in fix.text


def test_search_is_bounded_and_says_so() -> None:
    e = explain(GANG, CONF, "ns/g", max_runs=2)
    assert e.runs == 2
    assert "stopped after 2 re-run(s)" in e.stopped and "nodes" in e.stopped
    full = explain(GANG, CONF, "ns/g")
    assert full.stopped == "" and full.runs > 2


def test_snapshot_too_large_to_rerun() -> None:
    """A budget smaller than one session: refused with the reason; --max-runs 0 still gives the path."""
    with pytest.raises(UserError, match="too large to search fixes in"):
        explain(GANG, CONF, "ns/g", budget=1e-9)
    e = explain(GANG, CONF, "ns/g", max_runs=0, budget=1e-9)
    assert e.runs == 0 and not e.fixes and e.path.tasks and "not tried: minAvailable" in e.stopped


def test_bad_targets() -> None:
    with pytest.raises(UserError, match="no such PodGroup or pod"):
        explain(GANG, CONF, "ns/nope")
    running = copy.deepcopy(BIG)
    for o in running:
        if o["kind"] == "Pod":
            o["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "1"
            o["spec"]["nodeName"], o["status"]["phase"] = "n1", "Running"
        if o["kind"] == "PodGroup":
            o["status"] = {"phase": "Running"}
    with pytest.raises(UserError, match="not pending"):
        explain(running, CONF, "ns/b")


def test_schedulable_job_has_nothing_to_fix() -> None:
    e = explain([node("n1"), *gang("s", 1, "2")], CONF, "ns/s")
    assert e.schedulable and not e.fixes and e.reason.startswith("schedulable now")


# --- the CLI ------------------------------------------------------------------------------------------------------

def scenario(tmp_path: Path, objects: list[dict[str, Any]]) -> str:
    p = tmp_path / "snap.yaml"
    p.write_text(yaml.safe_dump({"objects": objects, "config": CONF.model_dump(mode="json")}))
    return str(p)


def cli(*args: str) -> Any:
    return CliRunner().invoke(main, list(args), env={"COLUMNS": "80"})


def test_cli_text_fits_80_columns(tmp_path: Path) -> None:
    r = cli("explain", scenario(tmp_path, GANG), "ns/g")
    assert r.exit_code == 0, r.output
    assert max(len(line) for line in r.stdout.splitlines()) <= 80
    assert "3 of 4 placed" in r.stdout and "minAvailable 3 (from 4)" in r.stdout
    assert "add a node with >= 6 cpu" in r.stdout and "Fixes" in r.stdout


def test_cli_json_is_the_issue_shape(tmp_path: Path) -> None:
    r = cli("explain", scenario(tmp_path, GANG), "ns/g", "-o", "json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert {"podgroup": "ns/g", "placed": 3, "needed": 4}.items() <= d.items()
    assert {"kind": "minAvailable", "value": 3, "verified": True} .items() <= d["fixes"][0].items()
    nodes = next(f for f in d["fixes"] if f["kind"] == "nodes")
    assert nodes["count"] == 1 and nodes["resources"] == {"cpu": "6"} and nodes["text"]


def test_cli_bad_input_exits_2(tmp_path: Path) -> None:
    snap = scenario(tmp_path, GANG)
    for args, text in ((["ns/none"], "no such PodGroup"), (["g"], "NAMESPACE/NAME")):
        r = cli("explain", snap, *args)
        assert r.exit_code == 2 and text in r.stderr and "Traceback" not in r.output
    r = cli("explain", str(tmp_path / "missing.yaml"), "ns/g")
    assert r.exit_code == 2


def test_cycle_wide_has_the_short_reason(tmp_path: Path) -> None:
    r = cli("cycle", scenario(tmp_path, GANG), "-o", "wide")
    assert r.exit_code == 0, r.output
    text = " ".join(r.stdout.replace("│", " ").split())
    assert "0/3 nodes are available: 3 Insufficient cpu." in text  # Volcano's message, unchanged
    assert "-> 3 of 4 placed" in text and "fix: minAvailable 3" in text
    assert max(len(line) for line in r.stdout.splitlines()) <= 80
    j = cli("cycle", scenario(tmp_path, GANG), "-o", "json")
    assert "fix" not in json.loads(j.stdout)["unschedulable"]["ns/g"]  # the JSON contract stays Volcano's


def test_cycle_verbose_ranks_only_nodes_with_room(tmp_path: Path) -> None:
    busy = [node("n1", "4"), node("n2", "8"), *gang("v", 1, "6")]
    r = cli("cycle", scenario(tmp_path, busy), "-v", "-o", "json")
    s = json.loads(r.stdout)["scores"]["ns/v-0"]
    assert [b["node"] for b in s["best"]] == ["n2"] and s["feasibleNodes"] == 1
    assert s["failed"] == {"Insufficient cpu": 1}


# --- item 4 -------------------------------------------------------------------------------------------------------

def test_unused_kinds_named_once(tmp_path: Path) -> None:
    extra = [{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "ns"}},
             {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "j", "namespace": "ns"}},
             {"apiVersion": "v1", "kind": "Pdo", "metadata": {"name": "x", "namespace": "ns"}}]
    line = unused_kinds([*GANG, *extra], KINDS, "snap.yaml")
    assert line is not None and "\n" not in line
    assert "1 Deployment (the scheduler reads pods" in line and "did you mean Pod?" in line
    assert "Job (batch.volcano.sh)" in line and "simulate" in line
    assert unused_kinds(GANG, KINDS, "snap.yaml") is None
    r = cli("cycle", scenario(tmp_path, [*GANG, *extra]), "-o", "json")
    assert r.exit_code == 0 and r.stderr.count("not read by the scheduler") == 1


def test_repeated_warnings_collapse_with_a_hint() -> None:
    lines = [f"Job default/syn-{i:06d}: task worker: requests memory {2 ** (i % 3)}Gi per pod, a resource no node "
             "has; job skipped" for i in range(20)] + ["Queue q: something else"]
    out = collapse(lines)
    assert len(out) == 2 and "(and 19 more like it; " in out[0] and "memory: 16Gi" in out[0]
    assert out[1] == "Queue q: something else"
    assert collapse(lines[:2]) == lines[:2]  # two are said as they are


def test_simulator_jobs_csv_says_why_a_job_never_started(tmp_path: Path) -> None:
    def job(name: str, n: int, cpu: str) -> dict[str, Any]:
        return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
                "metadata": {"name": name, "namespace": "default"},
                "spec": {"minAvailable": n, "schedulerName": "volcano", "tasks": [
                    {"replicas": n, "name": "w", "template": {
                        "metadata": {"annotations": {"pyvolcano.io/duration": "100"}},
                        "spec": {"containers": [{"name": "c", "resources": {
                            "requests": {"cpu": cpu, "memory": "1Gi"}}}]}}}]}}

    wl = tmp_path / "jobs.yaml"
    wl.write_text(yaml.safe_dump_all([job("wide", 4, "6"), job("ok", 1, "2")]))
    r = CliRunner().invoke(main, ["simulate", "--workload", str(wl), "--cluster", "3x{cpu: 8, memory: 32Gi}",
                                  "--out", str(tmp_path / "out"), "--no-progress"])
    assert r.exit_code == 0, r.output
    import csv

    rows = {row["job"]: row for row in csv.DictReader((tmp_path / "out" / "jobs.csv").open())}
    assert rows["default/ok"]["why"] == ""
    assert rows["default/wide"]["why"].startswith("3 of 4 placed") and "fix: minAvailable 3" in \
        rows["default/wide"]["why"]


def test_nodes_fix_keeps_the_pods_node_selector() -> None:
    objs = copy.deepcopy([node("n1"), *gang("sel", 1, "2")])
    objs[2]["spec"]["nodeSelector"] = {"pool": "gpu"}
    e = explain(objs, CONF, "ns/sel")
    assert "didn't match Pod's node affinity/selector" in e.reason and e.placed == 0
    fix = next(f for f in e.fixes if f.kind == "nodes")
    assert fix.verified and fix.data["labels"] == {"pool": "gpu"} and "labelled pool=gpu" in fix.text
    assert not started([*objs, node("new", "2")], "ns/sel")
    assert started([*objs, node("new", "2", pool="gpu")], "ns/sel")


def test_larger_than_any_node_comes_before_overcommit() -> None:
    """One 8-cpu node, a 10-cpu pod with minResources: Volcano says "resource in cluster is overused"; the short
    reason names the cause."""
    objs = [node("n1"), *gang("b", 1, "10", minResources={"cpu": "10"})]
    e = explain(objs, CONF, "ns/b")
    assert "resource in cluster is overused" in e.message
    assert e.reason.startswith("pod b-0 requests 10 cpu (the largest node has 8): larger than any node")
    fix = next(f for f in e.fixes if f.kind == "requests")
    assert fix.data == {"resources": {"cpu": "8"}} and fix.verified
