"""Every combination Rule of framework/points.py, against Volcano's session_plugins.go, and the enable flags
that take a plugin's function off a point."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.conf.loader import load_conf
from pyvolcano.framework.plugin import Plugin
from pyvolcano.framework.points import ABSTAIN, FLAGS, PERMIT, POINTS, REJECT, Rule, combine
from pyvolcano.framework.session import Session
from pyvolcano.plugins.predicates import RESERVE_REASON


def fns(*tiers: list[object]) -> list[list[tuple[str, object]]]:
    """Tiers of constant-answer functions (a callable answer is called instead)."""
    out = []
    for tier in tiers:
        out.append([(f"p{i}", (a if callable(a) else (lambda *_, a=a: a))) for i, a in enumerate(tier)])
    return out


def test_every_point_has_a_rule_and_its_flag_is_known() -> None:
    assert len(POINTS) >= 25
    for p in POINTS.values():
        assert isinstance(p.rule, Rule)
        assert p.flag is None or p.flag in FLAGS


@pytest.mark.parametrize(("tiers", "want"), [
    ([[0, -1, 1]], -1),          # the first non-zero answer wins
    ([[0, 0], [1]], 1),          # ... across tiers
    ([[0], [0]], 0),             # nobody decides
    ([], 0),
])
def test_first_decides(tiers: list[list[int]], want: int) -> None:
    assert combine(Rule.FIRST_DECIDES, fns(*tiers)) == want


def test_first_decides_stops_asking() -> None:
    asked: list[str] = []

    def ask(name: str, answer: int):
        return lambda: asked.append(name) or answer
    assert combine(Rule.FIRST_DECIDES, fns([ask("a", 0), ask("b", 1)], [ask("c", -1)])) == 1
    assert asked == ["a", "b"]


@pytest.mark.parametrize(("tiers", "want"), [
    ([[True, True], [True]], True),
    ([[True], [False]], False),
    ([[False, True]], False),
    ([], True),
])
def test_all_pass(tiers: list[list[bool]], want: bool) -> None:
    assert combine(Rule.ALL_PASS, fns(*tiers)) is want


def test_sum_adds_every_tier() -> None:
    assert combine(Rule.SUM, fns([1.5, 2], [10])) == 13.5
    assert combine(Rule.SUM, []) == 0


@pytest.mark.parametrize(("tiers", "want"), [
    ([[PERMIT, REJECT]], False),              # a reject in the tier wins
    ([[REJECT, PERMIT]], False),
    ([[PERMIT], [REJECT]], True),             # a permitting tier decides; later tiers are not asked
    ([[ABSTAIN], [REJECT]], False),           # an abstaining tier passes the question on
    ([[ABSTAIN], [ABSTAIN]], True),           # nobody objects
    ([[ABSTAIN, PERMIT], [REJECT]], True),
    ([], True),
])
def test_vote(tiers: list[list[int]], want: bool) -> None:
    assert combine(Rule.VOTE, fns(*tiers)) is want


@pytest.mark.parametrize(("tiers", "want"), [
    ([[True, True], [False]], True),          # the first tier with any function decides, all of it
    ([[True, False]], False),
    ([[], [True]], True),                     # an empty tier is skipped
    ([[], []], False),                        # nobody registered: not starving
])
def test_tier_all(tiers: list[list[bool]], want: bool) -> None:
    assert combine(Rule.TIER_ALL, fns(*tiers)) is want


def test_any() -> None:
    assert combine(Rule.ANY, fns([False], [True])) is True
    assert combine(Rule.ANY, fns([False, False])) is False
    assert combine(Rule.ANY, []) is False


@dataclass(frozen=True)
class T:
    uid: str


A, B, C = T("a"), T("b"), T("c")


def victims(answer: list[T], vote: int = PERMIT):
    return lambda _actor, _cands: (answer, vote)


@pytest.mark.parametrize(("tiers", "want"), [
    ([[victims([A, B, C]), victims([B, C, A])]], [A, B, C]),            # intersection keeps the first order
    ([[victims([A, B]), victims([B, C])]], [B]),
    ([[victims([A], ABSTAIN), victims([B, C])]], [B, C]),               # an abstaining plugin is skipped
    ([[victims([], ABSTAIN)], [victims([C])]], [C]),                    # nobody answered in tier 1
    ([[victims([A])], [victims([B])]], [A]),                            # the first tier with victims wins
    # Volcano master (session_plugins.go): a tier ending with no victims leaves the next tier to decide afresh
    ([[victims([A]), victims([])], [victims([B])]], [B]),               # an empty answer ends tier 1 with none
    ([[victims([A]), victims([C])], [victims([C])]], [C]),              # an empty intersection: tier 2 decides
    ([[victims([A]), victims([])], [victims([B]), victims([])]], []),   # no tier ends with victims
    ([[victims([]), victims([B])], [victims([C])]], [C]),               # the empty answer ends tier 1 at once
    ([[victims([A]), victims([C]), victims([B, C])]], [B, C]),          # Go's nil: a later plugin restarts the list
    ([], []),
])
def test_intersect(tiers: list[list[object]], want: list[T]) -> None:
    got = combine(Rule.INTERSECT, [[(f"p{i}", f) for i, f in enumerate(t)] for t in tiers], None, [A, B, C])
    assert got == want


def test_union_first_tier_with_any() -> None:
    tiers = [[("x", lambda ts: [A]), ("y", lambda ts: [A, B])], [("z", lambda ts: [C])]]
    assert combine(Rule.UNION, tiers, []) == [A, B]
    assert combine(Rule.UNION, [[("x", lambda ts: [])], [("z", lambda ts: [C])]], []) == [C]
    assert combine(Rule.UNION, [], []) == []


def test_first_result() -> None:
    assert combine(Rule.FIRST_RESULT, fns([None, "no"], ["later"])) == "no"
    assert combine(Rule.FIRST_RESULT, fns([None], [None])) is None


def test_call_all_calls_everyone() -> None:
    seen: list[int] = []
    assert combine(Rule.CALL_ALL, [[("a", lambda x: seen.append(x))], [("b", lambda x: seen.append(x + 1))]], 1) is None
    assert seen == [1, 2]


# --- points wired in a session: tiers and enable flags ---------------------------------------------------
def session(conf: str) -> Session:
    return Session(SchedulerCache.from_objects([]).snapshot(), load_conf(conf))


CONF = """\
actions: "allocate"
tiers:
- plugins:
  - name: priority
  - name: gang
    {flags}
