"""Differential test: seeded random small clusters through pyvolcano and the real Volcano (master ed72c7c8).

Each case comes from ``tests/differential/gen.py`` (a family = a scheduler conf and the objects it exercises, and a
seed) and is compared by ``tests/differential/compare.py``: binds, evictions, pipelined pods and PodGroup phases,
keeping only what two oracle runs decided the same way and counting a node choice among Volcano's best-scored
nodes as agreement. A failing case prints its family, seed, the differences and the path of its scenario file, to
rerun with ``../shared/tools/volcano/vc-oracle FILE`` and ``python -m tests.differential.rerun FILE``.

``make test`` runs :data:`FAST_CASES` seeds of every family not in :data:`BLOCKED_FAMILIES`; ``make bench`` runs
:data:`BENCH_CASES` seeds of every family and prints how many agree and a count per disagreement class. Enabling a
family once its rules have landed is deleting its row in :data:`BLOCKED_FAMILIES`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import oracle
from tests.differential.compare import compare, run_pyvolcano
from tests.differential.gen import FAMILIES, Case, generate
from tests.differential.rerun import summary, sweep
from tests.scenario_check import check, load

REPROS = sorted((Path(__file__).parent / "differential" / "repros").glob("*.yaml"))

#: family -> what blocks it: the issue-13 rules (or "new" findings) whose absence makes it disagree today, from the
#: sweep recorded in docs/volcano-differences.md ("How agreement is checked"). Enabling a family = deleting its row.
BLOCKED_FAMILIES: dict[str, str] = {
    # every family agrees on seeds 0-19 since 2026-11-24 (docs/volcano-differences.md: 20-59); topology and
    # subgroups (seeds 0-199 agree) since the compare counts equally scored hypernodes as a tie
    # (SessionResult.hypernode_ties); gangpreempt and gangreclaim (seeds 0-199 agree, with HyperNodes) since it
    # also counts the later eviction domains of the chosen one's tier as ties (Volcano visits them in Go map order:
    # framework/topology.py: visited_first)
}
#: families with fewer seeds in ``make test`` than :data:`FAST_CASES` (each case is a few evicting sessions)
FAST_CASES_OF: dict[str, int] = {"gangpreempt": 6, "gangreclaim": 6}
#: seeds per enabled family in ``make test``: each case is pyvolcano (well under 0.1 s) and two oracle runs at once,
#: each waiting ``oracle.QUIET`` for stragglers; the oracle runs of the next cases overlap (``oracle.Ahead``), so the
#: whole set takes well under a minute of ``make test``
FAST_CASES = 10
#: seeds per family in ``make bench`` (``PYVOLCANO_DIFF_BENCH_CASES`` overrides it, e.g. for a quick look)
BENCH_CASES = int(os.environ.get("PYVOLCANO_DIFF_BENCH_CASES", "100"))

ENABLED = [f for f in FAMILIES if f not in BLOCKED_FAMILIES]
needs_oracle = pytest.mark.skipif(not oracle.available(), reason=oracle.SKIP_REASON)


def test_blocked_families_exist() -> None:
    assert set(BLOCKED_FAMILIES) <= set(FAMILIES)
    assert ENABLED, "no family is checked in make test"


FAST = [(f, s) for s in range(FAST_CASES) for f in ENABLED if s < FAST_CASES_OF.get(f, FAST_CASES)]


def _volcano(key: tuple[str, int]) -> oracle.Stable:
    case = generate(*key)
    return oracle.stable(case.objects, case.config)


@pytest.fixture(scope="module")
def volcano(request: pytest.FixtureRequest) -> Iterator[oracle.Ahead[tuple[str, int], oracle.Stable]]:
    """The oracle's side of each case, started a few cases ahead of its test (``oracle.Ahead``)."""
    ahead = oracle.Ahead(oracle.selected(request, "test_random_cluster_agrees", "family", "seed"), _volcano)
    yield ahead
    ahead.close()


