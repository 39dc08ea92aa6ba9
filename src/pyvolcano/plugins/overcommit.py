"""overcommit (seed 000 §6.8): admit PodGroups while their minResources fit the cluster's allocatable times
``overcommit-factor`` (default 1.2; below 1 means the default) minus what is used and what admitted jobs
still wait for: the minResources of Inqueue groups, and for Running groups with at least minMember tasks
holding resources, the part of minResources they do not hold yet."""

from __future__ import annotations

import numpy as np

from pyvolcano.api.job_info import JobInfo
from pyvolcano.api.resource import less_equal_with_dimension
from pyvolcano.api.types import ALLOCATED, PodGroupPhase
from pyvolcano.framework.plugin import Plugin
from pyvolcano.framework.points import PERMIT, REJECT
from pyvolcano.framework.registry import register_plugin
from pyvolcano.framework.session import Session


def inqueue_resources(job: JobInfo, size: int) -> np.ndarray:
    """What an admitted job still needs of its minResources (Volcano's GetInqueueResource)."""
    return np.maximum(job.min_resources(size) - job.allocated, 0.0)


@register_plugin
class Overcommit(Plugin):
    name = "overcommit"

    def on_session_open(self, ssn: Session) -> None:
        factor = self.arguments.get_float("overcommit-factor", 1.2)
        if factor < 1.0:
            factor = 1.2
        mask = ssn.res.fair_mask
        used = ssn.nodes.used.sum(axis=0) if len(ssn.nodes) else ssn.res.zeros()
        idle = (ssn.total_resource * factor - used) * mask
        inqueue = ssn.res.zeros()
        for job in ssn.jobs.values():
            pg = job.podgroup
            if pg is None or not job.has_min_resources():
                continue
            if pg.phase == PodGroupPhase.Inqueue:
                inqueue += job.min_resources(ssn.res.size) * mask
            elif pg.phase == PodGroupPhase.Running and job.count(ALLOCATED) >= pg.min_member:
                # a running gang still holds back what its minResources promise beyond what it has
                inqueue += inqueue_resources(job, ssn.res.size) * mask
        state = {"inqueue": inqueue}

        def enqueueable(job: JobInfo) -> int:
            if not job.has_min_resources():
                return PERMIT
            need = job.min_resources(ssn.res.size) * mask
            if less_equal_with_dimension(state["inqueue"] + need, idle, need):
                return PERMIT
            job.enqueue_reason = (f"resource in cluster is overused: minResources {ssn.res.format(need)} do not "
                                  f"fit {factor:g}x allocatable minus used and inqueue")
            return REJECT

        def enqueued(job: JobInfo) -> None:
            if job.has_min_resources():
                state["inqueue"] = state["inqueue"] + job.min_resources(ssn.res.size) * mask
        ssn.add_fn("jobEnqueueable", self.name, enqueueable)
        ssn.add_fn("jobEnqueued", self.name, enqueued)