- plugins:
  - name: drf
  - name: predicates
  - name: nodeorder
  - name: binpack
"""


def test_functions_land_in_their_plugins_tier() -> None:
    ssn = session(CONF.format(flags="")).open()
    order = ssn.fns["jobOrder"]
    assert [n for n, _ in order[0]] == ["priority", "gang"]
    assert [n for n, _ in order[1]] == ["drf"]
    assert [n for n, _ in ssn.fns["jobReady"][0]] == ["gang"]
    assert [n for n, _ in ssn.fns["preemptable"][0]] == ["priority", "gang"]
    assert {r.plugin for r in ssn.predicates} == {"predicates"}
    assert {r.plugin for r in ssn.scores} == {"nodeorder", "binpack"}


@pytest.mark.parametrize(("flag", "point"), [
    ("enableJobOrder", "jobOrder"), ("enableJobReady", "jobReady"), ("enableJobPipelined", "jobPipelined"),
    ("enablePreemptable", "preemptable"), ("enableReclaimable", "reclaimable"),
    ("enableJobStarving", "jobStarving"),
])
def test_enable_flag_removes_only_that_point(flag: str, point: str) -> None:
    ssn = session(CONF.format(flags=f"{flag}: false")).open()
    assert "gang" not in [n for tier in ssn.fns[point] for n, _ in tier]
    other = "jobValid"  # gang's jobValid has no flag and stays
    assert "gang" in [n for tier in ssn.fns[other] for n, _ in tier]


def test_enable_predicate_and_node_order_flags() -> None:
    conf = CONF.replace("  - name: predicates\n", "  - name: predicates\n    enablePredicate: false\n")
    conf = conf.replace("  - name: binpack\n", "  - name: binpack\n    enableNodeOrder: 'false'\n")
    ssn = session(conf.format(flags="")).open()
    # the plugin's own filters are off; what is left is the rejection Volcano's failing Reserve amounts to
    # (plugins/predicates.py: refuse_every_placement)
    assert [r.reason for r in ssn.predicates] == [RESERVE_REASON.format("VolumeBinding")]
    assert {r.plugin for r in ssn.scores} == {"nodeorder"}


def test_session_orders_fall_back_to_creation_then_name() -> None:
    from pyvolcano.api.job_info import JobInfo, PodGroup

    ssn = session('actions: "allocate"\n').open()
    old = JobInfo("ns/z", PodGroup("z", "ns", creation=1.0), 3)
    new_a = JobInfo("ns/a", PodGroup("a", "ns", creation=2.0), 3)
    new_b = JobInfo("ns/b", PodGroup("b", "ns", creation=2.0), 3)
    assert ssn.job_cmp(old, new_a) < 0
    assert ssn.job_cmp(new_a, new_b) < 0 < ssn.job_cmp(new_b, new_a)
    assert ssn.job_cmp(new_a, new_a) == 0


# --- a user plugin with Volcano-style per-node functions, loaded by module:Class -------------------------
class NodePicky(Plugin):
    """Rejects n1 (predicate), prefers n3 (nodeOrder), refuses pods named gpu-* outright (prePredicate)."""

    name = "node-picky"

    def on_session_open(self, ssn: Session) -> None:
        ssn.add_fn("predicate", self.name, lambda task, node: "node(s) are n1" if node.name == "n1" else None)
        ssn.add_fn("nodeOrder", self.name, lambda task, node: 1000.0 if node.name == "n3" else 0.0)
        ssn.add_fn("prePredicate", self.name, lambda task: "no GPUs in this cluster" if task.name.startswith("gpu")
                   else None)


def picky_cycle(flags: str = "") -> dict:
    from pyvolcano.framework.cycle import cycle_objects, result_json

    objs: list[dict] = [{"kind": "Node", "metadata": {"name": n}, "status": {"allocatable": {"cpu": "4"}}}
                        for n in ("n1", "n2", "n3")]
    for name in ("web", "gpu-job"):
        objs.append({"kind": "PodGroup", "metadata": {"name": name, "namespace": "ns"}, "spec": {"minMember": 1},
                     "status": {"phase": "Inqueue"}})
        objs.append({"kind": "Pod", "metadata": {"name": name, "namespace": "ns",
                                                 "annotations": {"scheduling.k8s.io/group-name": name}},
                     "spec": {"schedulerName": "volcano", "containers": [{"name": "c", "resources": {
                         "requests": {"cpu": "1"}}}]}, "status": {"phase": "Pending"}})
    conf = load_conf(f'actions: "allocate"\ntiers:\n- plugins:\n  - name: gang\n  - name: binpack\n'
                     f'  - name: tests.test_points:NodePicky\n{flags}')
    result, _ = cycle_objects(objs, conf)
    return result_json(result)


def test_volcano_style_per_node_functions_and_pre_predicate() -> None:
    out = picky_cycle()
    assert out["binds"] == {"ns/web": "n3"}
    assert "0/3 nodes are available: 3 no GPUs in this cluster." in out["unschedulable"]["ns/gpu-job"]


def test_flags_apply_to_a_plugin_named_module_class() -> None:
    out = picky_cycle("    enableNodeOrder: false\n    enablePredicate: false\n")
    assert set(out["binds"]) == {"ns/web", "ns/gpu-job"}  # no prePredicate, no filter
    assert out["binds"]["ns/web"] in {"n1", "n2", "n3"}
