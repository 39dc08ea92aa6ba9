"""Why a job waits and the smallest changes that would start it, each checked by running the session again.

``explain(objects, conf, target)`` answers ``pyvolcano explain`` (and the short reason of ``cycle -o wide``):

1. the **path** of the job through the session as it opens (``framework/explain.py: job_path``): each enqueue
   plugin's vote, and per pending pod the nodes that pass every check and, for the others, every refusal with
   the plugin that made it;
2. a **dry run**: the session again with the job's gang lowered to one pod (``minMember: 1``, no
   ``minTaskMember``, no ``minResources``), which places as many of its pods as fit: "3 of 4 placed";
3. the **fixes**, each a change to the snapshot's objects (or, for ``preempt``, to the conf) followed by a
   session on the changed snapshot through ``framework/cycle.py: run_session``; a fix is *verified* when that
   session places the job (binds, pipelines or nominates its pods, with no Unschedulable condition).

The search is bounded: at most ``max_runs`` sessions after the first, and no more than ``budget`` seconds'
worth at the first session's pace; the answer's ``stopped`` says which fixes were not tried when it stopped
early.  Everything is computed from the snapshot's objects, never from a session's internals; the session is
the one every front-end runs, so a fix shown verified is what Volcano's rules decide on the changed cluster.
"""

from __future__ import annotations

import copy
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from pyvolcano.api.quantity import format_quantity, parse_quantity
from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.conf.loader import SchedulerConf
from pyvolcano.errors import UserError
from pyvolcano.framework.cycle import inspect_session, run_session
from pyvolcano.framework.explain import RESOURCES, JobPath, find_job, job_path
from pyvolcano.framework.result import SessionResult

GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"
#: how far a request is bisected (halvings of the remaining interval)
REQUEST_STEPS = 5


@dataclass
class Fix:
    kind: str  # minAvailable, requests, queue, topology, nodes, preempt
    verified: bool
    text: str
    data: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, **self.data, "verified": self.verified, "text": self.text}


@dataclass
class Explanation:
    podgroup: str
    phase: str
    #: Volcano's own message for the job (its Unschedulable condition, or why it was not enqueued)
    message: str
    #: the short, actionable reason ("3 of 4 placed; 1 pod of 6 cpu fits no node")
    reason: str
    placed: int
    needed: int
    path: JobPath
    fixes: list[Fix] = field(default_factory=list)
    #: pods of other jobs a session with preempt and reclaim evicts for this job
    victims: list[str] = field(default_factory=list)
    runs: int = 0
    #: why the fix search stopped before trying every kind ("" when it did not)
    stopped: str = ""
    #: the session places the job as it is: nothing to fix
    schedulable: bool = False

    @property
    def best(self) -> Fix | None:
        return next((f for f in self.fixes if f.verified), None)

    def short(self) -> str:
        """The reason and the best verified fix, on one line (``cycle -o wide``, the simulator's jobs.csv)."""
        fixes = [f.text for f in self.fixes if f.verified][:2]
        return self.reason + ("; fix: " + ", or ".join(fixes) if fixes else "")

    def as_dict(self) -> dict[str, Any]:
        p = self.path
        return {
            "podgroup": self.podgroup, "reason": self.reason, "placed": self.placed, "needed": self.needed,
            "fixes": [f.as_dict() for f in self.fixes],
            "phase": self.phase, "message": self.message, "schedulable": self.schedulable,
            "enqueue": [{"plugin": v.plugin, "vote": v.vote, **({"reason": v.reason} if v.reason else {})}
                        for v in p.enqueue],
            "tasks": [{"pods": t.pods, "feasibleNodes": t.feasible,
                       "refused": [{"reasons": [{"plugin": pl, "reason": r} for pl, r in g.reasons],
                                    "nodes": g.nodes} for g in t.refused],
                       **({"largerThanAnyNode": {r: {"request": _fmt(r, a), "largestNode": _fmt(r, b)}
                                                 for r, (a, b) in t.too_big.items()}} if t.too_big else {})}
                      for t in p.tasks],
            "preemptVictims": self.victims, "runs": self.runs, "stopped": self.stopped,
        }


