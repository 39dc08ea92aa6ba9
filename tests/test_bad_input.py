"""Bad input through the real CLI and in-process: one clear line naming the object and field, exit code 2
for user errors, never a traceback; a single bad object is skipped with a warning and the rest scheduled."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.cache.manifests import parse_objects
from pyvolcano.conf.loader import load_conf
from pyvolcano.errors import ConfigError, UserError
from pyvolcano.framework.cycle import cycle_objects, result_json

EXE = str(Path(sys.executable).with_name("pyvolcano"))

CONF = """\
actions: "enqueue, allocate"
tiers:
- plugins:
  - name: gang
- plugins:
  - name: predicates
"""


def node(name: str, cpu: str = "4") -> dict:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
            "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}}}


def pod(name: str, cpu: str = "1", group: str | None = None, ns: str = "ns") -> dict:
    md: dict = {"name": name, "namespace": ns}
    if group:
        md["annotations"] = {"scheduling.k8s.io/group-name": group}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": md,
            "spec": {"schedulerName": "volcano",
                     "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]},
            "status": {"phase": "Pending"}}


def podgroup(name: str, queue: str | None = None, ns: str = "ns") -> dict:
    spec: dict = {"minMember": 1}
    if queue:
        spec["queue"] = queue
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": ns}, "spec": spec, "status": {"phase": "Inqueue"}}


def run(tmp_path: Path, snapshot: str | list[dict], conf: str | None = CONF, *args: str,
        stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """``pyvolcano cycle`` in a subprocess; ``snapshot`` is YAML text or a list of objects."""
    snap = tmp_path / "snap.yaml"
    snap.write_text(snapshot if isinstance(snapshot, str) else yaml.safe_dump_all(snapshot))
    cmd = [EXE, "cycle", "-" if stdin is not None else str(snap), "--output", "json", *args]
    if conf is not None:
        (tmp_path / "conf.yaml").write_text(conf)
        cmd += ["--config", str(tmp_path / "conf.yaml")]
    return subprocess.run(cmd, capture_output=True, text=True, input=stdin, check=False, timeout=60)


def user_error(out: subprocess.CompletedProcess[str]) -> str:
    assert out.returncode == 2, (out.returncode, out.stdout, out.stderr)
    assert "Traceback" not in out.stderr
    assert out.stdout == ""
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert lines[0].startswith("pyvolcano: error: ")
    return lines[0]


# --- through the CLI -------------------------------------------------------------------------------------
def test_malformed_snapshot_yaml_names_the_line(tmp_path: Path) -> None:
    text = "apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\n status: {}\n"
    msg = user_error(run(tmp_path, text))
    assert "snap.yaml" in msg and "line 5" in msg


def test_malformed_conf_yaml_names_the_line(tmp_path: Path) -> None:
    msg = user_error(run(tmp_path, [node("n1")], 'actions: "allocate"\ntiers:\n- plugins:\n  - name: [gang\n'))
    assert "conf.yaml" in msg and "line 5" in msg


def test_unknown_action_lists_known_ones(tmp_path: Path) -> None:
    msg = user_error(run(tmp_path, [node("n1")], CONF.replace("allocate", "alocate")))
    assert "line 1" in msg and "'alocate'" in msg
    for known in ("allocate", "backfill", "enqueue", "preempt", "reclaim"):
        assert known in msg


def test_unknown_plugin_names_line_and_lists_known_ones(tmp_path: Path) -> None:
    msg = user_error(run(tmp_path, [node("n1")], CONF.replace("name: predicates", "name: predicate")))
    assert "line 6" in msg and "'predicate'" in msg
    for known in ("binpack", "drf", "gang", "nodeorder", "overcommit", "predicates", "priority", "proportion"):
        assert known in msg


def test_bad_enable_flag_value(tmp_path: Path) -> None:
    conf = CONF.replace("  - name: gang\n", "  - name: gang\n    enableJobOrder: maybe\n")
    msg = user_error(run(tmp_path, [node("n1")], conf))
    assert "line 5" in msg and "enableJobOrder" in msg and "'maybe'" in msg


def test_bad_plugin_argument_names_plugin_and_argument(tmp_path: Path) -> None:
    conf = CONF.replace("  - name: predicates\n",
                        "  - name: overcommit\n    arguments:\n      overcommit-factor: lots\n")
    msg = user_error(run(tmp_path, [node("n1")], conf))
    assert "overcommit" in msg and "overcommit-factor" in msg and "'lots'" in msg


@pytest.mark.parametrize(("plugin", "args", "says"), [
    # plugins that read nested or structured arguments raise "plugin NAME: ..." themselves when the session opens
    ("usage", "{thresholds: {cpu: abc}}", "plugin usage: argument thresholds.cpu = 'abc' is not an integer"),
    ("resource-strategy-fit", "{resourceStrategyFitWeight: zz}",
     "plugin resource-strategy-fit: argument 'resourceStrategyFitWeight' = 'zz'"),
    ("tdm", "{tdm.revocable-zone.rz1: '25:00-3:00'}", "'25:00' is out of range"),
    ("rescheduling", "{strategies: 3}", "plugin rescheduling: argument 'strategies' = 3"),
    ("extender", "{extender.predicateVerb: filter}", "'extender.urlPrefix' is required"),
    ("numa-aware", "{weight: abc}", "plugin numa-aware: argument 'weight' = 'abc' is not an integer"),
    ("task-topology", "{task-topology.weight: [1]}", "argument 'task-topology.weight' = [1] is not an integer"),
])
def test_malformed_plugin_arguments_name_file_line_plugin_and_argument(tmp_path: Path, plugin: str, args: str,
                                                                        says: str) -> None:
    """Issue 29's bad input: every plugin's malformed arguments are one line naming the conf file, the plugin's
    line, the plugin and the argument, whether the loader or the plugin (when the session opens) finds them."""
    conf = CONF.replace("  - name: predicates\n", f"  - name: predicates\n  - name: {plugin}\n    arguments: {args}\n")
    msg = user_error(run(tmp_path, [node("n1"), podgroup("a"), pod("a-0", group="a")], conf))
    assert f"conf.yaml: line 7: plugin {plugin}:" in msg and says in msg, msg


def test_missing_snapshot_file(tmp_path: Path) -> None:
    out = subprocess.run([EXE, "cycle", str(tmp_path / "nope.yaml")], capture_output=True, text=True, check=False)
    assert "nope.yaml" in user_error(out)


def test_bad_objects_are_skipped_with_a_warning_and_the_rest_is_scheduled(tmp_path: Path) -> None:
    no_alloc = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "empty"}, "status": {}}
    no_spec = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "nospec", "namespace": "ns"}}
    no_name = pod("x")
    del no_name["metadata"]["name"]
    bad_qty = pod("badq", cpu="two")
    objs = [node("n1"), no_alloc, no_spec, no_name, bad_qty, podgroup("pg"), pod("good", group="pg")]
    out = run(tmp_path, objs)
    assert out.returncode == 2, out.stderr  # the rest is scheduled and printed, the mistake still fails
    assert "Traceback" not in out.stderr
    assert json.loads(out.stdout)["binds"] == {"ns/good": "n1"}
    warnings = out.stderr
    assert "Node empty: field status.allocatable: is required" in warnings
    assert "Pod ns/nospec: field spec: is required" in warnings
    assert "Pod ns/<unnamed>: field metadata.name: is required" in warnings
    assert "Pod ns/badq: field spec.containers[0].resources.requests.cpu: 'two' is not a quantity" in warnings


def test_strict_turns_a_skipped_object_into_an_error(tmp_path: Path) -> None:
    msg = user_error(run(tmp_path, [node("n1"), pod("badq", cpu="2x")], CONF, "--strict"))
    assert "Pod ns/badq" in msg and "spec.containers[0].resources.requests.cpu" in msg


def test_pod_naming_a_missing_podgroup(tmp_path: Path) -> None:
    out = run(tmp_path, [node("n1"), pod("orphan", group="gone"), podgroup("pg"), pod("ok", group="pg")])
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["binds"] == {"ns/ok": "n1"}
    assert "ns/gone" in out.stderr and "PodGroup ns/gone does not exist" in out.stderr
    assert "Traceback" not in out.stderr


def test_podgroup_naming_a_missing_queue(tmp_path: Path) -> None:
    out = run(tmp_path, [node("n1"), podgroup("lost", queue="nowhere"), pod("l", group="lost")])
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["binds"] == {}
    assert "queue 'nowhere' of PodGroup ns/lost does not exist" in out.stderr


@pytest.mark.parametrize("text", ["", "---\n", "# nothing here\n", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"])
def test_empty_or_non_snapshot_input_is_an_error(tmp_path: Path, text: str) -> None:
    """Issue 17: an empty file (or one with nothing the scheduler reads) is a mistake, not an empty table."""
    msg = user_error(run(tmp_path, text))
    assert "not a cluster snapshot" in msg


def test_empty_scenario_is_an_empty_decision(tmp_path: Path) -> None:
    """A scenario file with ``objects: []`` says what it is: its (empty) decision is printed."""
    out = run(tmp_path, "config: |\n  actions: allocate\nobjects: []\n", None)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == {"binds": {}, "evictions": [], "pipelined": {}, "podgroups": {},
                                      "unschedulable": {}, "nominated": {}}


def test_stdin_and_kind_list(tmp_path: Path) -> None:
    listed = {"apiVersion": "v1", "kind": "List", "items": [node("n1"), podgroup("pg"), pod("p", group="pg")]}
    out = run(tmp_path, "", CONF, stdin=yaml.safe_dump(listed))
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["binds"] == {"ns/p": "n1"}


def test_conf_given_as_configmap(tmp_path: Path) -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap",
          "metadata": {"name": "volcano-scheduler-configmap", "namespace": "volcano-system"},
          "data": {"volcano-scheduler.conf": CONF}}
    out = run(tmp_path, [node("n1"), podgroup("pg"), pod("p", group="pg")], yaml.safe_dump(cm))
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["binds"] == {"ns/p": "n1"}


def test_binary_snapshot(tmp_path: Path) -> None:
    (tmp_path / "bin.yaml").write_bytes(b"\x00\x01\xff\xfe")
    out = subprocess.run([EXE, "cycle", str(tmp_path / "bin.yaml")], capture_output=True, text=True, check=False)
    assert "not a text file" in user_error(out)


def test_table_output_shows_skipped_objects(tmp_path: Path) -> None:
    (tmp_path / "snap.yaml").write_text(yaml.safe_dump_all([node("n1"), pod("badq", cpu="two")]))
    out = subprocess.run([EXE, "cycle", str(tmp_path / "snap.yaml"), "--output", "table"], capture_output=True,
                         text=True, check=False)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "skipped object" in out.stdout and "ns/badq" in out.stdout


# --- in-process ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("text", "where"), [
    ("tiers: []\n", "line 1: actions: Field required"),
    ("", "expected a mapping"),
    ('actions: "allocate"\ntiers: {a: 1}\n', "line 2: tiers"),
    ('actions: "allocate"\ntiers:\n- plugins:\n  - gang\n', "line 4: tiers.0.plugins.0"),
    ('actions: "allocate"\ntiers:\n- plugins:\n  - name: gang\n    arguments: [1]\n', "line 5"),
    ('actions: ""\n', "no action given"),
    ('actions: "allocate"\ntiers:\n- plugins:\n  - name: nosuch.module:Thing\n', "cannot import"),
])
def test_conf_errors_name_the_line(text: str, where: str) -> None:
    with pytest.raises(ConfigError) as exc:
        load_conf(text, "c.yaml")
    assert where in str(exc.value)
    assert "\n" not in str(exc.value)


def test_configmap_errors_point_into_the_configmap_file() -> None:
    text = ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: vs}\ndata:\n  volcano-scheduler.conf: |\n"
            "    actions: \"allocate\"\n    tiers:\n    - plugins:\n      - name: gnag\n")
    with pytest.raises(ConfigError, match=r"line 9: unknown plugin 'gnag'"):
        load_conf(text, "cm.yaml")
    with pytest.raises(ConfigError, match=r"has no 'volcano-scheduler\.conf' key"):
        load_conf("kind: ConfigMap\nmetadata: {name: x}\ndata: {a: '1', b: '2'}\n", "cm.yaml")
    only = load_conf(yaml.safe_dump({"kind": "ConfigMap", "data": {"scheduler.conf": CONF}}))
    assert only.actions == ["enqueue", "allocate"]


@pytest.mark.parametrize(("obj", "field"), [
    ({"kind": "Node", "metadata": {"name": "n"}, "status": {"allocatable": 5}}, "status.allocatable"),
    ({"kind": "Node", "metadata": {"name": "n"}, "spec": {"taints": [{"key": "k", "effect": "Sometimes"}]},
      "status": {"allocatable": {"cpu": "1"}}}, "spec.taints[0].effect"),
    ({"kind": "Node", "metadata": {"name": "n", "labels": ["a"]}, "status": {"allocatable": {"cpu": "1"}}},
     "metadata.labels"),
    ({"kind": "PodGroup", "metadata": {"name": "g", "namespace": "ns"}, "spec": {"minMember": "abc"}},
     "spec.minMember"),
    ({"kind": "PodGroup", "metadata": {"name": "g", "namespace": "ns"}, "spec": {"minResources": {"cpu": "x"}}},
     "spec.minResources.cpu"),
    ({"kind": "PodGroup", "metadata": {"name": "g", "namespace": "ns"}, "status": {"phase": "Sleeping"}},
     "status.phase"),
    ({"kind": "Queue", "metadata": {"name": "q"}, "spec": {"weight": -1}}, "spec.weight"),
    ({"kind": "Queue", "metadata": {"name": "q"}, "spec": {"capability": {"memory": "lots"}}},
     "spec.capability.memory"),
    ({"kind": "PriorityClass", "metadata": {"name": "p"}, "value": "high"}, "value"),
    ({"kind": "Pod", "metadata": 7}, "metadata"),
    ({"kind": "Pod", "metadata": {"name": "p", "namespace": "ns"}, "spec": {"containers": 5}}, "spec.containers"),
    ({"kind": "Pod", "metadata": {"name": "p", "namespace": "ns"}, "spec": {"containers": []}}, "spec.containers"),
    ({"kind": "Pod", "metadata": {"name": "p", "namespace": "ns", "creationTimestamp": "yesterday"},
      "spec": {"containers": [{"name": "c"}]}}, "metadata.creationTimestamp"),
    ({"kind": "Pod", "metadata": {"name": "p", "namespace": "ns"},
      "spec": {"containers": [{"name": "c"}], "priority": "high"}}, "spec.priority"),
    ({"kind": "Pod", "metadata": {"name": "p", "namespace": "ns"},
      "spec": {"containers": [{"name": "c"}], "tolerations": 5}}, "spec.tolerations"),
    ({"kind": "Pod", "metadata": {"name": "p", "namespace": "ns"},
      "spec": {"containers": [{"name": "c"}], "nodeSelector": ["a"]}}, "spec.nodeSelector"),
    ({"kind": "Pod", "metadata": {"name": "p", "namespace": "ns"},
      "spec": {"containers": [{"name": "c", "ports": [{"hostPort": "http"}]}]}},
     "spec.containers[0].ports[0].hostPort"),
    ({"kind": "Pod", "metadata": {"name": "p", "namespace": "ns"},
      "spec": {"containers": [{"name": "c"}], "affinity": {"nodeAffinity": {
          "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
              {"matchExpressions": [{"key": "k", "operator": "Near", "values": ["a"]}]}]}}}}},
     "nodeSelectorTerms[0].matchExpressions[0].operator"),
    ({"kind": "Pod", "metadata": {"name": "p", "namespace": "ns"},
      "spec": {"containers": [{"name": "c"}], "affinity": {"nodeAffinity": {
          "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
              {"matchExpressions": [{"key": "cores", "operator": "Gt", "values": ["many"]}]}]}}}}},
     "matchExpressions[0].values"),
    ({"kind": "Pod", "metadata": {"name": "p", "namespace": "ns"},
      "spec": {"containers": [{"name": "c"}], "affinity": {"nodeAffinity": {
          "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
              {"matchExpressions": [{"key": "cores", "operator": "Lt", "values": ["²"]}]}]}}}}},
     "matchExpressions[0].values"),
    ({"kind": "Pod", "metadata": {"name": "p", "namespace": "ns"},
      "spec": {"containers": [{"name": "c"}], "affinity": {"nodeAffinity": {
          "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
              {"matchExpressions": [{"key": "cores", "operator": "Gt", "values": ["\u0663"]}]}]}}}}},
     "matchExpressions[0].values"),
    ({"kind": "Pod", "metadata": {"name": "p", "namespace": "ns"},
      "spec": {"containers": [{"name": "c"}], "affinity": {"podAntiAffinity": {
          "requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "zone", "labelSelector": {
              "matchExpressions": [{"key": "app", "operator": "Gt", "values": ["1"]}]}}]}}}},
     "labelSelector.matchExpressions[0].operator"),
    ({"kind": "Node", "metadata": {"name": "n"}, "status": {"conditions": []}}, "status.allocatable"),
    ({"kind": "Queue", "metadata": {"name": "q"}, "status": {"state": "Sleeping"}}, "status.state"),
    ({"kind": "Namespace", "metadata": {"name": "team", "labels": {"a": ["b"]}}}, "metadata.labels.a"),
])
def test_one_bad_object_is_skipped_naming_object_and_field(obj: dict, field: str) -> None:
    good = [node("n1"), podgroup("pg"), pod("p", group="pg")]
    result, cache = cycle_objects([*good, obj], load_conf(CONF))
    assert len(cache.problems) == 1
    problem = cache.problems[0]
    assert field in problem, problem
    assert obj["kind"] in problem
    assert result_json(result)["binds"] == {"ns/p": "n1"}


def test_unquoted_label_and_selector_values_are_read_as_kubernetes_strings() -> None:
    n = node("n1")
    n["metadata"]["labels"] = {"cores": 16, "ssd": True}
    p = pod("p", group="pg")
    p["spec"]["nodeSelector"] = {"ssd": True}
    p["spec"]["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "cores", "operator": "In", "values": [16]}]}]}}}
    result, cache = cycle_objects([n, podgroup("pg"), p], load_conf(CONF))
    assert cache.problems == []
    assert result_json(result)["binds"] == {"ns/p": "n1"}


@pytest.mark.parametrize(("label", "fits"), [("16", True), ("\u0661\u0666", False), (" 16", False), ("+16", True)])
def test_gt_reads_node_labels_as_go_integers(label: str, fits: bool) -> None:
    """A Gt/Lt selector reads the node's label with Go's ParseInt: "١٦" (Arabic-Indic 16) or " 16" is no number,
    so the node does not match (Python's int() read both as 16)."""
    n = node("n1")
    n["metadata"]["labels"] = {"cores": label}
    p = pod("p", group="pg")
    p["spec"]["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "cores", "operator": "Gt", "values": ["8"]}]}]}}}
    result, cache = cycle_objects([n, podgroup("pg"), p], load_conf(CONF))
    assert cache.problems == []
    assert result_json(result)["binds"] == ({"ns/p": "n1"} if fits else {})


def test_snapshot_documents_that_are_not_objects() -> None:
    with pytest.raises(UserError, match="document 1 is a list"):
        parse_objects("- a\n- b\n", "s.yaml")
    with pytest.raises(UserError, match="items must be a list"):
        parse_objects("kind: List\nitems: 5\n", "s.yaml")
    with pytest.raises(UserError, match=r"s\.yaml: YAML error at line 3"):
        parse_objects("a: b\nc: [d\n", "s.yaml")


def test_unknown_kinds_are_ignored() -> None:
    cache = SchedulerCache.from_objects([{"kind": "Service", "metadata": {"name": "s"}}, node("n1")])
    assert cache.problems == [] and list(cache.nodes) == ["n1"]
