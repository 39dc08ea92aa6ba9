"""The FGD paper's policies as plugins (plugins/fgd.py, plugins/gpupolicies.py, plugins/_gpushare.py): what the
scenarios of tests/scenarios/fgd/ cannot show -- the workload's task mix, the random choice among the best nodes,
the deviceChoice point's checks and the arguments."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from pyvolcano.api.gpufrag import GPU_MODEL_LABEL, TaskClass, TaskMix
from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.conf.loader import load_conf
from pyvolcano.errors import ConfigError
from pyvolcano.framework.cycle import run_session
from pyvolcano.framework.node_select import ScoreGroups
from pyvolcano.framework.plugin import Plugin
from pyvolcano.framework.session import Session


def node(name: str, gpus: int, model: str, cpu: int = 16) -> dict[str, Any]:
    """A gpushare node: ``gpus`` GPUs of 1000 milli-GPU, its model as label."""
    r = {"cpu": str(cpu), "memory": "64Gi", "pods": "110", "volcano.sh/gpu-number": str(gpus),
         "volcano.sh/gpu-memory": str(1000 * gpus)}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {GPU_MODEL_LABEL: model}},
            "status": {"allocatable": dict(r), "capacity": dict(r)}}


def pod(name: str, cpu: Any, gmem: int = 0, gnum: int = 0, node: str | None = None, index: str | None = None,
        ts: int = 1, models: list[str] | None = None) -> list[dict[str, Any]]:
    """A one-pod PodGroup and its pod: pending, or running on ``node`` with GPUs ``index``."""
    res = {"cpu": str(cpu), "memory": "1Gi"}
    if gmem:
        res["volcano.sh/gpu-memory"] = str(gmem)
    if gnum:
        res["volcano.sh/gpu-number"] = str(gnum)
    when = f"2026-01-01T00:00:{ts:02d}Z"
    ann = {"scheduling.k8s.io/group-name": name}
    spec: dict[str, Any] = {"schedulerName": "volcano",
                            "containers": [{"name": "c0", "resources": {"requests": res, "limits": res}}]}
    if models:
        term = {"matchExpressions": [{"key": GPU_MODEL_LABEL, "operator": "In", "values": models}]}
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [term]}}}
    if node:
        spec["nodeName"] = node
        if index is not None:
            ann["volcano.sh/gpu-index"] = index
    return [{"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
             "metadata": {"name": name, "namespace": "ns", "creationTimestamp": when},
             "spec": {"minMember": 1}, "status": {"phase": "Running" if node else "Inqueue"}},
            {"apiVersion": "v1", "kind": "Pod",
             "metadata": {"name": name, "namespace": "ns", "creationTimestamp": when, "annotations": ann},
             "spec": spec, "status": {"phase": "Running" if node else "Pending"}}]


def conf(policy: str, args: dict[str, Any] | None = None) -> str:
    """The examples/confs/fgd/ shape without enqueue."""
    entry: dict[str, Any] = {"name": policy, **({"arguments": args} if args else {})}
    c = {"actions": "allocate", "tiers": [{"plugins": [{"name": "gang"}]}, {"plugins": [
        {"name": "predicates"}, {"name": "deviceshare", "arguments": {"deviceshare.GPUSharingEnable": True}}, entry]}]}
    return yaml.safe_dump(c, sort_keys=False)


def run(objs: list[dict[str, Any]], text: str, mix: TaskMix | None = None) -> tuple[dict[str, str], dict[str, str]]:
    cache = SchedulerCache.from_objects(objs, "volcano")
    cache.task_mix = mix
    r = run_session(cache, load_conf(text, "conf"), "vector", False)
    return dict(r.binds), {k: v.get("volcano.sh/gpu-index", "") for k, v in r.bind_annotations.items()}


def gpu_choice_cluster() -> list[dict[str, Any]]:
    """tests/scenarios/fgd/fgd-share-gpu-choice.yaml: n1 GPUs 700/1000 left, n2 full; p1 asks 300."""
    o = [node("n1", 2, "T4"), node("n2", 1, "T4", cpu=2)]
    return o + pod("r1", 2, gmem=300, node="n1", index="0") + pod("r2", 2, gmem=700, node="n2", index="0") + \
        pod("p1", 2, gmem=300, ts=5)


def test_the_workload_mix_is_used_when_given_and_the_snapshot_one_otherwise() -> None:
    objs = gpu_choice_cluster()
    # learnt from the snapshot: 2 x 300, 1 x 700 -> GPU 1 keeps the 700 usable (the scenario)
    assert run(objs, conf("fgd")) == ({"ns/p1": "n1"}, {"ns/p1": "1"})
    # a workload of 300-shares only: either GPU leaves nothing they cannot use, equal scores, the first GPU
    only = TaskMix([TaskClass(2000, 1, 300)], [1.0])
    assert run(objs, conf("fgd"), only) == ({"ns/p1": "n1"}, {"ns/p1": "0"})
    # fgd.taskMix: snapshot ignores the workload's
    assert run(objs, conf("fgd", {"fgd.taskMix": "snapshot"}), only) == ({"ns/p1": "n1"}, {"ns/p1": "1"})


def test_ties_go_to_the_smallest_name_or_the_first_node_or_a_draw() -> None:
    """Their simulator's kube-scheduler fork takes the smallest node name among the best (selectHost); upstream
    draws one; pyvolcano's selector the lowest index.  Nodes here are not in name order."""
    order = ["n3", "n1", "n5", "n0", "n2", "n4"]
    objs = [node(n, 2, "T4") for n in order]
    for k in range(12):
        objs += pod(f"p{k}", 1, gmem=1000, ts=k + 1)
    # every empty node scores 31, a node with one GPU in use 49: pods go two by two
    binds, _ = run(objs, conf("gpupacking"))
    assert [binds[f"ns/p{k}"] for k in range(0, 12, 2)] == sorted(order)
    first, _ = run(objs, conf("gpupacking", {"gpupacking.tieBreak": "first"}))
    assert [first[f"ns/p{k}"] for k in range(0, 12, 2)] == order
    drawn, _ = run(objs, conf("gpupacking", {"gpupacking.tieBreak": "random"}))
    assert drawn == run(objs, conf("gpupacking", {"gpupacking.tieBreak": "random"}))[0]  # reproducible
    assert all(drawn[f"ns/p{k}"] == drawn[f"ns/p{k + 1}"] for k in range(0, 12, 2))
    others = {tuple(sorted(run(objs, conf("gpupacking", {"gpupacking.tieBreak": "random", "gpupacking.seed": s}))[0]
                           .items())) for s in range(4)}
    assert len(others | {tuple(sorted(drawn.items()))}) > 1


