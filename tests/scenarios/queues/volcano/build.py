"""Writes the scenarios in this folder (``python tests/scenarios/queues/volcano/build.py``): points where
pyvolcano follows Volcano's code rather than the obvious reading (Volcano 1.9 preempt, 1.11 reclaim and
proportion, 1.12 queue states, Volcano's pdb and hierarchical drf).

The manifests reuse the helpers of ``../build.py``; every ``expect`` is computed by hand from Volcano's rules
(the reasoning is in each ``notes``), never from pyvolcano's output.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("queue_scenario_helpers", HERE.parent / "build.py")
assert _spec is not None and _spec.loader is not None
h = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(h)
NS = h.NS
node, queue, job, pdb, conf, a = h.node, h.queue, h.job, h.pdb, h.conf, h.a

PNG = conf("allocate, preempt", ["priority", ("gang", {"enablePreemptable": False}), "conformance"],
           ["predicates", "proportion"])
R1 = conf("allocate, reclaim", ["priority", "gang", "conformance", "proportion"], ["predicates"])
PDB = conf("allocate, preempt", ["priority", ("gang", {"enablePreemptable": False}), "conformance", "pdb"],
           ["predicates"])

SCENARIOS: list[dict[str, Any]] = []


def sc(file: str, name: str, config: str, objects: list[Any], expect: dict[str, Any], notes: str) -> None:
    h.SCENARIOS.clear()
    h.sc(file, name, config, objects, expect, notes)
    SCENARIOS.extend(h.SCENARIOS)


sc("v01-preempt-until-task-fits-queue", "preempt evicts until the task fits its queue, not only the node", PNG,
   [node("n1", 4), queue("q1", capability={"cpu": "3"}), job("low", "q1", run=["n1"] * 3, prio=10),
    job("high", "q1", pend=1, cpu=2, prio=1000, created=5)],
   {"evictionsCount": 2, "evictionsFrom": a("low-0", "low-1", "low-2"), "pipelined": {f"{NS}/high-0": "n1"}},
   "q1's capability 3 caps its deserved at 3 (it asks 5); it holds 3, so allocate skips it. On n1 one idle cpu plus "
   "one victim would fit the 2-cpu task, but Volcano 1.9 keeps evicting while the queue is not allocatable: after one "
   "eviction q1 holds 2 and 2 > 3 - 2; after two it holds 1 and 2 <= 3 - 1. Two evictions, high pipelined on n1; "
   "q1 ends at its capability 3.")
sc("v02-closed-queue-does-not-reclaim", "a Closed queue's starving job reclaims nothing", R1,
   [node("n1", 4), queue("q1", state="Closed"), queue("q2"), job("y", "q1", run=["n1"], pend=1, min_member=2),
    job("x", "q2", run=["n1"] * 3, created=1)],
   {"evictions": [], "pipelined": {}, "binds": {}},
   "q1 asks 2 and q2 asks 3 of 4 cpu: both deserve 2, q2 holds 3. Were q1 Open, y (1 of minMember 2) would reclaim "
   "one of x's pods. A queue that is not Open gets nothing new (Volcano 1.12: allocatable and preemptive are false), "
   "so neither allocate nor reclaim acts for it; its running pod keeps running.")
sc("v03-preemption-policy-never", "a pod with preemptionPolicy Never does not preempt", PNG,
   [node("n1", 2), job("low", run=["n1", "n1"], prio=10), job("high", pend=1, prio=1000, created=5)],
   {"evictions": [], "pipelined": {}},
   "high would take one of low's pods (see p01), but its pod says spec.preemptionPolicy: Never.")
never = SCENARIOS[-1]
for o in never["objects"]:
    if o["kind"] == "Pod" and o["metadata"]["name"] == "high-0":
        o["spec"]["preemptionPolicy"] = "Never"
sc("v04-reclaim-only-within-deserved", "a queue reclaims only for a task that fits its deserved share", R1,
   [node("n1", 5), queue("q1"), queue("q2"), job("x", "q1", run=["n1"] * 4), job("y", "q2", pend=1, cpu=3, created=5)],
   {"evictions": [], "pipelined": {}},
   "5 cpu; q1 asks 4, q2 asks 3: each deserves 2.5. q1 holds 4, one cpu is idle. Two of x's pods plus the idle cpu "
   "would fit y's 3 cpu, but q2 would then hold 3 > 2.5: proportion's preemptive (Volcano 1.11: allocated + task "
   "within deserved) says no, and allocate's allocatable said no for the same reason.")
sc("d07-pdb-plugin-spares-unlabelled-pods", "Volcano's pdb plugin never offers a pod without labels", PDB,
   [node("n1", 2), job("low", run=["n1"], prio=5), job("lab", run=["n1"], prio=10, created=1,
                                                      labels={"app": "batch"}),
    job("high", pend=1, prio=1000, created=5)],
   {"evictions": a("lab-0"), "pipelined": {f"{NS}/high-0": "n1"}},
   "No PodDisruptionBudget exists. Without the quirk low (priority 5) would go and lab (10) be reprieved; but "
   "Volcano's pdb filter skips pods that have no labels instead of keeping them, so only lab is a candidate.")
sc("d08-pdb-empty-selector-matches-nothing", "a PodDisruptionBudget with an empty selector protects nothing", PDB,
   [node("n1", 1), job("w", run=["n1"], prio=10, labels={"app": "web"}), pdb("all", {}, allowed=0),
    job("high", pend=1, prio=1000, created=5)],
   {"evictions": a("w-0"), "pipelined": {f"{NS}/high-0": "n1"}},
   "policy/v1 says an empty selector selects every pod, but kube-scheduler and Volcano both skip a PDB whose "
   "selector is empty (\"matches nothing\"), so the budget of 0 does not stop the eviction.")
disrupted = pdb("web", {"app": "web"}, allowed=0)
disrupted["status"]["disruptedPods"] = {"w-0": "2026-01-01T00:00:00Z"}
sc("d09-pdb-disrupted-pod-not-charged", "a pod the budget already counts as disrupted is not charged again", PDB,
   [node("n1", 1), job("w", run=["n1"], prio=10, labels={"app": "web"}), disrupted,
    job("high", pend=1, prio=1000, created=5)],
   {"evictions": a("w-0"), "pipelined": {f"{NS}/high-0": "n1"}},
   "disruptionsAllowed is 0, but w-0 is in status.disruptedPods: the API server already granted its eviction, so "
   "kube-scheduler and Volcano do not charge the budget for it.")
CH = conf("enqueue, allocate, reclaim", ["priority", "gang", "conformance", ("capacity", {"enableHierarchy": True})],
          ["predicates"])
sc("ch01-parent-deserved-below-children-warns", "hierarchical capacity: a parent without deserved is only a "
   "warning", CH, [node("n1", 4), queue("root"), queue("eng"), queue("dev", parent="eng", deserved={"cpu": "2"}),
                   job("x", "dev", pend=1, min_cpu=1, phase="Pending")],
   {"binds": {f"{NS}/x-0": "n1"}, "podgroupPhases": {f"{NS}/x": "Inqueue"}},
   "eng's deserved (0) does not cover dev's 2. Volcano master's checkHierarchicalQueue logs this and goes on "
   "(Volcano 1.12 refused the whole tree); pyvolcano queues lists it as a problem.")
sc("ch02-job-in-parent-queue", "hierarchical capacity: a PodGroup in a queue with children stops all scheduling", CH,
   [node("n1", 4), queue("root"), queue("eng"), queue("dev", parent="eng"), job("x", "eng", pend=1),
    job("y", "dev", pend=1, created=1)],
   {"binds": {}},
   "Only leaf queues may hold jobs. Volcano's buildHierarchicalQueueAttrs gives up when it meets x in eng, and "
   "then allocatable is false for every queue: y in the leaf dev waits too.")
sc("ch03-top-level-capability-above-cluster", "hierarchical capacity: a queue whose capability exceeds the cluster "
   "is fine (the root is unlimited)", CH,
   [node("n1", 4), queue("root"), queue("q1", capability={"cpu": "8"}), job("x", "q1", pend=1)],
   {"binds": {f"{NS}/x-0": "n1"}},
   "The root's capability is its spec, unlimited when unset (Volcano 1.12 took the cluster's 4 cpu and refused "
   "the tree because q1's 8 cpu is above it).")
G = "volcano.sh/nodegroup-name"
NLAX = conf("allocate", ["priority", "gang"], ["predicates", ("nodegroup", {"arguments": {"strict": False}})])
sc("n10-nodegroup-not-strict", "nodegroup strict: false lets a queue without affinity use unlabelled nodes", NLAX,
   [node("n1", 8, {G: "a"}), node("n2", 2), job("x", pend=1)],
   {"binds": {f"{NS}/x-0": "n2"}},
   "The default queue names no node group. Strict (the default) it would get no node at all (n05); with strict: "
   "false Volcano 1.13 admits nodes without the volcano.sh/nodegroup-name label for it, but still not n1, whose "
   "group the queue does not list.")

H = conf("allocate", ["priority", "gang"], [("drf", {"enableHierarchy": True}), "predicates"])


def hq(name: str, path: str, weights: str) -> dict[str, Any]:
    return queue(name, annotations={"volcano.sh/hierarchy": path, "volcano.sh/hierarchy-weights": weights})


sc("h03-hdrf-unannotated-queues-tie", "hierarchical drf: queues without hierarchy annotations compare equal", H,
   [node("n1", 4), queue("alpha"), queue("beta"), job("a", "alpha", run=["n1"] * 3),
    job("a2", "alpha", pend=1, created=1), job("b", "beta", pend=1, created=2)],
   {"binds": {f"{NS}/a2-0": "n1"}},
   "Without volcano.sh/hierarchy a queue's jobs hang directly under root, so Volcano's compareQueues only compares "
   "root with root: equal. No other plugin orders queues, so the older queue goes first, then the name: alpha "
   "(created at the same time, sorts first) takes the free cpu although it holds 3 of 4 and beta nothing.")
eng = job("e", "qe", run=["n1"], pend=1)
eng[1]["spec"]["containers"][0]["resources"]["requests"]["memory"] = "1Gi"
sc("h04-hdrf-one-resource-met-saturates", "hierarchical drf: a job that holds all it asks of one resource is "
   "saturated and yields", H,
   [node("n1", 4, mem="8Gi"), hq("qe", "root/eng", "1/1"), hq("qs", "root/sci", "1/1"), eng,
    job("s", "qs", run=["n1", "n1"], pend=1, created=1)],
   {"binds": {f"{NS}/s-2": "n1"}},
   "e asks 2 cpu and 1Gi and holds 1 cpu and the whole 1Gi: in memory it has all it asked for, so Volcano's "
   "resourceSaturated marks it (and eng, its only child) saturated. sci (s: 2 of 3 cpu) is not. An unsaturated "
   "node goes first whatever the shares (eng 1/4 < sci 2/4), so s-2 takes the last free cpu.")


def main() -> None:
    for old in HERE.glob("*.yaml"):
        old.unlink()
    for s in SCENARIOS:
        body = {k: v for k, v in s.items() if k != "file"}
        (HERE / f"{s['file']}.yaml").write_text(yaml.safe_dump(body, sort_keys=False, width=120))
    print(f"wrote {len(SCENARIOS)} scenarios")


if __name__ == "__main__":
    main()
