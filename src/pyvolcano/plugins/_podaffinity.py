"""Inter-pod affinity, topology spread and image locality: Kubernetes 1.36's plugins as Volcano calls them.

Volcano master (ed72c7c8) runs these Kubernetes scheduler plugins inside its own plugins:
``pkg/scheduler/plugins/predicates/predicates.go`` calls the ``InterPodAffinity`` and ``PodTopologySpread``
PreFilter/Filter (switches ``predicate.PodAffinityEnable`` and ``predicate.PodTopologySpreadEnable``, default
true), and ``pkg/scheduler/plugins/nodeorder/nodeorder.go`` adds the ``InterPodAffinity`` (``podaffinity.weight``,
default 2) and ``PodTopologySpread`` (``podtopologyspread.weight``, default 2) scores in its BatchNodeOrderFn, i.e.
normalised over the candidate nodes, and ``ImageLocality`` (``imagelocality.weight``, default 1) per node.  The
rules below follow Kubernetes' ``pkg/scheduler/framework/plugins/{interpodaffinity,podtopologyspread,
imagelocality}`` (filtering.go / scoring.go / image_locality.go).

Why it is built this way: those answers depend on where every other pod is, so they change whenever a pod is
placed, and a naive evaluation is O(pods x nodes) per pod.  Here every distinct label selector that some term or
constraint uses gets a per-node count of the matching placed pods (``_Counter``), kept up to date by the session's
allocate/deallocate event handlers (so a discarded Statement, which replays deallocations, restores them); a
topology domain's count is then one ``np.bincount`` over the nodes.  Pods carrying an anti-affinity (or preferred)
term are counted the same way per term (``holders``), which answers "existing pods' anti-affinity".  Because the
answers move with other pods' placements they are registered as *not template-safe* (evaluated fresh for each
pod, vectorised) and only when some pod of the session uses them.  Each check also has a per-node reference form
that recounts from ``NodeArrays.tasks`` node by node; the scalar engine uses it, and ``tests/test_engines.py``
checks that both agree exactly.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from pyvolcano.api.job_info import JobInfo, TaskInfo
from pyvolcano.api.node_info import NodeInfo
from pyvolcano.api.status import Status, reject_if
from pyvolcano.api.types import TaskStatus
from pyvolcano.framework.incremental.carry import carried
from pyvolcano.framework.points import PredicateFn
from pyvolcano.framework.scores import MAX_NODE_SCORE
from pyvolcano.framework.session import EventHandler
from pyvolcano.framework.state import StateKey
from pyvolcano.plugins._k8s import LABELS, LabelIndex, selector_mask, untolerated

if TYPE_CHECKING:
    from pyvolcano.framework.session import Session

HOSTNAME = "kubernetes.io/hostname"
MB = 1024 * 1024
MIN_IMAGE_THRESHOLD = 23 * MB
MAX_CONTAINER_THRESHOLD = 1000 * MB

# Kubernetes' reasons (interpodaffinity/filtering.go, podtopologyspread/filtering.go)
AFFINITY_REASON = "node(s) didn't match pod affinity rules"
ANTI_AFFINITY_REASON = "node(s) didn't match pod anti-affinity rules"
EXISTING_ANTI_REASON = "node(s) didn't satisfy existing pods anti-affinity rules"
SPREAD_REASON = "node(s) didn't match pod topology spread constraints"
SPREAD_LABEL_REASON = SPREAD_REASON + " (missing required label)"


# --- label selectors and terms --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Selector:
    """A metav1.LabelSelector as ``LabelSelectorAsSelector`` makes it: nil matches nothing, ``{}`` everything."""

    nothing: bool
    reqs: tuple[tuple[str, str, frozenset[str]], ...]

    @property
    def empty(self) -> bool:
        """labels.Selector.Empty(): no requirement (``{}``); countPodsMatchSelector counts nothing then."""
        return not self.nothing and not self.reqs

    def matches(self, labels: dict[str, str]) -> bool:
        if self.nothing:
            return False
        for key, op, values in self.reqs:
            v = labels.get(key)
            if op == "In":
                if v is None or v not in values:
                    return False
            elif op == "NotIn":
                if v is not None and v in values:
                    return False
            elif op == "Exists":
                if v is None:
                    return False
            elif op == "DoesNotExist":
                if v is not None:
                    return False
            else:  # an operator the API server would have refused
                return False
        return True


NOTHING = Selector(True, ())


def parse_selector(sel: Any, extra: dict[str, str] | None = None) -> Selector:
    """``extra``: labels merged in as ``key In (value)`` (matchLabelKeys of a spread constraint)."""
    if sel is None or not isinstance(sel, dict):
        if not extra:
            return NOTHING
        sel = {}
    reqs: list[tuple[str, str, frozenset[str]]] = []
    for k, v in sorted((sel.get("matchLabels") or {}).items()):
        reqs.append((str(k), "In", frozenset([str(v)])))
    for e in sel.get("matchExpressions") or []:
        e = e or {}
        reqs.append((str(e.get("key", "")), str(e.get("operator", "In")),
                     frozenset(str(v) for v in e.get("values") or [])))
    for k, v in sorted((extra or {}).items()):
        reqs.append((k, "In", frozenset([v])))
    return Selector(False, tuple(reqs))


@dataclass(frozen=True)
class Term:
    """A PodAffinityTerm resolved against its own pod (framework.AffinityTerm): the namespaces it looks in
    (``None`` = every namespace, from an empty namespaceSelector), its pod selector, topology key and weight."""

    namespaces: frozenset[str] | None
    ns_selector: Selector
    selector: Selector
    key: str
    weight: int = 1

    def matches(self, ns: str, labels: dict[str, str]) -> bool:
        """AffinityTerm.Matches.  Namespace labels are not in pyvolcano's snapshot: a non-empty
        namespaceSelector is matched against no labels (see docs/volcano-differences.md)."""
        if not (self.namespaces is None or ns in self.namespaces or self.ns_selector.matches({})):
            return False
        return self.selector.matches(labels)


def _term(own_ns: str, t: Any, weight: int = 1) -> Term:
    """framework.newAffinityTerm: namespaces default to the pod's own when neither list nor selector is set."""
    t = t if isinstance(t, dict) else {}
    names = frozenset(str(n) for n in t.get("namespaces") or [])
    nss = t.get("namespaceSelector")
    ns_sel = parse_selector(nss)
    if nss is not None and ns_sel.empty:
        namespaces: frozenset[str] | None = None
    elif not names and nss is None:
        namespaces = frozenset([own_ns])
    else:
        namespaces = names
    return Term(namespaces, ns_sel, parse_selector(t.get("labelSelector")), str(t.get("topologyKey") or ""),
                weight)


