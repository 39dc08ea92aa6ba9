"""The HyperNode controller's rules, shared by the Kubernetes mode (``kube/hypernode_controller.py``) and anything
that keeps HyperNodes in memory (the simulator): discovery from node labels and ``status.nodeCount``.

Volcano master's ``pkg/controllers/hypernode/``:

* **Configuration** (``config/loader.go``, ``api/types.go``): the ``volcano-controller.conf`` key of the ConfigMap
  ``<release>-controller-configmap`` (``volcano-controller-configmap`` by default) in the controller's namespace,
  ``networkTopologyDiscovery: [{source, enabled, interval, credentials, config}]``.  Only the ``label`` source is
  implemented here (``ufm`` needs a UFM server; an enabled ``ufm``/``roce`` entry is reported and ignored).
* **Label discovery** (``discovery/label/label.go``): ``config.networkTopologyTypes`` maps a topology type (at
  most 20 characters) to node labels listed from the highest tier down to ``kubernetes.io/hostname``.  The last
  label is dropped (it names the node itself); the one above it is tier 1, and so on up.  Nodes sharing a label
  value share a HyperNode of that tier, whose members are the nodes (tier 1) or the HyperNodes of the tier below
  that their nodes belong to.  A node without a label stops its chain there.  A HyperNode is named
  ``hypernode-<type>-tier<N>-<5 random characters>``, unless a HyperNode of this source that carries the same
  label ``key=value`` and starts with ``hypernode-<type>-tier<N>`` already exists: its name is reused, so names stay
  stable across rounds.  Each HyperNode gets ``tierName`` = the label key and the labels
  ``volcano.sh/network-topology-source: label`` and ``key: value``.  A type with a name over 20 characters or a
  repeated label is skipped with a warning, as Volcano logs and skips it.
* **Reconcile** (``hypernode_controller.go: reconcileTopology``): HyperNodes labelled with the source that were not
  discovered are deleted, new ones created, the others updated (spec and labels).  HyperNodes written by hand
  (without the source label) are never touched.
* **Triggers** (``label.go: AddNode/UpdateNode/DeleteNode/DeleteHyperNode``): a discovery round runs at start, when
  the configuration changes, when a node with one of the configured labels is added or deleted or its values of
  those labels change, and when any HyperNode is deleted.
* **nodeCount** (``hypernode_handler.go: syncHyperNodeStatus/actualNodeCnt``): the number of distinct names the
  members' selectors give (``pkg/util/hypernode/member_selector.go: GetMembers``): an exact name counts whether or
  not such a node exists, and whatever the member's type (so a spine with two leaf members counts 2); a regular
  expression (unanchored) and a label selector count the nodes they match; an empty label selector none.  Volcano
  recomputes it when a HyperNode is added or updated; pyvolcano also when a node is added, deleted or relabelled
  (only HyperNodes with a regex or label member can change then), so the count does not go stale.

Writes go through :class:`HyperNodeClient`; ``kube/hypernode_controller.py`` implements it on the API server and
:class:`MemoryHyperNodes` in memory.  :func:`discover_label_hypernodes` is the pure discovery function (node names
and labels in, HyperNode manifests out).
"""

from __future__ import annotations

import contextlib
import copy
import logging
import random
from collections.abc import Iterable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol

from pyvolcano import safeyaml
from pyvolcano.api import models
from pyvolcano.api.hypernode import HyperNode, parse_hypernode
from pyvolcano.api.labels import selector_matches
from pyvolcano.api.regex import compile_input
from pyvolcano.errors import ManifestError, UserError

log = logging.getLogger(__name__)

API_VERSION = "topology.volcano.sh/v1alpha1"
#: the label that says which discovery source made a HyperNode (``api/types.go: NetworkTopologySourceLabelKey``)
SOURCE_LABEL = "volcano.sh/network-topology-source"
LABEL_SOURCE = "label"
#: the ConfigMap key and default name (``config/loader.go``: DefaultConfigKey; ``<release>-controller-configmap``)
CONF_KEY = "volcano-controller.conf"
DEFAULT_CONFIGMAP = "volcano-controller-configmap"
DEFAULT_NAMESPACE = "volcano-system"
#: ``label.go``: networkTopologyTypeLength, loopCount
MAX_TYPE_NAME = 20
NAME_ATTEMPTS = 20
#: k8s.io/apimachinery/pkg/util/rand: the alphabet of ``rand.String`` (no vowels, no confusable digits)
_ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789"