@needs_oracle
@pytest.mark.parametrize(("family", "seed"), FAST)
def test_random_cluster_agrees(family: str, seed: int, tmp_path: Path,
                               volcano: oracle.Ahead[tuple[str, int], oracle.Stable]) -> None:
    out = compare(generate(family, seed), tmp_path, lambda: volcano.get((family, seed)))
    assert out.agrees, f"family {family} seed {seed} disagrees with Volcano:\n{out.report()}"


@pytest.mark.slow
@needs_oracle
def test_differential_sweep(tmp_path: Path) -> None:
    """Many cases over every family: the summary of disagreement causes (``make bench`` prints it)."""
    outcomes = sweep(list(FAMILIES), 0, BENCH_CASES - 1)
    print("\n" + summary(outcomes))
    for o in outcomes:
        if not o.agrees:
            print(o.report())
    crashed = [o.report() for o in outcomes if o.error]
    assert not crashed, "cases that crashed a scheduler or the oracle:\n" + "\n".join(crashed)
    enabled_bad = [o.report() for o in outcomes if o.case.family in ENABLED and not o.agrees]
    assert not enabled_bad, "enabled families disagree:\n" + "\n".join(enabled_bad)


@needs_oracle
@pytest.mark.parametrize("path", REPROS, ids=lambda p: p.stem)
def test_repro_is_what_volcano_decides_and_pyvolcano_does_not(path: Path) -> None:
    """Each minimal repro of a disagreement class: its ``expect`` is Volcano's decision (both oracle runs), and
    pyvolcano still decides otherwise. Once the rule lands, pyvolcano agrees and this fails: move the file to
    ``tests/scenarios/core/`` (it is then an ordinary confirmed scenario) and drop its row from the docs."""
    sc = load(path)
    rule = str(sc.get("rule"))
    assert rule == "new" or rule.split(",")[0].strip().isdigit(), f"{path.name}: rule {rule!r}"
    st = oracle.stable(sc["objects"], sc["config"])
    for i, result in enumerate(st.runs):
        errs = oracle.check_expect(result, sc["expect"])
        assert not errs, f"{path.name}: oracle run {i + 1} does not decide the expect:\n  " + "\n  ".join(errs)
    py = run_pyvolcano(Case(path.stem, 0, sc["config"], sc["objects"]))
    assert check(py, sc["expect"]), (f"{path.name} (rule {rule}): pyvolcano now decides what Volcano does; move "
                                     "it to tests/scenarios/core/ and update docs/volcano-differences.md")


def test_a_node_under_another_equally_scored_hypernode_is_a_tie() -> None:
    from tests.differential.compare import _hypernode_tie
    ties = {"ns/a": {"s0": ["n0", "n1"], "s1": ["n2", "n3"]}}
    assert _hypernode_tie(ties, "ns/a", "n2", "n0")
    assert not _hypernode_tie(ties, "ns/a", "n4", "n0")  # Volcano's node under no tied hypernode
    assert not _hypernode_tie(ties, "ns/b", "n2", "n0")  # another job's choice was no tie
    assert not _hypernode_tie(ties, None, "n2", "n0")


