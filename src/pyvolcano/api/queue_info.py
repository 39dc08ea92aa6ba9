"""QueueInfo: a ``scheduling.volcano.sh/v1beta1`` Queue as the scheduler reads it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pyvolcano.api.types import QueueState


@dataclass
class QueueInfo:
    """Capability is +inf where unset, guarantee 0 where unset; deserved is None unless the spec sets it."""

    name: str
    weight: int = 1
    capability: np.ndarray | None = None
    guarantee: np.ndarray | None = None
    deserved: np.ndarray | None = None
    reclaimable: bool = True
    state: QueueState = QueueState.Open
    parent: str = ""
    hierarchy: str = ""
    weights: str = ""
    priority: int = 0
    affinity: dict[str, Any] = field(default_factory=dict)
    creation: float = 0.0
    manifest: dict[str, Any] = field(default_factory=dict)
    capability_set: frozenset[str] = frozenset()
    guarantee_set: frozenset[str] = frozenset()
    deserved_set: frozenset[str] = frozenset()

    @property
    def uid(self) -> str:
        return self.name

    def is_open(self) -> bool:
        return self.state == QueueState.Open