@dataclass(frozen=True)
class Spread:
    """One topologySpreadConstraint after ``filterTopologySpreadConstraints`` (matchLabelKeys merged)."""

    max_skew: int
    key: str
    selector: Selector
    min_domains: int
    affinity_honor: bool
    taints_honor: bool


@dataclass
class PodTerms:
    """What these plugins read of one pod, parsed once per session."""

    ns: str
    labels: dict[str, str]
    req_aff: tuple[Term, ...]
    req_anti: tuple[Term, ...]
    pref_aff: tuple[Term, ...]
    pref_anti: tuple[Term, ...]
    hard: tuple[Spread, ...]
    soft: tuple[Spread, ...]
    terminating: bool
    images: tuple[str, ...]

    @property
    def holds(self) -> bool:
        return bool(self.req_aff or self.req_anti or self.pref_aff or self.pref_anti)


def _int(v: Any, default: int) -> int:
    try:
        return int(v)
    except (TypeError, ValueError):
        return default


def parse_pod(task: TaskInfo) -> PodTerms:
    pod = task.pod or {}
    md = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    ns = task.namespace
    labels = {str(k): str(v) for k, v in (md.get("labels") or {}).items()}
    aff = spec.get("affinity") or {}
    pa = aff.get("podAffinity") or {}
    paa = aff.get("podAntiAffinity") or {}

    def req(block: dict[str, Any]) -> tuple[Term, ...]:
        return tuple(_term(ns, t) for t in block.get("requiredDuringSchedulingIgnoredDuringExecution") or [])

    def pref(block: dict[str, Any]) -> tuple[Term, ...]:
        return tuple(_term(ns, (w or {}).get("podAffinityTerm"), _int((w or {}).get("weight"), 0))
                     for w in block.get("preferredDuringSchedulingIgnoredDuringExecution") or [])

    hard: list[Spread] = []
    soft: list[Spread] = []
    for c in spec.get("topologySpreadConstraints") or []:
        c = c or {}
        extra = {k: labels[k] for k in c.get("matchLabelKeys") or [] if k in labels}
        s = Spread(_int(c.get("maxSkew"), 1), str(c.get("topologyKey") or ""),
                   parse_selector(c.get("labelSelector"), extra), _int(c.get("minDomains"), 1) or 1,
                   (c.get("nodeAffinityPolicy") or "Honor") == "Honor", c.get("nodeTaintsPolicy") == "Honor")
        (hard if (c.get("whenUnsatisfiable") or "DoNotSchedule") == "DoNotSchedule" else soft).append(s)
    images = tuple(_image_name(str((c or {}).get("image") or ""))
                   for part in ("initContainers", "containers") for c in spec.get(part) or [])
    return PodTerms(ns, labels, req(pa), req(paa), pref(pa), pref(paa), tuple(hard), tuple(soft),
                    bool(md.get("deletionTimestamp")), images)


def _image_name(name: str) -> str:
    """imagelocality.normalizedImageName: an image without a tag is ``:latest``."""
    return name + ":latest" if name.rfind(":") <= name.rfind("/") else name


# --- what is counted ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _TermMatch:
    terms: tuple[Term, ...]  # every term must match (one term for anti-affinity and scores)

    def matches(self, pt: PodTerms) -> bool:
        return all(t.matches(pt.ns, pt.labels) for t in self.terms)


@dataclass(frozen=True)
class _SpreadMatch:
    ns: str
    selector: Selector

    def matches(self, pt: PodTerms) -> bool:
        """countPodsMatchSelector: same namespace, not terminating, and nothing for an empty selector."""
        return (not self.selector.empty and not pt.terminating and pt.ns == self.ns
                and self.selector.matches(pt.labels))


def reserve_fails(task: TaskInfo) -> bool:
    """An allocate event that Volcano's predicates plugin does not apply to its Kubernetes node view: an eviction
    undone (a statement discarded) puts the pod back as Running or Bound, and the plugin's AllocateFunc first runs
    the Reserve plugins (``predicates.go: runReservePlugins``), whose state only PrePredicate writes -- never run
    for a pod that was already on its node -- so Reserve fails with "not found" and the handler returns before
    ``AddPodInfo``. The pod then stays out of pod affinity, spread and the nodeorder scores' view of the node for
    the rest of the session (Volcano looks wrong: docs/volcano-differences.md)."""
    return task.status in (TaskStatus.Running, TaskStatus.Bound)