# --------------------------------------------------------------------------------------------------- config
@dataclass(frozen=True)
class DiscoveryConf:
    """The validated ``volcano-controller.conf``: the label source's topology types (type -> node label keys from
    tier 1 up, the hostname level dropped), or None when the label source is not enabled."""

    label_types: dict[str, list[str]] | None = None
    #: enabled sources pyvolcano does not implement (``ufm``, ``roce``)
    unsupported: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()

    @property
    def label_keys(self) -> frozenset[str]:
        return frozenset(k for keys in (self.label_types or {}).values() for k in keys)


def parse_discovery_conf(text: str | None, where: str = f"ConfigMap {DEFAULT_NAMESPACE}/{DEFAULT_CONFIGMAP}") \
        -> DiscoveryConf:
    """The discovery configuration in ``text`` (the ``volcano-controller.conf`` value); empty text is no
    discovery.  A malformed one raises a UserError naming ``where`` and the field."""
    data = safeyaml.load(text or "", where) if text and text.strip() else None
    if data is None:
        return DiscoveryConf()
    key = CONF_KEY
    conf = models.validate_model(models.NetworkTopologyConfig, data, f"{where} key {key}")
    warnings: list[str] = []
    unsupported: list[str] = []
    label_types: dict[str, list[str]] | None = None
    for i, dc in enumerate(conf.networkTopologyDiscovery or []):
        if not dc.enabled:
            continue
        if dc.source != LABEL_SOURCE:
            unsupported.append(dc.source)
            continue
        if label_types is not None:  # GetDiscoveryConfig: the first enabled entry of a source wins
            continue
        src = models.validate_model(models.LabelDiscoverySource, dc.config or {}, f"{where} key {key}",
                                    f"networkTopologyDiscovery[{i}].config")
        label_types = {}
        for name, labels in sorted((src.networkTopologyTypes or {}).items()):
            keys = [lb.nodeLabel for lb in labels]
            field_ = f"networkTopologyDiscovery[{i}].config.networkTopologyTypes.{name}"
            if len(name) > MAX_TYPE_NAME:
                warnings.append(f"{where}: field {field_}: the type name is longer than {MAX_TYPE_NAME} "
                                f"characters; skipped")
                continue
            if len(set(keys)) != len(keys):
                warnings.append(f"{where}: field {field_}: a node label is repeated; skipped")
                continue
            label_types[name] = keys[-2::-1] if len(keys) >= 2 else []  # tier 1 first, the hostname dropped
    return DiscoveryConf(label_types, tuple(unsupported), tuple(warnings))


# ------------------------------------------------------------------------------------------------ discovery
def _clean(s: str) -> str:
    """``label.go: cleanString``: letters lowered; digits, ``.`` and ``-`` kept; anything else ``-``."""
    return "".join(c.lower() if c.isascii() and c.isalpha() else c if c.isascii() and (c.isdigit() or c in ".-")
                   else "-" for c in s)


def _labels(obj: Mapping[str, Any]) -> dict[str, str]:
    return dict((obj.get("metadata") or {}).get("labels") or {})