def test_score_groups_read_like_volcanos_map() -> None:
    cache = SchedulerCache.from_objects([node(f"n{i}", 1, "T4") for i in range(4)], "volcano")
    ssn = Session(cache.snapshot(), load_conf(conf("fgd"), "c"))
    groups = ScoreGroups(ssn.nodes, np.array([0, 1, 3]), np.array([5.0, 7.0, 9.0, 5.0]))
    assert sorted(groups) == [5.0, 7.0] and len(groups) == 2
    assert [v.name for v in groups[5.0]] == ["n0", "n3"] and groups[7.0][0].name == "n1"
    with pytest.raises(KeyError):
        groups[9.0]


class BadChoice(Plugin):
    """Names a GPU that cannot hold the task: deviceshare keeps its own choice."""

    name = "bad-choice"

    def on_session_open(self, ssn: Session) -> None:
        ssn.add_device_choice_fn(self.name, lambda task, i, pool: [int(pool.first[i]) + 1])


class GoodChoice(Plugin):
    name = "good-choice"

    def on_session_open(self, ssn: Session) -> None:
        ssn.add_device_choice_fn(self.name, lambda task, i, pool: [int(pool.first[i]) + 2])


def test_device_choice_is_taken_only_when_deviceshare_would_allow_it() -> None:
    objs = [node("n1", 3, "T4"), *pod("r1", 1, gmem=900, node="n1", index="1"), *pod("p1", 1, gmem=500, ts=5)]
    base = ("actions: allocate\ntiers:\n- plugins:\n  - name: predicates\n  - name: deviceshare\n"
            "    arguments: {deviceshare.GPUSharingEnable: true}\n")
    assert run(objs, base)[1] == {"ns/p1": "0"}  # Volcano's choice: the lowest GPU id with room
    bad = base + "  - name: tests.test_gpupolicies:BadChoice\n"
    good = base + "  - name: tests.test_gpupolicies:GoodChoice\n"
    assert run(objs, bad)[1] == {"ns/p1": "0"}  # GPU 1 has 100 left: not allowed
    assert run(objs, good)[1] == {"ns/p1": "2"}


@pytest.mark.parametrize(("policy", "args", "msg"), [
    ("fgd", {"fgd.taskMix": "trace"}, "fgd.taskMix must be workload or snapshot"),
    ("bestfit", {"bestfit.tieBreak": "last"}, "bestfit.tieBreak must be one of name, random, first"),
])
def test_bad_arguments_name_the_plugin_and_key(policy: str, args: dict[str, Any], msg: str) -> None:
    with pytest.raises(ConfigError, match=msg):
        run([node("n1", 1, "T4"), *pod("p1", 1, gmem=100)], conf(policy, args))


@pytest.mark.parametrize("policy", ["random", "dotprod", "gpuclustering", "gpupacking", "bestfit", "fgd", "fgdpack"])
def test_the_example_confs_load_with_their_policy(policy: str) -> None:
    path = Path(__file__).parents[1] / "examples" / "confs" / "fgd" / f"{policy}.conf"
    conf = load_conf(path.read_text(), str(path))
    names = [p.name for tier in conf.tiers for p in tier.plugins]
    assert names[-3:] == ["predicates", "deviceshare", policy]


def test_fgdpack_packs_the_nodes_fgd_scores_the_same() -> None:
    """A whole GPU: on the empty n0 or on n1 (one of two GPUs held) FGD scores 50 both (the mix, whole GPUs, keeps
    fitting or has nothing left to lose): fgd takes the smallest name, fgdpack the node left fuller."""
    objs = [node("n0", 2, "T4"), node("n1", 2, "T4"), *pod("r1", 1, gnum=1, node="n1", index="0"),
            *pod("p1", 1, gnum=1, ts=5)]
    mix = TaskMix([TaskClass(1000, 1, 1000)], [1.0])
    number = {"deviceshare.GPUSharingEnable": "deviceshare.GPUNumberEnable"}
    fgd, pack = conf("fgd"), conf("fgdpack")
    for k, v in number.items():
        fgd, pack = fgd.replace(k, v), pack.replace(k, v)
    assert run(objs, fgd, mix) == ({"ns/p1": "n0"}, {"ns/p1": "0"})
    assert run(objs, pack, mix) == ({"ns/p1": "n1"}, {"ns/p1": "1"})
