"""The queue validator (docs/queues.md): each impossible setting is named with its queue and field."""

from __future__ import annotations

import numpy as np

from pyvolcano.api.convert import queue as to_queue
from pyvolcano.api.queue_validate import validate_conf, validate_queue_object, validate_queues
from pyvolcano.api.resource import ResourceIndex
from pyvolcano.conf.loader import load_conf

RES = ResourceIndex.of()
TOTAL = RES.from_list({"cpu": "8", "memory": "16Gi"})


def q(name: str, **spec: object) -> dict:
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name},
            "spec": {"weight": 1, **spec}}


def queues(*objs: dict) -> dict:
    return {o["metadata"]["name"]: to_queue(o, RES) for o in objs}


def messages(*objs: dict, hierarchy: bool = False) -> list[str]:
    return [p.message for p in validate_queues(queues(*objs), TOTAL, RES, hierarchy=hierarchy)]


def test_sane_queues_have_no_problem() -> None:
    assert messages(q("a", capability={"cpu": "4"}, guarantee={"resource": {"cpu": "2"}}), q("b", weight=3)) == []


def test_guarantee_above_capability() -> None:
    probs = validate_queues(queues(q("a", capability={"cpu": "15"}, guarantee={"resource": {"cpu": "10000"}})),
                            RES.from_list({"cpu": "20000"}), RES)
    assert [(p.queue, p.field) for p in probs] == [("a", "spec.guarantee")]
    assert "above spec.capability" in probs[0].message and "cpu=10000" in probs[0].message


def test_guarantee_above_cluster_and_sum_above_cluster() -> None:
    msgs = messages(q("a", guarantee={"resource": {"cpu": "10"}}))
    assert any("queue a: spec.guarantee (cpu=10) is above the cluster (cpu=8)" in m for m in msgs)
    msgs = messages(q("a", guarantee={"resource": {"cpu": "5"}}), q("b", guarantee={"resource": {"cpu": "5"}}))
    assert len(msgs) == 1 and "queues a, b: guarantees add up to cpu=10" in msgs[0]


def test_capability_only_compared_where_both_set() -> None:
    # memory guarantee with a cpu-only capability: memory is unlimited, not a conflict
    assert messages(q("a", capability={"cpu": "2"}, guarantee={"resource": {"memory": "1Gi"}})) == []


def test_weight_zero() -> None:
    probs = validate_queues(queues(q("a", weight=0)), TOTAL, RES)
    assert [(p.queue, p.field) for p in probs] == [("a", "spec.weight")]


def test_hierarchy_child_above_parent() -> None:
    objs = (q("eng", capability={"cpu": "4"}, guarantee={"resource": {"cpu": "2"}}),
            q("dev", parent="eng", capability={"cpu": "6"}, guarantee={"resource": {"cpu": "3"}}))
    msgs = messages(*objs, hierarchy=True)
    assert any("queue dev: spec.capability (cpu=6) is above its parent eng's (cpu=4)" in m for m in msgs)
    assert any("queue dev: spec.guarantee (cpu=3) is above its parent eng's (cpu=2)" in m for m in msgs)
    assert any("queue eng: its children's guarantees add up to cpu=3" in m for m in msgs)
    assert not any("parent" in m for m in messages(*objs, hierarchy=False))


def test_hierarchy_unknown_parent_and_cycle() -> None:
    msgs = messages(q("a", parent="nope"), hierarchy=True)
    assert msgs == ["queue a: spec.parent 'nope' does not exist"]
    msgs = messages(q("a", parent="b"), q("b", parent="a"), hierarchy=True)
    assert any("cycle" in m for m in msgs)


def test_proportion_and_capacity_together() -> None:
    conf = load_conf("actions: allocate\ntiers:\n- plugins:\n  - name: proportion\n  - name: capacity\n", "t")
    assert len(validate_conf(conf)) == 1 and "both proportion and capacity" in validate_conf(conf)[0].message
    ok = load_conf("actions: allocate\ntiers:\n- plugins:\n  - name: capacity\n", "t")
    assert validate_conf(ok) == []


def test_admission_reports_only_new_problems() -> None:
    existing = queues(q("a", guarantee={"resource": {"cpu": "6"}}))
    new = validate_queue_object(q("b", guarantee={"resource": {"cpu": "4"}}), existing, TOTAL, RES)
    assert len(new) == 1 and "guarantees add up to cpu=10" in new[0].message
    assert validate_queue_object(q("b", guarantee={"resource": {"cpu": "1"}}), existing, TOTAL, RES) == []
    assert np.isfinite(TOTAL[0])


def hq(name: str, path: str, weights: str) -> dict:
    obj = q(name)
    obj["metadata"]["annotations"] = {"volcano.sh/hierarchy": path, "volcano.sh/hierarchy-weights": weights}
    return obj


def test_drf_hierarchy_annotations() -> None:
    assert messages(hq("a", "root/eng", "1/2"), hq("b", "sci/dev", "1/3")) == []  # root/1 added as the webhook does
    probs = validate_queues(queues(hq("a", "root/eng/prod", "1/2")), TOTAL, RES)
    assert [(p.queue, p.field) for p in probs] == [("a", "metadata.annotations.volcano.sh/hierarchy-weights")]
    assert "has 3 levels" in probs[0].message
    assert messages(hq("a", "root/eng", "1/0")) == [
        "queue a: volcano.sh/hierarchy-weights '1/0': '0' is not a number above 0"]
    assert "'x' is not a number" in messages(hq("a", "root/eng", "1/x"))[0]
    msgs = messages(hq("sci", "root/sci", "1/1"), hq("dev", "root/sci/dev", "1/1/1"), hq("sc", "root/sc", "1/1"))
    assert msgs == ["queue sci: volcano.sh/hierarchy 'root/sci' contains queue dev's 'root/sci/dev'; only leaves "
                    "of the tree can be queues"]


def test_hierarchy_rules_of_volcano_capacity() -> None:
    # a child without capability takes its parent's: the grandchild is compared with eng's 4 cpu
    msgs = messages(q("eng", capability={"cpu": "4"}), q("dev", parent="eng"),
                    q("one", parent="dev", capability={"cpu": "6"}), hierarchy=True)
    assert "queue one: spec.capability (cpu=6) is above its parent dev's (cpu=4)" in msgs
    # a parent that sets no guarantee has 0 to share out
    msgs = messages(q("eng"), q("dev", parent="eng", guarantee={"resource": {"cpu": "1"}}), hierarchy=True)
    assert any("queue eng: its children's guarantees add up to cpu=1, above its own guarantee (cpu=0)" in m
               for m in msgs)
    # children's deserved (at least their guarantee) must fit the parent's; the root's is the cluster
    msgs = messages(q("eng", deserved={"cpu": "2"}), q("dev", parent="eng", deserved={"cpu": "3"}), hierarchy=True)
    assert "queue eng: its children's deserved add up to cpu=3, above its own (cpu=2)" in msgs
    msgs = messages(q("a", deserved={"cpu": "5"}), q("b", deserved={"cpu": "5"}), hierarchy=True)
    assert "queue root: its children's deserved add up to cpu=10, above its own (cpu=8)" in msgs
    assert messages(q("a", deserved={"cpu": "5"}), q("b", deserved={"cpu": "5"})) == []  # flat: no such rule
