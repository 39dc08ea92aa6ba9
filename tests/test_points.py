"""Every combination Rule of framework/points.py, against Volcano's session_plugins.go, and the enable flags
that take a plugin's function off a point."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from pyvolcano.api.status import SUCCESS, Code, Status, ok, reject_if, unschedulable
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
        ssn.add_predicate_fn(self.name, lambda task, node: unschedulable("node(s) are n1") if node.name == "n1"
                             else None)
        ssn.add_node_order_fn(self.name, lambda task, node: 1000.0 if node.name == "n3" else 0.0)
        ssn.add_pre_predicate_fn(self.name, lambda task: unschedulable("no GPUs in this cluster")
                                 if task.name.startswith("gpu") else SUCCESS)


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


# --- Status answers and the FIRST_FAILURE rule (prePredicate, jobValid) ---------------------------------------
def test_first_failure_skips_none_and_success() -> None:
    no, later = unschedulable("no", "a"), unschedulable("later", "b")
    assert combine(Rule.FIRST_FAILURE, fns([None, SUCCESS, no], [later])) is no
    assert combine(Rule.FIRST_FAILURE, fns([None, SUCCESS], [SUCCESS])) is None
    assert combine(Rule.FIRST_FAILURE, []) is None
    assert POINTS["prePredicate"].rule is POINTS["jobValid"].rule is Rule.FIRST_FAILURE


def test_status_codes_are_volcanos() -> None:
    """pkg/scheduler/api/types.go: Success, Error, Unschedulable, UnschedulableAndUnresolvable, Wait, Skip (iota)."""
    assert [(c.name, int(c)) for c in Code] == [
        ("SUCCESS", 0), ("ERROR", 1), ("UNSCHEDULABLE", 2), ("UNSCHEDULABLE_AND_UNRESOLVABLE", 3), ("WAIT", 4),
        ("SKIP", 5)]
    st = Status(Code.UNSCHEDULABLE, ("a", "b"), "p")
    assert not st.is_success() and str(st) == st.message == "a, b"
    assert ok(None) and ok(SUCCESS) and not ok(st)
    assert reject_if(None) is None and reject_if("why", "p") == Status(Code.UNSCHEDULABLE, ("why",), "p")


class ManyReasons(Plugin):
    """A per-node filter answering with every Status shape: a success, a rejection with two reasons, one with
    none, and Volcano's UnschedulableAndUnresolvable."""

    name = "many-reasons"

    def on_session_open(self, ssn: Session) -> None:
        answers = {"n1": Status(Code.UNSCHEDULABLE, ("too hot", "too loud"), self.name), "n2": Status(Code.ERROR),
                   "n3": SUCCESS, "n4": unschedulable("no way", self.name, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)}
        ssn.add_predicate_fn(self.name, lambda task, node: answers[node.name])


def test_status_reasons_in_the_fit_summary() -> None:
    """Each reason of a rejecting Status is counted once for its node (Kubernetes' FitError.Error); a rejection
    without reasons names the plugin; a success passes."""
    from pyvolcano.framework.cycle import cycle_objects, result_json

    objs: list[dict] = [{"kind": "Node", "metadata": {"name": n}, "status": {"allocatable": {"cpu": "4"}}}
                        for n in ("n1", "n2", "n3", "n4")]
    objs.append({"kind": "PodGroup", "metadata": {"name": "big", "namespace": "ns"}, "spec": {"minMember": 1},
                 "status": {"phase": "Inqueue"}})
    objs.append({"kind": "Pod", "metadata": {"name": "big", "namespace": "ns",
                                             "annotations": {"scheduling.k8s.io/group-name": "big"}},
                 "spec": {"schedulerName": "volcano", "containers": [{"name": "c", "resources": {
                     "requests": {"cpu": "8"}}}]}, "status": {"phase": "Pending"}})
    objs.append({"kind": "PodGroup", "metadata": {"name": "small", "namespace": "ns"}, "spec": {"minMember": 1},
                 "status": {"phase": "Inqueue"}})
    objs.append({"kind": "Pod", "metadata": {"name": "small", "namespace": "ns",
                                             "annotations": {"scheduling.k8s.io/group-name": "small"}},
                 "spec": {"schedulerName": "volcano", "containers": [{"name": "c", "resources": {
                     "requests": {"cpu": "1"}}}]}, "status": {"phase": "Pending"}})
    conf = load_conf('actions: "allocate"\ntiers:\n- plugins:\n  - name: gang\n'
                     '  - name: tests.test_points:ManyReasons\n')
    result, _ = cycle_objects(objs, conf)
    out = result_json(result)
    assert out["binds"] == {"ns/small": "n3"}
    assert "0/4 nodes are available: 4 Insufficient cpu." in out["unschedulable"]["ns/big"]
    from pyvolcano.framework.session import Session as S

    ssn = S(SchedulerCache.from_objects(objs).snapshot(), conf).open()
    fe = ssn.explain(next(t for j in ssn.jobs.values() for t in j.tasks.values() if t.name == "small"))
    assert str(fe) == ("0/4 nodes are available: 1 no way, 1 node(s) rejected by many-reasons, 1 too hot, "
                       "1 too loud.")


