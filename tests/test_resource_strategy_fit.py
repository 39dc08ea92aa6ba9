"""resource-strategy-fit (``plugins/resource_strategy_fit.py``): its arguments read as Volcano's ``New`` reads
them, and its scores as ``Score`` / ``sraScore`` compute them, in both engines."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import yaml

from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.conf.arguments import Arguments
from pyvolcano.conf.loader import load_conf
from pyvolcano.errors import ConfigError
from pyvolcano.framework.cycle import run_session
from pyvolcano.plugins.resource_strategy_fit import LEAST, MOST, Config, valid_pattern


def cfg(args: dict[str, Any]) -> Config:
    return Config.of(Arguments(args, "plugin resource-strategy-fit"))


def test_defaults() -> None:
    c = cfg({})
    assert c.weight == 10 and c.resources == {"cpu": (LEAST, 1), "memory": (LEAST, 1)}
    assert c.sra_weight == 0 and c.proportional is None


def test_volcano_corrections() -> None:
    c = cfg({"resourceStrategyFitWeight": -3, "resources": {
        "cpu": {"type": "Fancy", "weight": 0}, "nvidia.com/*": {"type": MOST, "weight": 2},
        "*": {"type": MOST}, "a*b": {"type": MOST}, "x**": {"type": MOST}}})
    assert c.weight == 10  # negative means the default
    assert c.resources == {"cpu": (LEAST, 1), "nvidia.com/*": (MOST, 2)}  # bad patterns dropped, weight <= 0 is 1


def test_longest_prefix_wins_and_exact_first() -> None:
    c = cfg({"resources": {"nvidia.*": {"type": LEAST, "weight": 1}, "nvidia.com/*": {"type": MOST, "weight": 2},
                           "nvidia.com/gpu-mem": {"type": LEAST, "weight": 5}}})
    assert c.match("nvidia.com/gpu") == (MOST, 2)
    assert c.match("nvidia.com/gpu-mem") == (LEAST, 5)
    assert c.match("nvidia.io/x") == (LEAST, 1)
    assert c.match("cpu") is None


def test_sra_and_proportional_arguments() -> None:
    c = cfg({"sra": {"enable": True, "resources": "nvidia.com/gpu, ,example.com/x", "weight": 5,
                     "resourceWeight": {"nvidia.com/gpu": 3, "example.com/x": -1}},
             "proportional": {"enable": True, "resources": "nvidia.com/gpu",
                              "resourceProportion": {"nvidia.com/gpu.cpu": 4, "nvidia.com/gpu.memory": -2}}})
    assert c.sra_weight == 5 and c.sra_resources == {"nvidia.com/gpu": 3, "example.com/x": 1}
    assert c.proportional == {"nvidia.com/gpu": (4.0, 1.0)}
    assert cfg({"sra": {"resources": "nvidia.com/gpu", "weight": 5}}).sra_weight == 0  # not enabled


@pytest.mark.parametrize(("args", "field"), [
    ({"resourceStrategyFitWeight": "ten"}, "resourceStrategyFitWeight"),
    ({"resources": ["cpu"]}, "resources"),
    ({"resources": {"cpu": {"type": "MostAllocated", "weight": "heavy"}}}, "resources.cpu.weight"),
    ({"resources": {"cpu": {"type": 3}}}, "resources.cpu.type"),
    ({"sra": {"enable": "maybe"}}, "sra.enable"),
    ({"sra": {"enable": True, "resources": ["a"]}}, "sra.resources"),
    ({"sra": {"enable": True, "resources": "a", "resourceWeight": {"a": True}}}, "sra.resourceWeight.a"),
    ({"proportional": {"enable": True, "resources": "g", "resourceProportion": {"g.cpu": "x"}}},
     "proportional.resourceProportion.g.cpu"),
])
def test_malformed_arguments_name_the_plugin_and_argument(args: dict[str, Any], field: str) -> None:
    with pytest.raises(ConfigError, match=f"plugin resource-strategy-fit: argument '{field}'"):
        cfg(args)


def test_patterns() -> None:
    assert valid_pattern("cpu") and valid_pattern("nvidia.com/*")
    assert not valid_pattern("*") and not valid_pattern("a*b") and not valid_pattern("a**")


def _node(name: str, cpu: str, gpu: str | None = None) -> dict[str, Any]:
    alloc = {"cpu": cpu, "memory": "8Gi", "pods": "110", **({"nvidia.com/gpu": gpu} if gpu else {})}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "status": {"allocatable": alloc}}


def _pod(name: str, node: str | None, cpu: str, ann: dict[str, str] | None = None) -> dict[str, Any]:
    md: dict[str, Any] = {"name": name, "namespace": "ns",
                          "annotations": {"scheduling.k8s.io/group-name": "g", **(ann or {})}}
    spec: dict[str, Any] = {"schedulerName": "volcano" if node is None else "default-scheduler",
                            "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": md, "spec": spec,
            "status": {"phase": "Pending" if node is None else "Running"}}


def scores(args: dict[str, Any], ann: dict[str, str] | None = None, engine: str = "vector") -> dict[str, float]:
    """The plugin's score of each node for a 2-cpu pod, no predicates.  n2 (1 cpu idle) has no room for it:
    ``cycle -v`` ranks only nodes the pod fits (``framework/explain.py``), so n2 is never among them."""
    objects = [_node("n1", "8"), _node("n2", "4"), _node("n3", "8", gpu="2"),
               _pod("busy", "n2", "3"), _pod("half", "n1", "4"),
               {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                "metadata": {"name": "g", "namespace": "ns"}, "spec": {"minMember": 1}, "status": {"phase": "Inqueue"}},
               _pod("p", None, "2", ann)]
    conf = load_conf(yaml.safe_dump({"actions": "allocate", "tiers": [{"plugins": [
        {"name": "resource-strategy-fit", "arguments": args}]}]}))
    result = run_session(SchedulerCache.from_objects(objects), conf, engine, explain=5)
    return {b.node: b.plugins.get("resource-strategy-fit", 0.0) for b in result.scores["ns/p"].best}


@pytest.mark.parametrize("engine", ["vector", "scalar"])
def test_scores(engine: str) -> None:
    most = {"resources": {"cpu": {"type": "MostAllocated", "weight": 2}}, "resourceStrategyFitWeight": 1}
    # n1 (4+2)/8, n3 2/8; n2 would hold 5 > 4 cpu: not a candidate
    assert scores(most, engine=engine) == pytest.approx({"n1": 75.0, "n3": 25.0})
    # the pod's own strategy: LeastAllocated on cpu with the plugin weight 10
    own = {"volcano.sh/resource-strategy-scoring-type": "LeastAllocated",
           "volcano.sh/resource-strategy-weight": '{"cpu": 3}'}
    assert scores({}, own, engine) == pytest.approx({"n1": 250.0, "n3": 750.0})
    # a weight annotation that Go's json.Unmarshal refuses scores 0 everywhere
    bad = {**own, "volcano.sh/resource-strategy-weight": '{"cpu": 1.5}'}
    assert scores({}, bad, engine) == {"n1": 0.0, "n3": 0.0}
    # sra alone: the GPU node scores 0, the others 100 x 2
    sra = {"resourceStrategyFitWeight": 0, "sra": {"enable": True, "resources": "nvidia.com/gpu", "weight": 2}}
    assert scores(sra, engine=engine) == pytest.approx({"n1": 200.0, "n3": 0.0})


def test_a_pods_own_strategy_is_part_of_its_template() -> None:
    """The scores are template-safe (cached per pod template, carried between sessions): a pod choosing its own
    strategy must not share a template with a pod of the same shape that does not (``constraints_key``)."""
    own = {"volcano.sh/resource-strategy-scoring-type": "MostAllocated",
           "volcano.sh/resource-strategy-weight": '{"cpu": 1}'}
    objects = [_node("n1", "8"), _node("n2", "8"), _pod("half", "n1", "4"),
               *({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                  "metadata": {"name": g, "namespace": "ns"}, "spec": {"minMember": 1},
                  "status": {"phase": "Inqueue"}} for g in ("g", "h")),
               _pod("plain", None, "1"), _pod("mine", None, "1", own)]
    objects[-1]["metadata"]["annotations"]["scheduling.k8s.io/group-name"] = "h"
    cache = SchedulerCache.from_objects(objects)
    plain, mine = cache.tasks["ns/plain"], cache.tasks["ns/mine"]
    assert plain.template_key != mine.template_key
    conf = load_conf(yaml.safe_dump({"actions": "allocate", "tiers": [{"plugins": [
        {"name": "resource-strategy-fit"}]}]}))
    result = run_session(cache, conf, "vector", explain=5)
    # LeastAllocated (the default) prefers the empty n2, the pod's own MostAllocated the half-full n1
    assert result.binds == {"ns/plain": "n2", "ns/mine": "n1"}


def test_vector_and_per_node_forms_agree_bit_for_bit() -> None:
    """The node selector recomputes the few nodes a placement changed through the per-node form and the rest through
    the vector form (``framework/node_select.py: PER_NODE_MAX``), and carries the results between sessions: the two
    forms must give the same float on every node, down to the last bit.  Random nodes (with and without GPUs, some
    over-full), random usage, and templates with the conf's strategies, a pod's own strategy (negative and zero
    weights, an unknown type) and sra over two scarce resources."""
    from pyvolcano.framework.session import Session

    rng = np.random.default_rng(7)
    objects: list[dict[str, Any]] = []
    for i in range(40):
        alloc = {"cpu": str(int(rng.choice([3, 8, 16]))), "memory": f"{int(rng.choice([5, 8, 32]))}Gi",
                 "pods": "110"}
        if rng.random() < 0.6:
            alloc["nvidia.com/gpu"] = str(int(rng.choice([1, 2, 8])))
        objects.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i}"},
                        "status": {"allocatable": alloc}})
        for k in range(int(rng.integers(0, 4))):
            req = {"cpu": f"{int(rng.integers(1, 6000))}m", "memory": f"{int(rng.integers(1, 9000))}Mi"}
            if "nvidia.com/gpu" in alloc and rng.random() < 0.5:
                req["nvidia.com/gpu"] = str(int(rng.integers(1, 3)))
            pod = _pod(f"r{i}-{k}", f"n{i}", "1")
            pod["spec"]["containers"][0]["resources"]["requests"] = req
            objects.append(pod)
    objects.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                    "metadata": {"name": "g", "namespace": "ns"}, "spec": {"minMember": 1},
                    "status": {"phase": "Inqueue"}})
    own = "volcano.sh/resource-strategy-scoring-type", "volcano.sh/resource-strategy-weight"
    pending = [({"cpu": "1", "memory": "1Gi"}, None), ({"cpu": "3", "memory": "2Gi", "nvidia.com/gpu": "1"}, None),
               ({"cpu": "500m"}, None), ({"cpu": "2", "nvidia.com/gpu": "2"}, {own[0]: "MostAllocated",
                                                                            own[1]: '{"cpu": -2, "nvidia.com/gpu": 3}'}),
               ({"cpu": "2", "memory": "3Gi"}, {own[0]: "Fancy", own[1]: '{"cpu": 2, "memory": 0}'}),
               ({"cpu": "7", "memory": "6Gi"}, {own[0]: "LeastAllocated", own[1]: '{"memory": 4}'})]
    for j, (req, ann) in enumerate(pending):
        pod = _pod(f"p{j}", None, "1", ann)
        pod["spec"]["containers"][0]["resources"]["requests"] = req
        objects.append(pod)
    args = {"resourceStrategyFitWeight": 3,
            "resources": {"nvidia.com/*": {"type": "MostAllocated", "weight": 2}, "cpu": {"weight": 1},
                          "memory": {"type": "MostAllocated", "weight": 3}},
            "sra": {"enable": True, "weight": 7, "resources": "nvidia.com/gpu,example.com/x",
                    "resourceWeight": {"nvidia.com/gpu": 3}}}
    conf = load_conf(yaml.safe_dump({"actions": "allocate", "tiers": [{"plugins": [
        {"name": "resource-strategy-fit", "arguments": args}]}]}))
    ssn = Session(SchedulerCache.from_objects(objects).snapshot(), conf).open()
    reg = next(s for s in ssn.scores if s.plugin == "resource-strategy-fit")
    assert reg.vector is not None and reg.scalar is not None
    idx = np.arange(len(ssn.nodes))
    scored = 0
    for job in ssn.jobs.values():
        for task in job.tasks.values():
            if task.node_name:
                continue
            vec = reg.vector(task, idx)
            one = [reg.scalar(task, ssn.nodes.views[i]) for i in idx.tolist()]
            assert np.asarray(vec, dtype=float).tobytes() == np.array(one).tobytes(), task.name
            # also on a subset, in another order (what the node selector asks after a few nodes changed)
            sub = idx[::-3]
            assert np.asarray(reg.vector(task, sub)).tobytes() == np.array(one)[sub].tobytes()
            scored += len(set(one)) > 1
    assert scored >= 4  # the scores differ between nodes: the check had something to compare
