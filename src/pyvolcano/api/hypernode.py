"""HyperNodes (``topology.volcano.sh/v1alpha1``) and the network topology they describe.

A HyperNode is a network performance domain (a leaf switch, a spine, a NVLink domain): ``spec.tier`` (0 is the
closest), an optional ``tierName``, and ``members`` that are either real Nodes (by exact name, a regular expression
on node names, or a label selector) or other HyperNodes (by exact name).  Network topology-aware scheduling places a
gang under as low a HyperNode as possible.

Two pieces live here, both pure data (no session, no plugin):

* :func:`parse_hypernode`: the validated boundary for a HyperNode object, with the rules of Volcano's CRD
  (``config/crd/volcano/bases/topology.volcano.sh_hypernodes.yaml``) and its admission policy
  (``installer/helm/chart/volcano/policy/hypernodes-validating.yaml``): tier >= 0, at least one member, each
  member with exactly one selector, HyperNode members by exact name only, regular expressions that compile.
* :class:`Topology`: the tree built from every HyperNode and the session's nodes, as Volcano's scheduler cache builds
  it (``pkg/scheduler/api/hyper_node_info.go: BuildHyperNodeCache``, ``addChild``) plus the virtual cluster-top
  HyperNode the session adds above every root (``framework/session.go: addClusterTopHyperNode``).  Membership is a
  boolean (hypernodes x nodes) NumPy matrix in the session's node order, so "what is free under every hypernode" is
  one matrix product over the node arrays, never a per-node loop.

Volcano's rules kept here: a member selector matches as ``pkg/util/hypernode/member_selector.go: GetMembers`` does
(an exact name counts even before the node exists and is dropped when the session's node list lacks it; a regex is
an unanchored search on node names; an empty label selector matches nothing); a HyperNode member that does not
exist yet is skipped; a HyperNode claimed as a member by two parents, or a cycle, makes the topology not ready
(``HyperNodesInfo.Ready`` false), and jobs with a topology constraint then wait; the virtual top's tier is one more
than the highest real tier (1 when there are no HyperNodes) and it holds every node.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from pyvolcano.api.labels import selector_matches
from pyvolcano.api.models import _integer, validate_model
from pyvolcano.api.regex import compile_input
from pyvolcano.errors import ManifestError

#: the virtual HyperNode above every root (Volcano's ``framework.ClusterTopHyperNode``)
CLUSTER_TOP = "<cluster-top-hypernode>"

_DNS1123 = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
_Strict = ConfigDict(extra="ignore", populate_by_name=True)


class ExactMatch(BaseModel):
    model_config = _Strict
    name: Annotated[str, Field(min_length=1, max_length=253, pattern=_DNS1123)]


class RegexMatch(BaseModel):
    model_config = _Strict
    pattern: Annotated[str, Field(min_length=1, max_length=1024)]

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, v: str) -> str:
        """The pattern compiles with RE2, as Go's ``regexp.Compile`` in Volcano's ``GetMembers`` (``api/regex.py``:
        linear-time matching; a backtracking-only pattern is refused)."""
        compile_input(v)
        return v


class LabelRequirement(BaseModel):
    model_config = _Strict
    key: Annotated[str, Field(min_length=1, max_length=316)]
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    values: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _values(self) -> LabelRequirement:
        if self.operator in ("In", "NotIn") and not self.values:
            raise ValueError(f"operator {self.operator} needs values")
        if self.operator in ("Exists", "DoesNotExist") and self.values:
            raise ValueError(f"operator {self.operator} takes no values")
        return self


class LabelMatch(BaseModel):
    model_config = _Strict
    matchLabels: dict[str, str] = Field(default_factory=dict)
    matchExpressions: list[LabelRequirement] = Field(default_factory=list)


class MemberSelector(BaseModel):
    model_config = _Strict
    exactMatch: ExactMatch | None = None
    regexMatch: RegexMatch | None = None
    labelMatch: LabelMatch | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> MemberSelector:
        n = sum(x is not None for x in (self.exactMatch, self.regexMatch, self.labelMatch))
        if n != 1:
            raise ValueError("a member selector needs exactly one of exactMatch, regexMatch, labelMatch")
        return self


class Member(BaseModel):
    model_config = _Strict
    type: Literal["Node", "HyperNode"]
    selector: MemberSelector

    @model_validator(mode="after")
    def _hypernode_by_name(self) -> Member:
        if self.type == "HyperNode" and self.selector.exactMatch is None:
            raise ValueError("a HyperNode member is selected by exactMatch only")
        return self


class HyperNodeSpec(BaseModel):
    model_config = _Strict
    #: an integer (``true`` is not 1, ``1.5`` is not 1): ``_integer`` refuses what Python would convert
    tier: Annotated[int, _integer(0, 1_000)]
    tierName: Annotated[str | None, Field(max_length=253)] = None
    members: Annotated[list[Member], Field(min_length=1, max_length=100_000)]


@dataclass(frozen=True)
class HyperNode:
    """A validated HyperNode: its name and spec."""

    name: str
    spec: HyperNodeSpec

    @property
    def tier(self) -> int:
        return self.spec.tier


def parse_hypernode(obj: Mapping[str, Any]) -> HyperNode:
    """The HyperNode in a manifest; a malformed one is a ManifestError naming it and the field."""
    md = obj.get("metadata")
    name = md.get("name") if isinstance(md, Mapping) else None
    ref = f"HyperNode {name}" if isinstance(name, str) and name else "HyperNode (unnamed)"
    if not isinstance(name, str) or not re.fullmatch(_DNS1123, name) or len(name) > 253:
        raise ManifestError(ref, "metadata.name", "a DNS-1123 subdomain name is required")
    spec: HyperNodeSpec = validate_model(HyperNodeSpec, obj.get("spec"), ref, "spec")
    return HyperNode(name, spec)


@dataclass(frozen=True)
class NetworkTopology:
    """A PodGroup's (or sub-group's) ``networkTopology`` (``scheduling.volcano.sh/v1beta1 NetworkTopologySpec``):
    ``mode`` hard ("never above the tier") or soft ("as close as possible"), and the highest tier allowed, as a
    number or as a HyperNode ``tierName`` (never both: ``api/models.py`` refuses that at the boundary)."""

    mode: str = "hard"
    highest_tier: int | None = None
    tier_name: str | None = None

    @classmethod
    def of(cls, spec: Mapping[str, Any] | None) -> NetworkTopology | None:
        """From a validated manifest's ``spec.networkTopology`` (None when absent).  ``mode`` defaults to hard,
        as the CRD's default does."""
        if spec is None:
            return None
        tier = spec.get("highestTierAllowed")
        return cls(str(spec.get("mode") or "hard"), None if tier is None else int(tier),
                   spec.get("highestTierName") or None)


