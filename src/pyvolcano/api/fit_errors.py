"""Why a task fits no node, summarised the way Kubernetes prints it."""

from __future__ import annotations

from collections import Counter


class FitErrors:
    """Per-node reasons for one task (a node filter's come from its ``api.status.Status``); ``str()`` is
    ``0/3 nodes are available: 2 Insufficient cpu, ...``."""

    def __init__(self, total_nodes: int = 0) -> None:
        self.total_nodes = total_nodes
        self.reasons: Counter[str] = Counter()
        self.message = ""
        #: the hypernode whose nodes were searched (Volcano's ``FitErrors.SetHyperNode``): "In hyperNode X: ..."
        self.hypernode = ""

    def __eq__(self, other: object) -> bool:
        """Equal when they say the same: a waiting job's carried status and gang condition (``Session.close``,
        ``plugins/gang.py``) stand while its fit errors say what they said, also when a turn made them again."""
        if other is self:  # the memo and the carried statuses hand back the very objects
            return True
        if not isinstance(other, FitErrors):
            return NotImplemented
        return (self.total_nodes == other.total_nodes and self.reasons == other.reasons
                and self.message == other.message and self.hypernode == other.hypernode)

    __hash__ = None  # type: ignore[assignment]  # changed by ``add``: not a key

    def add(self, reason: str, count: int = 1) -> None:
        self.reasons[reason] += count

    def set_error(self, message: str) -> None:
        self.message = message

    def set_hypernode(self, name: str) -> None:
        self.hypernode = name

    def __str__(self) -> str:
        text = self._text()
        return f"In hyperNode {self.hypernode}: {text}" if self.hypernode else text

    def _text(self) -> str:
        if self.message and not self.reasons:
            return self.message
        if not self.reasons:  # no node to give a reason, e.g. a cluster without (ready) nodes
            return f"0/{self.total_nodes} nodes are available."
        parts = sorted(f"{n} {r}" for r, n in self.reasons.items())
        text = f"0/{self.total_nodes} nodes are available: {', '.join(parts)}."
        return f"{self.message} {text}".strip() if self.message else text


def insufficient_reason(resource: str) -> str:
    return "Too many pods" if resource == "pods" else f"Insufficient {resource}"
