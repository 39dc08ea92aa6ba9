"""The scheduler's informers: one ``Reflector`` per resource, feeding ``EventHandlers.on_event``, started in
dependency order.

Volcano's scheduler cache builds its informers in ``newSchedulerCache`` and starts them in ``Run``, then waits for
their first lists in ``WaitForCacheSync`` (``pkg/scheduler/cache/cache.go``) before the first session; this module
is that part, so that ``kube/scheduler.py`` is the loop and leadership only.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from pyvolcano.kube.reflector import Reflector
from pyvolcano.kube.resources import (
    HYPERNODE,
    NODE,
    NUMATOPOLOGY,
    PDB,
    POD,
    PODGROUP,
    PRIORITYCLASS,
    QUEUE,
    RESOURCEQUOTA,
    Resource,
)

__all__ = ["Informers"]

log = logging.getLogger(__name__)


class Informers:
    """The scheduler's reflectors in two groups: what the others refer to first, then the rest."""

    def __init__(self, api: Any, on_event: Callable[[str, dict[str, Any]], None], node_selector: str = "",
                 watch_timeout: int = 300) -> None:
        def refl(res: Resource, label_selector: str = "", optional: bool = False,
                 after: tuple[Reflector, ...] = ()) -> Reflector:
            return Reflector(api, res, on_event, label_selector=label_selector, watch_timeout=watch_timeout,
                             optional=optional, after=[r.synced for r in after])

        # order matters at start: priorities and queues before the pods and groups that refer to them; HyperNodes
        # (Volcano's hyperNodeInformer) are synced before the first session, so a job with a topology constraint
        # never sees a partial tree; a cluster without the HyperNode CRD is a cluster without HyperNodes (the same for
        # Numatopology objects, Volcano's numaInfoInformer, read by numa-aware).  All of them list at once; the
        # second group's lists reach the handlers only after the first group's (``after``)
        self.first = [refl(PRIORITYCLASS), refl(QUEUE), refl(NODE, node_selector), refl(HYPERNODE, optional=True),
                      refl(NUMATOPOLOGY, optional=True)]
        first = tuple(self.first)
        self.second = [refl(PODGROUP, after=first), refl(POD, after=first), refl(PDB, after=first),
                       refl(RESOURCEQUOTA, after=first)]
        self.reflectors = self.first + self.second

    def start(self, stop: threading.Event, timeout: float | None = None) -> bool:
        """Start the reflectors and wait for their first lists (False when ``stop`` is set or ``timeout`` passes
        first).  All of them send their list requests at once; the second group's are handed to the cache once
        the first group's are (``Reflector.after``): dependency order, without waiting for the API server's answer
        in between."""
        deadline = None if timeout is None else time.monotonic() + timeout
        for r in self.reflectors:
            r.start()
        for group in (self.first, self.second):
            for r in group:
                while not r.synced.wait(1.0):
                    if stop.is_set() or (deadline is not None and time.monotonic() > deadline):
                        return False
                    log.info("waiting for the %s informer to sync", r.res)
        return True

    def stop(self) -> None:
        for r in self.reflectors:
            r.stop()

    def dead(self) -> list[str]:
        """The resources whose started reflector thread has stopped (``/healthz``)."""
        return [str(r.res) for r in self.reflectors if r._thread is not None and not r.alive]
