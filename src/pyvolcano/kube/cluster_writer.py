"""The Kubernetes ``ClusterWriter`` (``framework/result.py``): what ``framework.result.apply`` writes a session's
result to on a real cluster.

It only joins two of Volcano's seams (``pkg/scheduler/cache/interface.go``): binds and evictions go to the
``Binder`` and ``Evictor`` (``kube/binder.py``), PodGroup/Queue status, pod conditions and Events to the
``StatusUpdater`` (``kube/status.py``).  The simulator's implementation of the same Protocol is
``sim/engine.py: SimWriter``.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Set as AbstractSet

from pyvolcano.api.job_info import TaskInfo
from pyvolcano.framework.result import PodGroupStatus, QueueStatus
from pyvolcano.kube.binder import Binder
from pyvolcano.kube.status import StatusUpdater

__all__ = ["KubeWriter"]


class KubeWriter:
    """Binds and evictions to the ``Binder``, status to the ``StatusUpdater``.

    Status writes run in the background and may fail or be retried, so a status is settled only once its
    write-back found nothing to do (``StatusUpdater.settled``), never merely because it was handed over:
    ``settles_every_status`` is False, and ``apply`` hands this writer every status but the settled ones."""

    def __init__(self, binder: Binder, status: StatusUpdater) -> None:
        self.binder = binder
        self.status = status

    # --- Binder and Evictor ------------------------------------------------------------------------------
    def bind(self, task: TaskInfo, node: str) -> None:
        self.binder.bind(task, node)

    def evict(self, task: TaskInfo, reason: str) -> None:
        self.binder.evict(task, reason)

    # --- StatusUpdater ---------------------------------------------------------------------------------
    def update_podgroup_status(self, uid: str, status: PodGroupStatus) -> bool:
        return self.status.update_podgroup_status(uid, status)

    @property
    def settled(self) -> Mapping[str, PodGroupStatus]:
        """PodGroups whose write-back found nothing to do, with the status they were found quiet with
        (``StatusUpdater.settled``; ``framework/result.py: apply`` skips that object)."""
        return self.status.settled

    @property
    def settles_every_status(self) -> bool:
        """False: a status handed over is written in the background, and settled only when found quiet."""
        return False

    @property
    def unwritten(self) -> AbstractSet[str]:
        """Empty: ``apply`` reads it only from a writer that settles every status."""
        return frozenset()

    def pod_condition(self, pod: str, message: str, nominated: str = "") -> None:
        self.status.pod_condition(pod, message, nominated)

    def nominate(self, pod: str, node: str) -> None:
        self.status.nominate(pod, node)

    def update_queue_status(self, status: QueueStatus) -> None:
        self.status.update_queue_status(status)

    # --- the event recorder ----------------------------------------------------------------------------
    def event(self, kind: str, key: str, etype: str, reason: str, message: str) -> None:
        self.status.event(kind, key, etype, reason, message)