def _fmt(resource: str, internal: float) -> str:
    return format_quantity(resource, internal)


# --- the objects ------------------------------------------------------------------------------------------------

def _ns_name(obj: dict[str, Any]) -> tuple[str, str]:
    md = obj.get("metadata") or {}
    return str(md.get("namespace") or "default"), str(md.get("name"))


class _Job:
    """The objects of one job in a list of manifests: its PodGroup (None for a pod without one) and its pods."""

    def __init__(self, objects: list[dict[str, Any]], uid: str, pod_uids: Iterable[str]) -> None:
        ns, name = uid.split("/", 1)
        pods = set(pod_uids)
        self.pg_index: int | None = None
        self.pod_indices: list[int] = []
        for i, o in enumerate(objects):
            kind = o.get("kind")
            if kind == "PodGroup" and _ns_name(o) == (ns, name):
                self.pg_index = i
            elif kind == "Pod" and "/".join(_ns_name(o)) in pods:
                self.pod_indices.append(i)


def _changed(objects: list[dict[str, Any]], indices: Iterable[int],
             change: Callable[[dict[str, Any]], None]) -> list[dict[str, Any]]:
    """A shallow copy of ``objects`` with a deep copy of each object at ``indices``, changed by ``change``."""
    out = list(objects)
    for i in indices:
        o = copy.deepcopy(objects[i])
        change(o)
        out[i] = o
    return out


def _containers(pod: dict[str, Any]) -> list[dict[str, Any]]:
    spec = pod.get("spec") or {}
    return [c for c in (spec.get("containers") or []) if isinstance(c, dict)]


