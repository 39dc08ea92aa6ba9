"""Run one differential case through pyvolcano and the real Volcano and say where they disagree, and why.

pyvolcano runs through the code path of ``pyvolcano cycle`` (``framework/cycle.py: cycle_objects`` /
``result_json``); Volcano runs twice through ``tests/oracle.py`` and only what both runs decided the same way is
compared (Volcano's Go map order and random node sampling make a second run differ sometimes). A pod bound or
pipelined to a different node counts as agreement when Volcano scored both nodes the best for it
(``util.SelectBestNodeAndScore`` picks one of the best at random): the scores are the ones Volcano computed when
it chose (``tests/oracle.py: decision_scores``). The same holds for a job's hypernode: when pyvolcano scored several
hypernodes best for the job (``SessionResult.hypernode_ties``) and the two nodes lie under them, Volcano picked
another of them (``selectBestHyperNodeForJob`` ranges over a Go map). Once Volcano has broken a tie another way,
the rest of the case is not compared: later decisions may follow from the tie, and comparing them made the same
seed agree on one run and not on the next. The same holds when Volcano's two runs broke a tie two ways and
pyvolcano took a third node scored as high (topology seed 9: three equal nodes for a job's pods; the runs then
agreed on the last pod by chance, about one run in eight).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from pyvolcano.conf.loader import load_conf
from pyvolcano.framework.cycle import cycle_objects, result_json
from tests import oracle
from tests.differential.gen import EXTRA, Case

#: What each disagreement class (``classify``) points to: issue-13 rules, and "new" findings no rule covers, as the
#: minimal repros in ``tests/differential/repros/`` showed (docs/volcano-differences.md, "How agreement is checked").
CAUSES: dict[str, str] = {
    "node-score": "rule 12 (nodeorder/binpack scores as Kubernetes 1.36 computes them); what follows is consequence",
    "gang-continues": "rule 1 (allocate goes on after a task finds no node)",
    "phase": "rule 10 (PodGroup phase from scheduled pods) or a new phase difference",
    "enqueue": "rules 15, 13; new: proportion's elastic without spec.minResources admits past capability",
    "preempt-victims": "rules 8, 16, 7; new: preempt's within-job pass pipelines part of a gang",
    "reclaim-victims": "rules 7, 17, 13; new: reclaim skips a node without valid victims",
    "capacity-alloc": "rules 5, 15 (hierarchy inconsistencies are warnings, the root is unlimited), 2",
    "allocate-set": "rules 13, 1, 2, 14 (who gets placed)",
    "affinity": "rule 9 (inter-pod affinity, anti-affinity, topology spread)",
}


@dataclass
class Diff:
    kind: str  # bind-node, bind-only-volcano, bind-only-pyvolcano, evict-..., pipelined-..., phase
    subject: str
    volcano: str
    pyvolcano: str

    def __str__(self) -> str:
        return f"{self.kind:22} {self.subject}: volcano={self.volcano} pyvolcano={self.pyvolcano}"


@dataclass
class Outcome:
    case: Case
    diffs: list[Diff] = field(default_factory=list)
    unstable: list[str] = field(default_factory=list)
    cause: str = ""
    path: Path | None = None
    error: str = ""

    @property
    def agrees(self) -> bool:
        return not self.diffs and not self.error

    def report(self) -> str:
        head = f"{self.case.name}: {self.cause or 'agrees'}"
        if self.path:
            head += f"\n  scenario: {self.path}\n  rerun: ../shared/tools/volcano/vc-oracle {self.path} 2>/dev/null"
            head += f"\n         .venv/bin/python -m tests.differential.rerun {self.path}"
        lines = [head] + [f"  {d}" for d in self.diffs]
        if self.error:
            lines.append(f"  error: {self.error}")
        if self.unstable:
            lines.append(f"  (not compared, Volcano undecided: {'; '.join(self.unstable)})")
        return "\n".join(lines)


def run_pyvolcano(case: Case) -> dict[str, Any]:
    conf = load_conf(case.config, f"{case.name}: config")
    result, _ = cycle_objects(oracle.with_installer_queues(case.objects, case.config), conf, "volcano", "vector",
                              record_ties=True)
    out = result_json(result)
    out["hypernodeTies"] = result.hypernode_ties
    return out


def _pod_jobs(case: Case) -> dict[str, str]:
    """pod -> its PodGroup's job uid (``namespace/group-name``)."""
    out: dict[str, str] = {}
    for o in case.objects:
        if o["kind"] == "Pod":
            meta = o["metadata"]
            pg = (meta.get("annotations") or {}).get("scheduling.k8s.io/group-name")
            if pg:
                out[f"{meta['namespace']}/{meta['name']}"] = f"{meta['namespace']}/{pg}"
    return out


