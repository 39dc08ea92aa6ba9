"""Choosing a node for a task: vectorised predicates and scores, cached per pod template.

Predicates and node scores are registered by plugins in a vector form (all given nodes at once) and/or a
scalar form (one ``NodeInfo``, Volcano's signature), both declared with their points in ``framework/points.py``
(``PREDICATE``, ``NODE_ORDER``, ``BATCH_NODE_ORDER``), whose rules this module applies element-wise.
Registrations say whether they are *static* (depend only on the pod template and the node's labels/taints, so
computed once per session) and *template-safe* (the same for every pod of a template).  For template-safe ones,
each template keeps its masks and scores across the session and recomputes only the nodes listed in
``NodeArrays.log`` since it last looked: a cached argmax instead of a full re-evaluation per pod.  Anything not
template-safe is evaluated fresh each time.  When every template-safe registration declares a ``carry`` token,
the entries are also carried to later sessions over the same nodes and recomputed there only at the nodes whose
inputs changed (``_Carry``; docs/performance.md, "Node selection carried between sessions").
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, overload

import numpy as np

from pyvolcano.api.fit_errors import FitErrors, insufficient_reason
from pyvolcano.api.job_info import JobInfo, TaskInfo
from pyvolcano.api.node_info import NodeArrays, NodeInfo
from pyvolcano.api.resource import fit_floor
from pyvolcano.api.status import Code, Status
from pyvolcano.framework.points import (
    BATCH_NODE_ORDER,
    NODE_ORDER,
    PREDICATE,
    BatchScoreError,
    NodeOrderFn,
    PredicateFn,
    Rule,
    VectorPredicateFn,
    VectorScoreFn,
)
from pyvolcano.framework.scores import MAX_NODE_SCORE, default_normalize

if TYPE_CHECKING:
    from pyvolcano.framework.session import Session

# The selector combines filters by and-ing their masks and scores by adding their arrays: the rules the point
# table declares.  A change to the table that this module does not implement must not pass silently.
if PREDICATE.rule is not Rule.ALL_PASS or NODE_ORDER.rule is not Rule.SUM or BATCH_NODE_ORDER.rule is not Rule.SUM:
    raise ImportError("node_select combines predicates with ALL_PASS and node scores with SUM; points.py says "
                      f"{PREDICATE.rule.name}/{NODE_ORDER.rule.name}/{BATCH_NODE_ORDER.rule.name}")


@dataclass
class PredicateReg:
    plugin: str
    vector: VectorPredicateFn | None = None
    scalar: PredicateFn | None = None
    static: bool = False
    template_safe: bool = True
    #: the rejection's text when it is the same for every node (explain then counts nodes without asking each)
    reason: str | None = None
    #: a rejection Kubernetes calls Unschedulable (evicting pods may lift it: host ports, pod anti-affinity,
    #: spread skew), not UnschedulableAndUnresolvable; preempt and reclaim still try such nodes
    #: (``framework/session.go: PredicateForPreemptAction``)
    resolvable: bool = False
    #: judged from state Kubernetes' PreFilter computes when the task's turn begins (pod affinity, spread
    #: counts), which evictions made during that turn of preempt do not update
    prefilter: bool = False
    #: see ``ScoreReg.carry``
    carry: Hashable | None = None
    carry_task: Callable[[TaskInfo], bool] | None = None
    carry_rows: Callable[[], np.ndarray] | None = None

    def mask(self, ssn: Session, task: TaskInfo, idx: np.ndarray, engine: str) -> np.ndarray:
        if self.vector is not None and engine == "vector":
            return np.asarray(self.vector(task, idx), dtype=bool)
        if self.scalar is not None:
            return np.fromiter((passes(self.scalar, task, ssn.nodes.views[i]) for i in idx), bool, len(idx))
        return np.fromiter((bool(self.vector(task, np.array([i]))[0]) for i in idx), bool, len(idx))  # type: ignore[misc]

    def explain(self, ssn: Session, task: TaskInfo, i: int) -> tuple[str, ...]:
        """The reasons node ``i`` rejects the task for (empty: it passes); a rejection without reasons, or by a
        vector-only filter, reads "node(s) rejected by <plugin>"."""
        if self.scalar is not None:
            st = self.scalar(task, ssn.nodes.views[i])
            if st is None or st.code == Code.SUCCESS:
                return ()
            return st.reasons or (f"node(s) rejected by {self.plugin}",)
        ok = bool(self.vector(task, np.array([i]))[0])  # type: ignore[misc]
        return () if ok else (f"node(s) rejected by {self.plugin}",)


def passes(fn: PredicateFn, task: TaskInfo, node: NodeInfo) -> bool:
    """A scalar predicate passes when it returns None or a success (Volcano: a nil or successful Status)."""
    st: Status | None = fn(task, node)
    return st is None or st.code == Code.SUCCESS


@dataclass
class ScoreReg:
    """A node score.  With ``normalize`` set ("max" or "max-reverse") the callbacks give a *raw* score that is
    static and template-safe, and the score that counts is Kubernetes' ``DefaultNormalizeScore`` of it over the
    nodes being compared (the candidates of one decision), times ``weight``: what Volcano's nodeorder does for
    the NodeAffinity and TaintToleration scores (``nodescore.CalculatePluginScore``)."""

    plugin: str
    vector: VectorScoreFn | None = None
    scalar: NodeOrderFn | None = None
    static: bool = False
    template_safe: bool = True
    #: scores normalised over the nodes asked about together (Kubernetes' NormalizeScore, Volcano's
    #: BatchNodeOrderFn): ``vector`` is always called with all of them, whatever the engine (it picks its own
    #: reference form for the scalar engine)
    batch: bool = False
    normalize: str = ""
    weight: float = 1.0
    #: the registration's configuration (plugin arguments), for a template-safe registration whose answer for a
    #: pod template and a node depends on nothing but that configuration, the template, the node's static part
    #: (``NodeStatic``), the node's ``used``, ``idle`` and ``future`` rows and the rows of ``carry_rows()``: the
    #: node selector may then carry the template's cached results to later sessions, recomputing only the nodes
    #: whose rows changed (see ``_Carry``).  None (the default): never carried
    carry: Hashable | None = None
    #: False for the templates whose answer also reads something else (host ports read the node's pods): those
    #: are computed afresh in every session
    carry_task: Callable[[TaskInfo], bool] | None = None
    #: more per-node input (a nodes x k array, row i node i's): nodeorder's Kubernetes view of each node's
    #: requests.  Within a session it may change only at nodes in ``NodeArrays.log``
    carry_rows: Callable[[], np.ndarray] | None = None

    def scores(self, ssn: Session, task: TaskInfo, idx: np.ndarray, engine: str) -> np.ndarray:
        if self.vector is not None and (engine == "vector" or self.batch):
            return np.asarray(self.vector(task, idx), dtype=float)
        if self.scalar is not None:
            return np.fromiter((self.scalar(task, ssn.nodes.views[i]) for i in idx), float, len(idx))
        return np.fromiter((float(self.vector(task, np.array([i]))[0]) for i in idx), float, len(idx))  # type: ignore[misc]


class ScoreGroups(Mapping[float, Sequence[NodeInfo]]):
    """The candidates grouped by total score, for ``bestNode`` (Volcano's ``map[float64][]*NodeInfo``): a group's
    node views are made only when it is read, so a plugin that looks at the top group alone costs one pass of
    NumPy over the candidates, not a Python loop."""

    def __init__(self, nodes: NodeArrays, idx: np.ndarray, total: np.ndarray) -> None:
        self._nodes, self._idx = nodes, idx
        self._vals = total[idx]
        self._keys = [float(v) for v in np.unique(self._vals)]

    def __getitem__(self, score: float) -> Sequence[NodeInfo]:
        at = self._idx[self._vals == score]
        if not len(at):
            raise KeyError(score)
        return NodeGroup(self._nodes, at)

    def __iter__(self) -> Iterator[float]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)


class NodeGroup(Sequence[NodeInfo]):
    """Nodes of one score, in node order; ``positions`` are their indices (no view made)."""

    def __init__(self, nodes: NodeArrays, at: np.ndarray) -> None:
        self._nodes, self._at = nodes, at

    @property
    def positions(self) -> np.ndarray:
        return self._at

    def __len__(self) -> int:
        return len(self._at)

    @overload
    def __getitem__(self, k: int) -> NodeInfo: ...
    @overload
    def __getitem__(self, k: slice) -> Sequence[NodeInfo]: ...

    def __getitem__(self, k: int | slice) -> NodeInfo | Sequence[NodeInfo]:
        if isinstance(k, slice):
            return [self._nodes.views[int(i)] for i in self._at[k]]
        return self._nodes.views[int(self._at[k])]


#: change sets up to this many nodes are recomputed node by node (cheaper than NumPy's per-call cost).  Measured
#: under Volcano's default conf on 1,000 nodes (the race's first session, 5,000 one-pod groups of 16 templates,
#: which changes 2-20 nodes between two turns of a template): about 6 + 6 µs per node node by node, 135-150 µs
#: whatever the count through the vector forms; 8 (before) sent a fifth of those recomputations the slow way
PER_NODE_MAX = 16


@dataclass
class _Entry:
    """One pod template's cached view of every node.

    ``ok``/``score`` are the static and dynamic predicate/score results combined; ``key_idle`` and
    ``key_future`` hold the score where the node passes and fits the task's idle / future idle resources and
    ``-inf`` elsewhere, so the best node is one ``argmax``.  All are updated only at changed nodes."""

    static_mask: np.ndarray
    static_score: np.ndarray
    ok: np.ndarray
    score: np.ndarray
    fit_idle: np.ndarray
    fit_future: np.ndarray
    key_idle: np.ndarray
    key_future: np.ndarray
    pos: int = 0
    #: normalised scores whose raw values differ between nodes: (weight, reversed, raw score of every node);
    #: their share depends on which nodes compete, so such a template is scored per decision, not by the cached
    #: argmax.  (Not the registration itself: a carried entry must not keep its session alive.)
    norm: list[tuple[float, bool, np.ndarray]] = field(default_factory=list)
    #: the ``_Carry.sync`` the entry was last brought up to date in (0: not carried)
    sync: int = 0


#: carried entries kept per node set and registrations: about this many bytes of arrays at most
CARRY_BYTES = 32 << 20
#: the registrations' sets kept per node set (a conf reload, a session with other plugins' registrations)
CARRY_SETS = 4


class _Carry:
    """Per-template entries carried from session to session, for one node set (kept in ``NodeStatic.derived``,
    so a Node change starts afresh) and one set of registrations (``token``).

    A carried entry is exact for the nodes whose inputs did not change since it was last brought up to date;
    ``stamp[i]`` is the last ``sync`` at which node i's inputs may have changed, so an entry last updated at sync
    ``s`` recomputes ``stamp > s`` (and this session's ``NodeArrays.log``).  A sync happens once per session, at
    its first use of the cache, and marks:

    * every node the last synced session logged (``NodeArrays.log`` from its sync on): an entry may have read
      such a node before or after the change, so it is recomputed either way;
    * every node whose inputs now differ from the copies taken at the last sync (the cache applied binds, pods
      finished or arrived between sessions): ``used``, ``idle``, ``future`` and each registration's
      ``carry_rows``.  Nodes outside the log kept, within that session, the inputs copied at its sync, since a
      session logs every change it makes to them (what the per-session cache already relies on).

    Nothing is read from a session after it ends, so the scheme holds whether or not sessions share arrays."""

    def __init__(self, n: int) -> None:
        self.entries: dict[Any, _Entry] = {}
        self.stamp = np.zeros(n, dtype=np.int64)
        self.sync = 0
        self.owner: object | None = None
        self.log: list[int] | None = None
        self.start = 0
        #: the inputs at the last sync, flattened one after the other (``widths``: each one's columns)
        self.ref: np.ndarray | None = None
        self.spare: np.ndarray | None = None
        self.widths: list[int] = []
        #: the node of each position of ``ref``
        self.rows = np.zeros(0, dtype=np.intp)
        self.limit = max(16, CARRY_BYTES // max(1, 36 * n))

    def catch_up(self, inputs: list[np.ndarray], log: list[int], owner: object) -> None:
        """The sync: mark what changed since the last one (see the class docstring)."""
        n = len(self.stamp)
        widths = [a.shape[1] if a.ndim == 2 else 1 for a in inputs]
        size = n * sum(widths)
        ref, spare = self.ref, self.spare
        if spare is None or len(spare) != size:
            spare = np.empty(size)
        # one flat copy of every input (into the buffer the last sync but one used): one comparison over all of
        # them, and no row-wise reductions, which NumPy does slowly on rows this short
        cur = np.concatenate([a.ravel() for a in inputs], out=spare)
        if ref is None or len(ref) != size or self.widths != widths:
            self.rows = np.concatenate([np.repeat(np.arange(n), k) for k in widths])
            changed: np.ndarray | list[int] = self.rows
        else:
            changed = self.rows[np.flatnonzero(cur != ref)]
            last = self.log
            if last is not None:
                if self.start > len(last):  # emptied in place: nothing is known of what it held
                    changed = self.rows
                elif self.start < len(last):
                    changed = np.concatenate([changed, last[self.start:]])
        self.sync += 1
        if len(changed):
            self.stamp[changed] = self.sync
        self.ref, self.spare, self.widths = cur, ref, widths
        self.log, self.start, self.owner = log, len(log), owner

    def keep(self, key: Any, e: _Entry) -> None:
        """Carry ``e`` under ``key``; the least recently used entries go when there are too many."""
        entries = self.entries
        entries.pop(key, None)
        entries[key] = e
        while len(entries) > self.limit:
            del entries[next(iter(entries))]


class NodeSelector:
    """Per-session node choice with per-template caches (see module docstring)."""

    def __init__(self, ssn: Session, engine: str = "vector") -> None:
        self.ssn = ssn
        self.engine = engine
        self.entries: dict[Any, _Entry] = {}
        self.all_idx = np.arange(len(ssn.nodes))
        self.simple = False
        self.per_node = False
        #: more of the pod that a template-safe registration reads beyond ``template_key`` (container images
        #: for image locality): part of the cache key
        self.key_parts: list[Callable[[TaskInfo], Any]] = []
        #: when a dict (``run_session(record_ties=True)``): per task, every node that scored as well as the chosen
        #: one in its last decision.  Volcano picks one of them at random (``util.SelectBestNodeAndScore``);
        #: pyvolcano takes the lowest node index, so a differential test must accept any of them.
        self.ties: dict[str, list[int]] | None = None
        #: entries carried between sessions (``_Carry``), opened when this session first needs the cache
        #: (``_carry_open``); None when the session cannot carry
        self._carry: _Carry | None = None
        self._carry_open = False
        self._owner = object()

    def _record(self, task: TaskInfo, masked: np.ndarray, i: int) -> None:
        """Remember the nodes tied with ``i`` in ``masked`` (scores, -inf for non-candidates).  Scores are sums
        of whole numbers plus binpack's fraction, added in a different order than Volcano's, so "equal" allows
        for rounding."""
        if self.ties is not None:
            best = masked[i]
            self.ties[task.uid] = np.flatnonzero(np.abs(masked - best) <= 1e-9 * max(1.0, abs(best))).tolist()

    # registrations split once by kind (plain loops: this runs in every session, a comprehension is a call each)
    def _split(self) -> None:
        static_preds: list[PredicateReg] = []
        dyn_preds: list[PredicateReg] = []
        fresh_preds: list[PredicateReg] = []
        for p in self.ssn.predicates:
            (fresh_preds if not p.template_safe else static_preds if p.static else dyn_preds).append(p)
        norm_scores: list[ScoreReg] = []
        static_scores: list[ScoreReg] = []
        dyn_scores: list[ScoreReg] = []
        fresh_scores: list[ScoreReg] = []
        for s in self.ssn.scores:
            (norm_scores if s.normalize else fresh_scores if not s.template_safe else static_scores if s.static
             else dyn_scores).append(s)
        self.static_preds, self.dyn_preds, self.fresh_preds = static_preds, dyn_preds, fresh_preds
        self.norm_scores, self.static_scores, self.dyn_scores = norm_scores, static_scores, dyn_scores
        self.fresh_scores = fresh_scores
        # few changed nodes are recomputed through the per-node forms when every dynamic callback has one
        per_node = self.engine == "vector"
        if per_node:
            dyn: tuple[PredicateReg | ScoreReg, ...] = (*dyn_preds, *dyn_scores)
            for r in dyn:
                if r.scalar is None:
                    per_node = False
                    break
        self.per_node = per_node
        # nothing outside the cache takes part: the cached keys alone decide
        self.simple = not (fresh_preds or fresh_scores or self.ssn.batch_scores or self.ssn.has("bestNode"))
        carry_tasks: list[Callable[[TaskInfo], bool]] = []
        carry_rows: list[Callable[[], np.ndarray]] = []
        safe: tuple[PredicateReg | ScoreReg, ...] = (*static_preds, *dyn_preds, *static_scores, *dyn_scores,
                                                     *norm_scores)
        for r in safe:
            if r.carry_task is not None:
                carry_tasks.append(r.carry_task)
            if not r.static and r.carry_rows is not None:
                carry_rows.append(r.carry_rows)
        self.carry_tasks, self.carry_rows = carry_tasks, carry_rows

    def reset(self) -> None:
        self.entries.clear()
        self._carry = None
        self._carry_open = False
        self._owner = object()
        self._split()

    # --- entries carried between sessions ----------------------------------------------------------------
    def _carry_token(self) -> Hashable | None:
        """What the cached results depend on besides templates and nodes: every template-safe registration's
        ``carry`` token, in order (the order scores are added in).  None when one has none, when the session
        computes everything afresh (``--full-sessions``: ``Session.carry``), or when a registration adds to
        the cache key (``key_parts``)."""
        if self.engine != "vector" or self.key_parts or not getattr(self.ssn, "carry", False):
            return None
        parts: list[Hashable] = []
        for p in (*self.static_preds, *self.dyn_preds):
            if p.carry is None:
                return None
            parts.append(("p", p.plugin, p.static, p.carry))
        for sc in (*self.static_scores, *self.dyn_scores, *self.norm_scores):
            if sc.carry is None:
                return None
            parts.append(("s", sc.plugin, sc.static, sc.normalize, sc.weight, sc.carry))
        return tuple(parts)

    def _open_carry(self) -> _Carry | None:
        """This session's ``_Carry`` (synced), or None when it cannot carry."""
        token = self._carry_token()
        if token is None:
            return None
        nodes = self.ssn.nodes
        store: dict[Hashable, _Carry] = nodes.static.derived.setdefault("node-select-carry", {})
        carry = store.pop(token, None)
        if carry is None:
            carry = _Carry(len(nodes))
            while len(store) >= CARRY_SETS:
                del store[next(iter(store))]
        store[token] = carry
        carry.catch_up([nodes.used, nodes.idle, nodes.future, *(r() for r in self.carry_rows)], nodes.log,
                       self._owner)
        return carry

    def _adopt(self, carry: _Carry, e: _Entry, task: TaskInfo) -> None:
        """Bring a carried entry up to date: the nodes stamped since its sync and those this session logged."""
        log = self.ssn.nodes.log
        stale = carry.stamp > e.sync
        if carry.start < len(log):
            stale[log[carry.start:]] = True
        e.sync, e.pos = carry.sync, len(log)
        count = int(np.count_nonzero(stale))
        if count:
            self._compute(e, task, self.all_idx if count * 4 > len(stale) else np.flatnonzero(stale))

    # --- cached evaluation ---------------------------------------------------------------------------
    def _compute(self, e: _Entry, task: TaskInfo, idx: np.ndarray) -> None:
        if len(idx) <= PER_NODE_MAX and self.per_node:
            self._compute_per_node(e, task, idx)
            return
        ssn, eng = self.ssn, self.engine
        nodes = ssn.nodes
        m = e.static_mask[idx]
        for p in self.dyn_preds:
            m &= p.mask(ssn, task, idx, eng)
        if self.dyn_scores:
            dyn = self.dyn_scores[0].scores(ssn, task, idx, eng)
            for sc in self.dyn_scores[1:]:
                dyn = dyn + sc.scores(ssn, task, idx, eng)
            s = e.static_score[idx] + dyn
        else:
            s = e.static_score[idx]
        req = fit_floor(task.init_resreq)  # a resource fits when req < have + EPS (unnamed scalars: always)
        fi = (nodes.idle[idx] > req).all(axis=1)
        ff = (nodes.future[idx] > req).all(axis=1)
        e.ok[idx] = m
        e.score[idx] = s
        e.fit_idle[idx] = fi
        e.fit_future[idx] = ff
        e.key_idle[idx] = np.where(m & fi, s, -np.inf)
        e.key_future[idx] = np.where(m & ff, s, -np.inf)

    def _compute_per_node(self, e: _Entry, task: TaskInfo, idx: np.ndarray) -> None:
        """``_compute`` for a handful of nodes through the plugins' per-node forms, which do the same float
        operations as their vector forms: a few microseconds per node instead of a few per NumPy call."""
        ssn = self.ssn
        nodes, views = ssn.nodes, ssn.nodes.views
        req = fit_floor(task.init_resreq).tolist()
        for i in idx.tolist():
            view = views[i]
            ok = bool(e.static_mask[i])
            if ok:
                for p in self.dyn_preds:
                    if not passes(p.scalar, task, view):  # type: ignore[arg-type]
                        ok = False
                        break
            if self.dyn_scores:
                dyn = self.dyn_scores[0].scalar(task, view)  # type: ignore[misc]
                for sc in self.dyn_scores[1:]:
                    dyn = dyn + sc.scalar(task, view)  # type: ignore[misc]
                s = float(e.static_score[i]) + dyn
            else:
                s = float(e.static_score[i])
            fi = all(h > r for h, r in zip(nodes.idle[i].tolist(), req, strict=True))
            ff = all(h > r for h, r in zip(nodes.future[i].tolist(), req, strict=True))
            e.ok[i] = ok
            e.score[i] = s
            e.fit_idle[i] = fi
            e.fit_future[i] = ff
            e.key_idle[i] = s if ok and fi else -np.inf
            e.key_future[i] = s if ok and ff else -np.inf

    def entry(self, task: TaskInfo, job: JobInfo | None) -> _Entry:
        if self.engine != "vector":
            key: Any = None
        elif self.key_parts:
            key = (task.template_key, job.queue if job else "", *(f(task) for f in self.key_parts))
        else:
            key = (task.template_key, job.queue if job else "")
        carry = self._carry
        if carry is not None and carry.owner is not self._owner:
            # another session synced the carried entries since (two sessions used at once): they may have been
            # brought to its state, so this one computes its own from now on
            self.entries.clear()
            carry = self._carry = None
        e = self.entries.get(key) if key is not None else None
        nodes = self.ssn.nodes
        n = len(nodes)
        if e is None:
            keep: _Carry | None = None
            if key is not None:
                if not self._carry_open:
                    self._carry_open = True
                    carry = self._carry = self._open_carry()
                if carry is not None and all(f(task) for f in self.carry_tasks):
                    keep = carry
                    got = carry.entries.get(key)
                    if got is not None:
                        carry.keep(key, got)
                        self._adopt(carry, got, task)
                        self.entries[key] = got
                        return got
            ssn, eng, idx = self.ssn, self.engine, self.all_idx
            sm = np.ones(n, dtype=bool)
            for p in self.static_preds:
                sm &= p.mask(ssn, task, idx, eng)
            ss = np.zeros(n)
            for sc in self.static_scores:
                ss += sc.scores(ssn, task, idx, eng)
            norm: list[tuple[float, bool, np.ndarray]] = []
            for sc in self.norm_scores:
                raw = sc.scores(ssn, task, idx, eng)
                if n and raw.max() > 0:
                    norm.append((sc.weight, sc.normalize == "max-reverse", raw))
                elif sc.normalize == "max-reverse":  # every raw score 0: 100 everywhere, whichever nodes compete
                    ss += sc.weight * MAX_NODE_SCORE
            e = _Entry(sm, ss, np.ones(n, bool), np.zeros(n), np.zeros(n, bool), np.zeros(n, bool),
                       np.full(n, -np.inf), np.full(n, -np.inf), len(nodes.log), norm)
            self._compute(e, task, idx)
            if key is not None:
                self.entries[key] = e
                if keep is not None:
                    e.sync = keep.sync
                    keep.keep(key, e)
            return e
        log = nodes.log
        if e.pos < len(log):
            changed = log[e.pos:]
            e.pos = len(log)
            if len(changed) == 1:
                idx = np.array(changed)
            elif len(changed) * 4 > n:
                idx = self.all_idx
            else:  # distinct nodes, in any order (np.unique hashes and sorts: 5-10x slower on lists this short)
                idx = np.fromiter(set(changed), dtype=np.intp)
            self._compute(e, task, idx)
        return e

    def feasible(self, task: TaskInfo, job: JobInfo | None) -> tuple[_Entry, np.ndarray]:
        """(cache entry, mask of nodes passing every predicate, resources not considered)."""
        e = self.entry(task, job)
        mask = e.ok
        for p in self.fresh_preds:
            mask = mask & p.mask(self.ssn, task, self.all_idx, self.engine)
        return e, mask

    def preempt_candidates(self, task: TaskInfo, job: JobInfo | None) -> np.ndarray:
        """Mask of the nodes preempt and reclaim try: those whose predicate failures are all resolvable
        (``framework/session.go: PredicateForPreemptAction`` drops only UnschedulableAndUnresolvable ones;
        ``FilterOutUnschedulableAndUnresolvableNodesForTask``).  Nodes passing every predicate first (cached);
        only the others are asked again, without the resolvable predicates."""
        mask = self.feasible(task, job)[1].copy()
        hard = [p for p in (*self.static_preds, *self.dyn_preds, *self.fresh_preds) if not p.resolvable]
        if mask.all() or len(hard) == len(self.static_preds) + len(self.dyn_preds) + len(self.fresh_preds):
            return mask
        idx = np.nonzero(~mask)[0]
        ok = np.ones(len(idx), dtype=bool)
        for p in hard:
            if not ok.any():
                break
            ok &= p.mask(self.ssn, task, idx, self.engine)
        mask[idx[ok]] = True
        return mask

    def prefilter_mask(self, task: TaskInfo) -> np.ndarray:
        """Every node's verdict of the ``prefilter`` predicates now: what preempt keeps for the rest of the
        task's turn (Volcano runs PrePredicate once per ``preempt`` call)."""
        mask = np.ones(len(self.all_idx), dtype=bool)
        for p in (*self.static_preds, *self.dyn_preds, *self.fresh_preds):
            if p.prefilter:
                mask &= p.mask(self.ssn, task, self.all_idx, self.engine)
        return mask

    def passes_at(self, task: TaskInfo, job: JobInfo | None, i: int, *, skip_prefilter: bool = False) -> bool:
        """Does the task pass every predicate on node ``i`` as it is now?  Volcano's ``ssn.PredicateFn(task,
        node)`` for one node, which preempt asks again after each eviction (``preemptorFitsOnNode``,
        actions/preempt/preempt.go); resources are the caller's (future idle) check.  The vector engine reads
        the template's cached static and dynamic masks (refreshed at changed nodes) and asks only the
        predicates that are not template-safe; the scalar engine asks every predicate's per-node form."""
        idx = np.array([i])
        if self.engine == "vector":
            if not self.entry(task, job).ok[i]:
                return False
            preds: tuple[PredicateReg, ...] = tuple(self.fresh_preds)
        else:
            preds = (*self.static_preds, *self.dyn_preds, *self.fresh_preds)
        return all(bool(p.mask(self.ssn, task, idx, self.engine)[0]) for p in preds
                   if not (skip_prefilter and p.prefilter))

    def total_scores(self, task: TaskInfo, e: _Entry, cand: np.ndarray) -> np.ndarray:
        """Every node score for the candidate nodes ``cand`` (a mask); normalised scores are normalised over
        exactly those nodes, as Volcano's allocate scores one candidate gradient at a time."""
        total = e.score
        if self.fresh_scores or self.ssn.batch_scores or e.norm:
            idx = np.nonzero(cand)[0]
            extra = np.zeros(len(idx))
            for weight, reverse, raw in e.norm:
                extra += weight * default_normalize(raw[idx], reverse)
            for sc in self.fresh_scores:
                extra += sc.scores(self.ssn, task, idx, self.engine)
            if self.ssn.batch_scores:  # Volcano-style batch functions take the candidates' node views
                views = [self.ssn.nodes.views[i] for i in idx]
                for fn in self.ssn.batch_scores:
                    got = fn(task, views) or {}
                    extra += np.array([float(got.get(v.name, 0.0)) for v in views])
            total = total.copy()
            total[idx] += extra
        return total

    def select(self, task: TaskInfo, job: JobInfo | None,
               within: np.ndarray | None = None) -> tuple[int | None, bool]:
        """Best node for ``task``: (index, fits idle now) or (None, False) when no node can take it.

        Nodes whose idle resources fit come first (Allocate); otherwise nodes whose future idle fits
        (Pipeline), as Volcano's allocate does with its two candidate gradients.  Ties go to the lowest node
        index (the snapshot's node order), where Volcano picks one of the best at random; see ``ties``.
        ``within`` (a node mask): only these nodes are candidates (a hypernode's, in topology-aware allocate)."""
        if not len(self.all_idx):
            return None, False
        if self.simple:
            e = self.entry(task, job)
            if not e.norm:
                keys = (e.key_idle, e.key_future) if within is None else (
                    np.where(within, e.key_idle, -np.inf), np.where(within, e.key_future, -np.inf))
                for key, now in zip(keys, (True, False), strict=True):
                    i = int(key.argmax())
                    if key[i] > -np.inf:
                        self._record(task, key, i)
                        return i, now
                if not (e.ok & e.fit_future if within is None else e.ok & e.fit_future & within).any():
                    return None, False  # only a node scoring -inf could still be a candidate
        e, feas = self.feasible(task, job)
        if within is not None:
            feas = feas & within
        for cand, now in ((feas & e.fit_idle, True), (feas & e.fit_future, False)):
            best = self.pick(task, e, cand)
            if best is not None:
                return best, now
        return None, False

    def select_resolvable(self, task: TaskInfo, job: JobInfo | None, within: np.ndarray | None) -> int | None:
        """The node a dry run of gangpreempt/gangreclaim pipelines ``task`` to (Volcano's
        ``runSimulateTrialAtHyperNode`` with ``simulatePredicate`` and ``prioritizeNodesForSimulate``,
        actions/utils/simulate.go): among the nodes (of ``within``) whose predicate failures are all resolvable
        and whose future idle fits the task, those whose idle fits first, else the rest, best score first."""
        cand = self.preempt_candidates(task, job)
        if within is not None:
            cand &= within
        e = self.entry(task, job)
        cand &= e.fit_future  # simulatePredicate: a node's idle does not shrink by pipelined tasks, its future idle does
        for group in (cand & e.fit_idle, cand):
            best = self.pick(task, e, group)
            if best is not None:
                return best
        return None

    def pick(self, task: TaskInfo, e: _Entry, cand: np.ndarray) -> int | None:
        """The best-scored node among the candidates ``cand`` (a mask), None when there is none: a single
        candidate is taken unscored, else a plugin's bestNode or the top total score (lowest index on ties), as
        Volcano's allocate and backfill do (``PrioritizeNodes``, ``BestNodeFn``, ``SelectBestNodeAndScore``)."""
        count = int(np.count_nonzero(cand))
        if count == 0:
            return None
        if count == 1:
            i = int(np.argmax(cand))
            if self.ties is not None:
                self.ties[task.uid] = [i]
            return i
        try:
            total = self.total_scores(task, e, cand)
        except BatchScoreError:  # PrioritizeNodes returns no scores: no best node among these candidates
            return None
        best = self.ssn.best_node(task, cand, total)
        if best is not None:
            if self.ties is not None:
                self.ties[task.uid] = [best]
            return best
        masked = np.where(cand, total, -np.inf)
        i = int(np.argmax(masked))
        i = i if cand[i] else int(np.argmax(cand))
        self._record(task, masked, i)
        return i

    def explain(self, task: TaskInfo, job: JobInfo | None, within: np.ndarray | None = None) -> FitErrors:
        """Why no node fits, Volcano's order: resources against future idle first, then each predicate.

        Like Volcano's allocate, a node short of resources is counted once, under the first resource it
        lacks (cpu, memory, extended resources, then the pod count, which Volcano checks as a predicate)."""
        nodes = self.ssn.nodes
        fe = FitErrors(len(nodes) if within is None else int(np.count_nonzero(within)))
        names = self.ssn.res.names
        order = [d for d in range(len(names)) if d != 2] + [2]  # position 2 is the pod count
        lack = ~(nodes.future_idle() > fit_floor(task.init_resreq))[:, order]
        res_fail = lack.any(axis=1)
        if within is not None:  # only these nodes are asked about: the others neither fail nor pass
            res_fail &= within
        first = np.argmax(lack, axis=1)
        for j in np.unique(first[res_fail]):
            fe.add(insufficient_reason(names[order[j]]), int(np.count_nonzero(res_fail & (first == j))))
        # Each node is charged to the first predicate it fails.  The predicates' masks find those nodes at once;
        # only they are asked for the reason's text (a taint's key, say), node by node.
        left = np.nonzero(~res_fail if within is None else ~res_fail & within)[0]
        for p in self.static_preds + self.dyn_preds + self.fresh_preds:
            if not len(left):
                break
            ok = p.mask(self.ssn, task, left, self.engine)
            if p.reason is not None:
                if not ok.all():
                    fe.add(p.reason, int(np.count_nonzero(~ok)))
            else:
                for i in left[~ok].tolist():
                    for reason in p.explain(self.ssn, task, i) or (f"node(s) rejected by {p.plugin}",):
                        fe.add(reason)
            left = left[ok]
        return fe