@dataclass
class Topology:
    """The HyperNode tree over the session's nodes (index ``len(names) - 1`` is the virtual cluster top).

    ``members[h, n]`` is True when node ``n`` (the session's node order) is under hypernode ``h``."""

    names: list[str]
    tier: np.ndarray
    tier_name: list[str | None]
    parent: np.ndarray
    children: list[list[int]]
    members: np.ndarray
    ready: bool = True
    problems: list[str] = field(default_factory=list)
    _tiers: list[int] | None = field(default=None, init=False, repr=False, compare=False)

    # ---------------------------------------------------------------------------------------------- building
    @classmethod
    def build(cls, hypernodes: Sequence[HyperNode], node_names: Sequence[str],
              node_labels: Sequence[Mapping[str, str]]) -> Topology:
        """The tree of ``hypernodes`` over these nodes; problems (cycles, two parents) make it not ready."""
        by_name = {h.name: h for h in hypernodes}
        names = sorted(by_name)
        index = {n: i for i, n in enumerate(names)}
        node_index = {n: i for i, n in enumerate(node_names)}
        n_nodes, n_hn = len(node_names), len(names)
        own = np.zeros((n_hn + 1, n_nodes), dtype=bool)
        parent = np.full(n_hn + 1, -1, dtype=np.int64)
        kids: list[list[int]] = [[] for _ in range(n_hn + 1)]
        problems: list[str] = []
        for i, name in enumerate(names):
            for m in by_name[name].spec.members:
                sel = m.selector
                if m.type == "HyperNode":
                    child = sel.exactMatch.name if sel.exactMatch else ""
                    if child not in index:  # not created (or not watched) yet: Volcano skips it
                        continue
                    c = index[child]
                    if parent[c] >= 0 and parent[c] != i:
                        problems.append(f"HyperNode {child} is a member of both {names[parent[c]]} and {name}")
                        continue
                    if parent[c] != i:
                        parent[c] = i
                        kids[i].append(c)
                elif sel.exactMatch is not None:
                    j = node_index.get(sel.exactMatch.name)
                    if j is not None:
                        own[i, j] = True
                elif sel.regexMatch is not None:
                    rx = compile_input(sel.regexMatch.pattern)
                    own[i] |= np.fromiter((rx.search(n) is not None for n in node_names), bool, n_nodes)
                elif sel.labelMatch is not None:
                    lm = sel.labelMatch.model_dump()
                    own[i] |= np.fromiter((selector_matches(lm, dict(lb)) for lb in node_labels), bool, n_nodes)
        members, cyclic = _close(own[:n_hn], parent[:n_hn], kids[:n_hn])
        problems += [f"HyperNode {names[i]} is its own ancestor (a cycle of members)" for i in cyclic]
        top = n_hn
        tiers = np.array([by_name[n].tier for n in names] + [0], dtype=np.int64)
        tiers[top] = int(tiers[:n_hn].max()) + 1 if n_hn else 1
        for i in range(n_hn):
            if parent[i] < 0:
                parent[i] = top
                kids[top].append(i)
        all_members = np.vstack([members, np.ones((1, n_nodes), dtype=bool)])
        return cls([*names, CLUSTER_TOP], tiers, [*(by_name[n].spec.tierName for n in names), None], parent, kids,
                   all_members, ready=not problems, problems=problems)

    # ---------------------------------------------------------------------------------------------- queries
    @property
    def top(self) -> int:
        return len(self.names) - 1

    def idx(self, name: str) -> int:
        return self.names.index(name)

    def tier_names(self) -> dict[str, int]:
        """tierName -> tier (Volcano's HyperNodeTierNameMap: the last one seen wins on a conflict)."""
        return {n: int(t) for n, t in zip(self.tier_name, self.tier, strict=True) if n}

    def tiers(self) -> list[int]:
        """The tiers present, lowest first (Volcano's parseHyperNodesTiers), the virtual top's included (worked
        out once: the cache hands one tree to every session until a Node or HyperNode changes; a copy)."""
        got = self._tiers
        if got is None:
            got = self._tiers = sorted({int(t) for t in self.tier.tolist()})
        return list(got)

    def at_tier(self, tier: int) -> np.ndarray:
        return np.flatnonzero(self.tier == tier)

    def ancestors(self, h: int) -> list[int]:
        """``h``, its parent, ... up to the virtual top."""
        out = [h]
        while self.parent[out[-1]] >= 0 and len(out) <= len(self.names):
            out.append(int(self.parent[out[-1]]))
        return out

    def lca(self, a: int, b: int) -> int:
        """The lowest hypernode that is an ancestor of both (the virtual top at worst)."""
        up = set(self.ancestors(a))
        return next(h for h in self.ancestors(b) if h in up)

    def lca_of_nodes(self, nodes: np.ndarray) -> int:
        """The lowest-tier hypernode holding every one of these node indices (the virtual top at worst)."""
        holds = self.members[:, nodes].all(axis=1) if len(nodes) else np.ones(len(self.names), dtype=bool)
        cand = np.flatnonzero(holds)
        return int(cand[np.argmin(self.tier[cand])])

    def nodes_of(self, h: int) -> np.ndarray:
        return np.flatnonzero(self.members[h])

    def sums(self, per_node: np.ndarray) -> np.ndarray:
        """(hypernodes x resources): the sum of a (nodes x resources) array under every hypernode, e.g. idle."""
        return self.members.astype(per_node.dtype) @ per_node

    def node_count(self, h: int) -> int:
        """The real nodes under a hypernode.  Not Volcano's ``status.nodeCount``, which counts the names its member
        selectors give (a spine's leaves, not their nodes): ``controllers/hypernode.py: member_count``."""
        return int(self.members[h].sum())


def _close(own: np.ndarray, parent: np.ndarray, kids: list[list[int]]) -> tuple[np.ndarray, list[int]]:
    """Every hypernode's real nodes: its own node members plus its children's, bottom-up; the hypernodes on a cycle
    (which Volcano's BuildHyperNodeCache refuses) keep only their own members."""
    members = own.copy()
    n = len(parent)
    state = np.zeros(n, dtype=np.int8)  # 0 new, 1 on the stack, 2 done
    cyclic: list[int] = []
    for root in range(n):
        if state[root]:
            continue
        stack: list[tuple[int, int]] = [(root, 0)]
        state[root] = 1
        while stack:
            h, k = stack[-1]
            if k < len(kids[h]):
                stack[-1] = (h, k + 1)
                c = kids[h][k]
                if state[c] == 1:
                    cyclic.append(c)
                elif state[c] == 0:
                    state[c] = 1
                    stack.append((c, 0))
                continue
            stack.pop()
            state[h] = 2
            for c in kids[h]:
                if state[c] == 2 and c not in cyclic:
                    members[h] |= members[c]
    return members, sorted(set(cyclic))