def _name(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


@dataclass
class _Info:
    tier: int
    tier_name: str
    labels: dict[str, str]
    members: list[str] = field(default_factory=list)


def discover_label_hypernodes(nodes: Iterable[tuple[str, Mapping[str, str]]], label_types: Mapping[str, list[str]],
                              existing: Iterable[Mapping[str, Any]] = (), rng: random.Random | None = None) \
        -> list[dict[str, Any]]:
    """The HyperNodes Volcano's label discoverer builds from these nodes (``generateHyperNodeInfo`` and
    ``buildHyperNodes`` in ``discovery/label/label.go``), as manifests, sorted by name.

    ``nodes`` are (name, labels); ``label_types`` maps a topology type to its label keys from tier 1 up
    (:func:`parse_discovery_conf`); ``existing`` are the HyperNodes already in the cluster, whose names are reused
    for the same label value; ``rng`` draws the random name suffixes (Volcano's are random too)."""
    rng = rng or random.Random()
    existing = [e for e in existing if _labels(e).get(SOURCE_LABEL) == LABEL_SOURCE]
    taken = {_name(e) for e in existing}
    infos: dict[str, _Info] = {}
    by_label: dict[str, dict[str, str]] = {}

    def new_name(type_name: str, key: str, value: str, tier: int) -> str:
        prefix = f"hypernode-{_clean(type_name)}-tier{tier}"
        for e in sorted(existing, key=_name):
            if _labels(e).get(key) == value and _name(e).startswith(prefix):
                return _name(e)
        for _ in range(NAME_ATTEMPTS):
            name = f"{prefix}-{''.join(rng.choice(_ALPHANUMS) for _ in range(5))}"
            if name not in taken and name not in infos:
                return name
        raise UserError(f"label discovery: no unique HyperNode name for {prefix} after {NAME_ATTEMPTS} attempts")

    for node_name, labels in sorted(nodes, key=lambda n: n[0]):
        for type_name, keys in sorted(label_types.items()):
            member = node_name
            for i, key in enumerate(keys):
                if key not in labels:
                    break
                tier, value = i + 1, str(labels[key])
                name = by_label.get(key, {}).get(value) or new_name(type_name, key, value, tier)
                info = infos.setdefault(name, _Info(tier, key, {key: value}))
                info.members.append(member)
                by_label.setdefault(key, {})[value] = name
                member = name
    out = []
    for name, info in sorted(infos.items()):
        mtype = "Node" if info.tier == 1 else "HyperNode"
        out.append({
            "apiVersion": API_VERSION, "kind": "HyperNode",
            "metadata": {"name": name, "labels": {SOURCE_LABEL: LABEL_SOURCE, **info.labels}},
            "spec": {"tier": info.tier, "tierName": info.tier_name,
                     "members": [{"type": mtype, "selector": {"exactMatch": {"name": m}}}
                                 for m in sorted(set(info.members))]},
        })
    return out


# ------------------------------------------------------------------------------------------------ nodeCount
def member_count(hypernode: HyperNode, nodes: Mapping[str, Mapping[str, str]]) -> int:
    """``status.nodeCount`` as Volcano's controller computes it (``actualNodeCnt``): the distinct names its members'
    selectors give over ``nodes`` (name -> labels); see the module docstring.  ``hypernode`` passed
    ``parse_hypernode`` (its regular expressions compile with RE2: ``api/regex.py``)."""
    names: set[str] = set()
    for m in hypernode.spec.members:
        sel = m.selector
        if sel.exactMatch is not None:
            names.add(sel.exactMatch.name)
        elif sel.regexMatch is not None:
            rx = compile_input(sel.regexMatch.pattern)
            names.update(n for n in nodes if rx.search(n))
        elif sel.labelMatch is not None:
            lm = sel.labelMatch.model_dump()
            names.update(n for n, lb in nodes.items() if selector_matches(lm, dict(lb)))
    return len(names)


def _node_dependent(hypernode: Mapping[str, Any]) -> bool:
    """Whether a node change can change this HyperNode's nodeCount (a regex or label member)."""
    return any((m.get("selector") or {}).get("regexMatch") or (m.get("selector") or {}).get("labelMatch")
               for m in (hypernode.get("spec") or {}).get("members") or [])


# ------------------------------------------------------------------------------------------------ the controller
class HyperNodeClient(Protocol):
    """Where the controller's decisions go: the API server, or an in-memory store."""

    def create_hypernode(self, obj: dict[str, Any]) -> None:
        """Create a HyperNode (metadata.name, labels and spec set)."""

    def update_hypernode(self, obj: dict[str, Any]) -> None:
        """Replace the spec of an existing HyperNode and add ``obj``'s labels to its own."""

    def delete_hypernode(self, name: str) -> None:
        """Delete a HyperNode; a missing one is not an error."""

    def set_node_count(self, name: str, count: int) -> None:
        """Write ``status.nodeCount``."""


@dataclass
class Plan:
    """One reconcile round: HyperNodes to create, to update and to delete, and nodeCounts to write."""

    create: list[dict[str, Any]] = field(default_factory=list)
    update: list[dict[str, Any]] = field(default_factory=list)
    delete: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.create or self.update or self.delete or self.counts)


