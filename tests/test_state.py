"""Typed per-session plugin state (framework/state.py, kube-scheduler's CycleState): keys are objects, reads give
what was written under that very key, and only the framework and the plugins touch a session's state."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import pyvolcano
from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.conf.loader import load_conf
from pyvolcano.framework.session import Session
from pyvolcano.framework.state import CAPACITY_QUEUES, PROPORTION_QUEUES, SessionState, StateKey
from pyvolcano.plugins._k8s import LABELS, LabelIndex


def test_keys_are_slots_by_identity() -> None:
    st = SessionState()
    a: StateKey[int] = StateKey("n")
    b: StateKey[int] = StateKey("n")  # same name, another slot
    st.write(a, 1)
    assert st.read(a) == 1 and a in st
    assert b not in st and st.get(b) is None
    with pytest.raises(KeyError, match="'n'"):
        st.read(b)
    assert "n" not in st  # a name is no key


def test_read_or_init_builds_once() -> None:
    st = SessionState()
    calls: list[int] = []
    key: StateKey[list[int]] = StateKey("shared")

    def init() -> list[int]:
        calls.append(1)
        return [7]
    first = st.read_or_init(key, init)
    assert st.read_or_init(key, init) is first and calls == [1]


def test_plugins_share_the_label_index_and_hand_queues_to_the_framework() -> None:
    conf = load_conf('actions: "enqueue, allocate"\ntiers:\n- plugins:\n  - name: predicates\n  - name: nodeorder\n'
                     '  - name: proportion\n')
    objs = [{"kind": "Node", "metadata": {"name": "n1", "labels": {"a": "b"}}, "status": {"allocatable": {"cpu": "4"}}},
            {"kind": "Queue", "metadata": {"name": "default"}, "spec": {"weight": 1}},
            {"kind": "PodGroup", "metadata": {"name": "pg", "namespace": "ns"},
             "spec": {"minMember": 1, "queue": "default"}, "status": {"phase": "Inqueue"}}]
    ssn = Session(SchedulerCache.from_objects(objs).snapshot(), conf).open()
    li = ssn.state.read(LABELS)
    assert isinstance(li, LabelIndex) and li.col("a").tolist() == ["b"]
    assert set(ssn.state.read(PROPORTION_QUEUES)) == {"default"}
    out = ssn.close()
    fair = out.queues["default"].fair
    assert fair is not None and fair.weight == 1


def test_queue_status_takes_the_share_of_the_configured_plugin_as_confs_change() -> None:
    """``QueueStatus.fair`` is the share of the first of ``QUEUE_SHARES`` a configured plugin keeps (capacity's
    before proportion's), looked up once per set of plugin classes: sessions under confs that change between
    them each get their own plugin's (and none without either)."""
    objs = [{"kind": "Node", "metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "4"}}},
            {"kind": "Queue", "metadata": {"name": "default"}, "spec": {"weight": 1}},
            {"kind": "PodGroup", "metadata": {"name": "pg", "namespace": "ns"},
             "spec": {"minMember": 1, "queue": "default"}, "status": {"phase": "Inqueue"}}]
    head = 'actions: "enqueue, allocate"\ntiers:\n- plugins:\n  - name: predicates\n'
    for plugins, key in ((["proportion"], PROPORTION_QUEUES), (["capacity"], CAPACITY_QUEUES), ([], None),
                         (["proportion", "capacity"], CAPACITY_QUEUES), (["proportion"], PROPORTION_QUEUES),
                         ([], None)):
        conf = load_conf(head + "".join(f"  - name: {p}\n" for p in plugins))
        ssn = Session(SchedulerCache.from_objects(objs).snapshot(), conf).open()
        fair = ssn.close().queues["default"].fair
        if key is None:
            assert fair is None
        else:
            assert fair is not None and fair.deserved is ssn.state.read(key)["default"].deserved


def test_only_the_framework_and_plugins_read_session_state() -> None:
    """``ssn.state`` is the plugins' business: front-ends read the ``SessionResult`` (issue 12)."""
    src = Path(pyvolcano.__file__).parent
    offenders = []
    for path in src.rglob("*.py"):
        rel = path.relative_to(src)
        if rel.parts[0] in ("framework", "plugins"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr == "state" and isinstance(node.value, ast.Name) \
                    and node.value.id in ("ssn", "session"):
                offenders.append(f"{rel}:{node.lineno}")
    assert offenders == []
