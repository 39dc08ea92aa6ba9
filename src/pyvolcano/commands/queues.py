"""``pyvolcano queues``: what each queue is set to, what it will really get, and why.

The numbers are not recomputed here: a session with no actions runs on the snapshot with the given config
(``framework.cycle.run_session``), and the capacity or proportion plugin's queue attributes come back in the
session's result (``QueueStatus.fair``; Volcano's ``queueAttr`` in ``plugins/proportion/proportion.go`` and
``plugins/capacity/capacity.go``).  Each number comes with the rule that produced it, and ``api.queue_validate``
lists the settings that cannot hold.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any

import click
import numpy as np

from pyvolcano.api.quantity import format_quantity
from pyvolcano.api.queue_info import QueueInfo
from pyvolcano.api.queue_validate import Problem, validate_conf, validate_queues
from pyvolcano.api.resource import EPS, ResourceIndex
from pyvolcano.cache.cache import KINDS, SchedulerCache
from pyvolcano.cache.manifests import load_snapshot, unused_kinds
from pyvolcano.commands._output import console as _console
from pyvolcano.commands._output import emit, output_option, pick_file
from pyvolcano.conf.loader import SchedulerConf, load_conf, load_conf_file
from pyvolcano.errors import UserError
from pyvolcano.framework.cycle import run_session
from pyvolcano.framework.result import FairShare
from pyvolcano.plugins._shared import ROOT, queue_tree

NUMBERS = ("weight", "guarantee", "capability", "realCapability", "deserved", "allocated", "request", "share")


@dataclass
class QueueReport:
    name: str
    parent: str = ""
    state: str = "Open"
    values: dict[str, Any] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)


@dataclass
class Report:
    plugin: str
    hierarchy: bool
    cluster: dict[str, str]
    queues: list[QueueReport]
    problems: list[Problem]
    skipped: list[str]

    def to_json(self) -> dict[str, Any]:
        return {"plugin": self.plugin, "hierarchy": self.hierarchy, "cluster": self.cluster,
                "queues": [{"name": q.name, "parent": q.parent, "state": q.state, **q.values, "reasons": q.reasons}
                           for q in self.queues],
                "problems": [{"queue": p.queue, "field": p.field, "message": p.message} for p in self.problems],
                "skipped": self.skipped}


def fmt(res: ResourceIndex, v: np.ndarray | None, mask: np.ndarray) -> dict[str, str]:
    """A resource vector as ``{name: quantity}`` without pods and zeros; +inf as ``unlimited``."""
    if v is None:
        return {}
    out = {}
    for i, n in enumerate(res.names):
        if not mask[i] or (v[i] == 0 and not np.isinf(v[i])):
            continue
        out[n] = "unlimited" if np.isinf(v[i]) else format_quantity(n, float(v[i]))
    return out


def _dims(res: ResourceIndex, mask: np.ndarray, cond: np.ndarray) -> str:
    return ", ".join(n for i, n in enumerate(res.names) if mask[i] and cond[i])


def deserved_reason(a: FairShare, plugin: str, spec_deserved: bool, res: ResourceIndex, mask: np.ndarray,
                    weight_total: int) -> str:
    """Which bound of the plugin's rule each dimension of ``deserved`` ended at."""
    d = a.deserved
    near = lambda x: np.abs(d - x) <= EPS
    parts = []
    if plugin == "capacity":
        parts.append("spec.deserved" if spec_deserved else "spec.deserved unset: 0, so this queue cannot reclaim")
        cut = near(a.real_capability) & (a.real_capability > 0) & mask
        if cut.any():
            parts.append(f"cut to realCapability in {_dims(res, mask, cut)}")
    else:
        parts.append(f"weight {a.weight}/{weight_total} of what the other queues leave")
        req = near(a.request) & mask & (a.request > 0)
        if req.any():
            parts.append(f"capped at its request in {_dims(res, mask, req)} (asks no more)")
        if not (a.request[mask] > EPS).any():
            parts.append("nothing requested, so nothing deserved")
        cap = near(a.real_capability) & mask & ~req
        if cap.any():
            parts.append(f"capped at realCapability in {_dims(res, mask, cap)}")
    g = near(a.guarantee) & (a.guarantee > 0) & mask
    if g.any():
        parts.append(f"raised to guarantee in {_dims(res, mask, g)}")
    return "; ".join(parts)