class HyperNodeController:
    """The controller's state (nodes' labels, the HyperNodes seen, the discovery configuration) and its rules.

    Feed it events (``on_node``, ``on_hypernode``, ``set_conf``), then ``plan()`` what to write and ``apply()`` it
    through a :class:`HyperNodeClient` (``step`` does both).  It is not thread-safe: the Kubernetes wrapper holds
    its lock around the event methods and ``plan``."""

    def __init__(self, rng: random.Random | None = None) -> None:
        self.rng = rng or random.Random()
        self.nodes: dict[str, dict[str, str]] = {}
        self.hypernodes: dict[str, dict[str, Any]] = {}
        self.conf = DiscoveryConf()
        #: a discovery round is due (start, configuration, node labels, a HyperNode deleted)
        self.discover_pending = True
        #: HyperNodes whose nodeCount must be checked
        self.count_pending: set[str] = set()
        self.rounds = 0

    # --- events ---------------------------------------------------------------------------------------
    def set_conf(self, conf: DiscoveryConf) -> None:
        """A new configuration restarts discovery (``manager.go: syncHandler``)."""
        for w in conf.warnings:
            log.warning("%s", w)
        for src in conf.unsupported:
            log.warning("HyperNode discovery source %r is not implemented by pyvolcano (only 'label'); ignored", src)
        self.conf = conf
        self.discover_pending = True

    def _topology_labels(self, labels: Mapping[str, str]) -> dict[str, str]:
        keys = self.conf.label_keys
        return {k: v for k, v in labels.items() if k in keys}

    def on_node(self, typ: str, obj: Mapping[str, Any]) -> None:
        name = _name(obj)
        old = self.nodes.get(name)
        new = None if typ == "DELETED" else _labels(obj)
        if new is None:
            self.nodes.pop(name, None)
        else:
            self.nodes[name] = new
        if old == new:
            return
        if self._topology_labels(old or {}) != self._topology_labels(new or {}):
            self.discover_pending = True
        self.count_pending.update(n for n, h in self.hypernodes.items() if _node_dependent(h))

    def on_hypernode(self, typ: str, obj: Mapping[str, Any]) -> None:
        name = _name(obj)
        if typ == "DELETED":
            self.hypernodes.pop(name, None)
            self.count_pending.discard(name)
            self.discover_pending = True  # label.go: DeleteHyperNode
            return
        self.hypernodes[name] = copy.deepcopy(dict(obj))
        self.count_pending.add(name)

    # --- decisions ------------------------------------------------------------------------------------
    def plan(self) -> Plan:
        """What to write now; clears the pending marks (``apply`` failures set them again)."""
        p = Plan()
        if self.discover_pending:
            self.discover_pending = False
            if self.conf.label_types is not None:
                self.rounds += 1
                self._reconcile(p)
        for name in sorted(self.count_pending):
            obj = self.hypernodes.get(name)
            if obj is None:
                continue
            try:
                hn = parse_hypernode(obj)  # a malformed one is not counted (the scheduler skips it too)
            except ManifestError as exc:
                log.warning("not counting the nodes of %s", exc)
                continue
            n = member_count(hn, self.nodes)
            if int((obj.get("status") or {}).get("nodeCount") or 0) != n:
                p.counts[name] = n
        self.count_pending.clear()
        return p

    def _reconcile(self, p: Plan) -> None:
        """``reconcileTopology`` for the label source."""
        existing = {n: h for n, h in self.hypernodes.items() if _labels(h).get(SOURCE_LABEL) == LABEL_SOURCE}
        found = discover_label_hypernodes(self.nodes.items(), self.conf.label_types or {}, existing.values(),
                                          self.rng)
        for hn in found:
            name = _name(hn)
            old = existing.pop(name, None)
            if old is None:
                p.create.append(hn)
            elif old.get("spec") != hn["spec"] or any(_labels(old).get(k) != v for k, v in _labels(hn).items()):
                p.update.append(hn)
        p.delete.extend(sorted(existing))
        log.info("label discovery: %d HyperNodes found (%d to create, %d to update, %d to delete)", len(found),
                 len(p.create), len(p.update), len(p.delete))

    def apply(self, p: Plan, client: HyperNodeClient, lock: AbstractContextManager[Any] | None = None) -> list[str]:
        """Carry out a plan; what it writes is recorded at once (so a round before the informer shows it does not
        make duplicates).  ``lock`` guards the state (not the writes) against event threads.  Returns the
        failures; their work is marked pending again."""
        guard = lock if lock is not None else contextlib.nullcontext()
        failed: list[str] = []

        def attempt(what: str, write: Any, done: Any, undo: Any) -> None:
            try:
                write()
            except Exception as exc:  # an API error: the work is pending again, retried next round
                failed.append(f"{what}: {exc}")
                with guard:
                    undo()
                return
            with guard:
                done()

        def created(hn: dict[str, Any]) -> None:
            self.hypernodes.setdefault(_name(hn), copy.deepcopy(hn))
            self.count_pending.add(_name(hn))

        def updated(hn: dict[str, Any]) -> None:
            cur = self.hypernodes.setdefault(_name(hn), copy.deepcopy(hn))
            cur["spec"] = copy.deepcopy(hn["spec"])
            cur.setdefault("metadata", {}).setdefault("labels", {}).update(_labels(hn))
            self.count_pending.add(_name(hn))

        def counted(name: str, n: int) -> None:
            obj = self.hypernodes.get(name)
            if obj is not None:
                obj["status"] = {**(obj.get("status") or {}), "nodeCount": n}

        def rediscover() -> None:
            self.discover_pending = True

        for hn in p.create:
            attempt(f"create HyperNode {_name(hn)}", lambda hn=hn: client.create_hypernode(hn),
                    lambda hn=hn: created(hn), rediscover)
        for hn in p.update:
            attempt(f"update HyperNode {_name(hn)}", lambda hn=hn: client.update_hypernode(hn),
                    lambda hn=hn: updated(hn), rediscover)
        for name in p.delete:
            attempt(f"delete HyperNode {name}", lambda name=name: client.delete_hypernode(name),
                    lambda name=name: self.hypernodes.pop(name, None), rediscover)
        for name, n in p.counts.items():
            attempt(f"nodeCount of HyperNode {name}", lambda name=name, n=n: client.set_node_count(name, n),
                    lambda name=name, n=n: counted(name, n), lambda name=name: self.count_pending.add(name))
        return failed

    def step(self, client: HyperNodeClient) -> list[str]:
        return self.apply(self.plan(), client)