def _alike(obj: dict[str, Any]) -> dict[str, Any]:
    """A pod without its name and uid: what every scheduling rule sees of it."""
    meta = {k: v for k, v in obj["metadata"].items() if k not in ("name", "uid")}
    return {**obj, "metadata": meta}


def _swaps(case: Case, only_vc: list[str], only_py: list[str]) -> list[tuple[str, str]]:
    """Pairs (evicted by Volcano only, by pyvolcano only) of pods alike in everything but their names: Volcano
    orders equal victims by Go map order (``BuildVictimsPriorityQueue`` over ``node.Tasks``), so which of them goes
    is random there; pyvolcano takes them in name order. Each pod is paired once."""
    pods = {f"{o['metadata']['namespace']}/{o['metadata']['name']}": _alike(o) for o in case.objects
            if o["kind"] == "Pod"}
    out: list[tuple[str, str]] = []
    free = list(only_py)
    for a in only_vc:
        b = next((b for b in free if a in pods and b in pods and pods[a] == pods[b]), None)
        if b is not None:
            free.remove(b)
            out.append((a, b))
    return out


def _vote_key(obj: dict[str, Any]) -> tuple[Any, ...] | None:
    """What decides whether a running pod comes before its job's other pods on the node in the victim votes and
    the victim order, Go map order aside: its job, node, priority and creation time (gang and drf offer the first
    pods of each job they meet, whatever their requests; the task order compares priority and creation time);
    None for a pod on no node."""
    meta, spec = obj["metadata"], obj.get("spec") or {}
    if not spec.get("nodeName"):
        return None
    return (meta.get("namespace"), (meta.get("annotations") or {}).get("scheduling.k8s.io/group-name"),
            spec["nodeName"], spec.get("priority"), meta.get("creationTimestamp"))


def _vote_ties(case: Case, only_vc: list[str], only_py: list[str], vc_evicted: set[str],
               py_evicted: set[str]) -> list[str]:
    """Pods evicted by one side only that have a twin for the votes (``_vote_key``) on the same node which that
    side left running, the two differing in something else (requests, labels, affinity): gang's and
    drf's preemptable/reclaimable walk a node's pods in Go map order (``node.Tasks``; preempt.go:
    SelectVictimsOnNode, reclaim.go) and offer only the first pods of each job they meet, and the victim queue
    orders such twins by map order too, so which twin Volcano offers is random, and what follows (whether a
    preemptor's anti-affinity is then met) may differ. pyvolcano walks its node task order. The case is then not
    compared further (``tests/scenarios/core/vd-topology-preempt-victim-vote-map-order.yaml``)."""
    actions = {a.strip() for a in str((yaml.safe_load(case.config) or {}).get("actions", "")).split(",")}
    if not actions & {"preempt", "reclaim"}:  # (gangpreempt/gangreclaim evict whole bundles, not by these votes)
        return []
    pods = {f"{o['metadata']['namespace']}/{o['metadata']['name']}": o for o in case.objects if o["kind"] == "Pod"}
    out = []
    for pod in only_vc + only_py:
        obj = pods.get(pod)
        key = _vote_key(obj) if obj else None
        if key is None:
            continue
        evicted = py_evicted if pod in only_py else vc_evicted
        twin = next((other for other, o in pods.items() if other != pod and other not in evicted
                     and _vote_key(o) == key and _alike(o) != _alike(obj)), None)
        if twin is not None:
            out.append(f"{pod} / {twin}")
    return out