def build_report(objects: list[dict[str, Any]], conf: SchedulerConf, scheduler_name: str = "volcano") -> Report:
    cache = SchedulerCache.from_objects(objects, scheduler_name)
    result = run_session(cache, conf.model_copy(update={"actions": []}))
    res = cache.res
    mask = res.fair_mask
    names = {p.name for t in conf.tiers for p in t.plugins}
    plugin = "capacity" if "capacity" in names else ("proportion" if "proportion" in names else "none")
    opt = conf.plugin("capacity")
    hierarchy = plugin == "capacity" and opt is not None and bool(opt.flags.get("enableHierarchy", False))
    attrs: dict[str, FairShare] = {n: q.fair for n, q in result.queues.items() if q.fair is not None}
    total = result.total if result.total is not None else res.zeros()
    queues = {n: cache.queues.get(n) or QueueInfo(name=n) for n in result.queues}
    tree = queue_tree(queues) if hierarchy else None
    order = _tree_order(tree) if tree else sorted(queues)
    weight_total = sum(max(q.weight, 0) for n, q in queues.items() if n in attrs)
    counts = {n: (q.allocated_tasks, q.pending_tasks) for n, q in result.queues.items()
              if q.allocated_tasks or q.pending_tasks}
    total_guarantee = sum((q.guarantee * mask for q in queues.values() if q.guarantee is not None), res.zeros())
    out = []
    for name in order:
        q = queues.get(name)
        a = attrs.get(name)
        r = QueueReport(name, (tree.parent.get(name, "") if tree else ""), str(q.state) if q else "Open")
        r.values["weight"] = q.weight if q else 1
        r.reasons["weight"] = ("spec.weight" if q and "weight" in (q.manifest.get("spec") or {}) else "default 1") + (
            "" if plugin == "proportion" else f" (only proportion uses weight; {plugin} ignores it)")
        r.values["guarantee"] = fmt(res, q.guarantee if q else None, mask)
        r.reasons["guarantee"] = "spec.guarantee.resource" if q and q.guarantee is not None else "unset: 0"
        r.values["capability"] = fmt(res, q.capability if q else None, mask)
        r.reasons["capability"] = "spec.capability (unset resources unlimited)" if q and q.capability is not None \
            else "unset: unlimited"
        if tree is not None and name == ROOT and q is not None and q.capability is not None and a is not None:
            r.values["capability"] = {n: ("0 (not named)" if np.isinf(q.capability[i]) else
                                          format_quantity(n, float(a.capability[i])))
                                      for i, n in enumerate(res.names) if mask[i]}
            r.reasons["capability"] = ("spec.capability; as Volcano reads the root's, a resource it does not name is "
                                       "0 for the whole tree (only an empty capability is unlimited)")
        alloc_n, pend_n = _subtree_counts(tree, name, counts) if tree else counts.get(name, (0, 0))
        if a is None:
            for k in ("realCapability", "deserved", "allocated", "request"):
                r.values[k] = {}
            r.values["share"] = 0.0
            why = ("no proportion or capacity plugin: queues are not limited" if plugin == "none"
                   else f"no PodGroups in this queue: {plugin} gives it nothing this cycle")
            for k in ("realCapability", "deserved", "allocated", "request", "share"):
                r.reasons[k] = why
            out.append(r)
            continue
        r.values["realCapability"] = fmt(res, a.real_capability, mask)
        if tree is not None and name != ROOT:
            r.reasons["realCapability"] = (f"min(capability, parent {tree.parent.get(name)}'s realCapability - "
                                           "its children's guarantees + own guarantee)")
        elif name == ROOT and tree is not None:
            r.reasons["realCapability"] = "the root's spec.capability (unlimited when unset)"
        else:
            free = np.maximum(total * mask - total_guarantee, 0) + a.guarantee
            capped = (a.capability < free - EPS) & mask
            r.reasons["realCapability"] = (f"min(capability, cluster {_res(fmt(res, total, mask))} - all "
                                           f"guarantees {_res(fmt(res, total_guarantee, mask))} + own guarantee)"
                                           + (f"; capability binds in {_dims(res, mask, capped)}" if capped.any()
                                              else ""))
        r.values["deserved"] = fmt(res, a.deserved, mask)
        r.reasons["deserved"] = deserved_reason(a, plugin, bool(q and q.deserved_set), res, mask, weight_total) \
            if name != ROOT else "the sum of its children's deserved"
        r.values["allocated"] = fmt(res, a.allocated, mask)
        r.reasons["allocated"] = (f"requests of {alloc_n} task(s) holding resources"
                                  + (" in its subtree" if tree and tree.children.get(name) else ""))
        r.values["request"] = fmt(res, a.request, mask)
        r.reasons["request"] = f"allocated plus {pend_n} pending task(s)"
        r.values["share"] = round(a.share, 4)
        r.reasons["share"] = "max over resources of allocated / deserved (smaller share goes first)"
        out.append(r)
    problems = validate_conf(conf) + validate_queues(queues, total * mask, res)
    if hierarchy:  # the capacity plugin's own verdict on the tree, on the numbers it computed
        problems += result.queue_problems
    return Report(plugin, hierarchy, fmt(res, total, mask), out, problems, list(cache.problems))


def _subtree_counts(tree: Any, name: str, counts: dict[str, tuple[int, int]]) -> tuple[int, int]:
    """(tasks holding resources, pending tasks) of a queue and everything below it: a parent's allocated and
    request are its subtree's sums, so its task counts are too."""
    a, p = counts.get(name, (0, 0))
    for child in tree.children.get(name, ()):
        ca, cp = _subtree_counts(tree, child, counts)
        a, p = a + ca, p + cp
    return a, p


def _tree_order(tree: Any) -> list[str]:
    out: list[str] = []

    def walk(n: str) -> None:
        out.append(n)
        for c in sorted(tree.children.get(n, [])):
            walk(c)
    walk(ROOT)
    return out