class MemoryHyperNodes:
    """A :class:`HyperNodeClient` over a dict of HyperNode manifests (the simulator's cluster, tests)."""

    def __init__(self) -> None:
        self.objects: dict[str, dict[str, Any]] = {}

    def create_hypernode(self, obj: dict[str, Any]) -> None:
        self.objects[_name(obj)] = {**obj, "status": {"nodeCount": 0}}

    def update_hypernode(self, obj: dict[str, Any]) -> None:
        cur = self.objects.setdefault(_name(obj), {**obj, "status": {"nodeCount": 0}})
        cur["spec"] = obj["spec"]
        cur.setdefault("metadata", {}).setdefault("labels", {}).update(_labels(obj))

    def delete_hypernode(self, name: str) -> None:
        self.objects.pop(name, None)

    def set_node_count(self, name: str, count: int) -> None:
        if name in self.objects:
            self.objects[name]["status"] = {**(self.objects[name].get("status") or {}), "nodeCount": count}


def hypernodes_from_labels(nodes: Iterable[Mapping[str, Any]], conf_text: str, seed: int = 0) -> list[dict[str, Any]]:
    """The HyperNodes (with ``status.nodeCount``) that label discovery makes for these Node manifests under this
    ``volcano-controller.conf``: the whole controller run to a fixed point in memory (for the simulator)."""
    ctrl = HyperNodeController(random.Random(seed))
    ctrl.set_conf(parse_discovery_conf(conf_text, "volcano-controller.conf"))
    for n in nodes:
        ctrl.on_node("ADDED", n)
    store = MemoryHyperNodes()
    for _ in range(3):  # discovery, then the nodeCounts of what it created
        if not (p := ctrl.plan()):
            break
        ctrl.apply(p, store)
    return [store.objects[k] for k in sorted(store.objects)]