def _hypernode_tie(ties: dict[str, dict[str, list[str]]], job: str | None, vnode: str, pnode: str) -> bool:
    """pyvolcano scored several hypernodes best for ``job`` (Volcano picks one at random) and Volcano's node and
    pyvolcano's lie under two of them."""
    tied = ties.get(job or "", {})
    return any(vnode in nodes for nodes in tied.values()) and any(pnode in nodes for nodes in tied.values())


def _nodes(kind: str, vc: dict[str, str], py: dict[str, str], settled: set[str],
           ties: list[tuple[str, str, str]]) -> list[Diff]:
    out: list[Diff] = []
    for pod in sorted(set(vc) | set(py)):
        if pod not in settled:
            continue
        if pod in vc and pod not in py:
            out.append(Diff(f"{kind}-only-volcano", pod, vc[pod], "-"))
        elif pod in py and pod not in vc:
            out.append(Diff(f"{kind}-only-pyvolcano", pod, "-", py[pod]))
        elif vc[pod] != "*" and vc[pod] != py[pod]:
            ties.append((pod, vc[pod], py[pod]))
            out.append(Diff(f"{kind}-node", pod, vc[pod], py[pod]))
    return out


def compare(case: Case, keep_dir: Path | None = None,
            volcano: Callable[[], oracle.Stable] | None = None) -> Outcome:
    """Both schedulers on ``case``; ``keep_dir`` gets the scenario file when they disagree. ``volcano`` gives the
    oracle's :func:`oracle.stable` for the case when the caller has started it already (``oracle.Ahead``)."""
    out = Outcome(case)
    try:
        py = run_pyvolcano(case)
        st = volcano() if volcano is not None else oracle.stable(case.objects, case.config)
    except Exception as exc:  # the instrument must report, not crash, on one bad case
        out.error, out.cause = f"{type(exc).__name__}: {exc}", "error"
        _keep(out, keep_dir)
        return out
    out.unstable = st.unstable
    unstable_pods = {u.split()[1].rstrip(":") for u in st.unstable}
    pods = {f"{o['metadata']['namespace']}/{o['metadata']['name']}" for o in case.objects if o["kind"] == "Pod"}
    settled = pods - unstable_pods
    ties: list[tuple[str, str, str]] = []
    out.diffs += _nodes("bind", st.binds, py["binds"], settled, ties)
    out.diffs += _nodes("pipelined", st.pipelined, py["pipelined"], settled, ties)
    only_vc = sorted((st.evictions - set(py["evictions"])) & settled)
    only_py = sorted((set(py["evictions"]) - st.evictions) & settled)
    for a, b in _swaps(case, only_vc, only_py):
        out.unstable.append(f"eviction {a} / {b}: pods alike but for their names (Volcano: Go map order)")
        only_vc.remove(a)
        only_py.remove(b)
    vote_ties = _vote_ties(case, only_vc, only_py, st.evictions, set(py["evictions"]))
    for pod in only_vc + only_py:
        who = "volcano" if pod in st.evictions else "pyvolcano"
        out.diffs.append(Diff(f"evict-only-{who}", pod, "evicted" if who == "volcano" else "-",
                              "evicted" if who == "pyvolcano" else "-"))
    for pg, phase in sorted(st.phases.items()):
        got = py["podgroups"].get(pg, {}).get("phase")
        if got == "Unknown" and phase in oracle.UNKNOWN_SEEN_AS:
            out.unstable.append(f"phase {pg}: Unknown is {phase} in the oracle (it skips OnSessionClose)")
        elif got != phase:
            out.diffs.append(Diff("phase", pg, phase, str(got)))
    tied = {pod for pod, vnode, pnode in ties if st.tie(pod, vnode, pnode)}
    for pod, vnode, pnode in ties:
        if pod in tied:
            out.unstable.append(f"node {pod}: {vnode} / {pnode} tie")
    jobs = _pod_jobs(case)
    for pod, vnode, pnode in ties:
        if pod not in tied and _hypernode_tie(py["hypernodeTies"], jobs.get(pod), vnode, pnode):
            tied.add(pod)
            out.unstable.append(f"node {pod}: {vnode} / {pnode} under equally scored hypernodes")
    for kind in ("binds", "pipelined"):
        for pod, pnode in sorted(py[kind].items()):
            if pod in settled or pod in tied:
                continue
            vnodes = {r[kind][pod] for r in st.runs if pod in r[kind]}
            if len(vnodes) > 1 and pnode not in vnodes and any(st.tie(pod, v, pnode) for v in vnodes):
                # Volcano's own runs broke this tie two ways and pyvolcano a third, equally scored, way: what
                # follows in the session (the same job's next pods) may differ from what both runs then agreed on
                tied.add(pod)
                out.unstable.append(f"node {pod}: {' / '.join(sorted(vnodes))} / {pnode} (three-way tie)")
    for pair in vote_ties:
        out.unstable.append(f"victim {pair}: twins for the victim votes (Volcano: Go map order)")
    if tied or vote_ties:
        # Volcano broke a tie another way (at random: util.SelectBestNodeAndScore among nodes,
        # util.SelectBestHyperNodeAndScore and a Go map among hypernodes); every later decision of the session may
        # follow from it, so none is compared (a flake otherwise: the same seed agrees on one run and not the next)
        out.unstable.append(f"{len(out.diffs) - len(tied)} later difference(s) not compared: they follow the tie")
        out.diffs = []
    out.cause = classify(case, out.diffs) if out.diffs else ""
    if out.diffs:
        _keep(out, keep_dir)
    return out


