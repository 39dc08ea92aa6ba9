"""``pyvolcano bench`` on small inputs: the JSON contract of issue 6, the preempt set-up really preempting, the
engine comparison, the candidate limits, and bad input.  Timings are never asserted here (benchmarks/ does)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from pyvolcano.actions._victims import CandidateLimits
from pyvolcano.bench.run import build
from pyvolcano.cli import main
from pyvolcano.framework.arguments import Arguments


def bench(*args: str) -> dict:
    res = CliRunner().invoke(main, ["bench", "-o", "json", *args])
    assert res.exit_code == 0, res.output
    return json.loads(res.output)


def test_json_has_the_documented_keys_and_places_the_backlog() -> None:
    out = bench("--nodes", "40", "--pods", "200", "--gang", "10", "--queues", "4")
    assert {"nodes", "pods", "placed", "seconds", "pods_per_second", "peak_rss_mb", "engine"} <= out.keys()
    assert out["nodes"] == 40 and out["pods"] == 200 and out["engine"] == "vector"
    assert out["placed"] == 200  # 40 nodes of 32+ cores hold 200 small pods
    assert {"enqueue", "allocate", "backfill"} <= out["seconds"].keys()


def test_backlog_starts_pending_so_enqueue_admits_it() -> None:
    objs = build(10, 30, 10, 3)
    phases = {o["status"]["phase"] for o in objs if o["kind"] == "PodGroup"}
    assert phases == {"Pending"}


def test_preempt_setup_fills_every_node_and_preempts() -> None:
    out = bench("--nodes", "20", "--pods", "20", "--running", "80", "--queues", "1",
                "--actions", "enqueue, allocate, preempt")
    assert out["evictions"] > 0
    assert out["placed"] == 20  # all pipelined onto nodes being freed
    objs = build(20, 20, 10, 1, running=80)
    running = [o for o in objs if o["kind"] == "Pod" and o["spec"].get("nodeName")]
    assert len(running) == 80 and len({p["spec"]["nodeName"] for p in running}) == 20


def test_engines_make_the_same_decisions() -> None:
    out = bench("--nodes", "30", "--pods", "120", "--compare-engines")
    assert out["same_decisions"] is True
    assert out["vector_speedup"] > 0


def test_compare_engines_refuses_huge_inputs_without_force() -> None:
    res = CliRunner().invoke(main, ["bench", "--nodes", "5000", "--pods", "50000", "--compare-engines"])
    assert res.exit_code == 2
    assert "minutes" in res.output and "--force" in res.output


@pytest.mark.parametrize("args", [["--nodes", "0"], ["--gang", "0"], ["--pods", "-1"]])
def test_bad_sizes_are_one_line_errors(args: list[str]) -> None:
    res = CliRunner().invoke(main, ["bench", *args])
    assert res.exit_code == 2 and "Traceback" not in res.output


def test_unknown_action_names_the_known_ones() -> None:
    res = CliRunner().invoke(main, ["bench", "--nodes", "2", "--pods", "2", "--gang", "1", "--actions", "alocate"])
    assert res.exit_code == 2 and "known actions" in res.output


# Volcano's calculateNumCandidates defaults (preempt.go): 10 %, at least 1, at most 100, at most all nodes
@pytest.mark.parametrize(("feasible", "want"), [(3, 1), (100, 10), (150, 15), (5000, 100), (0, 1), (29, 2)])
def test_candidate_limits_default(feasible: int, want: int) -> None:
    assert CandidateLimits().count(feasible) == want


def test_candidate_limits_from_arguments() -> None:
    lim = CandidateLimits.of(Arguments({"minCandidateNodesPercentage": "20", "minCandidateNodesAbsolute": 1,
                                        "maxCandidateNodesAbsolute": 500}, "preempt"))
    assert (lim.count(1000), lim.count(4), lim.count(5000)) == (200, 1, 500)


def test_topology_case_builds_the_tree_and_places_every_gang_in_one_allowed_hypernode() -> None:
    """``bench --topology``: leaves of 16 nodes, spines of 8 leaves, one top; every hard gang lands under one
    hypernode of its allowed tier and every pod is placed."""
    from pyvolcano.bench import topology
    from pyvolcano.cache.cache import SchedulerCache
    from pyvolcano.conf.loader import load_conf
    from pyvolcano.framework.cycle import run_session

    out = bench("--topology", "--nodes", "160", "--gangs", "6", "--pods", "10")
    assert out["case"] == "topology" and out["placed"] == out["pods"] and out["session_cpu_seconds"] >= 0
    objs = topology.build(160, 6, 10)
    hns = {o["metadata"]["name"]: o["spec"] for o in objs if o["kind"] == "HyperNode"}
    assert sorted({s["tier"] for s in hns.values()}) == [1, 2, 3]
    assert len(hns) == 10 + 2 + 1 and len(hns["leaf-0"]["members"]) == 16
    assert len(hns["spine-0"]["members"]) == 8 and len(hns["top-0"]["members"]) == 2
    result = run_session(SchedulerCache.from_objects(objs), load_conf(topology.CONF, "bench"), "vector")
    leaf_of = {m["selector"]["exactMatch"]["name"]: (name, int(name[5:]) // 8)
               for name, s in hns.items() if s["tier"] == 1 for m in s["members"]}
    for pg in (o for o in objs if o["kind"] == "PodGroup" and "networkTopology" in o["spec"]):
        name = pg["metadata"]["name"]
        nodes = [n for pod, n in result.binds.items() if pod.rsplit("-", 1)[0] == f"bench/{name}"]
        assert len(nodes) == pg["spec"]["minMember"]
        level = 0 if pg["spec"]["networkTopology"]["highestTierAllowed"] == 1 else 1
        assert len({leaf_of[n][level] for n in nodes}) == 1


def test_topology_oracle_is_refused_without_topology() -> None:
    res = CliRunner().invoke(main, ["bench", "--oracle", "/bin/true", "--nodes", "4", "--pods", "4"])
    assert res.exit_code != 0 and "--topology" in res.output
