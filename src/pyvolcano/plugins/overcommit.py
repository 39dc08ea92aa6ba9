"""overcommit (``pkg/scheduler/plugins/overcommit/overcommit.go``): admit PodGroups while their minResources fit the
cluster's allocatable times ``overcommit-factor`` (default 1.2; below 1 means the default) minus what is used and what
admitted jobs still wait for: the minResources of Inqueue groups, and for Running groups with at least minMember tasks
holding resources, the part of minResources they do not hold yet."""

from __future__ import annotations

import numpy as np

from pyvolcano.api.job_info import JobInfo
from pyvolcano.api.resource import less_equal_with_dimension
from pyvolcano.api.types import ALLOCATED, PodGroupPhase, TaskStatus
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


def _job_rows(job: JobInfo) -> np.ndarray:
    """One job's rows of ``JobSums``: what it holds (``allocated``), what its pending pods request, what it
    holds back for admission in overcommit's and in the queue view, and what it holds beyond minResources --
    ``reservations`` for one job, row for row the same numbers."""
    size = job.allocated.shape[0]
    out = np.zeros((5, size))
    out[0] = job.allocated
    pending = job.index.get(TaskStatus.Pending)
    if pending:
        req = out[1]
        for t in pending.values():
            req += t.resreq
    pg = job.podgroup
    if pg is None:
        return out
    if pg.min_resources is None:
        out[4] = np.maximum(job.allocated, 0.0)
        return out
    m, h = pg.min_resources, job.allocated
    out[4] = np.maximum(h - m, 0.0)
    if pg.phase == PodGroupPhase.Inqueue:
        out[2] = m
        out[3] = np.maximum(m - h, 0.0)
    elif pg.phase == PodGroupPhase.Running and job.count(ALLOCATED) >= pg.min_member:
        out[2] = out[3] = np.maximum(m - h, 0.0)
    return out


class JobSums:
    """Every job's ``_job_rows`` at session open, stacked in ``ssn.jobs`` order (``rows``: jobs x 5 x
    resources): allocated, pending request, held back (overcommit), held back (proportion/capacity), elastic.

    A job's rows depend on its pods and PodGroup only, so an unchanged job's rows are carried from the last
    session (``framework/carry.py``, keyed by version and phase) and a session costs one dictionary look-up per
    job and one stacking of the rows; the sums over the rows are the same NumPy reductions as before, over the same
    matrix, so the same numbers."""

    def __init__(self, ssn: Session) -> None:
        self.jobs = list(ssn.jobs.values())
        size = ssn.res.size
        rows = []
        carry = ssn.carry
        for job in self.jobs:
            pg = job.podgroup
            if carry and job.version == job.cloned_from >= 0:
                key = (job.version, pg.phase if pg is not None else None)
                hit = job.derived.get("job-rows")
                if hit is not None and hit[0] == key:
                    rows.append(hit[1])
                    continue
                r = _job_rows(job)
                job.derived["job-rows"] = (key, r)
                rows.append(r)
            else:
                rows.append(_job_rows(job))
        self.rows = np.array(rows).reshape(len(rows), 5, size) if rows else np.zeros((0, 5, size))

    def reservations(self, *, queue_view: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """``reservations(self.jobs, size, queue_view=...)``."""
        return self.rows[:, 3 if queue_view else 2], self.rows[:, 4]


#: ``JobSums`` over every job of the session, in ``ssn.jobs`` order
JOB_SUMS: StateKey[JobSums] = StateKey("job-sums")


def session_sums(ssn: Session) -> JobSums:
    """``JobSums`` of the session, computed once per session (at open, before any plugin changes a job)."""
    return ssn.state.read_or_init(JOB_SUMS, lambda: JobSums(ssn))


def session_reservations(ssn: Session) -> tuple[np.ndarray, np.ndarray]:
    """``reservations`` (overcommit's view) over every job of the session, in ``ssn.jobs`` order."""
    return session_sums(ssn).reservations()


@register_plugin
class Overcommit(Plugin):
    name = "overcommit"

    def on_session_open(self, ssn: Session) -> None:
        factor = self.arguments.get_float("overcommit-factor", 1.2)
        if factor < 1.0:
            factor = 1.2
        mask = ssn.res.fair_mask
        used = ssn.nodes.used_total()
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