def _keep(out: Outcome, keep_dir: Path | None) -> None:
    folder = keep_dir or Path(tempfile.gettempdir()) / "pyvolcano-differential"
    folder.mkdir(parents=True, exist_ok=True)
    out.path = folder / f"{out.case.name}.yaml"
    sc = out.case.scenario()
    sc["objects"] = oracle.with_installer_queues(sc["objects"], sc["config"])
    sc["notes"] = "differential case; disagreements:\n" + "\n".join(str(d) for d in out.diffs)
    out.path.write_text(oracle.dump(sc))


def classify(case: Case, diffs: list[Diff]) -> str:
    """A disagreement class (a key of :data:`CAUSES`) from the family and the kinds of difference.

    A heuristic meant to sort many cases into a few piles to look at, not a proof: each pile's minimal
    reproduction under ``tests/differential/repros/`` is what ties a class to a rule.
    """
    kinds = {d.kind for d in diffs}
    conf = EXTRA.get(case.family, case.family)
    if case.family == "affinity":
        return "affinity"
    if "bind-node" in kinds or "pipelined-node" in kinds:
        return "node-score"  # a different node first; what follows is usually its consequence
    if any(k.startswith("evict") for k in kinds) or "pipelined-only-volcano" in kinds or \
            "pipelined-only-pyvolcano" in kinds:
        return "reclaim-victims" if conf in ("reclaim", "capacity", "hierarchy", "gangreclaim") else "preempt-victims"
    if kinds == {"phase"}:
        if all(d.volcano == "Inqueue" and d.pyvolcano == "Pending" for d in diffs):
            return "enqueue"
        return "phase"
    if conf in ("capacity", "hierarchy"):
        return "capacity-alloc"
    jobs = {d.subject.rsplit("-", 1)[0] for d in diffs if d.kind.startswith("bind-only")}
    partial = False
    for job in jobs:
        ns, name = job.split("/", 1)
        members = [o for o in case.objects if o["kind"] == "Pod" and o["metadata"]["namespace"] == ns
                   and o["metadata"]["name"].rsplit("-", 1)[0] == name]
        partial = partial or len(members) > 1
    if "phase" in kinds and all(d.kind == "phase" or d.kind.startswith("bind-only") for d in diffs):
        return "gang-continues" if partial else "enqueue"
    return "allocate-set"


