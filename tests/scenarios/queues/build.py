"""Writes the queue/preemption scenarios in this folder (``python tests/scenarios/queues/build.py``).

The manifests are built by small helpers so each scenario reads as its situation; every ``expect`` is written
by hand from Volcano's rules (the reasoning is in each ``notes``), never from pyvolcano's output.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
NS = "team-a"


def ts(minute: int) -> str:
    return f"2026-01-01T{minute // 60:02d}:{minute % 60:02d}:00Z"


def node(name: str, cpu: float, labels: dict[str, str] | None = None, mem: str = "64Gi") -> dict[str, Any]:
    rl = {"cpu": str(cpu), "memory": mem, "pods": "110"}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels or {}}, "spec": {},
            "status": {"capacity": rl, "allocatable": rl}}


def queue(name: str, weight: int = 1, state: str = "Open", annotations: dict[str, str] | None = None,
          **spec: Any) -> dict[str, Any]:
    s = {"weight": weight, "reclaimable": True}
    s.update({k: v for k, v in spec.items() if v is not None})
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
            "metadata": {"name": name, "annotations": annotations or {}, "creationTimestamp": ts(0)},
            "spec": s, "status": {"state": state}}


def job(name: str, q: str = "default", *, run: list[str] = (), pend: int = 0, cpu: float = 1, prio: int | None = None,
        min_member: int = 1, ns: str = NS, created: int = 0, phase: str | None = None,
        labels: dict[str, str] | None = None, pg_annotations: dict[str, str] | None = None,
        min_cpu: float | None = None) -> list[dict[str, Any]]:
    """A PodGroup with one running pod per entry of ``run`` (its node) and ``pend`` pending pods."""
    pg_phase = phase or ("Running" if len(run) >= min_member else "Inqueue")
    pgspec: dict[str, Any] = {"minMember": min_member, "queue": q}
    if prio is not None:
        pgspec["priorityClassName"] = f"p{prio}"
    if min_cpu is not None:
        pgspec["minResources"] = {"cpu": f"{min_cpu:g}"}
    out = [{"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": ns, "creationTimestamp": ts(created),
                         "annotations": pg_annotations or {}},
            "spec": pgspec, "status": {"phase": pg_phase}}]
    for i, n in enumerate([*run, *[None] * pend]):
        spec: dict[str, Any] = {"schedulerName": "volcano", "containers": [
            {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": f"{cpu:g}"}}}]}
        if n:
            spec["nodeName"] = n
        if prio is not None:
            spec["priority"] = prio
            spec["priorityClassName"] = f"p{prio}"
        out.append({"apiVersion": "v1", "kind": "Pod",
                    "metadata": {"name": f"{name}-{i}", "namespace": ns, "creationTimestamp": ts(created),
                                 "labels": labels or {}, "annotations": {"scheduling.k8s.io/group-name": name}},
                    "spec": spec, "status": {"phase": "Running" if n else "Pending"}})
    return out


def pdb(name: str, selector: dict[str, str], ns: str = NS, allowed: int | None = None, **spec: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                           "metadata": {"name": name, "namespace": ns},
                           "spec": {"selector": {"matchLabels": selector}, **spec}}
    if allowed is not None:
        obj["status"] = {"disruptionsAllowed": allowed}
    return obj


def quota(name: str, hard: dict[str, str], used: dict[str, str] | None = None, ns: str = NS) -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": name, "namespace": ns},
                           "spec": {"hard": hard}}
    if used is not None:
        obj["status"] = {"hard": hard, "used": used}
    return obj


def conf(actions: str, *tiers: list[Any]) -> str:
    out = [f'actions: "{actions}"', "tiers:"]
    for tier in tiers:
        out.append("- plugins:")
        for p in tier:
            if isinstance(p, str):
                out.append(f"  - name: {p}")
            else:
                name, opts = p
                out.append(f"  - name: {name}")
                for k, v in opts.items():
                    if isinstance(v, dict):
                        out.append(f"    {k}:")
                        out.extend(f"      {kk}: {vv}" for kk, vv in v.items())
                    else:
                        out.append(f"    {k}: {str(v).lower() if isinstance(v, bool) else v}")
    return "\n".join(out) + "\n"


P = conf("allocate, preempt", ["priority", "gang", "conformance"], ["predicates"])
P_PDB = conf("allocate, preempt", ["priority", "gang", "conformance", "pdb"], ["predicates"])
P_NOGANGVOTE = conf("allocate, preempt", ["priority", ("gang", {"enablePreemptable": False}), "conformance"],
                    ["predicates"])
P_NG_PDB = conf("allocate, preempt", ["priority", ("gang", {"enablePreemptable": False}), "conformance", "pdb"],
                ["predicates"])
#: Volcano's enableTopologyAwarePreemption path (kube-scheduler's dry run); minCandidateNodesAbsolute 100 makes every
#: node a candidate, so Volcano's random starting node cannot change the choice
P_TOPO = P_NOGANGVOTE + ("configurations:\n- name: preempt\n  arguments:\n    enableTopologyAwarePreemption: true\n"
                         "    minCandidateNodesAbsolute: 100\n")
DRF_P = conf("allocate, preempt", ["drf", "gang", "conformance"], ["predicates"])
R1 = conf("allocate, reclaim", ["priority", "gang", "conformance", "proportion"], ["predicates"])
R2Q = conf("allocate, reclaim", ["priority", ("gang", {"enableReclaimable": False}), "conformance"],
           ["predicates", "proportion"])
R1Q = conf("allocate, reclaim", ["priority", ("gang", {"enableReclaimable": False}), "conformance", "proportion"],
           ["predicates"])
C = conf("enqueue, allocate, reclaim", ["priority", "gang", "conformance", "capacity"], ["predicates"])
# gang's reclaim vote off: gang and capacity walk candidates in opposite orders, so with both on in one tier
# their intersection can be empty (a Volcano quirk of the tier vote, not of capacity)
CNG = conf("enqueue, allocate, reclaim", ["priority", ("gang", {"enableReclaimable": False}), "conformance",
                                          "capacity"], ["predicates"])
CHNG = conf("enqueue, allocate, reclaim", ["priority", ("gang", {"enableReclaimable": False}), "conformance",
                                           ("capacity", {"enableHierarchy": True})], ["predicates"])
CH = conf("enqueue, allocate, reclaim", ["priority", "gang", "conformance", ("capacity", {"enableHierarchy": True})],
          ["predicates"])
S = conf("enqueue, allocate", ["priority", "gang", "sla"], ["predicates", "overcommit", "proportion"])
S_ARG = conf("enqueue, allocate", ["priority", "gang", ("sla", {"arguments": {"sla-waiting-time": "1h"}})],
             ["predicates", "proportion"])
N = conf("allocate", ["priority", "gang"], ["predicates", "nodegroup"])
NH = conf("allocate", ["priority", "gang"], ["predicates", ("nodegroup", {"enableHierarchy": True})])
Q = conf("enqueue, allocate", ["priority", "gang"], ["predicates", "resourcequota"])
H = conf("allocate", ["priority", "gang"], [("drf", {"enableHierarchy": True}), "predicates"])
HR = conf("allocate, reclaim", ["priority", "gang", "conformance", ("drf", {"enableHierarchy": True})], ["predicates"])
K = conf("enqueue, allocate", ["priority", "gang"], ["predicates", "proportion"])

SCENARIOS: list[dict[str, Any]] = []


def sc(file: str, name: str, config: str, objects: list[Any], expect: dict[str, Any], notes: str,
       installer_queues: bool = True) -> None:
    """One scenario; ``installer_queues=False`` writes ``installerQueues: false`` so the oracle check
    (tests/oracle.py) does not add the queues Volcano's installer creates (for a cluster without them)."""
    flat: list[dict[str, Any]] = []
    for o in objects:
        flat.extend(o if isinstance(o, list) else [o])
    prios = sorted({o["spec"]["priority"] for o in flat if o["kind"] == "Pod" and "priority" in o["spec"]})
    pcs = [{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": f"p{v}"}, "value": v}
           for v in prios]
    if not any(o["kind"] == "Queue" and o["metadata"]["name"] == "default" for o in flat):
        pcs.append(queue("default"))
    body = {"file": file, "name": name, "config": config, "objects": pcs + flat, "expect": expect, "notes": notes}
    if not installer_queues:
        body["installerQueues"] = False
    SCENARIOS.append(body)


def a(*names: str) -> list[str]:
    return [f"{NS}/{n}" for n in names]


def with_requests(objs: list[dict[str, Any]], requests: dict[str, str]) -> list[dict[str, Any]]:
    """The same job with every pod requesting ``requests`` instead of plain cpu."""
    for o in objs:
        if o["kind"] == "Pod":
            o["spec"]["containers"][0]["resources"]["requests"] = dict(requests)
    return objs


def with_selector(objs: list[dict[str, Any]], selector: dict[str, str]) -> list[dict[str, Any]]:
    """The same job with a nodeSelector on its pending pods."""
    for o in objs:
        if o["kind"] == "Pod" and not o["spec"].get("nodeName"):
            o["spec"]["nodeSelector"] = dict(selector)
    return objs


def gpu_node(name: str, cpu: int, gpus: int, mem: str = "64Gi") -> dict[str, Any]:
    n = node(name, cpu, mem=mem)
    n["status"]["capacity"] = n["status"]["allocatable"] = {**n["status"]["capacity"], GPU: str(gpus)}
    return n


GPU = "nvidia.com/gpu"


# ---------------------------------------------------------------- preempt
sc("p01-starving-job-preempts", "a starving high-priority job preempts exactly one low pod", P,
   [node("n1", 2), job("low", run=["n1", "n1"], prio=10), job("high", pend=1, prio=1000, created=5)],
   {"bindsCount": 0, "evictionsCount": 1, "evictionsFrom": a("low-0", "low-1"), "pipelined": {f"{NS}/high-0": "n1"}},
   "The node is full; high starves (0 of minMember 1 placed); one low pod frees the 1 cpu it needs.")
sc("p02-evict-only-what-is-needed", "a 2-cpu preemptor evicts two of four 1-cpu pods, not more", P,
   [node("n1", 4), job("low", run=["n1"] * 4, prio=10), job("high", pend=1, cpu=2, prio=1000, created=5)],
   {"evictionsCount": 2, "pipelined": {f"{NS}/high-0": "n1"}},
   "All four are candidates; reprieving gives back two, since two freed cpus are enough.")
sc("p03-idle-counts", "idle capacity counts: one eviction plus the idle cpu makes room", P,
   [node("n1", 4), job("low", run=["n1"] * 3, prio=10), job("high", pend=1, cpu=2, prio=1000, created=5)],
   {"evictionsCount": 1, "pipelined": {f"{NS}/high-0": "n1"}},
   "1 cpu idle + 1 freed = 2; allocate could not place it (1 idle < 2).")
sc("p04-gang-not-broken", "gang preemptable: a gang at minMember+1 gives up one pod only, not enough", P,
   [node("n1", 4), job("gang", run=["n1"] * 4, prio=10, min_member=3), job("high", pend=1, cpu=2, prio=1000)],
   {"evictions": [], "pipelined": {}, "unschedulable": {f"{NS}/high": "unschedulable"}},
   "gang's vote lets the gang lose 4-3 = 1 pod; 1 cpu does not fit a 2-cpu task, so nothing is evicted.")
sc("p05-gang-victims-from-elastic-job", "victims come only from the job that stays above its minMember", P,
   [node("n1", 4), job("tight", run=["n1"] * 2, prio=10, min_member=2),
    job("loose", run=["n1"] * 2, prio=10, min_member=1, created=1), job("high", pend=1, cpu=2, prio=1000, created=5)],
   {"evictions": [], "pipelined": {}},
   "tight may lose 0 and loose only 2-1 = 1: 1 cpu for a 2-cpu task is not enough, so no eviction at all.")
sc("p06-gang-victims-enough", "an elastic job gives up two pods while a tight gang keeps its minMember", P,
   [node("n1", 5), job("tight", run=["n1"] * 2, prio=10, min_member=2),
    job("loose", run=["n1"] * 3, prio=10, min_member=1, created=1), job("high", pend=1, cpu=2, prio=1000, created=5)],
   {"evictionsCount": 2, "evictionsFrom": a("loose-0", "loose-1", "loose-2"), "pipelined": {f"{NS}/high-0": "n1"}},
   "loose can lose 3-1 = 2 pods, exactly the 2 cpu needed; tight is never touched.")
sc("p07-kube-system-never-victim", "a kube-system pod is never a victim, even with the lowest priority", P_NOGANGVOTE,
   [node("n1", 2), job("sys", run=["n1"], prio=1, ns="kube-system"), job("low", run=["n1"], prio=10),
    job("high", pend=1, prio=1000, created=5)],
   {"evictions": a("low-0"), "pipelined": {f"{NS}/high-0": "n1"}},
   "conformance removes the kube-system pod from the candidates; the team-a pod is evicted instead.")
sc("p08-kube-system-only-candidate", "when only a kube-system pod could make room, nothing is evicted", P,
   [node("n1", 2), job("sys", run=["n1", "n1"], prio=1, ns="kube-system"), job("high", pend=1, prio=1000)],
   {"evictions": [], "pipelined": {}},
   "conformance leaves no candidate.")
crit = job("crit", run=["n1"], prio=10)
crit[1]["spec"]["priorityClassName"] = "system-node-critical"
sc("p09-system-node-critical-never-victim", "a system-node-critical pod is never a victim", P_NOGANGVOTE,
   [node("n1", 2), crit, job("low", run=["n1"], prio=10, created=1), job("high", pend=1, prio=1000, created=5)],
   {"evictions": a("low-0"), "pipelined": {f"{NS}/high-0": "n1"}},
   "Both pods have priority 10; conformance protects the one whose priorityClassName is system-node-critical.")
sc("p10-lowest-highest-victim-priority", "topology-aware preempt: the node whose most important victim matters "
   "least wins", P_TOPO, [node("n1", 2), node("n2", 2), job("mid", run=["n1"], cpu=2, prio=100),
       job("lowa", run=["n2"], prio=50, created=1), job("lowb", run=["n2"], prio=50, created=2),
       job("high", pend=1, cpu=2, prio=1000, created=5)],
   {"evictions": a("lowa-0", "lowb-0"), "pipelined": {f"{NS}/high-0": "n2"}},
   "n1 needs mid (priority 100) gone, n2 needs two pods of priority 50: highest victim priority 50 < 100, so n2.")
sc("p11-smallest-priority-sum", "topology-aware preempt: equal highest victim priority, the smaller sum wins", P_TOPO,
   [node("n1", 2), node("n2", 2), job("a50", run=["n1"], prio=50), job("b50", run=["n1"], prio=50, created=1),
    job("c50", run=["n2"], prio=50, created=2), job("d10", run=["n2"], prio=10, created=3),
    job("high", pend=1, cpu=2, prio=1000, created=5)],
   {"evictions": a("c50-0", "d10-0"), "pipelined": {f"{NS}/high-0": "n2"}},
   "Both nodes' highest victim is 50; sums are 100 (n1) and 60 (n2).")
sc("p12-fewest-victims", "topology-aware preempt: equal highest priority and sum, fewer victims wins", P_TOPO,
   [node("n1", 2), node("n2", 2), job("z0", run=["n1"], prio=0), job("t10", run=["n1"], prio=10, created=1),
    job("big10", run=["n2"], cpu=2, prio=10, created=2), job("high", pend=1, cpu=2, prio=1000, created=5)],
   {"evictions": a("big10-0"), "pipelined": {f"{NS}/high-0": "n2"}},
   "Highest 10 and sum 10 on both nodes; n1 needs 2 victims, n2 one.")
sc("p13-reprieve-highest-first", "topology-aware preempt: victims are reprieved highest priority first: the big one "
   "goes, the small stays", P_TOPO,
   [node("n1", 3), job("l10", run=["n1"], prio=10), job("l20", run=["n1"], cpu=2, prio=20, created=1),
       job("high", pend=1, cpu=2, prio=1000, created=5)],
   {"evictions": a("l20-0"), "pipelined": {f"{NS}/high-0": "n1"}},
   "Removed lowest first until it fits (l10, then l20: 3 cpu free); given back highest first: l20 cannot be "
   "(1 cpu left < 2), l10 can (2 cpu left). The default greedy path evicts both (ve-preempt-greedy-victim-order).")
sc("p14-lower-job-first", "of two single-pod jobs the lower-priority one is the victim", P_NOGANGVOTE,
   [node("n1", 2), job("l10", run=["n1"], prio=10), job("l20", run=["n1"], prio=20, created=1),
    job("high", pend=1, prio=1000, created=5)],
   {"evictions": a("l10-0"), "pipelined": {f"{NS}/high-0": "n1"}},
   "Reprieve l20 first (room 2-1 = 1 still fits), then l10 cannot be reprieved.")
sc("p15-equal-priority-no-preemption", "equal job priority: no preemption", P,
   [node("n1", 2), job("a", run=["n1", "n1"], prio=10), job("b", pend=1, prio=10, created=5)],
   {"evictions": [], "pipelined": {}},
   "priority's preemptable vote needs the victim job's priority strictly lower.")
sc("p16-preempt-stays-in-queue", "preempt never crosses queues", P,
   [node("n1", 2), queue("q1"), queue("q2"), job("low", "q1", run=["n1", "n1"], prio=10),
    job("high", "q2", pend=1, prio=1000, created=5)],
   {"evictions": [], "pipelined": {}},
   "Phase one only considers jobs of the preemptor's queue; crossing queues is reclaim's job.")
sc("p17-gang-preemptor-all-or-nothing", "a gang preemptor of two gets both pods pipelined", P,
   [node("n1", 3), job("low", run=["n1"] * 3, prio=10), job("high", pend=2, prio=1000, min_member=2, created=5)],
   {"evictionsCount": 2, "pipelinedCount": 2},
   "low (3 running, minMember 1) may lose two pods under gang's vote; both tasks of the gang find a victim and the "
   "statement is committed because the job is then pipelined.")
sc("p17b-single-pod-job-protected-by-gang", "gang preemptable: a one-pod job at its minMember is never a victim", P,
   [node("n1", 2), job("la", run=["n1"], prio=10), job("lb", run=["n1"], prio=10, created=1),
    job("high", pend=1, prio=1000, created=5)],
   {"evictions": [], "pipelined": {}},
   "Volcano's gang vote only offers tasks beyond minAvailable; each low job runs exactly its minMember 1. "
   "Configs that want such jobs preempted set enablePreemptable: false on gang (the scenarios below do).")
sc("p18-gang-preemptor-discarded", "a gang preemptor that cannot get all its pods evicts nothing", P_NOGANGVOTE,
   [node("n1", 2), job("low", run=["n1"], prio=10), job("other", run=["n1"], prio=2000, created=1),
    job("high", pend=2, prio=1000, min_member=2, created=5)],
   {"evictions": [], "pipelined": {}},
   "Only low is below 1000; the second task finds no victim, the job is not pipelined, the statement is discarded.")
sc("p19-within-job-by-task-priority", "phase two: a high-priority task of a job preempts a low one of the same job",
   P_NOGANGVOTE,
   [node("n1", 1),
    {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
     "metadata": {"name": "mix", "namespace": NS, "creationTimestamp": ts(0)},
     "spec": {"minMember": 2, "queue": "default"}, "status": {"phase": "Inqueue"}},
    *[{"apiVersion": "v1", "kind": "Pod",
       "metadata": {"name": n, "namespace": NS, "creationTimestamp": ts(0),
                    "annotations": {"scheduling.k8s.io/group-name": "mix"}},
       "spec": {"schedulerName": "volcano", "priority": p, **({"nodeName": "n1"} if on else {}),
                "containers": [{"name": "m", "image": "b", "resources": {"requests": {"cpu": "1"}}}]},
       "status": {"phase": "Running" if on else "Pending"}} for n, p, on in (("lo", 10, True), ("hi", 100, False))]],
   {"evictions": a("lo"), "pipelined": {f"{NS}/hi": "n1"}},
   "The job starves (1 < minMember 2); phase one has no other job; phase two lets hi (100) preempt lo (10). "
   "gang's preemptable is off: with it on, a job at 1 ready of minMember 2 could give up nothing.")
sc("p20-drf-preempts-dominant-job", "drf: a job without resources preempts from the job with the larger share",
   DRF_P, [node("n1", 4), job("big", run=["n1"] * 4), job("small", pend=1, created=5)],
   {"evictionsCount": 1, "evictionsFrom": a("big-0", "big-1", "big-2", "big-3"), "pipelined": {f"{NS}/small-0": "n1"}},
   "small after the task: 1/4; big after losing one: 3/4 >= 1/4, so big's pods are victims; one is enough.")
sc("p21-drf-refuses-equal-shares", "drf: no preemption when the preemptor would end above the victim",
   DRF_P, [node("n1", 4), job("a", run=["n1"] * 2), job("b", run=["n1"] * 2, pend=1, min_member=3, created=5)],
   {"evictions": [], "pipelined": {}},
   "b after the task holds 3/4; a after losing one holds 1/4 < 3/4: not a victim.")

# ---------------------------------------------------------------- pdb
web = {"app": "web"}
sc("d01-pdb-without-plugin-ignored", "without the pdb plugin a PodDisruptionBudget does not steer preemption",
   P_NOGANGVOTE,
   [node("n1", 1), node("n2", 1), job("w", run=["n1"], prio=10, labels=web),
    job("b", run=["n2"], prio=10, created=1), pdb("web", web, allowed=0), job("high", pend=1, prio=1000, created=5)],
   {"evictionsCount": 1, "evictionsFrom": a("w-0", "b-0"), "pipelined": {f"{NS}/high-0": "*"}},
   "Both nodes offer a victim of priority 10 and score the same. Volcano master's preempt has no PDB rule of its "
   "own (its greedy path ignores budgets; its dry run's pickOneNodeForPreemption leaves PDB violations out), so "
   "without the pdb plugin the budget changes nothing and either node may be used. The oracle does not load "
   "PodDisruptionBudgets; without the object it evicts one of the two.")
sc("d02-pdb-plugin-blocks", "with the pdb plugin a pod whose budget is used up is never a victim", P_NG_PDB,
   [node("n1", 1), job("w", run=["n1"], prio=10, labels=web), pdb("web", web, allowed=0),
    job("high", pend=1, prio=1000, created=5)],
   {"evictions": [], "pipelined": {}},
   "disruptionsAllowed 0: pdb's preemptable vote drops the only candidate.")
sc("d03-pdb-min-available-one-left", "minAvailable 2 of 3 running: one pod may go", P_PDB,
   [node("n1", 3), job("w", run=["n1"] * 3, prio=10, labels=web), pdb("web", web, minAvailable=2),
    job("high", pend=1, prio=1000, created=5)],
   {"evictionsCount": 1, "pipelined": {f"{NS}/high-0": "n1"}},
   "No status: allowed = 3 healthy - 2 = 1.")
sc("d04-pdb-min-available-not-enough", "minAvailable 2 of 3: a 2-cpu preemptor cannot get two pods", P_PDB,
   [node("n1", 3), job("w", run=["n1"] * 3, prio=10, labels=web), pdb("web", web, minAvailable=2),
    job("high", pend=1, cpu=2, prio=1000, created=5)],
   {"evictions": [], "pipelined": {}},
   "Only one of the three may be disrupted; 1 cpu is not enough.")
sc("d05-pdb-max-unavailable-zero", "maxUnavailable 0 protects every matching pod", P_NG_PDB,
   [node("n1", 2), job("w", run=["n1"] * 2, prio=10, labels=web), pdb("web", web, maxUnavailable=0),
    job("high", pend=1, prio=1000, created=5)],
   {"evictions": [], "pipelined": {}},
   "allowed = 0 - (2 - 2) = 0.")
sc("d06-pdb-other-namespace", "a budget in another namespace does not protect the pod", P_PDB,
   [node("n1", 2), job("w", run=["n1"] * 2, prio=10, labels=web), pdb("web", web, ns="team-b", allowed=0),
    job("high", pend=1, prio=1000, created=5)],
   {"evictionsCount": 1, "pipelined": {f"{NS}/high-0": "n1"}},
   "PodDisruptionBudgets select pods of their own namespace only.")

# ---------------------------------------------------------------- reclaim (proportion)
sc("r01-reclaim-stops-at-deserved", "cross-queue reclaim stops exactly at the victim queue's deserved", R1,
   [node("n1", 6), queue("q1"), queue("q2"), job("x", "q1", run=["n1"] * 6),
    job("y", "q2", pend=4, min_member=3, created=5)],
   {"evictionsCount": 3, "evictionsFrom": a(*[f"x-{i}" for i in range(6)]), "pipelinedCount": 3},
   "Weights 1:1 over 6 cpu: q1 deserves 3, q2 (asks 4) deserves 3. Each of y's tasks reclaims one pod while q1 "
   "holds more than 3; after three, q1 holds exactly 3 and proportion offers no victim for the fourth. (minMember 3: "
   "Volcano master keeps a job's reclaim only if its gang ends up pipelined.)")
three = [node("n1", 6), queue("q1"), queue("q2"), queue("q3"), job("x", "q1", run=["n1"] * 4, prio=10),
         job("z", "q3", run=["n1"] * 2, prio=1, created=1), job("y", "q2", pend=2, min_member=2, created=5)]
sc("r02-volcano-tier-quirk", "Volcano: with proportion in tier 2 the tier-1 answer wins and reclaim passes deserved",
   R2Q, three,
   {"evictionsCount": 2, "evictionsFrom": a("x-0", "x-1", "x-2", "x-3"), "pipelinedCount": 2},
   "q1, q2, q3 each deserve 2 of 6; q1 holds 4, q3 holds its 2. Volcano's Reclaimable returns the first tier whose "
   "plugins end with victims: conformance (tier 1) offers every pod and proportion (tier 2) is never asked. The "
   "victims go in Volcano's victim order, reverse queue order first: q1 (share 4/2) ranks after q3 (2/2), so q1's "
   "pods go first (Volcano 1.9's minimal-victim choice took q3's cheaper priority-1 pods instead).")
sc("r02b-proportion-in-tier-one", "the same cluster with proportion in tier 1: only the queue above deserved loses",
   R1Q, three,
   {"evictionsCount": 2, "evictionsFrom": a("x-0", "x-1", "x-2", "x-3"), "pipelinedCount": 2},
   "proportion offers only q1's pods while q1 holds more than 2; q2 stops once its pipelined tasks reach its "
   "deserved 2 (overused).")
sc("r03-weights-two-to-one", "weight 2 vs 1: the heavier queue reclaims up to two thirds", R1,
   [node("n1", 6), queue("q1", weight=1), queue("q2", weight=2), job("x", "q1", run=["n1"] * 6),
    job("y", "q2", pend=6, min_member=4, created=5)],
   {"evictionsCount": 4, "pipelinedCount": 4},
   "q1 deserves 6*1/3 = 2, q2 6*2/3 = 4: four of x's pods are reclaimed, the fifth would put q1 below 2. "
   "(minMember 4: Volcano master keeps a job's reclaim only if its gang ends up pipelined.)")
sc("r04-not-reclaimable", "a queue with reclaimable: false is never reclaimed", R1,
   [node("n1", 4), queue("q1", reclaimable=False), queue("q2"), job("x", "q1", run=["n1"] * 4),
    job("y", "q2", pend=2, min_member=2, created=5)],
   {"evictions": [], "pipelined": {}},
   "q1 holds more than it deserves but opts out of reclaim.")
sc("r05-overused-queue-does-not-reclaim", "a queue at its deserved share does not reclaim", R1,
   [node("n1", 6), queue("q1"), queue("q2"), job("x", "q1", run=["n1"] * 3),
    job("y", "q2", run=["n1"] * 3, created=1), job("y2", "q2", pend=2, min_member=2, created=5)],
   {"evictions": [], "pipelined": {}},
   "q1 asks 3 and deserves 3; q2 deserves the other 3 and already holds them: overused, skipped.")
sc("r06-reclaim-spares-kube-system", "reclaim never takes a kube-system pod", R1,
   [node("n1", 2), queue("q1"), queue("q2"), job("sys", "q1", run=["n1", "n1"], ns="kube-system"),
    job("y", "q2", pend=1, created=5)],
   {"evictions": [], "pipelined": {}},
   "q1 holds 2 and deserves 1, but conformance removes both candidates.")
sc("r07-reclaim-first-node-greedy", "reclaim takes the first node that can make room, not the cheapest victims", R1,
   [node("n1", 2), node("n2", 2), queue("q1"), queue("q2"), job("hi", "q1", run=["n1", "n1"], prio=100),
    job("lo", "q1", run=["n2", "n2"], prio=10, created=1), job("y", "q2", pend=1, created=5)],
   {"evictionsCount": 1, "evictionsFrom": a("hi-0", "hi-1", "lo-0", "lo-1"), "pipelined": {f"{NS}/y-0": "*"}},
   "q1 deserves 3 of 4 and holds 4, so either node offers a victim. Volcano's reclaimForTask tries the nodes in "
   "predicate order and evicts greedily on the first that can make room, whatever its victims' priorities "
   "(kube-scheduler would prefer n2's priority-10 pods). Volcano starts its node scan where the previous scan "
   "stopped, so the real Volcano evicts on n1 or on n2 from one run to the next: only one eviction from q1 and y-0 "
   "pipelined are pinned (pyvolcano scans from the first node: hi-1 on n1).")
sc("r08-guarantee-protects-under-proportion", "proportion: a guarantee raises deserved and stops reclaim", R1,
   [node("n1", 4), queue("q1", guarantee={"resource": {"cpu": "3"}}), queue("q2", weight=3),
    job("x", "q1", run=["n1"] * 3), job("y", "q2", pend=4, min_member=4, created=5)],
   {"evictions": [], "pipelined": {}},
   "q1 deserves max(4*1/4, guarantee 3) = 3 and holds 3; q2's realCapability is 4-3 = 1. Nothing to reclaim.")

# ---------------------------------------------------------------- capacity
sc("c01-capacity-reclaim-to-guarantee", "capacity: reclaim stops at the victim queue's guarantee", CNG,
   [node("n1", 4), queue("q1", deserved={"cpu": "1"}, guarantee={"resource": {"cpu": "2"}}),
    queue("q2", deserved={"cpu": "4"}), job("x", "q1", run=["n1"] * 4),
    job("y", "q2", pend=1, cpu=2, created=5)],
   {"evictionsCount": 2, "evictionsFrom": a("x-0", "x-1", "x-2", "x-3"), "pipelined": {f"{NS}/y-0": "n1"}},
   "q1's deserved is raised to its guarantee 2; q2 (deserved min(4, realCapability 4-2 = 2) = 2) is preemptive "
   "for its 2-cpu task (0 + 2 <= 2). capacity offers two of x's pods (4 -> 3 -> 2); a third would leave q1 below "
   "its guarantee. The two free exactly the 2 cpu y needs.")
sc("c02-capacity-elastic", "capacity: an idle cluster lets a queue run above deserved up to realCapability", C,
   [node("n1", 4), queue("q1", deserved={"cpu": "1"}), job("x", "q1", pend=4)],
   {"bindsCount": 4},
   "allocatable checks realCapability (the whole 4 cpu), not deserved.")
sc("c03-capacity-capability-caps", "capacity: capability caps what a queue gets", C,
   [node("n1", 4), queue("q1", capability={"cpu": "2"}, deserved={"cpu": "2"}), job("x", "q1", pend=4)],
   {"bindsCount": 2},
   "realCapability = min(2, 4) = 2: two pods fit the queue, the rest wait.")
sc("c04-capacity-enqueue-rejects", "capacity: a PodGroup whose minResources exceed realCapability stays Pending", C,
   [node("n1", 4), queue("q1", capability={"cpu": "2"}), job("x", "q1", pend=3, min_member=3, min_cpu=3,
                                                              phase="Pending")],
   {"binds": {}, "podgroupPhases": {f"{NS}/x": "Pending"},
    "unschedulable": {f"{NS}/x": "queue q1 resource quota insufficient: insufficient cpu"}},
   "3 cpu of minResources > realCapability 2.")
sc("c05-capacity-not-preemptive-at-deserved", "capacity: a queue at its deserved does not reclaim", C,
   [node("n1", 4), queue("q1", deserved={"cpu": "1"}), queue("q2", deserved={"cpu": "2"}),
    job("x", "q1", run=["n1"] * 2), job("y", "q2", run=["n1"] * 2, created=1),
    job("y2", "q2", pend=1, created=5)],
   {"evictions": [], "pipelined": {}},
   "q2 holds 2 = deserved; 2 + 1 > 2 so it is not preemptive, although q1 holds more than its deserved 1.")
sc("c06-capacity-queue-order", "capacity: the queue with the smaller allocated/deserved goes first", C,
   [node("n1", 2), queue("q1", deserved={"cpu": "2"}), queue("q2", deserved={"cpu": "2"}),
    job("x", "q1", run=["n1"]), job("x2", "q1", pend=1, created=1), job("y", "q2", pend=1, created=2)],
   {"binds": {f"{NS}/y-0": "n1"}},
   "One cpu is free; q1's share is 1/2, q2's 0, so q2's job is placed first and q1's finds no room.")
sc("c07-hierarchy-capability", "hierarchical capacity: a parent's capability bounds its children together", CH,
   [node("n1", 8), queue("root"), queue("eng", capability={"cpu": "4"}),
    queue("dev", parent="eng", capability={"cpu": "2"}),
    queue("prod", parent="eng"), job("d", "dev", pend=4), job("p", "prod", pend=4, created=1)],
   {"binds": {f"{NS}/d-0": "*", f"{NS}/d-1": "*", f"{NS}/p-0": "*", f"{NS}/p-1": "*"}},
   "dev stops at its capability 2; eng (4) then leaves prod 2, although the cluster has 8 cpu.")
sc("c08-hierarchy-reclaim-checks-leaf-guarantee", "hierarchical capacity: reclaim checks the victim's own queue's "
   "guarantee, not its parent's", CHNG,
   [node("n1", 4), queue("root"), queue("eng", guarantee={"resource": {"cpu": "3"}}, deserved={"cpu": "2"}),
    queue("dev", parent="eng", deserved={"cpu": "2"}), queue("ops", deserved={"cpu": "2"}),
    job("x", "dev", run=["n1"] * 4), job("y", "ops", pend=1, cpu=2, created=5)],
   {"evictionsCount": 2, "evictionsFrom": a("x-0", "x-1", "x-2", "x-3"), "pipelined": {f"{NS}/y-0": "n1"}},
   "dev holds 4 > deserved 2 and has no guarantee of its own; ops (deserved 2) may reclaim for its 2-cpu task. "
   "Volcano master checks only the victim's leaf queue against its guarantee (ancestorReclaimLevel 0), so eng's "
   "guarantee 3 does not stop the second eviction: eng ends at 2 < 3 (docs/volcano-differences.md).")
sc("c09-hierarchy-child-above-parent-warns", "hierarchical capacity: a child's capability above its parent's is "
   "only a warning; the parent still bounds it", CH,
   [node("n1", 4), queue("root"), queue("eng", capability={"cpu": "2"}),
    queue("dev", parent="eng", capability={"cpu": "4"}), job("x", "dev", pend=3, min_cpu=1, phase="Pending")],
   {"bindsCount": 2, "podgroupPhases": {f"{NS}/x": "Inqueue"}},
   "Volcano master's checkHierarchicalQueue only logs the inconsistency (pyvolcano queues lists it). dev's "
   "realCapability is min(4, eng's 2) = 2 and allocatable also checks eng: two of the three pods are placed.")
sc("c09b-hierarchy-without-root", "hierarchical capacity: without a Queue named root nothing is scheduled", CH,
   [node("n1", 4), queue("eng"), queue("dev", parent="eng"), job("x", "dev", pend=1, min_cpu=1, phase="Pending")],
   {"binds": {}, "podgroupPhases": {f"{NS}/x": "Pending"}, "unschedulable": {f"{NS}/x": "queue root does not exist"}},
   "Volcano's updateAncestors fails for every queue whose parent (root by default) is not a Queue object, and "
   "buildHierarchicalQueueAttrs returns false: capacity rejects every PodGroup (its controller normally creates "
   "root).", installer_queues=False)
sc("c10-closed-queue", "a Closed queue admits no new job; its running job keeps running", C,
   [node("n1", 4), queue("q1", state="Closed"), job("run", "q1", run=["n1"]),
    job("new", "q1", pend=1, phase="Pending", min_cpu=1, created=5)],
   {"binds": {}, "evictions": [], "podgroupPhases": {f"{NS}/run": "Running", f"{NS}/new": "Pending"},
    "unschedulable": {f"{NS}/new": "Closed"}},
   "enqueue skips queues that are not Open; nothing evicts the running job.")
sc("c11-closing-queue", "a Closing queue admits no new job either", C,
   [node("n1", 4), queue("q1", state="Closing"), queue("q2"), job("run", "q1", run=["n1"]),
    job("new", "q1", pend=1, phase="Pending", min_cpu=1, created=5),
    job("other", "q2", pend=1, phase="Pending", min_cpu=1, created=6)],
   {"binds": {f"{NS}/other-0": "n1"}, "evictions": [], "podgroupPhases": {f"{NS}/new": "Pending"}},
   "q2 is open and gets its job placed; q1 is Closing.")

# ---------------------------------------------------------------- Volcano master's queue rules (issue 13)
CL1 = conf("enqueue, allocate, reclaim", ["priority", "gang", "conformance",
                                          ("capacity", {"enableHierarchy": True,
                                                        "arguments": {"ancestorReclaimLevel": 1}})], ["predicates"])
A = conf("allocate", ["priority", "gang"], ["predicates", "proportion"])
CA = conf("allocate", ["priority", "gang"], ["predicates", "capacity"])
sc("vq01-proportion-queue-priority-first", "proportion: a queue of higher spec.priority goes first, whatever its share",
   A, [node("n1", 2, {"pool": "a"}), node("n2", 8), queue("q1"), queue("q2", priority=10),
       job("x", "q2", run=["n2"], cpu=2),
       with_selector(job("y", "q1", pend=1, cpu=2, created=1), {"pool": "a"}),
       with_selector(job("z", "q2", pend=1, cpu=2, created=2), {"pool": "a"})],
   {"binds": {f"{NS}/z-0": "n1"}},
   "Both queues ask no more than they deserve (10 cpu, requests 2 and 4), so both are allocatable; only n1 (2 cpu) "
   "fits either pending pod. q1's share is 0, q2's 2/4: by share q1 would go first, but q2's priority 10 ranks "
   "above share (proportion's queueOrderFn compares spec.priority first).")
sc("vq02-capacity-queue-priority-first", "capacity: a queue of higher spec.priority goes first, whatever its share",
   CA, [node("n1", 2), queue("q1", deserved={"cpu": "1"}, priority=10), queue("q2", deserved={"cpu": "4"}),
        job("x", "q1", run=["n1"]), job("y", "q1", pend=1, created=1), job("z", "q2", pend=1, created=2)],
   {"binds": {f"{NS}/y-0": "n1"}},
   "One cpu is free. q1's share is 1/1, q2's 0/4, but q1's priority 10 puts it first.")
sc("vq03-capacity-equal-share-deserved-first", "capacity: on equal shares a queue with a deserved amount goes "
   "before a best-effort one", CA,
   [node("n1", 2), queue("q1"), queue("q2", deserved={"cpu": "1"}),
    job("x", "q2", run=["n1"]), job("y", "q1", pend=1, created=1), job("z", "q2", pend=1, created=2)],
   {"binds": {f"{NS}/z-0": "n1"}},
   "q1 sets no deserved: a best-effort queue, share 1 whatever it holds. q2 holds its deserved 1: share 1 too. "
   "compareShareWithDeserved then puts q2 (it has a deserved amount) first, although q1 sorts first by name.")
sc("vq04-capacity-reclaim-within-deserved-on-one-dimension", "capacity: a queue may reclaim while within deserved "
   "on at least one requested dimension", CNG,
   [node("n1", 2, mem="4Gi"), queue("q1", deserved={"cpu": "1", "memory": "1Gi"}),
    queue("q2", deserved={"cpu": "1", "memory": "1Gi"}), job("x", "q1", run=["n1"] * 2),
    with_requests(job("m", "q2", run=["n1"], created=1), {"memory": "2Gi"}),
    with_requests(job("y", "q2", pend=1, created=5), {"cpu": "1", "memory": "1Gi"})],
   {"evictionsCount": 1, "evictionsFrom": a("x-0", "x-1"), "pipelined": {f"{NS}/y-0": "n1"}},
   "q2 would hold cpu 1 (within its deserved 1) and memory 3Gi (above 1Gi): within deserved on one requested "
   "dimension is enough (LessEqualPartlyWithDimensionZeroFiltered). q1 holds 2 cpu > deserved 1, so one of x's "
   "pods is reclaimed. Volcano 1.9 required every dimension and reclaimed nothing.")
sc("vq05-capacity-victim-judged-on-deserved-dimensions", "capacity: a queue that deserves only GPUs keeps its GPU "
   "pods while within its GPU share; its CPU-only pods are victims", CNG,
   [gpu_node("n1", 8, 4), queue("q1", deserved={GPU: "2"}), queue("q2", deserved={"cpu": "8"}),
    with_requests(job("g", "q1", run=["n1"] * 2), {"cpu": "3", GPU: "1"}),
    with_requests(job("c", "q1", run=["n1"], created=1), {"cpu": "2"}),
    with_requests(job("y", "q2", pend=1, created=5), {"cpu": "2"})],
   {"evictions": a("c-0"), "pipelined": {f"{NS}/y-0": "n1"}},
   "n1's 8 cpu are all held by q1 (g: 2 x 3 cpu + 1 GPU, c: 2 cpu). q1 deserves 2 GPUs and holds exactly 2: g's "
   "pods are judged only on GPU (the dimension they request that deserved defines) and are not above it. c-0 "
   "requests nothing q1's deserved names, so it is a victim at once (isImmediateVictim).")
sc("vq06-capacity-victims-running-tally", "capacity: victims are counted off a running tally of the victim "
   "queue's allocation", C,
   [node("n1", 6), queue("q1", deserved={"cpu": "2"}), queue("q2", deserved={"cpu": "6"}),
    with_requests(job("x", "q1", run=["n1"] * 3), {"cpu": "2"}),
    with_requests(job("y", "q2", pend=1, created=5), {"cpu": "6"})],
   {"evictions": [], "pipelined": {}},
   "y needs the whole node. q1 holds 6 > deserved 2: the first of x's pods is a victim (tally 6 -> 4), the second "
   "too (4 -> 2), the third not (2 is not above 2). Two victims free 4 cpu < 6, so nothing is evicted; judged "
   "each on its own, all three would have been offered and y placed.")
sc("vq07-hierarchy-root-unlimited", "hierarchical capacity: a root queue without capability is unlimited", CH,
   [node("n1", 4), queue("root"), queue("q1"),
    job("x", "q1", pend=8, min_member=8, min_cpu=8, phase="Pending")],
   {"binds": {}, "podgroupPhases": {f"{NS}/x": "Inqueue"}},
   "The root's capability is its spec, unlimited when unset (not the cluster's 4 cpu), so q1's realCapability is "
   "unlimited and the 8-cpu gang is admitted; it does not fit the node, so nothing is placed.")
sc("vq08-hierarchy-warnings-not-fatal", "hierarchical capacity: children whose deserved add up to more than their "
   "parent's is only a warning", CH,
   [node("n1", 4), queue("root"), queue("eng"), queue("dev", parent="eng", deserved={"cpu": "2"}),
    job("x", "dev", pend=1, min_cpu=1, phase="Pending")],
   {"bindsCount": 1, "podgroupPhases": {f"{NS}/x": "Inqueue"}},
   "eng sets no deserved while dev deserves 2: Volcano master's checkHierarchicalQueue logs it and scheduling goes "
   "on (Volcano 1.12 refused the whole tree).")
anc = [node("n1", 4), queue("root"), queue("eng", deserved={"cpu": "4"}), queue("dev", parent="eng",
                                                                                deserved={"cpu": "1"}),
       queue("ops", deserved={"cpu": "1"}), job("d", "dev", run=["n1"]), job("o", "ops", run=["n1"] * 3, created=1),
       job("y", "dev", pend=1, created=5)]
sc("vq09-ancestor-reclaim-level-zero", "capacity ancestorReclaimLevel 0: a queue at its own deserved does not "
   "reclaim", CH, anc, {"evictions": [], "pipelined": {}},
   "dev holds its deserved 1; 1 + 1 > 1 on its only requested dimension, so it may not reclaim, although its "
   "parent eng deserves 4 and holds 1.")
sc("vq10-ancestor-reclaim-level-one", "capacity ancestorReclaimLevel 1: a queue may reclaim on its parent's "
   "deserved", CL1, anc,
   {"evictionsCount": 1, "evictionsFrom": a("o-0", "o-1", "o-2"), "pipelined": {f"{NS}/y-0": "n1"}},
   "With ancestorReclaimLevel 1 the preemptive check also tries dev's parent eng: 1 + 1 <= 4, so dev may "
   "reclaim. ops holds 3 > deserved 1; its own parent is root (never checked), so one of its pods is a victim.")
sc("vq11-proportion-pods-count-in-share", "proportion: the pod count is a resource in deserved and share", A,
   [node("n1", 2.5, {"pool": "a"}), node("n2", 10), queue("q1"), queue("q2"),
    job("a", "q1", run=["n1"]), job("c", "q2", run=["n1"] * 5, cpu=0.1, created=1),
    with_selector(job("b", "q1", pend=1, created=2), {"pool": "a"}),
    with_selector(job("e", "q2", pend=1, created=3), {"pool": "a"})],
   {"binds": {f"{NS}/b-0": "n1"}},
   "Both queues deserve what they request (12.5 cpu is plenty): q1 2 cpu and 2 pods, q2 1.5 cpu and 6 pods. By "
   "cpu q2's share is 0.5/1.5 = 0.33 < q1's 1/2, but q2 holds 5 of its 6 pods (0.83): with the pod count in the "
   "share q1 goes first and takes n1's last cpu.")
sc("vq12-proportion-enqueue-checks-requested-dimensions", "proportion: a queue over its GPU capability admits a "
   "CPU-only job", K,
   [gpu_node("n1", 8, 4), queue("q1", capability={GPU: "1"}),
    with_requests(job("g", "q1", run=["n1"] * 2), {"cpu": "1", GPU: "1"}),
    job("x", "q1", pend=1, min_cpu=1, phase="Pending", created=5)],
   {"podgroupPhases": {f"{NS}/x": "Inqueue"}, "bindsCount": 1},
   "q1 holds 2 GPUs, above its capability 1 (capability is not enforced on running pods). x's minResources name only "
   "cpu, and proportion's enqueue check compares only those dimensions: x is admitted and placed.")

sc("vq13-hierarchy-root-capability-unset-is-zero", "hierarchical capacity: a root capability that names only cpu "
   "leaves every other resource at 0 for the whole tree", CH,
   [gpu_node("n1", 4, 4), queue("root", capability={"cpu": "8"}), queue("q1", capability={GPU: "2"}),
    with_requests(job("x", "q1", pend=1), {"cpu": "1", "memory": "1Gi"}),
    with_requests(job("g", "q1", pend=1, created=1), {"cpu": "1", GPU: "1"}), job("z", "q1", pend=1, created=2)],
   {"binds": {f"{NS}/z-0": "n1"}},
   "Volcano reads the root's spec.capability as a Resource: what it does not name is 0, not unlimited (only an "
   "empty capability means unlimited). q1 inherits memory 0 from the root, and its realCapability has no GPU "
   "entry (0) because the root's has none, although q1 names 2 GPUs: x (1Gi) and g (1 GPU) never fit the queue, "
   "z (cpu only) does. docs/volcano-differences.md lists this.")

CL1NG = conf("enqueue, allocate, reclaim", ["priority", ("gang", {"enableReclaimable": False}), "conformance",
                                            ("capacity", {"enableHierarchy": True,
                                                          "arguments": {"ancestorReclaimLevel": 1}})], ["predicates"])
sc("vq14-ancestor-level-spares-sibling-victims", "capacity ancestorReclaimLevel 1: a reclaimer whose deserved does "
   "not cover its request spares immediate victims under a shared parent", CL1NG,
   [gpu_node("n1", 4, 4), queue("root"), queue("eng", deserved={"cpu": "4"}),
    queue("dev", parent="eng", deserved={GPU: "1"}), queue("ops", parent="eng"), queue("lab"),
    job("o", "ops", run=["n1"] * 2), job("p", "lab", run=["n1"] * 2, created=1), job("y", "dev", pend=1, created=5)],
   {"evictionsCount": 1, "evictionsFrom": a("p-0", "p-1"), "pipelined": {f"{NS}/y-0": "n1"}},
   "dev deserves only GPUs, so its cpu task may reclaim only through its parent eng (1 <= 4 cpu, level 1). ops and "
   "lab deserve nothing: their pods are immediate victims. But ops shares the parent eng with dev, and dev's "
   "deserved names none of the task's resources, so ops's pods are spared; one of lab's pods goes.")

sc("vq15-proportion-deserved-creeps-below-request", "proportion: a deserved that creeps towards the request ends "
   "a fraction below it, and the task waits on an idle node", A,
   [node("n1", 2, mem="4Gi"), queue("qa"), queue("qb"), queue("qz", weight=2), job("z", "qz", pend=3),
    with_requests(job("a", "qa", pend=1, created=1), {"memory": "2Gi"}),
    with_requests(job("b", "qb", pend=3, created=2), {"memory": "2Gi"})],
   {"binds": {f"{NS}/z-0": "n1"}},
   "Each round qa and qb get a quarter of the memory left and qz half of the cpu left, so the amounts halve and "
   "never quite arrive: the loop stops once less than 0.1 of everything is left, with qz deserving 2 cpu minus a "
   "sliver and qa/qb 2Gi minus a fraction of a byte. allocatable compares strictly, so a's 2Gi pod and qz's "
   "second cpu do not fit what they deserve: only z-0 is placed on an empty node (Volcano's loop; pyvolcano "
   "follows it, docs/volcano-differences.md).")

# ---------------------------------------------------------------- sla
sla1 = {"sla-waiting-time": "1m"}
sc("s01-sla-overtakes", "sla: a job with a waiting time goes before an older job without", S,
   [node("n1", 1), job("old", pend=1), job("urgent", pend=1, created=10, pg_annotations=sla1)],
   {"binds": {f"{NS}/urgent-0": "n1"}},
   "Same priority and both unready: sla's job order puts jobs with a deadline first.")
sc("s02-sla-earliest-deadline", "sla: the earlier deadline wins, not the earlier creation", S,
   [node("n1", 1), job("a", pend=1, pg_annotations={"sla-waiting-time": "2h"}),
    job("b", pend=1, created=30, pg_annotations={"sla-waiting-time": "30m"})],
   {"binds": {f"{NS}/b-0": "n1"}},
   "a's deadline 02:00, b's 01:00.")
sc("s03-sla-enqueues-after-waiting", "sla: a job that waited its time is admitted although overcommit says no", S,
   [node("n1", 2), job("x", pend=3, min_member=3, min_cpu=3, phase="Pending",
                       pg_annotations={"sla-waiting-time": "1h"})],
   {"podgroupPhases": {f"{NS}/x": "Inqueue"}, "binds": {}},
   "Created in 2026-01-01, waited far more than 1h: sla permits in tier 1, so overcommit (tier 2, 2*1.2 < 3) is not "
   "asked. The gang still does not fit 2 cpu.")
sc("s04-sla-not-yet-waited", "sla: before its waiting time the job goes through the normal vote", S,
   [node("n1", 2), job("x", pend=3, min_member=3, min_cpu=3, phase="Pending",
                       pg_annotations={"sla-waiting-time": "876000h"})],
   {"podgroupPhases": {f"{NS}/x": "Pending"}},
   "sla abstains; overcommit rejects 3 cpu > 2*1.2.")
sc("s05-sla-argument-default", "sla: the plugin argument applies to jobs without the annotation", S_ARG,
   [node("n1", 1), job("a", pend=1, created=10),
    job("b", pend=1, created=20, pg_annotations={"sla-waiting-time": "10m"})],
   {"binds": {f"{NS}/b-0": "n1"}},
   "a's deadline 00:10 + 1h, b's 00:20 + 10m = 00:30: b first though created later.")

# ---------------------------------------------------------------- nodegroup
def ng(**kw: list[str]) -> dict[str, Any]:
    aff: dict[str, Any] = {}
    for key, groups in kw.items():
        kind, when = key.split("_")
        block = aff.setdefault("nodeGroupAffinity" if kind == "aff" else "nodeGroupAntiAffinity", {})
        block[f"{when}DuringSchedulingIgnoredDuringExecution"] = groups
    return aff


G = "volcano.sh/nodegroup-name"
sc("n01-nodegroup-required", "nodegroup: required affinity sends the queue's pods to its group", N,
   [node("n1", 4, {G: "a"}), node("n2", 4, {G: "b"}), queue("q1", affinity=ng(aff_required=["b"])),
    job("x", "q1", pend=1)],
   {"binds": {f"{NS}/x-0": "n2"}}, "n1's group a is not listed.")
sc("n02-nodegroup-required-beats-preferred", "nodegroup: required scores 100, preferred 50", N,
   [node("n1", 4, {G: "b"}), node("n2", 4, {G: "a"}),
    queue("q1", affinity=ng(aff_required=["a"], aff_preferred=["b"])), job("x", "q1", pend=1)],
   {"binds": {f"{NS}/x-0": "n2"}}, "Both pass; n2 (required group a) scores 100 > 50.")
sc("n03-nodegroup-preferred-fallback", "nodegroup: when the required group is full the preferred group is used", N,
   [node("n1", 1, {G: "a"}), node("n2", 4, {G: "b"}), queue("q1", affinity=ng(aff_required=["a"], aff_preferred=["b"])),
    job("busy", "q1", run=["n1"]), job("x", "q1", pend=1, created=1)],
   {"binds": {f"{NS}/x-0": "n2"}}, "n1 has no idle cpu; group b is admitted by preferred affinity.")
sc("n04-nodegroup-anti-required-only", "nodegroup: anti-affinity alone admits no node (Volcano 1.9)", N,
   [node("n1", 4, {G: "a"}), node("n2", 4, {G: "b"}), queue("q1", affinity=ng(anti_required=["a"])),
    job("x", "q1", pend=1)],
   {"binds": {}, "unschedulable": {f"{NS}/x": "node group"}},
   "Volcano's predicate passes a node only if its group is in an affinity list or in preferred anti-affinity; "
   "a queue with only required anti-affinity gets nothing (documented in docs/queues.md).")
sc("n05-nodegroup-queue-without-affinity", "nodegroup: a queue without affinity gets no node", N,
   [node("n1", 4, {G: "a"}), job("x", pend=1)],
   {"binds": {}, "unschedulable": {f"{NS}/x": "no node group affinity"}},
   "With the plugin enabled every queue must name its groups.")
sc("n06-nodegroup-unlabelled-node", "nodegroup: an unlabelled node is never used", N,
   [node("n1", 8), node("n2", 2, {G: "a"}), queue("q1", affinity=ng(aff_required=["a"])), job("x", "q1", pend=1)],
   {"binds": {f"{NS}/x-0": "n2"}}, "n1 lacks the volcano.sh/nodegroup-name label.")
sc("n07-nodegroup-preferred-anti-soft", "nodegroup: preferred anti-affinity is soft", N,
   [node("n1", 1, {G: "a"}), node("n2", 4, {G: "b"}),
    queue("q1", affinity=ng(aff_preferred=["a"], anti_preferred=["b"])),
    job("busy", "q1", run=["n1"]), job("x", "q1", pend=1, created=1)],
   {"binds": {f"{NS}/x-0": "n2"}}, "Group b scores -1 but passes; n1 is full.")
sc("n08-nodegroup-anti-required-wins", "nodegroup: required anti-affinity overrides affinity", N,
   [node("n1", 4, {G: "a"}), node("n2", 1, {G: "b"}),
    queue("q1", affinity=ng(aff_required=["a", "b"], anti_required=["a"])), job("x", "q1", pend=1)],
   {"binds": {f"{NS}/x-0": "n2"}}, "a is listed in both; anti-affinity wins, so only n2 passes.")
sc("n09-nodegroup-hierarchy-inherits", "nodegroup with enableHierarchy: a child inherits its parent's affinity", NH,
   [node("n1", 4, {G: "a"}), node("n2", 4, {G: "b"}), queue("eng", affinity=ng(aff_required=["b"])),
    queue("dev", parent="eng"), job("x", "dev", pend=1)],
   {"binds": {f"{NS}/x-0": "n2"}}, "dev has no affinity of its own; eng's applies.")

# ---------------------------------------------------------------- resourcequota
sc("q01-quota-exceeded", "resourcequota: a PodGroup that would pass the namespace quota stays Pending", Q,
   [node("n1", 8), quota("rq", {"cpu": "2"}, {"cpu": "1"}), job("x", pend=2, min_member=2, min_cpu=2, phase="Pending")],
   {"binds": {}, "podgroupPhases": {f"{NS}/x": "Pending"}, "unschedulable": {f"{NS}/x": "ResourceQuota rq"}},
   "used 1 + minResources 2 > hard 2.")
sc("q02-quota-fits", "resourcequota: a PodGroup within the quota is admitted and placed", Q,
   [node("n1", 8), quota("rq", {"cpu": "4"}, {"cpu": "1"}),
    job("x", pend=2, min_member=2, min_cpu=2, phase="Pending")],
   {"bindsCount": 2, "podgroupPhases": {f"{NS}/x": "Inqueue"}},
   "1 + 2 <= 4.")
sc("q02b-quota-names-are-literal", "resourcequota: a requests.cpu quota does not limit minResources' cpu (Volcano)",
   Q, [node("n1", 8), quota("rq", {"requests.cpu": "2"}, {"requests.cpu": "1"}),
       job("x", pend=2, min_member=2, min_cpu=2, phase="Pending")],
   {"bindsCount": 2, "podgroupPhases": {f"{NS}/x": "Inqueue"}},
   "Volcano masks minResources {cpu: 2} by the quota's resource names ([requests.cpu]): nothing is left to check, "
   "so the job is admitted although Kubernetes would count 1 + 2 > 2 requested cpus.")
sc("q03-quota-admits-first-only", "resourcequota: admitted jobs count against the quota in the same cycle", Q,
   [node("n1", 8), quota("rq", {"cpu": "2"}, {"cpu": "0"}), job("a", pend=2, min_member=2, min_cpu=2, phase="Pending"),
    job("b", pend=1, min_cpu=1, phase="Pending", created=5)],
   {"podgroupPhases": {f"{NS}/a": "Inqueue", f"{NS}/b": "Pending"}, "bindsCount": 2},
   "a (older) takes the whole 2 cpu; b would make it 3.")
sc("q04-quota-other-namespace", "resourcequota: another namespace's quota does not apply", Q,
   [node("n1", 8), quota("rq", {"cpu": "1"}, {"cpu": "1"}, ns="team-b"),
    job("x", pend=1, min_cpu=1, phase="Pending")],
   {"bindsCount": 1, "podgroupPhases": {f"{NS}/x": "Inqueue"}}, "team-a has no quota.")
sc("q05-quota-pods-count", "resourcequota: a pods quota does not stop a PodGroup whose minResources name no pods",
   Q, [node("n1", 8), quota("rq", {"pods": "2"}, {"pods": "1"}),
       job("x", pend=2, min_member=2, min_cpu=2, phase="Pending")],
   {"bindsCount": 2, "podgroupPhases": {f"{NS}/x": "Inqueue"}},
   "minResources is {cpu: 2}; masked by the quota's names ([pods]) nothing is left, so Volcano admits the gang "
   "although 1 + 2 pods exceed the 2 allowed (the API server's quota admission then refuses the extra pod).")

# ---------------------------------------------------------------- hierarchical drf
def hq(name: str, path: str, weights: str) -> dict[str, Any]:
    return queue(name, annotations={"volcano.sh/hierarchy": path, "volcano.sh/hierarchy-weights": weights})


sc("h01-hdrf-weight-decides-order", "hierarchical drf: share divided by weight orders queues", H,
   [node("n1", 4), hq("alpha", "root/eng", "1/1"), hq("zeta", "root/sci", "1/4"),
    job("a", "alpha", run=["n1"]), job("a2", "alpha", pend=1, created=1),
    job("z", "zeta", run=["n1", "n1"], created=2), job("z2", "zeta", pend=1, created=3)],
   {"binds": {f"{NS}/z2-0": "n1"}},
   "One cpu free. sci holds 2/4 with weight 4 (0.125), eng 1/4 with weight 1 (0.25): sci goes first although it "
   "holds more and sorts later by name.")
sc("h02-hdrf-reclaim", "hierarchical drf: reclaim until the two sides' weighted shares meet", HR,
   [node("n1", 4), hq("alpha", "root/eng", "1/1"), hq("zeta", "root/sci", "1/1"),
    job("a", "alpha", run=["n1"] * 4), job("z", "zeta", pend=2, min_member=2, created=5)],
   {"evictions": [], "pipelined": {}},
   "The gang of 2 gets one pod only, so the job's reclaim statement is discarded. First task: sci after the move "
   "1/4 < eng after the loss 3/4, a victim. The pipelined task counts for sci, so "
   "for the second sci would reach 2/4 and eng fall to 2/4: no longer smaller, reclaim stops at equal weighted "
   "shares.")


# ---------------------------------------------------------------- Volcano master's eviction rules (issue 13)
NO = conf("allocate, preempt", ["priority", ("gang", {"enablePreemptable": False}), "conformance"],
          ["predicates", "nodeorder"])


def pod_node(name: str, cpu: int, pods: int) -> dict[str, Any]:
    n = node(name, cpu)
    n["status"]["capacity"]["pods"] = n["status"]["allocatable"]["pods"] = str(pods)
    return n


def best_effort(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The job's pods request nothing: BestEffort."""
    for o in objs:
        if o["kind"] == "Pod":
            for c in o["spec"]["containers"]:
                c["resources"] = {}
    return objs


def with_mem(objs: list[dict[str, Any]], mem: str) -> list[dict[str, Any]]:
    """The job's pods also request ``mem`` of memory."""
    for o in objs:
        if o["kind"] == "Pod":
            for c in o["spec"]["containers"]:
                c["resources"]["requests"]["memory"] = mem
    return objs


sc("ve-preempt-greedy-best-score-node", "preempt (default path) evicts on the best-scored node, not on the node "
   "with the cheapest victims", NO,
   [node("n1", 2), node("n2", 2, mem="4Gi"), with_mem(job("mid", run=["n1"], cpu=2, prio=100), "1Gi"),
    with_mem(job("lowa", run=["n2"], prio=50, created=1), "2Gi"),
    with_mem(job("lowb", run=["n2"], prio=50, created=2), "2Gi"),
    with_mem(job("high", pend=1, cpu=2, prio=1000, created=5), "1Gi")],
   {"evictions": a("mid-0"), "pipelined": {f"{NS}/high-0": "n1"}},
   "Both nodes are full on cpu; with the pod added nodeorder's least-allocated memory score is high on n1 (2 of "
   "64Gi) and zero on n2 (5 of 4Gi), so n1 ranks first. Volcano's normalPreempt tries n1 first and evicts mid "
   "there, although n2's victims have lower priority (the topology-aware dry run, p10, would pick n2).")
sc("ve-preempt-greedy-victim-order", "preempt (default path) evicts lowest first until the task fits, no reprieve",
   P_NOGANGVOTE,
   [node("n1", 3), job("l10", run=["n1"], prio=10), job("l20", run=["n1"], cpu=2, prio=20, created=1),
    job("high", pend=1, cpu=2, prio=1000, created=5)],
   {"evictions": a("l10-0", "l20-0"), "pipelined": {f"{NS}/high-0": "n1"}},
   "Victim order is reverse job order: l10 goes first (1 cpu free, not enough), then l20. Nothing is given back, "
   "unlike the topology-aware dry run (p13), which keeps l10.")
sc("ve-preempt-besteffort-victim", "a BestEffort pod is a victim when the node is full by pod count", NO,
   [pod_node("n1", 4, 2), best_effort(job("be", run=["n1", "n1"], prio=10)),
    job("high", pend=1, prio=1000, created=5)],
   {"evictionsCount": 1, "evictionsFrom": a("be-0", "be-1"), "pipelined": {f"{NS}/high-0": "n1"}},
   "n1 has cpu to spare but holds its 2 pods. Only a BestEffort preemptor is barred from non-BestEffort victims; "
   "this one requests cpu, so one BestEffort pod is evicted to free a pod slot.")
sc("ve-preempt-besteffort-preemptor-spares-others", "a BestEffort preemptor never evicts a pod that requests "
   "resources", NO,
   [pod_node("n1", 4, 2), job("low", run=["n1", "n1"], prio=10),
    best_effort(job("high", pend=1, prio=1000, created=5))],
   {"evictions": [], "pipelined": {}},
   "The node is full by pod count; the BestEffort preemptor may only take from BestEffort pods, and there are none.")
TIERS = conf("allocate, preempt", ["conformance", "gang"], ["priority", "predicates"])
sc("ve-victims-fall-through-tiers", "preemptable: a tier that ends with no victims leaves the next tier to decide",
   TIERS,
   [node("n1", 2), job("la", run=["n1"], prio=10), job("lb", run=["n1"], prio=10, created=1),
    job("high", pend=1, prio=1000, created=5)],
   {"evictionsCount": 1, "evictionsFrom": a("la-0", "lb-0"), "pipelined": {f"{NS}/high-0": "n1"}},
   "Tier 1: conformance offers both pods, gang none (each job runs exactly its minMember), which resets the list "
   "and ends the tier. Volcano master then asks tier 2, where priority offers both lower-priority pods (before "
   "v1.11 the empty gang answer would have vetoed it).")
sc("ve-reclaim-commits-when-gang-pipelined", "reclaim keeps a job's evictions once its gang is pipelined", R1,
   [node("n1", 6), queue("q1"), queue("q2"), job("x", "q1", run=["n1"] * 6),
    job("y", "q2", pend=4, min_member=3, created=5)],
   {"evictionsCount": 3, "evictionsFrom": a(*[f"x-{i}" for i in range(6)]), "pipelinedCount": 3},
   "As r01, but minMember 3: three tasks reclaim one pod each until q1 is at its deserved 3; the gang is then "
   "pipelined and no longer starving, so the job's statement is committed.")

sc("ve-preempt-in-closed-queue", "a Closed queue's running job still preempts inside the queue", P_NOGANGVOTE,
   [node("n1", 2), queue("q1", state="Closed"), job("low", "q1", run=["n1", "n1"], prio=10),
    job("high", "q1", pend=1, prio=1000, created=5)],
   {"evictionsCount": 1, "evictionsFrom": a("low-0", "low-1"), "pipelined": {f"{NS}/high-0": "n1"}},
   "Closing a queue stops admission; Volcano's preempt does not look at the queue's state, so a starving job "
   "already in it takes from a lower-priority job of the same queue.")


class _Dumper(yaml.SafeDumper):
    """Multi-line strings (the config) as ``|`` blocks, so the files read like the shared scenarios."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def main() -> None:
    for old in HERE.glob("*.yaml"):
        old.unlink()
    for s in SCENARIOS:
        body = {k: v for k, v in s.items() if k != "file"}
        (HERE / f"{s['file']}.yaml").write_text(yaml.dump(body, Dumper=_Dumper, sort_keys=False, width=120))
    print(f"wrote {len(SCENARIOS)} scenarios")


if __name__ == "__main__":
    main()
