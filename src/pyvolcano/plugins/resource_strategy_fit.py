"""resource-strategy-fit (``pkg/scheduler/plugins/resource-strategy-fit``): per-resource scoring strategies, scarce
resource avoidance (sra) and the proportional GPU filter.

**Strategies** (``resource_strategy_fit.go: Score``).  ``resources`` maps a resource name, or a prefix pattern
ending in a single ``*`` (``nvidia.com/*``; an exact name wins, then the longest prefix), to a ``type``
(``MostAllocated`` or ``LeastAllocated``; anything else means LeastAllocated) and a ``weight`` (0 or less means
1); without ``resources`` cpu and memory are LeastAllocated with weight 1.  For each resource the task requests
(at least 0.1 of it, ``pods`` included, as Volcano's ``Resource.ResourceNames``) that a pattern matches:
MostAllocated scores ``weight x (used + request) / allocatable``, LeastAllocated ``weight x (allocatable - used -
request) / allocatable``; a resource the node has none of scores 0, and a node where ``used + request`` would
exceed allocatable on any scored resource scores 0 outright.  The sum is divided by the weights and multiplied by
100 and ``resourceStrategyFitWeight``.  A pod may choose its own strategy with the annotations
``volcano.sh/resource-strategy-scoring-type`` (one type for all its resources) and
``volcano.sh/resource-strategy-weight`` (a JSON object of resource name to integer weight; only those resources
count); a pod with the first and without a valid second scores 0 everywhere, as in Volcano (which logs it).

**sra** (``sra.go: sraScore``), with ``sra.enable`` and a positive ``sra.weight``: a node that lacks (allocatable
0) any resource the task requests scores 0; otherwise ``1 - (sum of the weights of the listed scarce resources the
node has) / (sum of all their weights)``, times 100 and ``sra.weight``: tasks that need no GPU stay off GPU nodes.

**proportional** (``proportional.go: checkNodeResourceIsProportional``), with ``proportional.enable``: a task that
requests none of the listed resources may use a node only if, after it, the node's idle cpu and memory still cover
each listed resource's idle amount times ``resourceProportion`` (``<name>.cpu`` in cores, ``<name>.memory`` in GB
of 10^9 bytes, default 1 each); the reason is "proportional of resource <name> check failed".

Arguments are read with Volcano's names and defaults; a value Volcano's ``mapstructure`` decoding would refuse (and
Volcano would exit on) is a configuration error naming the plugin and the argument here.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from pyvolcano.api.job_info import TaskInfo
from pyvolcano.api.node_info import NodeArrays, NodeInfo
from pyvolcano.api.resource import CPU, EPS, MEMORY, ResourceIndex
from pyvolcano.api.status import Code, Status
from pyvolcano.api.types import RESOURCE_STRATEGY_TYPE, RESOURCE_STRATEGY_WEIGHT
from pyvolcano.errors import ConfigError
from pyvolcano.framework.arguments import Arguments
from pyvolcano.framework.incremental.contracts import NONE as NO_CONTRACTS
from pyvolcano.framework.incremental.contracts import Contract, Contracts
from pyvolcano.framework.plugin import Plugin
from pyvolcano.framework.registry import register_plugin
from pyvolcano.framework.session import Session

NAME = "resource-strategy-fit"
DEFAULT_WEIGHT = 10
MAX_NODE_SCORE = 100.0
MOST, LEAST = "MostAllocated", "LeastAllocated"
SCORING_TYPE = RESOURCE_STRATEGY_TYPE
SCORING_WEIGHT = RESOURCE_STRATEGY_WEIGHT


def _bad(key: str, value: Any, want: str) -> ConfigError:
    return ConfigError(f"plugin {NAME}: argument {key!r} = {value!r} is not {want}")


def _int(value: Any, key: str) -> int:
    """An integer as ``mapstructure`` decodes one (a float is truncated); numeric strings are taken too, as the
    other plugins' typed getters take them."""
    if isinstance(value, bool):
        raise _bad(key, value, "an integer")
    try:
        f = float(value)
    except (TypeError, ValueError):
        raise _bad(key, value, "an integer") from None
    if not math.isfinite(f):
        raise _bad(key, value, "an integer")
    return int(f)