def _nice(resource: str, value: Decimal) -> str:
    """A request rounded down to a round amount: cpu to 100m (10m under 1 core), memory to Mi, others whole."""
    if resource == "cpu":
        milli = int((value * 1000).to_integral_value(rounding="ROUND_HALF_UP"))  # 3999.99..m is 4 cores
        step = 100 if milli >= 1000 else 10
        milli = max(step, milli // step * step)
        return str(milli // 1000) if milli % 1000 == 0 else f"{milli}m"
    if resource in ("memory", "ephemeral-storage"):
        mi = max(1, int(value / (1 << 20) + Decimal("1e-6")))
        return f"{mi // 1024}Gi" if mi % 1024 == 0 else f"{mi}Mi"
    return str(max(1, int(value)))


# --- the search ---------------------------------------------------------------------------------------------------

class _Runner:
    """Sessions on changed snapshots, counted against the budget."""

    def __init__(self, conf: SchedulerConf, scheduler_name: str, max_runs: int, budget: float, pace: float) -> None:
        self.conf, self.scheduler_name = conf, scheduler_name
        self.allowed = max_runs if pace <= 0 else min(max_runs, int(budget / pace))
        self.limit_why = (f"--max-runs {max_runs}" if self.allowed == max_runs
                          else f"--budget {budget:g} s at {pace:.2g} s a session")
        self.runs = 0
        self.skipped: list[str] = []

    def left(self) -> bool:
        return self.runs < self.allowed

    def run(self, objects: list[dict[str, Any]], conf: SchedulerConf | None = None) -> SessionResult | None:
        if not self.left():
            return None
        self.runs += 1
        cache = SchedulerCache.from_objects(objects, self.scheduler_name)
        return run_session(cache, conf or self.conf)


def _placed(result: SessionResult, pods: set[str]) -> set[str]:
    return {p for p in (*result.binds, *result.pipelined, *result.nominated) if p in pods}


def _works(result: SessionResult | None, uid: str, pods: set[str]) -> bool:
    return result is not None and bool(_placed(result, pods)) and uid not in result.unschedulable


def explain(objects: list[dict[str, Any]], conf: SchedulerConf, target: str, *, scheduler_name: str = "volcano",
            max_runs: int = 24, budget: float = 120.0, base: SessionResult | None = None,
            pace: float = 0.0) -> Explanation:
    """Why ``target`` (a PodGroup ``ns/name`` or one of its pods ``ns/pod``) waits in a session on ``objects``
    under ``conf``, and the fixes (see the module docstring).  ``base``: the session on ``objects`` already run
    (``cycle -o wide`` hands its own), which took ``pace`` seconds.  A target that does not exist, or whose job
    has nothing pending, is a ``UserError``."""
    objects = [o for o in objects if isinstance(o, dict)]
    if base is None:
        t0 = time.perf_counter()
        base = run_session(SchedulerCache.from_objects(objects, scheduler_name), conf)
        pace = time.perf_counter() - t0

    def look(ssn: Any) -> JobPath | None:
        uid = find_job(ssn, target)
        return job_path(ssn, uid) if uid is not None else None

    path = inspect_session(SchedulerCache.from_objects(objects, scheduler_name), conf, look)
    if path is None:
        raise UserError(f"{target}: no such PodGroup or pod in the snapshot (give NAMESPACE/NAME of a PodGroup, "
                        "or of a pod of this scheduler)")
    uid = path.uid
    status = base.podgroups.get(uid)
    phase = status.phase if status is not None else path.phase
    if not path.pending and path.phase != "Pending":
        raise UserError(f"{uid}: not pending: PodGroup phase {path.phase}, none of its {path.pods} pod(s) waits "
                        "for a node; nothing to explain")
    pods = set(path.pending)
    message = base.unschedulable.get(uid, "") or (status.reason if status is not None else "")
    job = _Job(objects, uid, [*pods, *(t for tp in path.tasks for t in tp.pods)])
    needed = max(1, path.min_member - (path.pods - len(path.pending)))
    out = Explanation(uid, phase, message, "", 0, needed, path)
    placed_now = _placed(base, pods)
    pipelined = sorted(p for p in base.pipelined if p in pods)
    if pipelined:  # placed on room still being released: Volcano binds it when the room is free
        out.schedulable, out.placed = True, len(placed_now)
        nodes = sorted({base.pipelined[p] for p in pipelined})
        out.reason = (f"placed, waiting for room being released: {len(pipelined)} pod(s) pipelined on "
                      f"{', '.join(nodes)}; it starts when that room is free (the next sessions)")
        return out
    if placed_now and uid not in base.unschedulable:
        out.schedulable, out.placed = True, len(placed_now)
        out.reason = f"schedulable now: this session places {len(placed_now)} of its {len(pods)} pending pod(s)"
        return out
    if pace > budget and max_runs > 0:
        raise UserError(f"{uid}: the snapshot is too large to search fixes in: one session takes {pace:.1f} s, "
                        f"over --budget {budget:g} s (raise --budget, or use --max-runs 0 for the path alone)")
    runner = _Runner(conf, scheduler_name, max_runs, budget, pace)

    # the dry run: the gang lowered to one pod
    pg_i = job.pg_index

    def ungang(o: dict[str, Any]) -> None:
        spec = o.setdefault("spec", {})
        spec["minMember"] = 1
        spec.pop("minTaskMember", None)
        spec.pop("minResources", None)

    dry = runner.run(_changed(objects, [pg_i], ungang)) if pg_i is not None else base
    out.placed = len(_placed(dry, pods)) if dry is not None else 0
    out.reason = _reason(out, path)
    if dry is None:  # no session left for the dry run: how many would be placed is not known
        out.reason = f"{out.needed} pod(s) needed, none placed (no dry run: --max-runs {max_runs})" \
            if out.reason.startswith("0 of") else out.reason
    searches: list[tuple[str, Callable[[], Fix | None]]] = [
        ("minAvailable", lambda: _fix_min_available(objects, runner, job, out, uid, pods)),
        ("requests", lambda: _fix_requests(objects, runner, job, path, uid, pods, message)),
        ("queue", lambda: _fix_queue(objects, runner, job, path, uid, pods, message)),
        ("topology", lambda: _fix_topology(objects, runner, job, uid, pods)),
        ("nodes", lambda: _fix_nodes(objects, runner, job, path, out, uid, pods)),
        ("preempt", lambda: _fix_preempt(objects, runner, base, out, uid, pods)),
    ]
    not_tried = []
    for kind, search in searches:
        if not runner.left():
            not_tried.append(kind)
            continue
        fix = search()
        if fix is not None:
            out.fixes.append(fix)
    out.runs = runner.runs
    if not_tried:
        out.stopped = (f"stopped after {runner.runs} re-run(s) ({runner.limit_why}); not tried: "
                       + ", ".join(not_tried))
    out.fixes.sort(key=lambda f: not f.verified)  # verified first, each kind in the order above
    return out


def _reason(out: Explanation, path: JobPath) -> str:
    """The short reason: what keeps the job out, in words that name the cause."""
    rejects = [v for v in path.enqueue if v.vote == "reject"]
    refused = "not admitted by enqueue: " + "; ".join(f"{v.plugin}: {v.reason}" if v.reason else v.plugin
                                                      for v in rejects)
    for tp in path.tasks:  # first: a pod no node could ever hold is the cause whatever else refuses
        if tp.too_big:
            parts = ", ".join(f"{_fmt(r, a)} {r} (the largest node has {_fmt(r, b)})"
                              for r, (a, b) in tp.too_big.items())
            return (f"pod {tp.pods[0].split('/', 1)[1]} requests {parts}: larger than any node"
                    + (f" (and {refused})" if rejects else ""))
    if rejects:
        return refused
    head = f"{out.placed} of {out.needed} placed"
    if out.placed >= out.needed:
        return head + " alone, but not together with the session's other jobs"
    counts: dict[tuple[str, str], int] = {}
    for tp in path.tasks:
        for g in tp.refused:
            for r in g.reasons:
                counts[r] = counts.get(r, 0) + len(g.nodes)
    req = path.tasks[0].request if path.tasks else {}
    shape = ", ".join(f"{_fmt(r, v)} {r}" for r, v in req.items() if r in ("cpu", "memory") or "/" in r)
    if not path.nodes:
        return f"{head}; the session has no node"
    if path.tasks and all(tp.feasible for tp in path.tasks) and not out.placed and "; " in out.message:
        # every node would take a pod, yet none was placed: another check refused (a queue's room, say), which
        # Volcano's message names after the gang's summary
        return f"{head}: {out.message.split('; ', 1)[1]}"
    if path.tasks and all(tp.feasible for tp in path.tasks):  # each fits alone: the room runs out
        return (f"{head}: each pod fits a node, but the free room holds only {out.placed} pod(s)"
                + (f" of {shape}" if shape else "") + " at once")
    pieces = sorted(counts.items(), key=lambda kv: -kv[1])[:2]
    why = ", ".join(f"{text} (" + (f"{plugin}, " if plugin != RESOURCES else "") + f"{n} node(s))"
                    for (plugin, text), n in pieces)
    return f"{head}; the nodes refuse {'the rest' if out.placed else 'them'}: {why}"


def _fix_min_available(objects: list[dict[str, Any]], runner: _Runner, job: _Job, out: Explanation, uid: str,
                       pods: set[str]) -> Fix | None:
    if job.pg_index is None or not 0 < out.placed < out.path.min_member:
        return None
    value = out.placed + (out.path.min_member - out.needed)  # the pods already running count too
    old = out.path.min_member

    def lower(o: dict[str, Any]) -> None:
        spec = o.setdefault("spec", {})
        spec["minMember"] = value
        spec.pop("minTaskMember", None)
        mr = spec.get("minResources")
        if isinstance(mr, dict):  # minResources scaled with the gang: what the smaller gang asks to be admitted
            spec["minResources"] = {k: _nice(k, parse_quantity(v) * value / old) for k, v in mr.items()}

    res = runner.run(_changed(objects, [job.pg_index], lower))
    ok = _works(res, uid, pods)
    return Fix("minAvailable", ok, f"minAvailable {value} (from {old})", {"value": value})


def _fix_requests(objects: list[dict[str, Any]], runner: _Runner, job: _Job, path: JobPath, uid: str,
                  pods: set[str], message: str) -> Fix | None:
    """The largest requests that fit: the short resources (those some node lacks for the job's pods) scaled
    together by a factor found by bisection, each probe a session."""
    short = sorted({text[len("Insufficient "):] for tp in path.tasks for g in tp.refused
                    for plugin, text in g.reasons if plugin == RESOURCES and text.startswith("Insufficient ")}
                   | set(re.findall(r"Insufficient ([\w./-]*[\w/-])", message)))
    if not short or not job.pod_indices:
        return None
    base: dict[str, Decimal] = {}  # per resource, the largest per-pod request (its containers summed)
    for i in job.pod_indices:
        per: dict[str, Decimal] = {}
        for c in _containers(objects[i]):
            for r, v in ((c.get("resources") or {}).get("requests") or {}).items():
                if r in short:
                    per[r] = per.get(r, Decimal(0)) + parse_quantity(v)
        for r, v in per.items():
            base[r] = max(base.get(r, Decimal(0)), v)
    if not base:
        return None

    def scaled(f: float) -> dict[str, str]:
        return {r: _nice(r, v * Decimal(str(f))) for r, v in base.items()}

    def probe(f: float) -> bool:
        def set_requests(o: dict[str, Any]) -> None:
            for c in _containers(o):
                reqs = (c.get("resources") or {}).get("requests") or {}
                lim = (c.get("resources") or {}).get("limits") or {}
                for r in list(reqs):
                    if r in base:
                        reqs[r] = _nice(r, parse_quantity(reqs[r]) * Decimal(str(f)))
                        if r in lim and parse_quantity(lim[r]) < parse_quantity(reqs[r]):
                            lim[r] = reqs[r]

        def set_min_resources(o: dict[str, Any]) -> None:
            mr = (o.get("spec") or {}).get("minResources")
            if isinstance(mr, dict):  # the gang's minimum asks for the smaller pods too
                for r in list(mr):
                    if r in base:
                        mr[r] = _nice(r, parse_quantity(mr[r]) * Decimal(str(f)))

        changed = _changed(objects, job.pod_indices, set_requests)
        if job.pg_index is not None:
            changed = _changed(changed, [job.pg_index], set_min_resources)
        return _works(runner.run(changed), uid, pods)

    lo, hi, best = 0.0, 1.0, None
    big = [tb for tp in path.tasks for tb in tp.too_big.items()]
    if big:  # a pod larger than any node: first the largest node's size
        f = min(b / a for _, (a, b) in big)
        if probe(f):
            lo, best = f, scaled(f)
        else:
            hi = f
    for _ in range(REQUEST_STEPS if best is None else 0):
        if not runner.left():
            break
        mid = (lo + hi) / 2
        values = scaled(mid)
        if best is not None and values == best:
            break
        if probe(mid):
            lo, best = mid, values
        else:
            hi = mid
    whole = _roundest(base, lo, hi)
    if best is not None and whole is not None and whole[1] != best and runner.left() and probe(whole[0]):
        best = whole[1]
    if best is None:
        return None
    now = ", ".join(f"{r} {best[r]} (from {_nice(r, base[r])})" for r in sorted(best))
    return Fix("requests", True, f"requests {now} per pod", {"resources": best})


def _roundest(base: dict[str, Decimal], lo: float, hi: float) -> tuple[float, dict[str, str]] | None:
    """The factor in (lo, hi) that makes the first short resource a whole number of cores (or Gi), if one:
    bisection stops at 3900m where 4 fits too."""
    r, v = next(iter(sorted(base.items())))
    unit = Decimal(1) if r not in ("memory", "ephemeral-storage") else Decimal(1 << 30)
    top = (v * Decimal(str(hi)) / unit).to_integral_value(rounding="ROUND_CEILING") - 1
    if top <= 0 or top * unit <= v * Decimal(str(lo)):
        return None
    f = float(top * unit / v)
    return f, {k: _nice(k, x * Decimal(str(f))) for k, x in base.items()}


def _fix_queue(objects: list[dict[str, Any]], runner: _Runner, job: _Job, path: JobPath, uid: str,
               pods: set[str], message: str) -> Fix | None:
    """Another open queue, when the queue is what refuses (an enqueue refusal naming it, or a queue check)."""
    queue_plugins = {"proportion", "capacity"}
    about_queue = "queue" in message or any(v.vote == "reject" and v.plugin in queue_plugins for v in path.enqueue)
    if not about_queue:
        return None
    names = []
    for o in objects:
        if o.get("kind") == "Queue":
            name = str((o.get("metadata") or {}).get("name"))
            state = ((o.get("status") or {}).get("state") or "Open")
            if name != path.queue and state == "Open":
                names.append(name)
    if path.queue != "default" and "default" not in names:
        names.append("default")
    for name in names[:3]:
        if not runner.left():
            break

        def move(o: dict[str, Any], name: str = name) -> None:
            if o.get("kind") == "PodGroup":
                o.setdefault("spec", {})["queue"] = name
            else:
                o.setdefault("metadata", {}).setdefault("annotations", {})[QUEUE_ANNOTATION] = name

        idx = [job.pg_index] if job.pg_index is not None else job.pod_indices
        if _works(runner.run(_changed(objects, idx, move)), uid, pods):
            return Fix("queue", True, f"queue {name} (from {path.queue}) has room for it", {"queue": name})
    return None


def _fix_topology(objects: list[dict[str, Any]], runner: _Runner, job: _Job, uid: str, pods: set[str]) -> Fix | None:
    """A looser network-topology constraint: the next tiers up, then ``mode: soft``."""
    if job.pg_index is None:
        return None
    nt = (objects[job.pg_index].get("spec") or {}).get("networkTopology")
    if not isinstance(nt, dict) or nt.get("mode", "hard") != "hard":
        return None
    tiers = sorted({t for o in objects if o.get("kind") == "HyperNode"
                    for t in [(o.get("spec") or {}).get("tier")] if isinstance(t, int)})
    now = nt.get("highestTierAllowed")
    options: list[dict[str, Any]] = [{"mode": "hard", "highestTierAllowed": t} for t in tiers
                                     if isinstance(now, int) and t > now][:2]
    options.append({"mode": "soft"})
    for opt in options:
        if not runner.left():
            break

        def loosen(o: dict[str, Any], opt: dict[str, Any] = opt) -> None:
            o.setdefault("spec", {})["networkTopology"] = dict(opt)

        if _works(runner.run(_changed(objects, [job.pg_index], loosen)), uid, pods):
            what = (f"highestTierAllowed {opt['highestTierAllowed']} (from {now})" if "highestTierAllowed" in opt
                    else "networkTopology mode soft (from hard)")
            return Fix("topology", True, what, {"networkTopology": opt})
    return None


def _fix_nodes(objects: list[dict[str, Any]], runner: _Runner, job: _Job, path: JobPath, out: Explanation,
               uid: str, pods: set[str]) -> Fix | None:
    """Nodes to add, each as large as the job's largest pod (at least), labelled and tainted like a node that
    refuses the pods only for resources (so the pods' selectors and tolerations hold), else labelled with the
    first pod's ``nodeSelector``."""
    if not path.tasks:
        return None
    need: dict[str, float] = {}
    for tp in path.tasks:
        for r, v in tp.request.items():
            need[r] = max(need.get(r, 0.0), v)
    if not need:
        return None
    template: dict[str, Any] | None = None
    for tp in path.tasks:
        for g in tp.refused:
            if all(plugin == RESOURCES for plugin, _ in g.reasons):
                template = next((o for o in objects if o.get("kind") == "Node"
                                 and (o.get("metadata") or {}).get("name") == g.nodes[0]), None)
                break
        if template is not None:
            break
    selector: dict[str, Any] = {}
    if template is None and job.pod_indices:
        sel = (objects[job.pod_indices[0]].get("spec") or {}).get("nodeSelector")
        selector = dict(sel) if isinstance(sel, dict) else {}
    resources = {r: _fmt(r, v) for r, v in need.items()}
    count = max(1, out.needed - out.placed) if out.placed else max(1, min(len(pods), out.needed))
    for _ in range(4):
        if not runner.left():
            break
        new = []
        for k in range(count):
            md: dict[str, Any] = {"name": f"explain-new-{k}"}
            spec: dict[str, Any] = {}
            if selector:
                md["labels"] = {**selector, "kubernetes.io/hostname": md["name"]}
            if template is not None:
                labels = dict((template.get("metadata") or {}).get("labels") or {})
                labels["kubernetes.io/hostname"] = md["name"]
                md["labels"] = labels
                if (template.get("spec") or {}).get("taints"):
                    spec["taints"] = copy.deepcopy(template["spec"]["taints"])
            new.append({"apiVersion": "v1", "kind": "Node", "metadata": md, "spec": spec,
                        "status": {"allocatable": {**resources, "pods": "110"},
                                   "capacity": {**resources, "pods": "110"}}})
        if _works(runner.run([*objects, *new]), uid, pods):
            shape = ", ".join(f"{v} {r}" for r, v in resources.items())
            what = "a node" if count == 1 else f"{count} nodes"
            named = ", ".join(f"{k}={v}" for k, v in selector.items())
            return Fix("nodes", True, f"add {what} with >= {shape}" + (f", labelled {named}" if named else ""),
                       {"count": count, "resources": resources, **({"labels": selector} if selector else {})})
        count = count * 2 if count < 64 else count
    return None


def _fix_preempt(objects: list[dict[str, Any]], runner: _Runner, base: SessionResult, out: Explanation, uid: str,
                 pods: set[str]) -> Fix | None:
    """What preempt and reclaim would take: the session again with both actions (after allocate) if the conf
    lacks one; the victims are the pods of other jobs it evicts while it places this one."""
    conf = runner.conf
    acts = list(conf.actions)
    if "preempt" in acts and "reclaim" in acts:
        res: SessionResult | None = base
    else:
        at = acts.index("allocate") + 1 if "allocate" in acts else len(acts)
        extra = [a for a in ("preempt", "reclaim") if a not in acts]
        conf = SchedulerConf(actions=[*acts[:at], *extra, *acts[at:]], tiers=conf.tiers,
                             configurations=conf.configurations)
        res = runner.run(objects, conf)
    if res is None:
        return None
    victims = sorted(e.task.uid for e in res.evictions if e.task.uid not in pods)
    out.victims = victims
    if not victims:
        return None
    ok = bool(_placed(res, pods))
    lacking = " and ".join(a for a in ("preempt", "reclaim") if a not in acts)
    added = "" if conf is runner.conf else f" (a conf with {lacking})"
    shown = ", ".join(v.split("/", 1)[1] for v in victims[:4]) + (f" and {len(victims) - 4} more" if len(victims) > 4
                                                                   else "")
    return Fix("preempt", ok, f"preempt{added}: evicts {len(victims)} pod(s): {shown}", {"victims": victims})


__all__ = ["Explanation", "Fix", "explain"]