def minimize(case: Case, cause: str | None = None, budget: int = 120) -> Case:
    """A smaller case with the same disagreement class: greedily drop whole jobs (PodGroup and pods), single pods,
    nodes, queues and priority classes while ``compare`` still reports ``cause`` (delta debugging, one object
    group at a time). ``budget`` bounds the number of comparisons."""
    target = cause or compare(case).cause
    objs = list(case.objects)

    def groups(objects: list[dict[str, Any]]) -> list[list[int]]:
        out: list[list[int]] = []
        pgs = {(o["metadata"].get("namespace"), o["metadata"]["name"]): i for i, o in enumerate(objects)
               if o["kind"] == "PodGroup"}
        for (ns, name), i in pgs.items():
            out.append([i] + [k for k, o in enumerate(objects) if o["kind"] == "Pod"
                              and o["metadata"].get("namespace") == ns
                              and (o["metadata"].get("annotations") or {}).get("scheduling.k8s.io/group-name")
                              == name])
        for i, o in enumerate(objects):
            if o["kind"] == "Node":  # a node goes with the pods running on it
                out.append([i] + [k for k, p in enumerate(objects) if p["kind"] == "Pod"
                                  and (p.get("spec") or {}).get("nodeName") == o["metadata"]["name"]])
        out += [[i] for i, o in enumerate(objects) if o["kind"] in ("Pod", "Queue", "PriorityClass")]
        return out

    changed = True
    while changed and budget > 0:
        changed = False
        for group in groups(objs):
            if budget <= 0:
                break
            trial = [o for i, o in enumerate(objs) if i not in set(group)]
            budget -= 1
            out = compare(Case(case.family, case.seed, case.config, trial), Path(tempfile.gettempdir()) / "min")
            if out.cause == target and not out.error:
                objs, changed = trial, True
                break
    return Case(case.family, case.seed, case.config, objs)


def expect_from_volcano(st: oracle.Stable) -> dict[str, Any]:
    """A scenario ``expect`` that says what Volcano decided in every run: a node is pinned only where Volcano's
    decision scores had a single best node, else ``"*"``; evictions Volcano made only sometimes become
    ``evictionsFrom``."""

    def pin(pod: str, node: str) -> str:
        if node == "*":
            return "*"
        for r in st.runs:
            scores = r["decisionScores"].get(pod) or {}
            if scores and list(scores.values()).count(max(scores.values())) > 1:
                return "*"
        return node

    unstable_pods = {u.split()[1].rstrip(":") for u in st.unstable if u.startswith(("bind", "pipelined"))}
    expect: dict[str, Any] = {}
    if not unstable_pods:
        expect["binds"] = {pod: pin(pod, node) for pod, node in sorted(st.binds.items())}
        expect["pipelined"] = {pod: pin(pod, node) for pod, node in sorted(st.pipelined.items())}
    else:
        expect["bindsCount"] = len(st.runs[0]["binds"])
    every: set[str] = set()
    for r in st.runs:
        every |= set(r["evictions"])
    if every == st.evictions:
        expect["evictions"] = sorted(st.evictions)
    else:
        expect["evictionsFrom"] = sorted(every)
    phases = dict(sorted(st.phases.items()))
    if phases:
        expect["podgroupPhases"] = phases
    return expect
