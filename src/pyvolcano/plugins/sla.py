"""sla (Volcano 1.9): a job that has waited its SLA waiting time is admitted and kept, and jobs with the
earliest deadline go first.

The waiting time is the PodGroup annotation ``sla-waiting-time`` (a Go duration such as ``30m``) or, when a
job has none, the plugin argument ``sla-waiting-time``.  Job order: jobs with a waiting time before jobs
without; among them the earlier deadline (creation + waiting time) first.  jobEnqueueable and jobPipelined
vote Permit once ``now - creation >= waiting time`` (so a Permit in an earlier tier admits the job without
asking later tiers, as Volcano's vote does) and abstain before.  ``now`` is the snapshot's clock, or the wall
clock when the snapshot has none (``pyvolcano cycle`` on a manifest file).
"""

from __future__ import annotations

import time

from pyvolcano.api.job_info import JobInfo
from pyvolcano.api.types import SLA_WAITING_TIME
from pyvolcano.errors import ManifestError
from pyvolcano.framework.arguments import parse_duration
from pyvolcano.framework.plugin import Plugin
from pyvolcano.framework.points import ABSTAIN, PERMIT, Vote
from pyvolcano.framework.registry import register_plugin
from pyvolcano.framework.session import Session


def job_waiting_time(job: JobInfo, default: float | None) -> float | None:
    """The job's own annotation, else the plugin default; a bad annotation names the PodGroup."""
    pg = job.podgroup
    raw = pg.annotations.get(SLA_WAITING_TIME) if pg is not None else None
    if raw in (None, ""):
        return default
    try:
        w = parse_duration(str(raw))
    except ValueError as exc:
        raise ManifestError(f"PodGroup {job.uid}", f"metadata.annotations.{SLA_WAITING_TIME}", str(exc)) from None
    return w if w > 0 else default  # Volcano ignores a waiting time that is not positive


@register_plugin
class SLA(Plugin):
    name = "sla"

    def on_session_open(self, ssn: Session) -> None:
        default = self.arguments.get_duration(SLA_WAITING_TIME, None)
        if default is not None and default <= 0:  # Volcano warns and runs without a global waiting time
            default = None
        now = ssn.now or time.time()
        waits: dict[str, float | None] = {}
        for uid, job in ssn.jobs.items():
            try:
                waits[uid] = job_waiting_time(job, default)
            except ManifestError as exc:  # one bad annotation must not stop the cycle: ignore it, say why
                waits[uid] = default
                job.enqueue_reason = str(exc)

        def deadline(job: JobInfo) -> float | None:
            w = waits.get(job.uid)
            return None if w is None else job.creation + w

        def job_order(left: JobInfo, right: JobInfo) -> int:
            ld, rd = deadline(left), deadline(right)
            if ld is None and rd is None:
                return 0
            if ld is None:
                return 1
            if rd is None:
                return -1
            return 0 if ld == rd else (-1 if ld < rd else 1)
        ssn.add_job_order_fn(self.name, job_order)

        def waited(job: JobInfo) -> Vote:
            d = deadline(job)
            return PERMIT if d is not None and now >= d else ABSTAIN
        ssn.add_job_enqueueable_fn(self.name, waited)
        ssn.add_job_pipelined_fn(self.name, waited)
