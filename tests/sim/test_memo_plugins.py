"""The plugins and actions that declare contracts (docs/extending.md, "Contracts") keep them: random contended
workloads with each one in the conf give every job the same outcome with the blocked-job memo and with
``--full-sessions`` (``SchedulerCache(memo=False)``), as ``tests/sim/test_memo.py`` checks for the default tiers;
with ``deltas.CHECK`` off too (the one-node rule and the gang bound then skip turns instead of proving them).  Each
case also shows that the memo was on (jobs were skipped): a plugin that turned it off would pass trivially.
``tests/test_contracts.py`` checks that the plugins that stay exact turn it off; resource-strategy-fit with its
``proportional`` filter is run here too, the memo off, for its node selection carried between sessions."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from pyvolcano.conf.loader import load_conf
from pyvolcano.framework.incremental import deltas
from pyvolcano.sim import metrics
from pyvolcano.sim.cluster import parse_cluster_spec
from pyvolcano.sim.engine import Simulator
from pyvolcano.sim.workload import synthetic

TIER1 = ["priority", "gang", "conformance"]
TIER2 = ["overcommit", "drf", "predicates", "proportion", "nodeorder", "binpack"]
RSF = """
  - name: resource-strategy-fit
    arguments:
      resourceStrategyFitWeight: 10
      resources:
        nvidia.com/gpu: {type: MostAllocated, weight: 2}
        cpu: {type: LeastAllocated, weight: 1}
      sra: {enable: true, weight: 5, resources: nvidia.com/gpu}
"""
PROPORTIONAL = """
  - name: resource-strategy-fit
    arguments:
      proportional: {enable: true, resources: nvidia.com/gpu, resourceProportion: {nvidia.com/gpu.cpu: 2}}
