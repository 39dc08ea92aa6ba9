"""capacity (flat and hierarchical) and network-topology-aware keep the blocked-job memo's contract
(docs/extending.md, "Contracts"): oversubscribed runs give every job the same outcome, every bind the same node at
the same time and the same evictions with the memo and with ``--full-sessions`` (``SchedulerCache(memo=False)``),
with ``deltas.CHECK`` on (the suite's: the one-node rule and the gang bound take the turns they skip and must place
nothing) and off; each shows that the memo skipped jobs, so that a plugin turning it off would fail here.

* capacity flat: queues with deserved, capability and guarantee, with reclaim (Volcano's user guide adds it) and
  without (blocked and parked jobs left alone between sessions);
* capacity with ``enableHierarchy``: a queue tree under ``root``, and a PodGroup in a queue with children that
  makes the tree invalid (every job refused) until its Job is deleted: the refusals must lift with it;
* network-topology-aware on a leaf/spine HyperNode tree, half of the gangs hard- (or soft-) constrained: their
  turns are never memoised, the other jobs' are.

The seeded sweep over more workloads is marked slow.
"""

from __future__ import annotations

from typing import Any

import pytest

from pyvolcano.conf.loader import load_conf
from pyvolcano.framework.incremental import deltas
from pyvolcano.sim import metrics
from pyvolcano.sim import topology as st
from pyvolcano.sim.cluster import parse_cluster_spec
from pyvolcano.sim.engine import Simulator
from pyvolcano.sim.workload import JobSpec, synthetic, to_vcjob
from tests.sim.recording import record_binds

TIER1 = "- plugins:\n  - name: priority\n  - name: gang\n    enablePreemptable: false\n  - name: conformance\n"
TIER2 = ["overcommit", "drf\n    enablePreemptable: false", "predicates", "{queue}", "nodeorder", "binpack"]
CAPACITY = "capacity"
HIERARCHY = "capacity\n    enableHierarchy: true"
FULL_ACTIONS = "enqueue, allocate, preempt, reclaim, backfill"
LEAN_ACTIONS = "enqueue, allocate, backfill"


def conf(actions: str, queue_plugin: str, extra: str = "") -> Any:
    t2 = "".join(f"  - name: {p.format(queue=queue_plugin)}\n" for p in TIER2) + extra
    return load_conf(f'actions: "{actions}"\ntiers:\n{TIER1}- plugins:\n{t2}')


def queue(name: str, parent: str | None = None, **spec: Any) -> dict[str, Any]:
    s: dict[str, Any] = {"weight": 1, "reclaimable": True, **spec}
    if parent is not None:
        s["parent"] = parent
    return {"kind": "Queue", "metadata": {"name": name}, "spec": s}


FLAT_QUEUES = [queue("a", deserved={"cpu": "8", "nvidia.com/gpu": "2"}, capability={"cpu": "20"}),
               queue("b", deserved={"cpu": "12"}, guarantee={"resource": {"cpu": "4"}}),
               queue("c", capability={"cpu": "12", "nvidia.com/gpu": "4"})]
#: root -> eng -> (a, b); root -> c.  ``eng`` has children: a PodGroup in it makes the tree invalid
TREE_QUEUES = [queue("root"), queue("eng", "root", deserved={"cpu": "16"}, capability={"cpu": "24"}),
               queue("a", "eng", deserved={"cpu": "8"}), queue("b", "eng", deserved={"cpu": "8"},
                                                           guarantee={"resource": {"cpu": "2"}}),
               queue("c", "root", deserved={"cpu": "8"}, capability={"cpu": "12"})]


class Deleting(Simulator):
    """Its cancellations delete the Job (a user's ``kubectl delete``), PodGroup and pods with it, as
    ``ttlSecondsAfterFinished`` does (``Simulator._ttl``)."""

    def _cancel(self, key: str) -> None:
        self.controller.delete_job(key)