def _res(d: dict[str, str]) -> str:
    return ", ".join(f"{k}={v}" for k, v in d.items()) or "-"


_TABLE = ("weight", "deserved", "allocated", "request", "share")
_SHORT = {"weight": "WEIGHT", "guarantee": "GUAR", "capability": "CAP", "realCapability": "REALCAP",
          "deserved": "DESERVED", "allocated": "ALLOC", "request": "REQUEST", "share": "SHARE"}


def print_table(rep: Report, wide: bool = False) -> None:
    """The queues as a table sized to the terminal; ``wide`` adds under each number the rule that produced it
    (and draws a tree for hierarchical queues)."""
    from rich.table import Table
    from rich.tree import Tree

    console = _console()
    console.print(f"cluster: {_res(rep.cluster)}   plugin: {rep.plugin}"
                  + ("   (hierarchical)" if rep.hierarchy else ""), highlight=False)
    if rep.hierarchy and wide:
        nodes: dict[str, Tree] = {}
        root = None
        for q in rep.queues:
            label = f"[bold]{q.name}[/] ({q.state})\n" + "\n".join(
                f"  {k}: {_val(q.values[k])}  [dim]# {q.reasons.get(k, '')}[/]" for k in NUMBERS)
            if q.parent and q.parent in nodes:
                nodes[q.name] = nodes[q.parent].add(label)
            else:
                nodes[q.name] = Tree(label) if root is None else root.add(label)
                root = root or nodes[q.name]
        if root is not None:
            console.print(root)
    elif wide:  # one block per queue: a value and its reason per line read at any terminal width
        for q in rep.queues:
            console.print(f"[bold]{q.name}[/] ({q.state})", highlight=False)
            for k in NUMBERS:
                console.print(f"  {k}: {_val(q.values[k])}  [dim]# {q.reasons.get(k, '')}[/]", highlight=False)
    else:
        t = Table(box=None, header_style="bold", pad_edge=False)
        # the summary: what each queue gets and uses; the settings it comes from (guarantee, capability,
        # realCapability) and every reason are -o wide
        shown = [k for k in NUMBERS if k in _TABLE and (k != "weight" or rep.plugin == "proportion")]
        for col in ("QUEUE", *(("PARENT",) if rep.hierarchy else ()), "STATE", *(_SHORT[k] for k in shown)):
            t.add_column(col, overflow="fold")
        for q in rep.queues:  # one resource per line keeps the columns narrow
            t.add_row(q.name, *((q.parent or "-",) if rep.hierarchy else ()), q.state,
                      *(_val(q.values[k]).replace(", ", "\n") for k in shown))
        console.print(t)
    for p in rep.problems:
        console.print(f"[yellow]problem:[/] {p.message}", highlight=False)
    for s in rep.skipped:
        console.print(f"[yellow]skipped object:[/] {s}", highlight=False)


def _val(v: Any) -> str:
    return _res(v) if isinstance(v, dict) else str(v)


def register(group: click.Group) -> None:
    @group.command("queues")
    @click.argument("snapshot", required=False)
    @click.option("-f", "--filename", default=None, help="The snapshot (instead of the argument; - for stdin).")
    @click.option("--config", "-c", "config", default=None,
                  help="volcano-scheduler.conf (default: the scenario's config:, else Volcano's).")
    @output_option()
    @click.option("--scheduler-name", default="volcano", show_default=True)
    @click.option("--strict", is_flag=True,
                  help="Refuse when an object is malformed (without it, malformed objects are skipped with a "
                       "warning, the rest is reported, and the exit code is 2), as cycle does.")
    def queues(snapshot: str | None, filename: str | None, config: str | None, output: str, scheduler_name: str,
               strict: bool) -> None:
        """Per queue of SNAPSHOT: weight, guarantee, capability, realCapability, deserved, allocated, request
        and share as the configured plugin computes them, each with its reason (-o wide), and settings that
        cannot hold.

        Exit status: 0; 2 when an input is wrong (malformed objects are skipped, the rest is reported)."""
        snap = load_snapshot(pick_file(snapshot, filename, "snapshot"))
        snap.require_cluster()
        if config is None and snap.config is not None:
            conf = load_conf(snap.config, f"{snap.source} (config:)")
        else:
            conf = load_conf_file(config)
        unused = unused_kinds(snap.objects, KINDS, snap.source)
        if unused:
            click.echo(f"pyvolcano: warning: {unused}", err=True)
        rep = build_report(snap.objects, conf, scheduler_name)
        if strict and rep.skipped:
            raise UserError(f"{len(rep.skipped)} malformed object(s) in {snap.source}: " + "; ".join(rep.skipped))
        if output in ("json", "yaml"):
            for p in rep.skipped:
                print(f"pyvolcano: warning: skipped {p}", file=sys.stderr)
            emit(rep.to_json(), output)
        else:
            print_table(rep, output == "wide")
        if rep.skipped:  # the rest was reported; the mistake still fails the command, as in cycle
            sys.exit(2)