"""


@dataclass
class Case:
    """One plugin (or action) in the conf: ``first``/``second``: YAML entries appended to tier 1/tier 2."""

    name: str
    actions: str = "enqueue, allocate, preempt, reclaim, backfill"
    first: str = ""
    second: str = ""
    #: label the nodes with two node groups and give the queues node-group affinities (nodegroup)
    groups: bool = False
    #: the plugin keeps no contract: the memo stays off, what is carried between sessions (node selection) is
    #: still compared with ``--full-sessions``
    exact: bool = False

    def conf(self) -> str:
        t1 = "".join(f"  - name: {n}\n" for n in TIER1) + self.first.lstrip("\n")
        t2 = "".join(f"  - name: {n}\n" for n in TIER2) + self.second.lstrip("\n")
        return f'actions: "{self.actions}"\ntiers:\n- plugins:\n{t1}- plugins:\n{t2}'


CASES = [
    Case("resource-strategy-fit", second=RSF),
    Case("resource-strategy-fit-settled", actions="enqueue, allocate, backfill", second=RSF),
    Case("resource-strategy-fit-proportional", second=PROPORTIONAL, exact=True),
    Case("cdp", first="  - name: cdp\n"),
    Case("pdb", first="  - name: pdb\n"),
    # queue a may use group g1 only, b both (g2 preferred): a's jobs wait for half the nodes
    Case("nodegroup", second="  - name: nodegroup\n", groups=True),
    # shuffle declares LEAVES_BLOCKED (as preempt and reclaim do): blocked jobs stay left alone with it in the actions
    Case("rescheduling+shuffle", actions="enqueue, allocate, backfill, shuffle",
         first="  - name: rescheduling\n    arguments: {interval: 30s, metricsPeriod: 10m}\n"),
]


def _run(case: Case, full: bool, seed: int, gangs: tuple[int, ...], nodes: int) -> tuple[Any, ...]:
    queues = [{"kind": "Queue", "metadata": {"name": q}, "spec": {"weight": w, "reclaimable": True}}
              for q, w in (("a", 1), ("b", 3))]
    wl = synthetic(seed=seed, jobs=45, rate=1.0, queues={"a": 1, "b": 3}, gang_sizes=gangs, mean_duration=150,
                   gpu_fraction=0.5)
    cluster = parse_cluster_spec(f"{nodes}x{{cpu: 8, memory: 32Gi, nvidia.com/gpu: 2}}")
    if case.groups:
        req, pref = "requiredDuringSchedulingIgnoredDuringExecution", "preferredDuringSchedulingIgnoredDuringExecution"
        for i, node in enumerate(cluster):
            node["metadata"].setdefault("labels", {})["volcano.sh/nodegroup-name"] = f"g{i % 2 + 1}"
        queues[0]["spec"]["affinity"] = {"nodeGroupAffinity": {req: ["g1"]}}
        queues[1]["spec"]["affinity"] = {"nodeGroupAffinity": {req: ["g1"], pref: ["g2"]}}
    sim = Simulator(cluster, queues, wl,
                    load_conf(case.conf()), full_sessions=full,
                    node_failures=[(40.0, "node-0000", 90.0)])
    res = sim.run()
    skipped = sim.cache.incremental.memo.skipped if sim.cache.incremental is not None else 0
    return metrics.job_rows(res), res.evictions, res.cycles, skipped


#: two workloads for the plugins whose rules decide placements; one for the rest (shuffle's conf runs a session
#: every simulated second)
RUNS = [(c, 7, (1, 1, 2, 4), 3) for c in CASES] + \
    [(c, 11, (2, 4, 8), 4) for c in CASES if c.name in ("resource-strategy-fit", "resource-strategy-fit-proportional",
                                                       "nodegroup")]


@pytest.mark.parametrize(("case", "seed", "gangs", "nodes"), RUNS, ids=[f"{r[0].name}-{r[1]}" for r in RUNS])
def test_declared_plugins_give_the_same_outcome_with_the_memo(case: Case, seed: int, gangs: tuple[int, ...],
                                                             nodes: int) -> None:
    full = _run(case, True, seed, gangs, nodes)
    memo = _run(case, False, seed, gangs, nodes)  # deltas.CHECK on (the suite's): proved skips take their turn
    assert memo[:3] == full[:3]
    if case.exact:
        assert memo[3] == 0
        return
    assert full[3] == 0 and memo[3] > 0, "the memo never skipped a job: the case checks nothing"
    with deltas.checking(False):
        skipping = _run(case, False, seed, gangs, nodes)
    assert skipping[:3] == full[:3]


def test_resourcequota_would_break_the_memo(monkeypatch: pytest.MonkeyPatch) -> None:
    """Why resourcequota stays exact (docs/extending.md): its vote counts a job it admitted only in that session,
    so a refusal lifts in the next one with no change the cache's epochs see.  Declared, the memo skips jobs the
    exact path admits: outcomes differ."""
    from pyvolcano.framework.incremental.contracts import Contract
    from pyvolcano.plugins.resourcequota import ResourceQuota

    case = Case("resourcequota", actions="enqueue, allocate, backfill", first="  - name: resourcequota\n")

    def run(full: bool) -> tuple[Any, ...]:
        queues = [{"kind": "Queue", "metadata": {"name": "a"}, "spec": {"weight": 1}}]
        wl = synthetic(seed=7, jobs=45, rate=1.0, queues={"a": 1}, gang_sizes=(1, 1, 2, 4), mean_duration=150,
                       gpu_fraction=0.5)
        sim = Simulator(parse_cluster_spec("3x{cpu: 8, memory: 32Gi, nvidia.com/gpu: 2}"), queues, wl,
                        load_conf(case.conf()), full_sessions=full)
        sim.api.create({"kind": "ResourceQuota", "metadata": {"name": "quota", "namespace": "default"},
                        "spec": {"hard": {"cpu": "20"}}}, trusted=False)
        return tuple(metrics.job_rows(sim.run()))

    assert Contract.FINGERPRINTED not in ResourceQuota.contracts
    exact = run(False)
    assert exact == run(True)
    monkeypatch.setattr(ResourceQuota, "contracts", frozenset({Contract.FINGERPRINTED, Contract.ENQUEUE_VOTER,
                                                                Contract.STATEFUL_PERMIT}))
    assert run(False) != exact
