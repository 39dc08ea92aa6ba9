"""The worked example of docs/extending.md (examples/plugins/fewest_pods.py), loaded by ``module:Class`` from
the conf, in-process and through the CLI; placements computed by hand."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from pyvolcano.conf.loader import load_conf
from pyvolcano.framework.cycle import cycle_objects, result_json

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "plugins"

CONF = """\
actions: "enqueue, fewest_pods:FewestPods"
tiers:
- plugins:
  - name: gang
- plugins:
  - name: predicates
"""


def pod(name: str, cpu: str, group: str | None = None, node: str | None = None) -> dict[str, Any]:
    md: dict[str, Any] = {"name": name, "namespace": "ns"}
    spec: dict[str, Any] = {"schedulerName": "volcano" if group else "default-scheduler",
                            "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}
    if group:
        md["annotations"] = {"scheduling.k8s.io/group-name": group}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": md, "spec": spec,
            "status": {"phase": "Running" if node else "Pending"}}


def pg(name: str, min_member: int, minute: int) -> dict[str, Any]:
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "ns", "creationTimestamp": f"2026-01-01T00:0{minute}:00Z"},
            "spec": {"minMember": min_member}, "status": {"phase": "Pending"}}


def cluster() -> list[dict[str, Any]]:
    nodes = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": n},
              "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}} for n in ("n1", "n2", "n3")]
    others = [pod("x1", "500m", node="n1"), pod("x2", "500m", node="n1"), pod("x3", "500m", node="n3")]
    return [*nodes, *others,
            pg("a", 2, 0), pod("a-0", "1", "a"), pod("a-1", "1", "a"),
            pg("b", 3, 1), pod("b-0", "3", "b"), pod("b-1", "3", "b"), pod("b-2", "3", "b"),
            pg("c", 1, 2), pod("c-0", "1", "c")]


EXPECTED_BINDS = {"ns/a-0": "n2", "ns/a-1": "n2", "ns/c-0": "n3"}


def check(result: dict[str, Any]) -> None:
    # Pods per node at the start: n1 2, n2 0, n3 1.  a-0 -> n2 (0); a-1 -> n2 (n2 and n3 have 1, n2 is
    # listed first); a is ready -> committed.  b-0 (3 cpu) -> n3 (n1 and n3 have room, n3 has fewer pods);
    # b-1 -> n1 (only one left with 3 cpu); b-2 fits nowhere -> b (minMember 3) is discarded.
    # c-0 -> n3 (1 pod against 2 and 2, b-0 having been undone).
    assert result["binds"] == EXPECTED_BINDS
    assert result["pipelined"] == {}
    assert {k: v["phase"] for k, v in result["podgroups"].items()} == {
        "ns/a": "Inqueue", "ns/b": "Inqueue", "ns/c": "Inqueue"}  # bound this session: Inqueue until bound
    assert "0/3 nodes are available: 3 Insufficient cpu." in result["unschedulable"]["ns/b"]


def test_fewest_pods_in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(EXAMPLES))
    result, _ = cycle_objects(cluster(), load_conf(CONF))
    check(result_json(result))


def test_fewest_pods_through_the_cli(tmp_path: Path) -> None:
    (tmp_path / "snap.yaml").write_text(yaml.safe_dump_all(cluster()))
    (tmp_path / "conf.yaml").write_text(CONF)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(EXAMPLES), os.environ.get("PYTHONPATH")]))}
    exe = str(Path(sys.executable).with_name("pyvolcano"))
    out = subprocess.run([exe, "cycle", str(tmp_path / "snap.yaml"), "--config", str(tmp_path / "conf.yaml"),
                          "-o", "json"], capture_output=True, text=True, env=env, check=False, timeout=60)
    assert out.returncode == 0, out.stderr
    check(json.loads(out.stdout))


def test_without_the_module_on_the_path_the_conf_is_rejected(monkeypatch: pytest.MonkeyPatch) -> None:
    from pyvolcano.errors import ConfigError

    monkeypatch.setattr(sys, "path", [p for p in sys.path if Path(p).resolve() != EXAMPLES])
    sys.modules.pop("fewest_pods", None)
    with pytest.raises(ConfigError, match=r"line 1: action 'fewest_pods:FewestPods': cannot import it"):
        load_conf(CONF)


# --- the plugin example of docs/extending.md (examples/plugins/keep_batch_off_latency.py) ------------------------
LATENCY_CONF = """\
actions: "enqueue, allocate"
tiers:
- plugins:
  - name: gang
  - name: keep_batch_off_latency:KeepBatchOffLatency
    arguments: {penalty: 10}
- plugins:
  - name: predicates
"""


def latency_cluster(nodes: dict[str, dict[str, str]]) -> list[dict[str, Any]]:
    objs: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": n, "labels": labels},
         "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}} for n, labels in nodes.items()]
    objs.append(pod("x1", "500m", node=next(iter(nodes))))  # one pod on the first node
    for q in ("batch", "web"):
        objs.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": q},
                     "spec": {"weight": 1}})
        group = pg(q, 1, 0 if q == "batch" else 1)
        group["spec"]["queue"] = q
        objs += [group, pod(f"{q}-0", "1", q)]
    return objs


def test_keep_batch_off_latency_places_and_explains(monkeypatch: pytest.MonkeyPatch) -> None:
    """n1 (latency, one pod), n2 (latency), n3 (one pod): batch may use only n3; web takes the node with fewest pods
    (n2, the first of the empty ones).  With latency nodes only, the batch job's reason names the filter's
    Status reason for each node."""
    monkeypatch.syspath_prepend(str(EXAMPLES))
    lat = {"tier": "latency"}
    nodes = {"n1": lat, "n2": lat, "n3": {}}
    result, _ = cycle_objects(latency_cluster(nodes), load_conf(LATENCY_CONF))
    assert result_json(result)["binds"] == {"ns/batch-0": "n3", "ns/web-0": "n2"}
    result, _ = cycle_objects(latency_cluster({"n1": lat, "n2": lat}), load_conf(LATENCY_CONF))
    out = result_json(result)
    assert out["binds"] == {"ns/web-0": "n2"}
    assert "0/2 nodes are available: 2 node(s) are kept for latency work." in out["unschedulable"]["ns/batch"]


def test_example_plugins_type_check() -> None:
    """The examples are what plugin authors copy: they must pass mypy with the project's settings."""
    from mypy import api

    root = EXAMPLES.parents[1]
    out, err, code = api.run([str(EXAMPLES / "keep_batch_off_latency.py"), str(EXAMPLES / "fewest_pods.py"),
                              "--config-file", str(root / "pyproject.toml"), "--cache-dir",
                              str(root / ".mypy_cache")])
    assert code == 0, out + err