def _run(kind: str, actions: str, full: bool, seed: int, gangs: tuple[int, ...] = (1, 1, 2, 4)) -> tuple[Any, ...]:
    nodes = parse_cluster_spec("4x{cpu: 8, memory: 32Gi, nvidia.com/gpu: 2}" if not kind.startswith("topology")
                               else "8x{cpu: 4, memory: 16Gi, nvidia.com/gpu: 2}")
    shares = {"a": 1, "b": 2, "c": 1} if not kind.startswith("topology") else {"default": 1}
    wl = synthetic(seed=seed, jobs=45, rate=1.0, queues=shares, gang_sizes=gangs, mean_duration=150,
                   gpu_fraction=0.5, cpu_choices=("1", "2") if kind.startswith("topology") else ("1", "2", "4"))
    cancels: list[tuple[float, str]] = []
    hypernodes = None
    extra = ""
    if kind == "flat":
        c, queues = conf(actions, CAPACITY), FLAT_QUEUES
    elif kind == "tree":
        c, queues = conf(actions, HIERARCHY), TREE_QUEUES
        # a Job in the non-leaf queue eng from 8 s to 30 s: every job is refused meanwhile
        intruder = to_vcjob(JobSpec(name="intruder", arrival=8.0, queue="eng", cpu="1", duration=600))
        wl.jobs = sorted([*wl.jobs, (8.0, intruder)], key=lambda tj: tj[0])
        cancels = [(30.0, "default/intruder")]
    else:
        queues = [queue("default")]
        extra = "  - name: network-topology-aware\n"
        c = conf(actions, "proportion", extra)
        hypernodes = st.spec_hypernodes("leaf=2,spine=2", [n["metadata"]["name"] for n in nodes])
        wl.jobs = st.with_constraint(wl.jobs, st.parse_constraint(kind.split(":", 1)[1] if ":" in kind else "hard:1"),
                                     0.5, seed=seed)
    sim = Deleting(nodes, queues, wl, c, full_sessions=full, cancellations=cancels, hypernodes=hypernodes,
                   node_failures=[(40.0, nodes[0]["metadata"]["name"], 90.0)])
    binds = record_binds(sim, lambda task, node: f"{sim.now:.3f} {task.namespace}/{task.name} {node}")
    res = sim.run()
    assert not sim.problems, sim.problems
    skipped = sim.cache.incremental.memo.skipped if sim.cache.incremental is not None else 0
    return metrics.job_rows(res), binds, res.evictions, res.cycles, skipped


def _compare(kind: str, actions: str, seed: int, gangs: tuple[int, ...] = (1, 1, 2, 4)) -> None:
    full = _run(kind, actions, True, seed, gangs)
    memo = _run(kind, actions, False, seed, gangs)  # deltas.CHECK on (the suite's): proved skips take their turn
    assert memo[:4] == full[:4]
    assert full[4] == 0 and memo[4] > 0, "the memo never skipped a job: the case checks nothing"
    with deltas.checking(False):
        skipping = _run(kind, actions, False, seed, gangs)
    assert skipping[:4] == full[:4]


CASES = [("flat", FULL_ACTIONS), ("flat", LEAN_ACTIONS), ("tree", FULL_ACTIONS), ("tree", LEAN_ACTIONS),
         ("topology", LEAN_ACTIONS), ("topology:soft", FULL_ACTIONS)]


@pytest.mark.parametrize(("kind", "actions"), CASES, ids=[f"{k}-{len(a.split(','))}-actions" for k, a in CASES])
def test_capacity_and_network_topology_keep_the_memo_contract(kind: str, actions: str) -> None:
    _compare(kind, actions, 7)


def test_the_invalid_tree_refuses_then_lifts() -> None:
    """The tree case checks what it says: while the intruder's PodGroup sits in ``eng`` nothing binds, and jobs
    that arrived then start after its Job is deleted (so the memo's refusals of that time had to lift)."""
    rows, binds, *_ = _run("tree", LEAN_ACTIONS, False, 7)
    times = [float(b.split()[0]) for b in binds]
    assert not [t for t in times if 9.5 < t < 30.0], "a bind while the queue tree is invalid"
    waited = [r for r in rows if r["job"] != "default/intruder" and 9.0 < r["submit"] < 30.0 and r["wait"] is not None]
    assert waited and all(r["submit"] + r["wait"] >= 30.0 for r in waited)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(1, 9))
@pytest.mark.parametrize(("kind", "actions"), CASES, ids=[f"{k}-{len(a.split(','))}-actions" for k, a in CASES])
def test_seeded_sweep(kind: str, actions: str, seed: int) -> None:
    _compare(kind, actions, seed, (1, 2, 4, 8) if seed % 2 else (1, 1, 2, 4))
