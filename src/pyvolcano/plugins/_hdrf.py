"""Volcano's hierarchical DRF (drf plugin with ``enableHierarchy: true``), kept apart from plain drf.

Queues name their place in a tree with annotations: ``volcano.sh/hierarchy: root/eng/prod`` and
``volcano.sh/hierarchy-weights: 1/2/8`` (Volcano's webhook adds the leading ``root`` and ``1`` when a queue
omits them; this module does the same).  Every job is a leaf under its queue's path.  The tree is Volcano's:

* a job is *saturated* when, in some resource it holds, it holds all it requests, or when it requests a
  resource the cluster has fully handed out (no longer "demanding");
* an inner node holds its children's allocations, each unsaturated child scaled to the smallest dominant
  share among its unsaturated siblings (saturated children count as they are); its share is the dominant
  share of that sum; it is saturated when all its children are;
* two queues are compared walking down their paths from the root: an unsaturated node before a saturated
  one, then the smaller share / weight; equal nodes pass to the next level.  A queue without the hierarchy
  annotation sits at the root itself, so it compares equal to every other queue (the next queue-order plugin,
  or creation time, decides);
* a running task of another queue may be reclaimed when, with the reclaimer's task added to its job and that
  one task taken from the victim's job, the reclaimer's queue still compares smaller.  Each candidate is judged
  on its own, as Volcano does.

Numbers are recomputed from the jobs' allocations when asked (lazily, after any change), never incrementally,
so a trial "what if" (reclaim) is the same computation with two allocations swapped.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from pyvolcano.api.queue_info import QueueInfo
from pyvolcano.api.resource import EPS, share

ROOT = "root"


def queue_levels(q: QueueInfo) -> tuple[list[str], list[float]]:
    """Path names and weights from the annotations, as Volcano's webhook leaves them: ``root`` first when both
    annotations are set; an empty hierarchy is ``[""]`` (jobs directly under the root).  A weight that is
    missing, not a number or below 1 counts as 1 (the validator reports it)."""
    names = q.hierarchy.split("/") if q.hierarchy else [""]
    raw = q.weights.split("/") if q.weights else []
    if q.hierarchy and q.weights and not q.hierarchy.startswith(ROOT):
        names, raw = [ROOT, *names], ["1", *raw]
    weights = []
    for i in range(len(names)):
        try:
            w = float(raw[i]) if i < len(raw) else 1.0
        except ValueError:
            w = 1.0
        weights.append(w if w >= 1 else 1.0)
    return names, weights


@dataclass
class Node:
    name: str
    weight: float = 1.0
    children: dict[str, Node] | None = field(default_factory=dict)  # None for a job leaf
    allocated: np.ndarray | None = None
    request: np.ndarray | None = None
    share: float = 0.0
    saturated: bool = False


_EMPTY = Node("", children={})


class HierarchicalDRF:
    """The tree of one session: structure from the queues' annotations, numbers from the jobs' allocations."""

    def __init__(self, total: np.ndarray, mask: np.ndarray) -> None:
        self.total = total
        self.mask = mask
        self.root = Node(ROOT)
        self.leaves: dict[str, Node] = {}
        self.levels: dict[str, list[str]] = {}

    def add_job(self, uid: str, queue: QueueInfo, request: np.ndarray) -> None:
        names, weights = queue_levels(queue)
        self.levels[queue.name] = names
        node = self.root
        for name, w in zip(names[1:], weights[1:], strict=True):
            assert node.children is not None
            child = node.children.get(name)
            if child is None:
                child = node.children[name] = Node(name, w)
            node = child
        assert node.children is not None
        leaf = node.children[uid] = Node(uid, 1.0, None, request=request * self.mask)
        self.leaves[uid] = leaf

    def recompute(self, alloc: dict[str, np.ndarray]) -> None:
        """Every node's allocation, share and saturation from the jobs' allocations ``alloc``."""
        total_alloc = sum((alloc[u] * self.mask for u in self.leaves if u in alloc), np.zeros_like(self.total))
        names = self.mask & (self.total >= EPS)
        demanding = names & (total_alloc < self.total)
        self._update(self.root, alloc, demanding)

    def _share(self, a: np.ndarray) -> float:
        return share(a, self.total, self.mask & (self.total >= EPS))

    def _update(self, node: Node, alloc: dict[str, np.ndarray], demanding: np.ndarray) -> None:
        if node.children is None:
            a = alloc.get(node.name, np.zeros_like(self.total)) * self.mask
            req = node.request if node.request is not None else np.zeros_like(a)
            node.allocated, node.share = a, self._share(a)
            held = self.mask & (a >= EPS)
            node.saturated = bool(np.any(held & (a > 0) & (req > 0) & (a >= req))
                                  or np.any(held & ~demanding & (req > 0)))
            return
        mdr = 1.0
        for child in node.children.values():
            self._update(child, alloc, demanding)
            if child.share != 0 and not child.saturated:
                mdr = min(mdr, child.share)
        total = np.zeros_like(self.total)
        saturated = True
        for child in node.children.values():
            saturated = saturated and child.saturated
            if child.share != 0:
                assert child.allocated is not None
                total += child.allocated if child.saturated else child.allocated * (mdr / child.share)
        node.allocated, node.share, node.saturated = total, self._share(total), saturated

    def compare(self, left: str, right: str) -> float:
        """Negative when queue ``left`` goes first (Volcano's compareQueues)."""
        lp, rp = self.levels.get(left, [""]), self.levels.get(right, [""])
        ln, rn = self.root, self.root
        depth = min(len(lp), len(rp))
        for i in range(depth):
            if not ln.saturated and rn.saturated:
                return -1.0
            if ln.saturated and not rn.saturated:
                return 1.0
            lv, rv = ln.share / ln.weight, rn.share / rn.weight
            if lv != rv:
                return lv - rv
            if i < depth - 1:
                ln = (ln.children or {}).get(lp[i + 1], _EMPTY)
                rn = (rn.children or {}).get(rp[i + 1], _EMPTY)
        return 0.0
