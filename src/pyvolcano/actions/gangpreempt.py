"""gangpreempt: a starving gang takes a whole domain's worth of room from lower-priority jobs of its queue at once
(Volcano master ed72c7c8, ``pkg/scheduler/actions/gangpreempt/gangpreempt.go``); the shared loop, bundles, domains
and dry run are in ``actions/_gang_evict.py``.

Candidates: running or bound, preemptable tasks of *other* jobs of the same queue whose job has a lower priority
than the starving job and may lose tasks (``volcano.sh/preemptable``, when the PodGroup says it).  Unlike preempt,
a BestEffort gang may take non-BestEffort pods (the plugins decide), and a job with a network topology is not
skipped.  Bundles of the job that job order puts last go first.  Arguments: ``maxDomains`` (8),
``allowWholeBundle`` (true).
"""

from __future__ import annotations

from collections.abc import Callable

from pyvolcano.actions._gang_evict import Bundle, GangEviction, preemptable_for_gang_eviction
from pyvolcano.actions._victims import PREEMPTABLE_STATUS
from pyvolcano.api.job_info import JobInfo, TaskInfo
from pyvolcano.framework.points import GANG_PREEMPT
from pyvolcano.framework.registry import register_action
from pyvolcano.framework.session import Session


@register_action
class GangPreempt(GangEviction):
    name = "gangpreempt"
    kind = GANG_PREEMPT

    def candidates(self, ssn: Session, job: JobInfo) -> list[TaskInfo]:
        out: list[TaskInfo] = []
        for victim in ssn.jobs.values():
            if victim.uid == job.uid or victim.queue != job.queue or victim.priority >= job.priority \
                    or not preemptable_for_gang_eviction(victim):
                continue
            out.extend(t for t in victim.tasks_in(PREEMPTABLE_STATUS) if t.preemptable)
        return out

    def first(self, ssn: Session, job: JobInfo) -> Callable[[Bundle, Bundle], int]:
        def later_job_first(a: Bundle, b: Bundle) -> int:
            if a.job.uid == b.job.uid:
                return 0
            return -1 if ssn.job_cmp(a.job, b.job) >= 0 else 1
        return later_job_first
