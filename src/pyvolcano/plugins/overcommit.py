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
from pyvolcano.framework.points import PERMIT, REJECT, Vote
from pyvolcano.framework.registry import register_plugin
from pyvolcano.framework.session import Session
from pyvolcano.framework.state import StateKey


def reservations(jobs: list[JobInfo], size: int, *, queue_view: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Per job (one row each): what it holds back for admission and what it holds beyond minResources.

    Held back: an Inqueue group its minResources (overcommit, ``plugins/overcommit/overcommit.go:
    OnSessionOpen``); with ``queue_view`` (proportion and capacity, ``plugins/proportion/proportion.go:
    OnSessionOpen``) the part of minResources it does not hold yet (``plugins/util/util.go: GetInqueueResource``),
    as for a Running group with at least minMember tasks holding resources in both.  Groups without
    minResources hold nothing back.  Beyond (``api/job_info.go: GetElasticResources``): what it holds above
    minResources; a group without minResources has an empty minimum (``GetMinResources``), so everything it
    holds counts as elastic (only proportion and capacity read it).  One NumPy pass: overcommit and proportion
    need it over every job of every session."""
    inqueue, elastic = np.zeros((len(jobs), size)), np.zeros((len(jobs), size))
    rows, kinds, mins, held = [], [], [], []
    for k, job in enumerate(jobs):
        pg = job.podgroup
        if pg is None or pg.min_resources is None:
            if pg is not None:
                elastic[k] = np.maximum(job.allocated, 0.0)
            continue
        rows.append(k)
        mins.append(pg.min_resources)
        held.append(job.allocated)
        if pg.phase == PodGroupPhase.Inqueue:
            kinds.append(2 if queue_view else 1)
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


#: ``reservations`` (overcommit's view) over every job of the session, in ``ssn.jobs`` order
RESERVATIONS: StateKey[tuple[np.ndarray, np.ndarray]] = StateKey("overcommit-reservations")


def session_reservations(ssn: Session) -> tuple[np.ndarray, np.ndarray]:
    """``reservations`` over every job of the session, in ``ssn.jobs`` order, computed once per session (at open,
    before any plugin changes a job): it walks every job."""
    return ssn.state.read_or_init(RESERVATIONS, lambda: reservations(list(ssn.jobs.values()), ssn.res.size))


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

        def enqueueable(job: JobInfo) -> Vote:
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
        ssn.add_job_enqueueable_fn(self.name, enqueueable)
        ssn.add_job_enqueued_fn(self.name, enqueued)