def test_evicting_one_of_two_pods_alike_but_for_their_names_is_a_tie() -> None:
    from tests.differential.compare import _swaps
    from tests.differential.gen import Case

    def pod(name: str, cpu: str = "1") -> dict[str, object]:
        return {"kind": "Pod", "metadata": {"name": name, "namespace": "ns", "annotations": {"g": "j"}},
                "spec": {"nodeName": "n0", "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}}

    case = Case("x", 0, "", [pod("a"), pod("b"), pod("c", "2"), pod("d")])
    assert _swaps(case, ["ns/a"], ["ns/b"]) == [("ns/a", "ns/b")]
    assert _swaps(case, ["ns/a"], ["ns/c"]) == []  # a different request: a real difference
    assert _swaps(case, ["ns/a", "ns/d"], ["ns/b"]) == [("ns/a", "ns/b")]  # each pod paired once


def test_a_victim_with_a_twin_for_the_votes_is_a_tie() -> None:
    """Two pods of one job on one node, alike for the victim votes but not in their affinity or requests: gang and
    drf offer whichever Volcano's Go map order meets first, so a pod evicted by one side only is a tie; pods of
    another priority are not, nor are twins under gangpreempt (it evicts bundles)."""
    from tests.differential.compare import _vote_ties
    from tests.differential.gen import CONFS, Case

    def pod(name: str, cpu: str = "1", anti: bool = False, prio: int = 10) -> dict[str, object]:
        spec: dict[str, object] = {"nodeName": "n0", "priority": prio,
                                   "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}
        if anti:
            spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "kubernetes.io/hostname"}]}}
        return {"kind": "Pod", "metadata": {"name": name, "namespace": "ns", "annotations": {
            "scheduling.k8s.io/group-name": "j"}}, "spec": spec}

    case = Case("x", 0, CONFS["preempt"], [pod("a"), pod("b", anti=True), pod("c", "2", anti=True, prio=20)])
    assert _vote_ties(case, [], ["ns/b"], set(), {"ns/b"}) == ["ns/b / ns/a"]
    assert _vote_ties(case, ["ns/b"], [], {"ns/b", "ns/a"}, set()) == []  # Volcano evicted the twin too
    assert _vote_ties(case, [], ["ns/c"], set(), {"ns/c"}) == []  # no twin: another priority
    wide = Case("x", 0, CONFS["reclaim"], [pod("a"), pod("d", "2")])
    assert _vote_ties(wide, ["ns/d"], [], {"ns/d"}, set()) == ["ns/d / ns/a"]  # requests differ: still twins
    assert _vote_ties(Case("x", 0, CONFS["gangpreempt"], case.objects), [], ["ns/b"], set(), {"ns/b"}) == []


def test_eviction_domains_of_one_tier_are_ties() -> None:
    """gangpreempt/gangreclaim try the domains of one tier in Go map order (``hyperNodeGradientFn`` walks the
    children sets): with ``record_ties`` the domain taken and every later one of its tier are recorded for the job
    (``framework/topology.py: visited_first``), so Volcano putting the gang under another of them is a tie; a
    domain alone in its tier (the spine) records nothing."""
    from pyvolcano.conf.loader import load_conf
    from pyvolcano.framework.cycle import cycle_objects

    def ties(name: str) -> dict[str, dict[str, list[str]]]:
        sc = load(Path(__file__).parent / "scenarios" / "gangpreempt" / name)
        result, _ = cycle_objects(sc["objects"], load_conf(sc["config"], name), "volcano", "vector", record_ties=True)
        return result.hypernode_ties

    assert ties("gangreclaim-hard-tier1-leaf.yaml") == {"ns/want": {"s0": ["n0", "n1"], "s1": ["n2", "n3"]}}
    assert ties("hard-tier2-spine-domain.yaml") == {}


def test_a_tie_in_any_score_map_of_the_pod_counts() -> None:
    """Topology-aware allocate dry-runs a job in several hypernodes and keeps one: the score map of the kept
    placement need not be the pod's last, so a tie in any of its maps counts (``oracle.score_maps``)."""
    log = ("I scheduler_helper.go:140] Prioritize nodeScoreMap for task<ns/a> is: map[n1:5 n2:5]\n"
           "I scheduler_helper.go:140] Prioritize nodeScoreMap for task<ns/a> is: map[n4:3 n5:4]\n")
    run = {"scoreMaps": oracle.score_maps(log), "decisionScores": oracle.decision_scores(log)}
    st = oracle.Stable(runs=[run])
    assert run["decisionScores"] == {"ns/a": {"n4": 3.0, "n5": 4.0}}
    assert st.tie("ns/a", "n1", "n2") and not st.tie("ns/a", "n4", "n5") and not st.tie("ns/b", "n1", "n2")