def counted(task: TaskInfo) -> bool:
    """Whether a pod on a node is in Kubernetes' NodeInfo as Volcano keeps it: Volcano's predicates event
    handlers remove a pod evicted in this session (Releasing without a deletionTimestamp); a pod already
    terminating in the snapshot stays."""
    if task.status in (TaskStatus.Succeeded, TaskStatus.Failed, TaskStatus.Pending):
        return False
    return task.status != TaskStatus.Releasing or bool(((task.pod or {}).get("metadata") or {})
                                                       .get("deletionTimestamp"))


ROLES = ("req_anti", "pref_aff", "pref_anti")


def _constrained(job: JobInfo) -> bool:
    """Some pod of the job has pod-affinity terms or spread constraints (carried between sessions while the
    job is unchanged, ``framework/incremental/carry.py``)."""
    return any(t.uses_pod_constraints for t in job.tasks.values())


#: per node count, an array marking no node (read-only): ``PodAffinityState``'s open lists while no node is listed
_NO_NODES: dict[int, np.ndarray] = {}


def _no_nodes(n: int) -> np.ndarray:
    got = _NO_NODES.get(n)
    if got is None:
        got = _NO_NODES[n] = np.zeros(n, bool)
        got.flags.writeable = False
    return got


class PodAffinityState:
    """Per-session counts of placed pods, per node, for every selector in use (see module docstring)."""

    def __init__(self, ssn: Session) -> None:
        self.ssn = ssn
        self.nodes = ssn.nodes
        self.n = len(self.nodes)
        self.li: LabelIndex = ssn.state.read_or_init(LABELS, lambda: LabelIndex(ssn.nodes))
        self.terms: dict[str, PodTerms] = {}
        self.placed: dict[str, tuple[int, TaskInfo]] = {}
        #: pods an undone eviction left out of Volcano's Kubernetes node view (``reserve_fails``)
        self.hidden: set[str] = set()
        self.counters: dict[Any, np.ndarray] = {}
        self.holders: dict[tuple[str, Term], np.ndarray] = {}
        self.domains: dict[str, tuple[np.ndarray, int]] = {}
        self.node_affinity: dict[Any, np.ndarray] = {}
        self.active = False
        # Volcano's Kubernetes snapshot lists, once at session open, the nodes holding a pod with required
        # anti-affinity and the nodes holding a pod with any pod (anti-)affinity
        # (``plugins/util/k8s/snapshot.go: NewSnapshot``); its event handlers add pods to the nodes but never
        # to the lists, so only those nodes' pods are looked at for "existing pods' anti-affinity" and (for a
        # pod without preferred terms of its own) for existing pods' preferred terms.
        # (read-only: one shared array of no node while no node is listed, the usual session's)
        self.anti_open = self.aff_open = _no_nodes(self.n)
        # Which rules can matter this session: only pods with pod-affinity terms or spread constraints are
        # parsed here, found on the nodes the snapshot lists for them (``NodeArrays.constrained_at``, kept by
        # the cache), so a session without any costs next to nothing.
        on_nodes = []
        maps = self.nodes.tasks
        for i in self.nodes.special_nodes(self.nodes.constrained_at):
            for t in maps[i].values():
                if t.uses_pod_constraints and counted(t):
                    aff = ((t.pod.get("spec") or {}).get("affinity") or {})
                    if aff.get("podAffinity") is not None or aff.get("podAntiAffinity") is not None:
                        if not self.aff_open.flags.writeable:
                            self.aff_open = np.zeros(self.n, bool)
                        self.aff_open[i] = True
                    pt = self.parse(t)
                    if pt.req_anti:
                        if not self.anti_open.flags.writeable:
                            self.anti_open = np.zeros(self.n, bool)
                        self.anti_open[i] = True
                    on_nodes.append(pt)
        # the pending pods with such constraints: of the jobs the cache lists as having any
        # (``Snapshot.constrained_jobs``), else of every job (carried per job while it is unchanged)
        known = ssn.snapshot.constrained_jobs
        if known is None:
            carry = ssn.carry
            jobs = [j for j in ssn.jobs.values() if carried(j, "pod-constraints", j.version, _constrained, carry)]
        else:
            jobs = [ssn.jobs[uid] for uid in sorted(known) if uid in ssn.jobs]
        pending = [self.parse(t) for j in jobs for t in j.index.get(TaskStatus.Pending, {}).values()
                   if t.uses_pod_constraints]
        if not pending and not on_nodes:  # the usual session: no rule can matter
            self.any_terms = self.any_required = self.any_hard = self.any_soft = False
            return
        self.any_terms = any(pt.holds for pt in pending) or any(pt.holds for pt in on_nodes)
        self.any_required = any(pt.req_aff or pt.req_anti for pt in pending) or any(pt.req_anti for pt in on_nodes)
        self.any_hard = any(pt.hard for pt in pending)
        self.any_soft = any(pt.soft for pt in pending)

    def activate(self) -> None:
        """Start counting: every pod on a node now, then the session's allocate/deallocate events."""
        if self.active:
            return
        self.active = True
        for i, tasks in enumerate(self.nodes.tasks):
            for t in tasks.values():
                if counted(t):
                    self._add(t, i)
        self.ssn.add_event_handler(EventHandler(allocate=self._on_allocate, deallocate=self._on_deallocate))

    # --- bookkeeping ------------------------------------------------------------------------------------
    def parse(self, task: TaskInfo) -> PodTerms:
        pt = self.terms.get(task.uid)
        if pt is None:
            pt = self.terms[task.uid] = parse_pod(task)
        return pt

    def _add(self, task: TaskInfo, i: int) -> None:
        if task.uid in self.placed:
            return
        self.placed[task.uid] = (i, task)
        self._count(self.parse(task), i, 1)

    def _count(self, pt: PodTerms, i: int, sign: int) -> None:
        for m, arr in self.counters.items():
            if m.matches(pt):
                arr[i] += sign
        for role in ROLES:
            for t in getattr(pt, role):
                held = self.holders.get((role, t))
                if held is None:
                    held = self.holders[(role, t)] = np.zeros(self.n, np.int64)
                held[i] += sign

    def _on_allocate(self, task: TaskInfo) -> None:
        i = self.nodes.pos.get(task.node_name)
        if i is None or not counted(task):
            return
        if reserve_fails(task):
            self.hidden.add(task.uid)  # out of the view for the rest of the session (the reference forms too)
            return
        self._add(task, i)

    def _on_deallocate(self, task: TaskInfo) -> None:
        got = self.placed.pop(task.uid, None)
        if got is not None:
            self._count(self.parse(got[1]), got[0], -1)

    def counter(self, m: _TermMatch | _SpreadMatch) -> np.ndarray:
        arr = self.counters.get(m)
        if arr is None:
            arr = np.zeros(self.n, np.int64)
            for i, t in self.placed.values():
                if m.matches(self.parse(t)):
                    arr[i] += 1
            self.counters[m] = arr
        return arr

    def domain(self, key: str) -> tuple[np.ndarray, int]:
        """Per node, the index of its value of label ``key`` (-1 without the label), and how many values."""
        d = self.domains.get(key)
        if d is None:
            col = self.li.col(key)
            values: dict[str, int] = {}
            codes = np.fromiter((-1 if v is None else values.setdefault(v, len(values)) for v in col),
                                np.int64, self.n)
            d = self.domains[key] = (codes, len(values))
        return d

    def per_domain(self, counts: np.ndarray, key: str, mask: np.ndarray | None = None) -> np.ndarray:
        """Per node, the total of ``counts`` over the nodes of its topology domain (0 without the label);
        ``mask`` limits which nodes contribute."""
        codes, nd = self.domain(key)
        has = codes >= 0
        if mask is not None:
            has = has & mask
        tot = np.bincount(codes[has], weights=counts[has], minlength=nd)
        return np.where(codes >= 0, tot[np.maximum(codes, 0)], 0.0) if nd else np.zeros(self.n)

    # --- predicates (vector) ----------------------------------------------------------------------------
    def affinity_ok(self, task: TaskInfo, idx: np.ndarray) -> np.ndarray:
        """interpodaffinity satisfyPodAffinity: every term's domain holds a pod matching all the terms; or
        no such pod exists anywhere and the pod matches its own terms (the first pod of a group)."""
        pt = self.parse(task)
        if not pt.req_aff:
            return np.ones(len(idx), bool)
        c = self.counter(_TermMatch(pt.req_aff)).astype(float)
        has_all = np.ones(len(idx), bool)
        exist = np.ones(len(idx), bool)
        any_pair = False
        for t in pt.req_aff:
            codes, _ = self.domain(t.key)
            dom = self.per_domain(c, t.key)
            any_pair = any_pair or bool((c[codes >= 0] > 0).any())
            has_all &= codes[idx] >= 0
            exist &= dom[idx] > 0
        if not any_pair and _TermMatch(pt.req_aff).matches(pt):
            return has_all
        return has_all & exist

    def anti_ok(self, task: TaskInfo, idx: np.ndarray) -> np.ndarray:
        """satisfyPodAntiAffinity: no domain of a term holds a pod matching that term."""
        pt = self.parse(task)
        ok = np.ones(len(idx), bool)
        for t in pt.req_anti:
            ok &= self.per_domain(self.counter(_TermMatch((t,))).astype(float), t.key)[idx] == 0
        return ok

    def existing_anti_ok(self, task: TaskInfo, idx: np.ndarray) -> np.ndarray:
        """satisfyExistingPodsAntiAffinity: no placed pod whose required anti-affinity term matches this pod
        is in the node's domain of that term."""
        pt = self.parse(task)
        ok = np.ones(len(idx), bool)
        for (role, t), arr in self.holders.items():
            if role == "req_anti" and t.matches(pt.ns, pt.labels) and arr.any():
                ok &= self.per_domain(np.where(self.anti_open, arr, 0).astype(float), t.key)[idx] == 0
        return ok

    def _eligible(self, task: TaskInfo, pt: PodTerms, c: Spread, keys: tuple[str, ...]) -> np.ndarray:
        """Nodes whose pods count for a spread constraint: every constraint key present, and the node
        inclusion policies (MatchNodeInclusionPolicies: node affinity honoured, taints ignored by default)."""
        m = np.ones(self.n, bool)
        for k in keys:
            m &= self.domain(k)[0] >= 0
        if c.affinity_honor:
            na = self.node_affinity.get(task.template_key)
            if na is None:
                na = self.node_affinity[task.template_key] = selector_mask(self.li, task.pod, np.arange(self.n))
            m &= na
        if c.taints_honor:
            specs = self.nodes.specs
            for i in np.nonzero(m)[0].tolist():
                if specs[i].taints and untolerated(task.pod, specs[i].taints, ("NoSchedule", "NoExecute")):
                    m[i] = False
        return m

    def spread_labels_ok(self, task: TaskInfo, idx: np.ndarray) -> np.ndarray:
        ok = np.ones(len(idx), bool)
        for c in self.parse(task).hard:
            ok &= self.domain(c.key)[0][idx] >= 0
        return ok

    def spread_ok(self, task: TaskInfo, idx: np.ndarray) -> np.ndarray:
        """podtopologyspread Filter: matching pods in the node's domain + 1 if the pod matches itself - the
        smallest domain's count (0 when fewer than minDomains domains) must not exceed maxSkew.  Nodes
        without the key pass here (the label predicate rejects them)."""
        pt = self.parse(task)
        ok = np.ones(len(idx), bool)
        keys = tuple(c.key for c in pt.hard)
        for c in pt.hard:
            codes, nd = self.domain(c.key)
            elig = self._eligible(task, pt, c, keys)
            counts = self.counter(_SpreadMatch(pt.ns, c.selector)).astype(float)
            tot = np.bincount(codes[elig], weights=counts[elig], minlength=nd)
            present = np.zeros(nd, bool)
            present[codes[elig]] = True
            if not present.any():
                continue
            low = 0.0 if int(present.sum()) < c.min_domains else float(tot[present].min())
            me = 1 if c.selector.matches(pt.labels) else 0
            cd = codes[idx]
            skew = np.where(cd >= 0, tot[np.maximum(cd, 0)], 0.0) + me - low
            ok &= (cd < 0) | (skew <= c.max_skew)
        return ok

    # --- scores (vector raw forms; normalised over the candidates) -----------------------------------------
    def affinity_raw(self, task: TaskInfo, idx: np.ndarray) -> np.ndarray:
        """interpodaffinity PreScore+Score: per topology domain, + weight for each placed pod matching a
        preferred affinity term of the pod, - weight for its preferred anti-affinity terms, and the same for
        placed pods' preferred terms that match this pod.  Existing pods' required affinity terms would add
        HardPodAffinityWeight, which Volcano leaves at 0 (it passes an unset InterPodAffinityArgs)."""
        pt = self.parse(task)
        s = np.zeros(self.n)
        for t in pt.pref_aff:
            s += t.weight * self.per_domain(self.counter(_TermMatch((t,))).astype(float), t.key)
        for t in pt.pref_anti:
            s -= t.weight * self.per_domain(self.counter(_TermMatch((t,))).astype(float), t.key)
        own = bool(pt.pref_aff or pt.pref_anti)  # else Volcano looks only at the nodes listed at open
        for (role, t), arr in self.holders.items():
            if role != "req_anti" and t.weight and arr.any() and t.matches(pt.ns, pt.labels):
                sign = 1 if role == "pref_aff" else -1
                held = arr if own else np.where(self.aff_open, arr, 0)
                s += sign * t.weight * self.per_domain(held.astype(float), t.key)
        return s[idx]

    def spread_raw(self, task: TaskInfo, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """podtopologyspread PreScore+Score over the candidates ``idx``: (score, ignored).  A candidate
        without every key is ignored; other domains count only if some candidate is in them; the hostname
        key counts the node's own pods; each count is weighted by log(domains + 2), plus maxSkew - 1."""
        pt = self.parse(task)
        keys = tuple(c.key for c in pt.soft)
        ign = np.zeros(len(idx), bool)
        for k in keys:
            ign |= self.domain(k)[0][idx] < 0
        score = np.zeros(len(idx))
        kept = idx[~ign]
        for c in pt.soft:
            codes, nd = self.domain(c.key)
            counts = self.counter(_SpreadMatch(pt.ns, c.selector)).astype(float)
            if c.key == HOSTNAME:
                weight = math.log(len(kept) + 2)
                cnt = counts[idx]
            else:
                cand = np.zeros(nd, bool)
                cand[codes[kept]] = True
                weight = math.log(int(cand.sum()) + 2)
                elig = self._eligible(task, pt, c, keys)
                tot = np.bincount(codes[elig], weights=counts[elig], minlength=nd)
                cnt = np.where(codes[idx] >= 0, tot[np.maximum(codes[idx], 0)], 0.0)
            score += np.where(codes[idx] >= 0, cnt * weight + (c.max_skew - 1), 0.0)
        return np.floor(score + 0.5), ign  # Go's math.Round on non-negative values

    # --- image locality (static) ----------------------------------------------------------------------------
    def image_scores(self, images: tuple[str, ...]) -> np.ndarray:
        """imagelocality.Score for every node: the sizes of the pod's images present on the node, each scaled
        by the share of nodes that have it, clamped to [23 MB, 1000 MB x containers] and mapped to 0..100.

        "The share of nodes" is Volcano's: its cache (``scheduler/cache/event_handlers.go:
        addNodeImageStates``) copies an image's node count into a node's summary when that node is added, so
        a node counts only itself and the nodes added before it (and the size is the first node's)."""
        got = self._image_memo.get(images)
        if got is not None:
            return got
        total = np.zeros(self.n, np.int64)
        for name in images:
            for i, (size, num) in self._image_nodes.get(name, {}).items():
                total[i] += int(float(size) * (float(num) / float(self.n)))
        hi = MAX_CONTAINER_THRESHOLD * len(images)
        if hi <= MIN_IMAGE_THRESHOLD:
            out = np.zeros(self.n)
        else:
            clamped = np.minimum(np.maximum(total, MIN_IMAGE_THRESHOLD), hi)
            out = (MAX_NODE_SCORE * (clamped - MIN_IMAGE_THRESHOLD) // (hi - MIN_IMAGE_THRESHOLD)).astype(float)
        out.flags.writeable = False  # shared by later sessions on the same nodes
        if len(self._image_memo) >= _IMAGE_MEMO_MAX:  # kept while the nodes stay: bounded (a node row each)
            self._image_memo.clear()
        self._image_memo[images] = out
        return out

    def index_images(self) -> bool:
        """Node status.images by name: {name: {node index: (size, nodes counted)}}, nodes in the snapshot's
        order (see ``image_scores``).  True when any node lists any image.

        Both the index and the per-image-list scores depend on the node specs alone, so they are kept on the
        snapshot's static part (``NodeStatic.derived``), shared by every session until a Node changes (a changed
        Node makes a new static part), instead of checking the node set every session."""
        derived = self.nodes.static.derived
        self._image_memo: dict[tuple[str, ...], np.ndarray] = derived.setdefault("image-scores", {})
        index: dict[str, dict[int, tuple[int, int]]] | None = derived.get("images")
        if index is None:
            index = {}
            first: dict[str, tuple[int, int]] = {}  # name -> (size, nodes so far)
            for i, spec in enumerate(self.nodes.specs):
                for img in ((spec.manifest.get("status") or {}).get("images") or []):
                    img = img if isinstance(img, dict) else {}
                    for name in img.get("names") or []:
                        name = str(name)
                        per = index.setdefault(name, {})
                        if i in per:
                            continue
                        size, count = first.get(name, (_int(img.get("sizeBytes"), 0), 0))
                        first[name] = (size, count + 1)
                        per[i] = (size, count + 1)
            derived["images"] = index
        self._image_nodes = index
        return bool(index)


#: how many pods' image lists keep their image-locality scores per node set (``PodAffinityState.image_scores``)
_IMAGE_MEMO_MAX = 512

#: the session's pod-affinity state (shared by the filters and scores the predicates and nodeorder plugins register)
POD_AFFINITY: StateKey[PodAffinityState] = StateKey("podaffinity")
#: the per-node reference forms' maps, kept while no node changes (``_memo``)
REF_MEMO: StateKey[dict[Any, Any]] = StateKey("podaffinity_ref")


# --- per-node reference forms (the scalar engine) ------------------------------------------------------------
# These recount from ``NodeArrays.tasks`` with plain dicts, the way Kubernetes' PreFilter/PreScore build their
# maps (topology pair -> count), with no incremental state.  The maps are kept only while no node changes (the
# length of ``NodeArrays.log`` is the version), so one pod's pass over the nodes builds each map once.
def _memo(ssn: Session, key: Any, build: Any) -> Any:
    memo = ssn.state.read_or_init(REF_MEMO, dict)
    version = len(ssn.nodes.log)
    if memo.get("version") != version:
        memo.clear()
        memo["version"] = version
    if key not in memo:
        memo[key] = build()
    return memo[key]


def _pods_on(ssn: Session, i: int) -> list[PodTerms]:
    st = ssn.state.read(POD_AFFINITY)
    return [st.parse(t) for t in ssn.nodes.tasks[i].values() if counted(t) and t.uid not in st.hidden]


def _label(ssn: Session, i: int, key: str) -> str | None:
    return ssn.nodes.specs[i].labels.get(key)


def _pair_counts(ssn: Session, key: str, m: _TermMatch | _SpreadMatch,
                 eligible: Any = None) -> dict[str, int]:
    """{value of ``key``: pods matching ``m`` on the nodes with that value} (only nodes ``eligible(j)``)."""
    def build() -> dict[str, int]:
        out: dict[str, int] = {}
        for j in range(len(ssn.nodes)):
            v = _label(ssn, j, key)
            if v is None or (eligible is not None and not eligible(j)):
                continue
            out[v] = out.get(v, 0) + sum(1 for p in _pods_on(ssn, j) if m.matches(p))
        return out
    return dict(_memo(ssn, ("pairs", key, m, eligible is not None and eligible.key), build))


def ref_affinity(ssn: Session, task: TaskInfo, node: NodeInfo) -> str | None:
    st = ssn.state.read(POD_AFFINITY)
    pt = st.parse(task)
    if not pt.req_aff:
        return None
    allm = _TermMatch(pt.req_aff)
    counts = {t.key: _pair_counts(ssn, t.key, allm) for t in pt.req_aff}
    pairs = sum(1 for c in counts.values() for n in c.values() if n > 0)
    exist = True
    for t in pt.req_aff:
        v = _label(ssn, node.index, t.key)
        if v is None:
            return AFFINITY_REASON
        if counts[t.key].get(v, 0) <= 0:
            exist = False
    if exist or (pairs == 0 and allm.matches(pt)):
        return None
    return AFFINITY_REASON


def ref_anti(ssn: Session, task: TaskInfo, node: NodeInfo) -> str | None:
    pt: PodTerms = ssn.state.read(POD_AFFINITY).parse(task)
    for t in pt.req_anti:
        v = _label(ssn, node.index, t.key)
        if v is not None and _pair_counts(ssn, t.key, _TermMatch((t,))).get(v, 0) > 0:
            return ANTI_AFFINITY_REASON
    return None


def _anti_pairs(ssn: Session) -> list[tuple[Term, str]]:
    """(required anti-affinity term, its pod's node's value of the term's key) for every placed pod."""
    def build() -> list[tuple[Term, str]]:
        out = []
        st = ssn.state.read(POD_AFFINITY)
        for j in range(len(ssn.nodes)):
            if not st.anti_open[j]:
                continue
            for p in _pods_on(ssn, j):
                for t in p.req_anti:
                    v = _label(ssn, j, t.key)
                    if v is not None:
                        out.append((t, v))
        return out
    return list(_memo(ssn, "anti", build))


def ref_existing_anti(ssn: Session, task: TaskInfo, node: NodeInfo) -> str | None:
    pt: PodTerms = ssn.state.read(POD_AFFINITY).parse(task)
    for t, v in _anti_pairs(ssn):
        if _label(ssn, node.index, t.key) == v and t.matches(pt.ns, pt.labels):
            return EXISTING_ANTI_REASON
    return None


def ref_spread_labels(ssn: Session, task: TaskInfo, node: NodeInfo) -> str | None:
    pt: PodTerms = ssn.state.read(POD_AFFINITY).parse(task)
    return SPREAD_LABEL_REASON if any(_label(ssn, node.index, c.key) is None for c in pt.hard) else None


class _Eligible:
    """MatchNodeInclusionPolicies and "has every key" for one pod and constraint, node by node."""

    def __init__(self, ssn: Session, task: TaskInfo, c: Spread, keys: tuple[str, ...]) -> None:
        self.ssn, self.task, self.c, self.keys = ssn, task, c, keys
        self.key = (task.uid, c, keys)

    def __call__(self, j: int) -> bool:
        ssn, task, c = self.ssn, self.task, self.c
        st = ssn.state.read(POD_AFFINITY)
        if any(_label(ssn, j, k) is None for k in self.keys):
            return False
        if c.affinity_honor and not bool(selector_mask(st.li, task.pod, np.array([j]))[0]):
            return False
        taints = ssn.nodes.specs[j].taints
        return not (c.taints_honor and untolerated(task.pod, taints, ("NoSchedule", "NoExecute")))


def ref_spread(ssn: Session, task: TaskInfo, node: NodeInfo) -> str | None:
    pt: PodTerms = ssn.state.read(POD_AFFINITY).parse(task)
    keys = tuple(c.key for c in pt.hard)
    for c in pt.hard:
        v = _label(ssn, node.index, c.key)
        if v is None:
            continue
        per = _pair_counts(ssn, c.key, _SpreadMatch(pt.ns, c.selector), _Eligible(ssn, task, c, keys))
        if not per:
            continue
        low = 0 if len(per) < c.min_domains else min(per.values())
        me = 1 if c.selector.matches(pt.labels) else 0
        if per.get(v, 0) + me - low > c.max_skew:
            return SPREAD_REASON
    return None


def ref_affinity_raw(ssn: Session, task: TaskInfo, node: NodeInfo) -> float:
    """interpodaffinity: the topologyScore map (key -> value -> score) built from every placed pod, then the
    node's entries added up."""
    st = ssn.state.read(POD_AFFINITY)
    pt = st.parse(task)
    own = bool(pt.pref_aff or pt.pref_anti)

    def build() -> dict[str, dict[str, int]]:
        score: dict[str, dict[str, int]] = {}
        for j in range(len(ssn.nodes)):
            if not own and not st.aff_open[j]:
                continue
            for p in _pods_on(ssn, j):
                for terms, sign, target in ((pt.pref_aff, 1, p), (pt.pref_anti, -1, p),
                                            (p.pref_aff, 1, pt), (p.pref_anti, -1, pt)):
                    for t in terms:
                        v = _label(ssn, j, t.key)
                        if v is not None and t.matches(target.ns, target.labels):
                            per = score.setdefault(t.key, {})
                            per[v] = per.get(v, 0) + sign * t.weight
        return score
    topo: dict[str, dict[str, int]] = _memo(ssn, ("topology-score", task.uid), build)
    s = 0
    for key, per in topo.items():
        v = _label(ssn, node.index, key)
        if v is not None:
            s += per.get(v, 0)
    return float(s)


def ref_spread_raw(ssn: Session, task: TaskInfo, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """spread_raw recomputed node by node (the candidates are needed for the domains and the weights)."""
    pt: PodTerms = ssn.state.read(POD_AFFINITY).parse(task)
    keys = tuple(c.key for c in pt.soft)
    cands = [int(i) for i in idx]
    ign = np.array([any(_label(ssn, i, k) is None for k in keys) for i in cands], bool)
    kept = [i for i, g in zip(cands, ign, strict=True) if not g]
    out = np.zeros(len(cands))
    for c in pt.soft:
        m = _SpreadMatch(pt.ns, c.selector)
        values = {_label(ssn, i, c.key) for i in kept}
        weight = math.log((len(kept) if c.key == HOSTNAME else len(values)) + 2)
        per = {} if c.key == HOSTNAME else _pair_counts(ssn, c.key, m, _Eligible(ssn, task, c, keys))
        for pos, i in enumerate(cands):
            v = _label(ssn, i, c.key)
            if v is None:
                continue
            if c.key == HOSTNAME:
                cnt = sum(1 for p in _pods_on(ssn, i) if m.matches(p))
            else:
                cnt = per.get(v, 0) if v in values else 0
            out[pos] += cnt * weight + (c.max_skew - 1)
    return np.floor(out + 0.5), ign


# --- normalisation ---------------------------------------------------------------------------------------------
def normalize_affinity(raw: np.ndarray) -> np.ndarray:
    """interpodaffinity NormalizeScore: 100 * (s - min) / (max - min), truncated; 0 when all are equal."""
    if not len(raw):
        return raw
    lo, hi = float(raw.min()), float(raw.max())
    if hi - lo <= 0:
        return np.zeros(len(raw))
    return np.trunc(float(MAX_NODE_SCORE) * ((raw - lo) / (hi - lo)))


def normalize_spread(raw: np.ndarray, ignored: np.ndarray) -> np.ndarray:
    """podtopologyspread NormalizeScore: 100 * (max + min - s) / max in integers; 100 everywhere when the
    largest is 0; ignored nodes 0."""
    keep = ~ignored
    if not keep.any():
        return np.zeros(len(raw))
    r = raw[keep].astype(np.int64)
    lo, hi = int(r.min()), max(int(r.max()), 0)
    out = np.zeros(len(raw))
    out[keep] = MAX_NODE_SCORE if hi == 0 else (MAX_NODE_SCORE * (hi + lo - r)) // hi
    return out


# --- registration ------------------------------------------------------------------------------------------------
def state_of(ssn: Session) -> PodAffinityState:
    return ssn.state.read_or_init(POD_AFFINITY, lambda: PodAffinityState(ssn))


def _scalar(ref: Callable[[Session, TaskInfo, NodeInfo], str | None], ssn: Session, plugin: str) -> PredicateFn:
    """Volcano's per-node form of a reference check that returns its objection as text."""
    def fn(task: TaskInfo, node: NodeInfo) -> Status | None:
        return reject_if(ref(ssn, task, node), plugin)
    return fn


def register_predicates(ssn: Session, plugin: str, pod_affinity: bool, spread: bool) -> None:
    """predicates.go's InterPodAffinity and PodTopologySpread filters, in Volcano's order; registered only
    when some pod of the session has such a constraint (nothing else can be rejected by them)."""
    st = state_of(ssn)
    if (pod_affinity and st.any_required) or (spread and st.any_hard):
        st.activate()
    if pod_affinity and st.any_required:
        # Kubernetes' statuses (InterPodAffinity Filter): a required affinity term not met is
        # UnschedulableAndUnresolvable, an anti-affinity conflict (either side) Unschedulable, which preempt
        # may try to lift; all three read counts PreFilter computed when the pod's turn began
        ssn.add_predicate(plugin, vector=st.affinity_ok, scalar=_scalar(ref_affinity, ssn, plugin), template_safe=False,
                          reason=AFFINITY_REASON, prefilter=True)
        ssn.add_predicate(plugin, vector=st.anti_ok, scalar=_scalar(ref_anti, ssn, plugin), template_safe=False,
                          reason=ANTI_AFFINITY_REASON, resolvable=True, prefilter=True)
        ssn.add_predicate(plugin, vector=st.existing_anti_ok, scalar=_scalar(ref_existing_anti, ssn, plugin),
                          template_safe=False, reason=EXISTING_ANTI_REASON, resolvable=True, prefilter=True)
    if spread and st.any_hard:
        # PodTopologySpread Filter: a node without the topology label is UnschedulableAndUnresolvable, a skew
        # above maxSkew Unschedulable
        ssn.add_predicate(plugin, vector=st.spread_labels_ok, scalar=_scalar(ref_spread_labels, ssn, plugin),
                          template_safe=False, reason=SPREAD_LABEL_REASON)
        ssn.add_predicate(plugin, vector=st.spread_ok, scalar=_scalar(ref_spread, ssn, plugin), template_safe=False,
                          reason=SPREAD_REASON, resolvable=True, prefilter=True)


def register_scores(ssn: Session, plugin: str, pod_affinity_weight: float, spread_weight: float,
                    image_weight: float) -> None:
    """nodeorder.go's InterPodAffinity and PodTopologySpread batch scores (normalised over the candidate
    nodes, times the weight) and its ImageLocality node score."""
    st = state_of(ssn)
    engine = ssn.engine
    if (pod_affinity_weight and st.any_terms) or (spread_weight and st.any_soft):
        st.activate()
    if pod_affinity_weight and st.any_terms:
        def affinity_batch(task: TaskInfo, idx: np.ndarray) -> np.ndarray:
            if engine == "vector":
                raw = st.affinity_raw(task, idx)
            else:
                views = ssn.nodes.views
                raw = np.array([ref_affinity_raw(ssn, task, views[int(i)]) for i in idx])
            return pod_affinity_weight * normalize_affinity(raw)
        ssn.add_node_order(plugin, vector=affinity_batch, template_safe=False, batch=True)
    if spread_weight and st.any_soft:
        def spread_batch(task: TaskInfo, idx: np.ndarray) -> np.ndarray:
            if not st.parse(task).soft:
                return np.zeros(len(idx))
            raw, ign = st.spread_raw(task, idx) if engine == "vector" else ref_spread_raw(ssn, task, idx)
            return spread_weight * normalize_spread(raw, ign)
        ssn.add_node_order(plugin, vector=spread_batch, template_safe=False, batch=True)
    if image_weight and st.index_images():
        def images(task: TaskInfo) -> tuple[str, ...]:
            return st.parse(task).images

        def image_vec(task: TaskInfo, idx: np.ndarray) -> np.ndarray:
            return image_weight * st.image_scores(images(task))[idx]

        def image_one(task: TaskInfo, node: NodeInfo) -> float:
            return float(image_weight * st.image_scores(images(task))[node.index])
        ssn.selector.key_parts.append(images)
        ssn.add_node_order(plugin, vector=image_vec, scalar=image_one, static=True)