# --- typed extension points: the declaration is the one mypy checks registrations against ------------------------
def test_every_point_is_a_typed_constant_with_its_session_method() -> None:
    """Each row of POINTS is a module constant (``JOB_ORDER`` for jobOrder) and has a typed registration
    ``Session.add_job_order_fn``, so the signature is declared once and every registration is checked."""
    from pyvolcano.framework import points

    for name, p in POINTS.items():
        snake = re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()
        assert getattr(points, snake.upper()) is p
        assert callable(getattr(Session, f"add_{snake}_fn"))


MYPY_SNIPPET = '''
from pyvolcano.api.job_info import JobInfo
from pyvolcano.api.status import Status, unschedulable
from pyvolcano.framework.points import JOB_ORDER, JOB_VALID, PERMIT, Vote
from pyvolcano.framework.session import Session
from pyvolcano.framework.state import PROPORTION_QUEUES, StateKey
from pyvolcano.plugins._k8s import LABELS

def register(ssn: Session) -> None:
    def old_valid(job: JobInfo) -> str | None:
        return None
    def new_valid(job: JobInfo) -> Status | None:
        return unschedulable("no")
    def order(left: JobInfo, right: JobInfo) -> int:
        return 0
    def enqueueable(job: JobInfo) -> Vote:
        return PERMIT
    ssn.add_job_valid_fn("p", new_valid)                              # OK
    ssn.add_fn(JOB_ORDER, "p", order)                                 # OK
    ssn.add_job_enqueueable_fn("p", enqueueable)                      # OK
    ssn.add_job_ready_fn("p", lambda job: job.is_ready())             # OK
    n: int = ssn.state.read(LABELS).tainted.size                      # OK
    ssn.add_job_valid_fn("p", old_valid)                              # E: a str answer
    ssn.add_fn(JOB_VALID, "p", old_valid)                             # E: the same through the generic add_fn
    ssn.add_job_order_fn("p", lambda left: 0)                         # E: one argument short
    ssn.add_job_order_fn("p", lambda left, right: left.nope)          # E: JobInfo has no "nope"
    ssn.add_job_enqueueable_fn("p", lambda job: True)                 # E: a bool is no Vote
    ssn.add_preemptable_fn("p", lambda t, cands: cands)               # E: victims without a vote
    ssn.add_predicate_fn("p", lambda task, node: "node(s) are busy")  # E: a reason string is no Status
    ssn.state.write(LABELS, 3)                                        # E: the key holds a LabelIndex
    s: str = ssn.state.read(PROPORTION_QUEUES)                        # E: it reads a mapping
    ssn.state.read("proportion")                                      # E: keys are typed objects
    k: StateKey[int] = StateKey("n")
    ssn.state.write(k, "one")                                         # E: an int key
'''


def test_mypy_rejects_wrong_shaped_callbacks_and_state(tmp_path: Path) -> None:
    """The registration methods and state keys are typed: mypy reports every line marked ``# E`` in the snippet
    and nothing on the lines marked ``# OK``."""
    from mypy import api

    root = Path(__file__).resolve().parents[1]
    snippet = tmp_path / "snippet.py"
    snippet.write_text(MYPY_SNIPPET)
    out, err, _ = api.run([str(snippet), "--config-file", str(root / "pyproject.toml"), "--no-error-summary",
                           "--cache-dir", str(root / ".mypy_cache"), "--hide-error-context"])
    lines = MYPY_SNIPPET.splitlines()
    flagged = {int(m.group(1)) for m in re.finditer(r"snippet\.py:(\d+): error", out)}
    want = {i + 1 for i, line in enumerate(lines) if line.rstrip().split("# ")[-1].startswith("E:")}
    good = {i + 1 for i, line in enumerate(lines) if line.rstrip().endswith("# OK")}
    assert len(want) == 11 and len(good) == 5
    assert want <= flagged, f"mypy missed lines {sorted(want - flagged)}:\n{out}{err}"
    assert not flagged & good, f"mypy flagged good lines:\n{out}"


def test_add_fn_by_name_says_which_constant_to_use() -> None:
    """A plugin still written for the untyped ``add_fn("jobOrder", ...)`` fails at once, naming the typed point."""
    ssn = session('actions: "allocate"\n')
    with pytest.raises(TypeError, match=r"plugin p: add_fn takes ssn.add_fn\(points.VICTIM_QUEUE_ORDER, ...\)"):
        ssn.add_fn("victimQueueOrder", "p", lambda a, b, c: 0)  # the old, untyped way
    from pyvolcano.framework.points import JOB_ORDER

    ssn.add_fn(JOB_ORDER, "p", lambda a, b: 0)
    assert [n for n, _ in ssn.fns["jobOrder"][0]] == ["p"]