def _float(value: Any, key: str) -> float:
    if isinstance(value, bool):
        raise _bad(key, value, "a number")
    try:
        f = float(value)
    except (TypeError, ValueError):
        raise _bad(key, value, "a number") from None
    if not math.isfinite(f):
        raise _bad(key, value, "a finite number")
    return f


def _bool(value: Any, key: str) -> bool:
    if isinstance(value, bool):
        return value
    if str(value).lower() in ("true", "false"):
        return str(value).lower() == "true"
    raise _bad(key, value, "a boolean")


def _map(value: Any, key: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise _bad(key, value, "a mapping")
    return value


def _str(value: Any, key: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise _bad(key, value, "a string")
    return value


def valid_pattern(name: str) -> bool:
    """``isValidWildcardPattern``: no ``*``, or one trailing ``*`` after a non-empty prefix."""
    if "*" not in name:
        return True
    return name != "*" and name.endswith("*") and name.count("*") == 1


@dataclass(frozen=True)
class Config:
    """The plugin's arguments as Volcano's ``New`` reads them."""

    weight: int
    #: resource name or ``prefix*`` -> (type, weight)
    resources: dict[str, tuple[str, int]]
    sra_weight: int
    #: scarce resource -> its weight
    sra_resources: dict[str, int]
    #: None: the proportional filter is off; else resource -> (cpu cores, memory GB) per unit
    proportional: dict[str, tuple[float, float]] | None

    @classmethod
    def of(cls, a: Arguments) -> Config:
        weight = _int(a["resourceStrategyFitWeight"], "resourceStrategyFitWeight") \
            if "resourceStrategyFitWeight" in a else DEFAULT_WEIGHT
        if weight < 0:
            weight = DEFAULT_WEIGHT
        raw = _map(a.get("resources"), "resources")
        resources: dict[str, tuple[str, int]] = {}
        for name, spec in raw.items():
            key = f"resources.{name}"
            spec = _map(spec, key)
            typ = _str(spec.get("type"), f"{key}.type")
            w = _int(spec["weight"], f"{key}.weight") if spec.get("weight") is not None else 0
            if not valid_pattern(str(name)):  # Volcano warns and drops the pattern
                continue
            resources[str(name)] = (typ if typ in (MOST, LEAST) else LEAST, w if w > 0 else 1)
        if not raw:
            resources = {CPU: (LEAST, 1), MEMORY: (LEAST, 1)}

        sra = _map(a.get("sra"), "sra")
        sra_weight, sra_resources = 0, {}
        if _bool(sra.get("enable", False), "sra.enable"):
            sra_weight = _int(sra["weight"], "sra.weight") if sra.get("weight") is not None else 0
            per = _map(sra.get("resourceWeight"), "sra.resourceWeight")
            for name in _str(sra.get("resources"), "sra.resources").split(","):
                name = name.strip()
                if not name:
                    continue
                w = _int(per[name], f"sra.resourceWeight.{name}") if name in per else 1
                sra_resources[name] = 1 if w < 0 else w

        prop = _map(a.get("proportional"), "proportional")
        proportional: dict[str, tuple[float, float]] | None = None
        if _bool(prop.get("enable", False), "proportional.enable"):
            rates = _map(prop.get("resourceProportion"), "proportional.resourceProportion")
            proportional = {}
            for name in _str(prop.get("resources"), "proportional.resources").split(","):
                name = name.strip()
                if not name:
                    continue
                got = []
                for dim in ("cpu", "memory"):
                    k = f"{name}.{dim}"
                    r = _float(rates[k], f"proportional.resourceProportion.{k}") if k in rates else 1.0
                    got.append(1.0 if r < 0 else r)
                proportional[name] = (got[0], got[1])
        return cls(weight, resources, sra_weight, sra_resources, proportional)

    def match(self, resource: str) -> tuple[str, int] | None:
        """``findResourceConfigWithPrefix``: the exact name, else the longest matching ``prefix*``."""
        got = self.resources.get(resource)
        if got is not None:
            return got
        best, best_len = None, -1
        for pattern, spec in self.resources.items():
            if pattern.endswith("*"):
                prefix = pattern[:-1]
                if resource.startswith(prefix) and len(prefix) > best_len:
                    best, best_len = spec, len(prefix)
        return best


#: a task's scoring plan: [(dim, type, weight)], or None: the task scores 0 on every node
Plan = list[tuple[int, str, int]] | None


def pod_strategy(pod: dict[str, Any]) -> tuple[str, str | None] | None:
    """The pod's own strategy annotations (type, weights text), None when it has no type annotation."""
    ann = (pod.get("metadata") or {}).get("annotations") or {}
    typ = ann.get(SCORING_TYPE)
    if not typ:
        return None
    w = ann.get(SCORING_WEIGHT)
    return str(typ), (str(w) if w else None)


def plan_of(task: TaskInfo, cfg: Config, res: ResourceIndex) -> Plan:
    requested = [d for d in range(res.size) if task.resreq[d] >= EPS]
    own = pod_strategy(task.pod)
    out: list[tuple[int, str, int]] = []
    if own is not None:
        typ, text = own
        if text is None:  # Volcano: "annotation ... is missing or empty", score 0
            return None
        try:
            weights = json.loads(text)
        except ValueError:
            return None
        if weights is None:
            weights = {}
        if not isinstance(weights, dict) or not all(
                isinstance(v, int) and not isinstance(v, bool) for v in weights.values()):
            return None  # Go's json.Unmarshal into map[ResourceName]int fails
        for d in requested:
            w = weights.get(res.names[d])
            if w is not None:
                out.append((d, typ, w))
        return out
    for d in requested:
        got = cfg.match(res.names[d])
        if got is not None:
            out.append((d, got[0], got[1]))
    return out


#: a template's strategy terms: ([(dim, MostAllocated?, weight, request)], sum of the plan's weights), or None: the
#: strategy scores 0 on every node
Terms = tuple[list[tuple[int, bool, int, float]], int] | None

#: ``NodeStatic.derived`` key of the plugin's per node set facts (``_Prepared``)
_PREPARED = "resource-strategy-fit"
#: templates whose terms and sra scores ``_Prepared`` keeps at most (then it starts again: a scheduler that
#: meets ever new templates must not grow without end)
TEMPLATES_KEPT = 4096


class _Prepared:
    """What the scores read besides the node's ``used`` row, worked out once per conf (``Arguments``), resource
    index and node set (allocatable), and kept in ``NodeStatic.derived``: per template its strategy terms and its
    sra scores on every node (sra reads only allocatable and which resources the task requests, so it is computed
    once per template for all nodes, and a node whose usage changed costs the strategy part alone).

    The score has a vector form (many nodes, NumPy) and a per-node form (the node selector's few changed nodes:
    ``framework/node_select.py: PER_NODE_MAX``) doing the *same float operations in the same order* on the same
    values, so the two agree to the last bit and a carried entry equals one computed afresh."""

    def __init__(self, arguments: Arguments, cfg: Config, res: ResourceIndex, alloc: np.ndarray) -> None:
        self.arguments, self.cfg, self.res, self.alloc = arguments, cfg, res, alloc
        self.safe = np.where(alloc != 0, alloc, 1.0)
        self.safe.flags.writeable = False
        #: allocatable per node as Python floats (the per-node form)
        self.rows: list[list[float]] = alloc.tolist()
        self.top = MAX_NODE_SCORE * cfg.weight
        self.sra_dims = [(res.pos[n], w) for n, w in cfg.sra_resources.items() if n in res.pos]
        self.sra_sum = sum(cfg.sra_resources.values())
        #: template key -> (strategy terms, sra scores of every node as an array and as a list, or None)
        self.templates: dict[Any, tuple[Terms, tuple[np.ndarray, list[float]] | None]] = {}
        #: requested resources -> sra scores of every node (templates asking for the same resources share them)
        self.sra_by_dims: dict[tuple[int, ...], tuple[np.ndarray, list[float]]] = {}
        # the scores read the node's allocatable and used rows and the task's request and strategy annotations
        # (its template): template-safe, and carried between sessions (``framework/node_select.py``,
        # ``ScoreReg.carry``)
        self.carry = (NAME, cfg.weight, tuple(sorted(cfg.resources.items())), cfg.sra_weight,
                      tuple(sorted(cfg.sra_resources.items())))

    def of(self, task: TaskInfo) -> tuple[Terms, tuple[np.ndarray, list[float]] | None]:
        """The template's strategy terms and sra scores (a pod's own strategy annotations are part of its
        template key: ``api/convert.py: constraints_key``)."""
        key = task.template_key
        got = self.templates.get(key)
        if got is None:
            if len(self.templates) >= TEMPLATES_KEPT:
                self.templates.clear()
            got = self.templates[key] = (self._terms(task) if self.cfg.weight > 0 else None,
                                         self._sra(task) if self.cfg.sra_weight > 0 else None)
        return got

    def _terms(self, task: TaskInfo) -> Terms:
        p = plan_of(task, self.cfg, self.res)
        if not p:
            return None
        wsum = 0
        terms = []
        for d, typ, w in p:
            wsum += w
            if typ in (MOST, LEAST) and w != 0:
                terms.append((d, typ == MOST, w, float(task.resreq[d])))
        return terms, wsum

    def _sra(self, task: TaskInfo) -> tuple[np.ndarray, list[float]]:
        """``sraScore`` on every node: 0 where the node lacks a resource the task requests, else ``1 - (weights of
        the scarce resources the node has) / (all their weights)``, times 100 and ``sra.weight``."""
        requested = tuple(np.nonzero(task.resreq >= EPS)[0].tolist())
        got = self.sra_by_dims.get(requested)
        if got is None:
            alloc = self.alloc
            ok = (alloc[:, list(requested)] != 0).all(axis=1)
            s = np.zeros(len(alloc))
            for d, w in self.sra_dims:
                s = s + np.where(alloc[:, d] > 0, float(w), 0.0)
            if self.sra_sum > 0:
                s = 1.0 - s / self.sra_sum
            out = np.where(ok, s * MAX_NODE_SCORE * self.cfg.sra_weight, 0.0)
            out.flags.writeable = False
            got = self.sra_by_dims[requested] = (out, out.tolist())
        return got

    def vector(self, nodes: NodeArrays) -> Callable[[TaskInfo, np.ndarray], np.ndarray]:
        alloc, safe, top = self.alloc, self.safe, self.top

        def score(task: TaskInfo, idx: np.ndarray) -> np.ndarray:
            terms, sra = self.of(task)
            out = np.zeros(len(idx))
            if self.cfg.weight > 0:
                if terms is None:
                    strategy = np.zeros(len(idx))
                else:
                    total, broken = np.zeros(len(idx)), np.zeros(len(idx), dtype=bool)
                    for d, most, w, r in terms[0]:
                        a = alloc[idx, d]
                        final = nodes.used[idx, d] + r
                        has = a != 0
                        broken |= has & (final > a)
                        per = (final if most else a - final) * w / safe[idx, d]
                        total = total + np.where(has, per, 0.0)
                    if terms[1] > 0:
                        total = total / terms[1]
                    strategy = np.where(broken, 0.0, total * top)
                out = out + strategy
            if sra is not None:
                out = out + sra[0][idx]
            return out
        return score

    def scalar(self, nodes: NodeArrays) -> Callable[[TaskInfo, NodeInfo], float]:
        rows, top = self.rows, self.top

        def score_one(task: TaskInfo, node: NodeInfo) -> float:
            terms, sra = self.of(task)
            i = node.index
            out = 0.0
            if self.cfg.weight > 0:
                if terms is None:
                    strategy = 0.0
                else:
                    alloc, used = rows[i], nodes.used[i].tolist()
                    total, broken = 0.0, False
                    for d, most, w, r in terms[0]:
                        a = alloc[d]
                        final = used[d] + r
                        if a != 0:
                            if final > a:
                                broken = True
                            total = total + (final if most else a - final) * w / a
                        else:
                            total = total + 0.0
                    if terms[1] > 0:
                        total = total / terms[1]
                    strategy = 0.0 if broken else total * top
                out = out + strategy
            if sra is not None:
                out = out + sra[1][i]
            return out
        return score_one


@register_plugin
class ResourceStrategyFit(Plugin):
    name = NAME
    # Scores only, which no memo rule reads (one pod fits somewhere or not; a gang is keyed on node usage), and
    # they read node allocatable and used and the pod: no time, nothing of other jobs.  The ``proportional``
    # filter is another matter: it refuses a node whose idle cpu/memory would not cover the node's *idle* GPUs
    # times a rate, so a node refused now passes once other pods take its GPUs -- a refusal that does not hold
    # while room only shrinks.  With it on, the plugin keeps no contract (``contracts_for``).
    contracts = frozenset({Contract.FINGERPRINTED})

    @classmethod
    def contracts_for(cls, arguments: Arguments) -> Contracts:
        try:
            proportional = arguments.derived(NAME, Config.of).proportional is not None
        except ConfigError:
            return NO_CONTRACTS  # the session reports the argument when the plugin reads it
        return NO_CONTRACTS if proportional else cls.contracts

    def on_session_open(self, ssn: Session) -> None:
        cfg = self.arguments.derived(NAME, Config.of)
        res, nodes = ssn.res, ssn.nodes
        if cfg.proportional is not None:
            self._proportional(ssn, cfg.proportional)
        if cfg.weight <= 0 and cfg.sra_weight <= 0:
            return
        # from the arguments, the resource index and the node set's allocatable alone: kept per node set
        # (``NodeStatic.derived``, as binpack's and nodeorder's facts), not rebuilt every session
        derived = nodes.static.derived
        prep = derived.get(_PREPARED)
        if prep is None or prep.arguments is not self.arguments or prep.res is not res \
                or prep.alloc is not nodes.allocatable:
            prep = derived[_PREPARED] = _Prepared(self.arguments, cfg, res, nodes.allocatable)
        ssn.add_node_order(self.name, vector=prep.vector(nodes), scalar=prep.scalar(nodes), carry=prep.carry)

    def _proportional(self, ssn: Session, rates: dict[str, tuple[float, float]]) -> None:
        res, nodes = ssn.res, ssn.nodes
        dims = sorted((res.pos[n], n, c, m) for n, (c, m) in rates.items() if n in res.pos)
        ci, mi = res.pos[CPU], res.pos[MEMORY]

        def failing(task: TaskInfo, idx: np.ndarray) -> list[tuple[str, np.ndarray]]:
            if any(task.resreq[d] > 0 for d, *_ in dims):
                return []
            idle = nodes.idle
            cpu_left = idle[idx, ci] - task.resreq[ci]
            mem_left = idle[idx, mi] - task.resreq[mi]
            out = []
            for d, name, c, m in dims:
                have = idle[idx, d]
                # Volcano asks only nodes whose idle lists the resource; a node without it reserves nothing
                listed = (nodes.allocatable[idx, d] != 0) | (have != 0)
                out.append((name, listed & ((cpu_left < have * c) | (mem_left < have * m * 1000 * 1000))))
            return out

        def vector(task: TaskInfo, idx: np.ndarray) -> np.ndarray:
            bad = np.zeros(len(idx), dtype=bool)
            for _, f in failing(task, idx):
                bad |= f
            return ~bad

        def scalar(task: TaskInfo, node: NodeInfo) -> Status | None:
            for name, f in failing(task, np.array([node.index])):
                if f[0]:
                    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                                  (f"proportional of resource {name} check failed",), self.name)
            return None
        # a function of the rates, the template and the node's idle row and allocatable: carried between sessions
        ssn.add_predicate(self.name, vector=vector, scalar=scalar,
                          carry=(NAME, "proportional", tuple(sorted(rates.items()))))
