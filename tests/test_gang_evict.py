"""gangpreempt and gangreclaim (actions/_gang_evict.py): bundles, their order and filtering, candidate domains, the
arguments, the ``unifiedEvictable`` tier rule and the nominations.  Decisions against Volcano are in
tests/scenarios/gangpreempt."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from pyvolcano.actions._gang_evict import (
    SAFE,
    WHOLE,
    Bundle,
    GangEvictOptions,
    allowed_bundles,
    candidate_domains,
    eviction_worksheet,
    job_bundles,
    pending_for_eviction,
    roi,
    sort_bundles,
)
from pyvolcano.actions.backfill import pods_in_view
from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.conf.loader import load_conf
from pyvolcano.framework.arguments import Arguments
from pyvolcano.framework.cycle import cycle_objects, result_json
from pyvolcano.framework.points import ABSTAIN, GANG_PREEMPT, PERMIT, EvictionContext, Rule, combine
from pyvolcano.framework.session import Session
from pyvolcano.framework.statement import Statement
from tests.test_topology_allocate import hn, node, pg, pod

CONF = """actions: "enqueue, allocate, gangpreempt"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: predicates
  - name: network-topology-aware
"""

NODES = [node(f"n{i}") for i in range(4)]
TOPO = [hn("s0", 1, ("n0", "n1")), hn("s1", 1, ("n2", "n3")), hn("spine", 2, kids=("s0", "s1"))]
PCS = [{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": n}, "value": v}
       for n, v in (("high", 1000), ("low", 10))]


def session(objects: list[dict[str, Any]], conf: str = CONF) -> Session:
    cache = SchedulerCache.from_objects([{"kind": "Queue", "metadata": {"name": "default"},
                                          "spec": {"weight": 1}, "status": {"state": "Open"}}, *objects])
    assert not cache.problems, cache.problems
    return Session(cache.snapshot(), load_conf(conf, "test")).open()


def running(name: str, group: str, node_name: str, cpu: int = 4, role: str = "") -> dict[str, Any]:
    p = pod(name, group, cpu, node_name)
    if role:
        p["metadata"]["annotations"]["volcano.sh/task-spec"] = role
    return p


def test_bundles_split_by_min_member_and_role_minimums() -> None:
    group = pg("j", 2, minTaskMember={"ps": 1, "worker": 1})
    ssn = session([*NODES, group, running("j-ps0", "j", "n0", role="ps"), running("j-w0", "j", "n1", role="worker"),
                   running("j-w1", "j", "n2", role="worker"), running("j-w2", "j", "n3", role="worker")])
    job = ssn.jobs["ns/j"]
    bundles = job_bundles(job, list(job.tasks.values()), ssn.res.size)
    safe, whole = bundles
    # 4 ready, minMember 2: two may go; the ps role holds exactly its minimum, so its pod is never safe
    assert safe.kind == SAFE and [t.name for t in safe.tasks] == ["j-w0", "j-w1"]
    assert whole.kind == WHOLE and [t.name for t in whole.tasks] == ["j-ps0", "j-w2"]
    assert not safe.cost.any() and whole.cost[0] == job.total_request[0]
    assert roi(safe, np.ones(ssn.res.size)) == float("inf")


def test_a_job_below_its_minimum_is_one_safe_bundle() -> None:
    ssn = session([*NODES, pg("j", 3), running("j-0", "j", "n0"), running("j-1", "j", "n1"), pod("j-2", "j")])
    job = ssn.jobs["ns/j"]
    (only,) = job_bundles(job, job.tasks_in(job.tasks["ns/j-0"].status), ssn.res.size)
    assert only.kind == SAFE and len(only.tasks) == 2


def part(p: dict[str, Any], role: str, index: int) -> dict[str, Any]:
    """A pod of partition ``index`` of sub-group policy ``role`` (the labels the vcjob controller writes)."""
    p["metadata"]["labels"] = {"volcano.sh/task-spec": role, "volcano.sh/partition-id": str(index)}
    return p


def policy(name: str, size: int, min_groups: int, nt: dict[str, Any] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "subGroupSize": size, "minSubGroups": min_groups,
                           "labelSelector": {"matchLabels": {"volcano.sh/task-spec": name}},
                           "matchLabelKeys": ["volcano.sh/partition-id"]}
    if nt is not None:
        out["networkTopology"] = nt
    return out


def test_bundles_keep_each_policy_at_its_min_sub_groups() -> None:
    # w-0 (j-0 running, j-1 pending) is broken; w-1 and w-2 are ready and w needs 1: one of them may go
    ssn = session([*NODES, pg("j", 1, subGroupPolicy=[policy("w", 2, 1)]),
                   part(running("j-0", "j", "n0"), "w", 0), part(pod("j-1", "j", 4), "w", 0),
                   part(running("j-2", "j", "n1", cpu=1), "w", 1), part(running("j-3", "j", "n1", cpu=1), "w", 1),
                   part(running("j-4", "j", "n2"), "w", 2), part(running("j-5", "j", "n3"), "w", 2)])
    job = ssn.jobs["ns/j"]
    safe, whole = job_bundles(job, job.tasks_in(job.tasks["ns/j-0"].status), ssn.res.size)
    # j-0: its sub-group is already broken; j-2 breaks w-1 (w's spare), j-3 then is in a broken sub-group too;
    # j-4 would break w's last ready sub-group (the job's own surplus, 4, would allow it)
    assert [t.name for t in safe.tasks] == ["j-0", "j-2", "j-3"]
    assert [t.name for t in whole.tasks] == ["j-4", "j-5"]
    # the default sub-group has no minimum
    ssn = session([*NODES, pg("k", 1, subGroupPolicy=[policy("w", 1, 1)]), part(running("k-0", "k", "n0"), "w", 0),
                   running("k-1", "k", "n1"), running("k-2", "k", "n2")])
    job = ssn.jobs["ns/k"]
    safe, whole = job_bundles(job, list(job.tasks.values()), ssn.res.size)
    assert [t.name for t in safe.tasks] == ["k-1", "k-2"] and [t.name for t in whole.tasks] == ["k-0"]


def test_eviction_worksheet_required_first_and_a_ready_job_asks_for_one_sub_group() -> None:
    conf = CONF.replace("  - name: gang\n", "  - name: gang\n    enableJobStarving: false\n")
    objs = [*NODES, pg("j", 2, subGroupPolicy=[policy("a", 2, 0), policy("b", 2, 1)]),
            part(pod("j-a0", "j", 4), "a", 0), part(pod("j-a1", "j", 4), "a", 0),
            part(pod("j-b0", "j", 4), "b", 1), part(pod("j-b1", "j", 4), "b", 1)]
    ssn = session(objs, conf)
    job = ssn.jobs["ns/j"]
    ws = eviction_worksheet(ssn, job)
    # b-1 is required (minSubGroups 1) and goes before a-0, which subJobOrder alone puts first (match value 0)
    assert [sj.uid for sj, _ in ws] == ["ns/j/b-1", "ns/j/a-0"]
    assert [t.name for t in pending_for_eviction(ssn, job)] == ["j-b0", "j-b1", "j-a0", "j-a1"]
    # b-1 running: the job is ready and asks only for the first sub-group of its worksheet
    objs[-2], objs[-1] = part(running("j-b0", "j", "n0"), "b", 1), part(running("j-b1", "j", "n1"), "b", 1)
    objs += [part(pod("j-a2", "j", 4), "a", 2), part(pod("j-a3", "j", 4), "a", 2)]
    ssn = session(objs, conf)
    job = ssn.jobs["ns/j"]
    assert ssn.job_ready(job) and ssn.job_starving(job)
    assert [t.name for t in pending_for_eviction(ssn, job)] == ["j-a0", "j-a1"]


def test_each_sub_group_is_nominated_its_hypernode() -> None:
    hard1 = {"mode": "hard", "highestTierAllowed": 1}
    objs = [*NODES, *TOPO, *PCS, pg("lo", 1, priorityClassName="low")]
    objs += [running(f"lo-{i}", "lo", f"n{i}") for i in range(4)]
    objs += [pg("hi", 4, {"mode": "hard", "highestTierAllowed": 2}, priorityClassName="high",
                subGroupPolicy=[policy("w", 2, 2, hard1)])]
    objs += [part(pod(f"hi-{i}", "hi", 4), "w", i // 2) for i in range(4)]
    ssn = session(objs)
    out = result_json(ssn.run())
    assert sorted(out["evictions"]) == [f"ns/lo-{i}" for i in range(4)]
    names = ssn.topology.topo.names
    got = {sid: names[h] for sid, h in ssn.topology.nominated.items()}
    assert sorted(got) == ["ns/hi/w-0", "ns/hi/w-1"] and sorted(got.values()) == ["s0", "s1"]
    leaf = {"n0": "s0", "n1": "s0", "n2": "s1", "n3": "s1"}
    for i in range(4):  # each partition in the leaf it was nominated
        assert leaf[out["pipelined"][f"ns/hi-{i}"]] == got[f"ns/hi/w-{i // 2}"]


def _bundle(ssn: Session, uid: str, kind: int, cpu: float, cost: float) -> Bundle:
    job = ssn.jobs[uid]
    local = np.zeros(ssn.res.size)
    local[0] = cpu
    c = np.zeros(ssn.res.size)
    c[0] = cost
    return Bundle(kind, job, list(job.tasks.values()), local, c)


def test_bundle_order_safe_first_then_the_given_order_then_return_on_investment() -> None:
    ssn = session([*NODES, pg("a", 1), running("a-0", "a", "n0"), pg("b", 1), running("b-0", "b", "n1"),
                   pg("c", 1), running("c-0", "c", "n2")])
    need = np.zeros(ssn.res.size)
    need[0] = 4000
    whole_small = _bundle(ssn, "ns/a", WHOLE, 4000, 16000)  # roi 0.25
    whole_big = _bundle(ssn, "ns/b", WHOLE, 4000, 8000)     # roi 0.5
    safe = _bundle(ssn, "ns/c", SAFE, 1000, 0)
    got = sort_bundles([whole_small, whole_big, safe], need, lambda a, b: 0)
    assert [b.job.name for b in got] == ["c", "b", "a"]
    by_name = sort_bundles([whole_big, whole_small], need, lambda a, b: -1 if a.job.name < b.job.name else 1)
    assert [b.job.name for b in by_name] == ["a", "b"]


def test_allowed_bundles_keep_whole_ones_only_whole() -> None:
    ssn = session([*NODES, pg("a", 1), running("a-0", "a", "n0"), running("a-1", "a", "n1")])
    job = ssn.jobs["ns/a"]
    tasks = sorted(job.tasks.values(), key=lambda t: t.uid)
    whole = Bundle(WHOLE, job, tasks, np.zeros(ssn.res.size), np.zeros(ssn.res.size))
    safe = Bundle(SAFE, job, tasks, np.zeros(ssn.res.size), np.zeros(ssn.res.size))
    got = allowed_bundles([whole, safe], {tasks[0].uid}, ssn.res.size)
    assert len(got) == 1 and got[0].kind == SAFE and got[0].tasks == [tasks[0]]


@pytest.mark.parametrize(("args", "want"), [({}, (8, True)), ({"maxDomains": 0}, (8, True)),
                                            ({"maxDomains": "-3"}, (8, True)),
                                            ({"maxDomains": 2, "allowWholeBundle": "false"}, (2, False))])
def test_arguments(args: dict[str, Any], want: tuple[int, bool]) -> None:
    opts = GangEvictOptions.of(Arguments(args, "action gangpreempt"))
    assert (opts.max_domains, opts.allow_whole) == want


def test_candidate_domains_widest_first_capped() -> None:
    tier2 = pg("j", 1, {"mode": "hard", "highestTierAllowed": 2})
    ssn = session([*NODES, *TOPO, tier2, pod("j-0", "j")])
    names = ssn.topology.topo.names
    job = ssn.jobs["ns/j"]
    assert [names[h] for h in candidate_domains(ssn, job, 8)] in (["spine", "s0", "s1"], ["spine", "s1", "s0"])
    assert [names[h] for h in candidate_domains(ssn, job, 1)] == ["spine"]
    capped = CONF.replace("  - name: network-topology-aware",
                          "  - name: network-topology-aware\n    arguments:\n"
                          "      hypernode.gradient.evict.max-hypernodes: 2")
    ssn = session([*NODES, *TOPO, tier2, pod("j-0", "j")], capped)
    assert len(candidate_domains(ssn, ssn.jobs["ns/j"], 8)) == 2
    # no constraint, or no gradient plugin: the whole cluster
    ssn = session([*NODES, *TOPO, pg("k", 1), pod("k-0", "k")])
    assert candidate_domains(ssn, ssn.jobs["ns/k"], 8) == [ssn.topology.topo.top]
    flat = CONF.replace("  - name: network-topology-aware\n", "")
    ssn = session([*NODES, *TOPO, tier2, pod("j-0", "j")], flat)
    assert candidate_domains(ssn, ssn.jobs["ns/j"], 8) == [ssn.topology.topo.top]


def test_unified_evictable_intersects_within_a_tier_and_has_no_enable_flag() -> None:
    ssn = session([*NODES, pg("a", 1), running("a-0", "a", "n0"), running("a-1", "a", "n1")])
    t0, t1 = sorted(ssn.jobs["ns/a"].tasks.values(), key=lambda t: t.uid)
    ctx = EvictionContext(GANG_PREEMPT, ssn.jobs["ns/a"], "x")
    tiers = [[("p", lambda c, ts: ([t0, t1], PERMIT)), ("q", lambda c, ts: ([t1], PERMIT)),
              ("r", lambda c, ts: ([], ABSTAIN))]]
    assert combine(Rule.INTERSECT, tiers, ctx, [t0, t1]) == [t1]
    empty_then_next = [[("p", lambda c, ts: ([], PERMIT))], [("q", lambda c, ts: ([t0], PERMIT))]]
    assert combine(Rule.INTERSECT, empty_then_next, ctx, [t0, t1]) == [t0]
    off = CONF.replace("  - name: conformance", "  - name: conformance\n    enablePreemptable: false")
    ssn = session([*NODES, pg("a", 1), running("a-0", "a", "n0")], off)
    assert "conformance" in [name for tier in ssn.fns["unifiedEvictable"] for name, _ in tier]


def test_conf_naming_the_actions_loads_and_gangpreempt_nominates() -> None:
    conf = load_conf(CONF + "configurations:\n- name: gangpreempt\n  arguments:\n    maxDomains: 4\n"
                     "    allowWholeBundle: true\n- name: gangreclaim\n  arguments:\n    maxDomains: 2\n", "t")
    assert conf.actions[-1] == "gangpreempt" and conf.action_args("gangreclaim").get_int("maxDomains", 8) == 2
    objs = [*NODES, *TOPO, *PCS, pg("lo", 1, priorityClassName="low")]
    objs += [running(f"lo-{i}", "lo", f"n{i}") for i in (2, 3)]
    objs += [running("top-0", "top", "n0"), running("top-1", "top", "n1"), pg("top", 1, priorityClassName="high")]
    objs += [pg("hi", 2, {"mode": "hard", "highestTierAllowed": 1}, priorityClassName="high"),
             pod("hi-0", "hi", 4), pod("hi-1", "hi", 4)]
    ssn = session(objs)
    result = ssn.run()
    out = result_json(result)
    assert sorted(out["evictions"]) == ["ns/lo-2", "ns/lo-3"]
    assert ssn.topology.topo.names[ssn.topology.nominated["ns/hi"]] == "s1"


def test_reason_is_the_action_name() -> None:
    objs = [node("n0"), *PCS, pg("lo", 1, priorityClassName="low"), running("lo-0", "lo", "n0"),
            running("lo-1", "lo", "n0", cpu=0), pg("hi", 1, priorityClassName="high"), pod("hi-0", "hi", 4)]
    result, _ = cycle_objects([{"kind": "Queue", "metadata": {"name": "default"}, "spec": {"weight": 1},
                                "status": {"state": "Open"}}, *objs], load_conf(CONF, "t"))
    assert [(e.task.name, e.reason) for e in result.evictions] == [("lo-0", "gangpreempt")]


def test_an_undone_eviction_leaves_the_node_view_unless_simulated() -> None:
    ssn = session([node("n0"), pg("a", 1), running("a-0", "a", "n0", cpu=1), running("a-1", "a", "n0", cpu=1)])
    t0, t1 = sorted(ssn.jobs["ns/a"].tasks.values(), key=lambda t: t.uid)
    sim = Statement(ssn, simulated=True)
    sim.evict(t0, "x")
    sim.discard(rollback=False)
    assert pods_in_view(ssn)[0] == 2 and not ssn.unevicted
    real = Statement(ssn)
    real.evict(t1, "x")
    real.discard(rollback=False)
    assert pods_in_view(ssn)[0] == 1 and set(ssn.unevicted) == {t1.uid}