# --- the registration resolved once per conf (conf/registration.py) ---------------------------------------------
def test_a_conf_reload_changes_the_registration() -> None:
    """Sessions on one cache: the registration is resolved once per conf object and reused by every session on
    it; a reloaded conf (a new object, as ``kube/conf_watch.py`` makes) switching gang's jobReady off, and moving
    drf to the first tier, takes effect in the next session."""
    cache = SchedulerCache.from_objects([])
    first = load_conf(CONF.format(flags=""))
    a = Session(cache.snapshot(), first).open()
    b = Session(cache.snapshot(), first).open()
    assert a._reg is b._reg is first.registration
    assert [n for n, _ in b.fns["jobReady"][0]] == ["gang"]
    assert [n for n, _ in b.fns["jobOrder"][1]] == ["drf"]
    reloaded = load_conf(CONF.format(flags="enableJobReady: false").replace(
        "- plugins:\n  - name: drf\n", "  - name: drf\n- plugins:\n"))
    c = Session(cache.snapshot(), reloaded).open()
    assert c._reg is reloaded.registration is not first.registration
    assert [n for tier in c.fns["jobReady"] for n, _ in tier] == []
    assert [n for n, _ in c.fns["jobOrder"][0]] == ["priority", "gang", "drf"]
    # the first conf is unchanged by the reload
    d = Session(cache.snapshot(), first).open()
    assert [n for n, _ in d.fns["jobReady"][0]] == ["gang"]


def test_a_copy_with_other_tiers_is_resolved_afresh() -> None:
    conf = load_conf(CONF.format(flags=""))
    reg = conf.registration
    assert conf.registration is reg  # cached
    assert conf.model_copy(update={"actions": ["enqueue"]}).registration is reg  # same tiers: the same answers
    off = load_conf(CONF.format(flags="enablePreemptable: false"))
    copy = conf.model_copy(update={"tiers": off.tiers})
    assert copy.registration is not reg
    assert reg.tier("gang", "enablePreemptable") == 0 and copy.registration.tier("gang", "enablePreemptable") is None
    assert conf == load_conf(CONF.format(flags=""))  # the cached registration is no part of what a conf says


def test_resolved_registration_matches_is_enabled_for_every_flag() -> None:
    """Volcano's isEnabled (framework/util.go): an unset flag is enabled; a flag set false switches only its own
    points; a plugin the conf does not name lands in the first tier; a flag outside the known ones is unset."""
    conf = load_conf(CONF.format(flags="enableJobOrder: false\n    enablePreemptable: 'False'"))
    reg = conf.registration
    for name, (ti, opt) in reg.options.items():
        for flag in [None, *FLAGS]:
            assert reg.tier(name, flag) == (ti if opt.enabled(flag) else None), (name, flag)
    assert reg.tier("gang", "enableJobOrder") is None and reg.tier("gang", "enableJobReady") == 0
    assert reg.tier("drf", "enableJobOrder") == 1
    assert reg.tier("not-in-the-conf", "enableJobOrder") == 0
    assert reg.tier("drf", "enableSomethingNew") == 1


class RenamedPicky(NodePicky):
    """A third-party plugin whose callbacks name the plugin otherwise than its conf entry does."""

    name = "renamed-picky"


def test_a_plugin_registering_under_its_own_name_keeps_its_entrys_tier_and_flags() -> None:
    conf = load_conf('actions: "allocate"\ntiers:\n- plugins:\n  - name: gang\n- plugins:\n'
                     '  - name: tests.test_points:RenamedPicky\n    enablePredicate: false\n')
    ssn = Session(SchedulerCache.from_objects([]).snapshot(), conf).open()
    assert [n for n, _ in ssn.fns["prePredicate"][1]] == []  # enablePredicate: false, under the alias too
    assert [r.plugin for r in ssn.scores] == ["renamed-picky"]
    assert "renamed-picky" not in conf.registration.options  # the session's own copy took the alias
    assert ssn.options["renamed-picky"][0] == 1


def test_option_flags_are_the_conf_entries_read_once() -> None:
    """``option_flags`` are the flags a conf entry sets, made once per conf: Volcano's ``isEnabled`` (unset: on; a
    plugin the conf does not name: on) for predicates' ``enablePredicate``, drf's ``enableHierarchy``."""
    from pyvolcano.plugins._shared import hierarchy_enabled, option_flags

    conf = CONF.replace("  - name: predicates\n", "  - name: predicates\n    enablePredicate: false\n")
    conf = conf.replace("  - name: binpack\n", "  - name: binpack\n    enableHierarchy: true\n")
    ssn = session(conf.format(flags="")).open()
    assert option_flags(ssn, "predicates") == {"enablePredicate": False}
    assert option_flags(ssn, "predicates") is option_flags(ssn, "predicates")
    assert option_flags(ssn, "not-in-the-conf") == {}
    assert hierarchy_enabled(ssn, "binpack") and not hierarchy_enabled(ssn, "predicates")
    again = Session(ssn.snapshot, ssn.conf)
    assert option_flags(again, "predicates") is option_flags(ssn, "predicates")  # once per conf
