"""overcommit (``pkg/scheduler/plugins/overcommit/overcommit.go``): admit PodGroups while their minResources fit the
cluster's allocatable times ``overcommit-factor`` (default 1.2; below 1 means the default) minus what is used and what
admitted jobs still wait for: the minResources of Inqueue groups, and for Running groups with at least minMember tasks
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


def reservations(jobs: list[JobInfo], size: int) -> tuple[np.ndarray, np.ndarray]:
    """Per job (one row each): what it holds back for admission (an Inqueue group its minResources, a Running
    group with minMember tasks holding resources the part of minResources it does not hold yet, Volcano's
    GetInqueueResource) and what it holds beyond minResources (GetElasticResources).  Rows of jobs without
    minResources are zero.  One NumPy pass: overcommit and proportion need it over every job of every session."""
    inqueue, elastic = np.zeros((len(jobs), size)), np.zeros((len(jobs), size))
    rows, kinds, mins, held = [], [], [], []
    for k, job in enumerate(jobs):
        pg = job.podgroup
        if pg is None or pg.min_resources is None:
            continue
        rows.append(k)
        mins.append(pg.min_resources)
        held.append(job.allocated)
        if pg.phase == PodGroupPhase.Inqueue:
            kinds.append(1)
        elif pg.phase == PodGroupPhase.Running and job.count(ALLOCATED) >= pg.min_member:
            kinds.append(2)
        else:
            kinds.append(0)
    if rows:
        at, kind = np.array(rows), np.array(kinds)
        m, h = np.array(mins).reshape(len(rows), size), np.array(held).reshape(len(rows), size)
        elastic[at] = np.maximum(h - m, 0.0)
        inqueue[at[kind == 1]] = m[kind == 1]
        inqueue[at[kind == 2]] = np.maximum(m - h, 0.0)[kind == 2]
    return inqueue, elastic


def session_reservations(ssn: Session) -> tuple[np.ndarray, np.ndarray]:
    """``reservations`` over every job of the session, in ``ssn.jobs`` order, computed once per session (at open,
    before any plugin changes a job): overcommit and proportion both need it, and it walks every job."""
    got = ssn.state.get("reservations")
    if got is None:
        got = ssn.state["reservations"] = reservations(list(ssn.jobs.values()), ssn.res.size)
    return got


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
        inqueue = session_reservations(ssn)[0].sum(axis=0) * mask
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
