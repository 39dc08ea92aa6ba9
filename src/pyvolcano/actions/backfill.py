"""backfill (seed 000 §5.5): place BestEffort tasks (no requests) of admitted jobs.

They need no resources, only predicates (and a pod slot), so each goes to its best-scored feasible node.
"""

from __future__ import annotations

from pyvolcano.actions.allocate import schedulable_jobs
from pyvolcano.api.types import TaskStatus
from pyvolcano.framework.action import Action
from pyvolcano.framework.registry import register_action
from pyvolcano.framework.session import Session
from pyvolcano.framework.util import PriorityQueue


@register_action
class Backfill(Action):
    name = "backfill"

    def execute(self, ssn: Session) -> None:
        jobs = PriorityQueue(ssn.job_cmp, [j for j in schedulable_jobs(ssn, promote=False)
                                           if any(t.best_effort for t in j.index.get(TaskStatus.Pending, {}).values())])
        while not jobs.empty():
            job = jobs.pop()
            tasks = [t for t in job.index.get(TaskStatus.Pending, {}).values() if t.best_effort and not t.sch_gated]
            for task in sorted(tasks, key=lambda t: (t.creation, t.uid)):
                node, now = ssn.select_node(task, job)
                if node is None or not now:
                    job.nodes_fit_errors[task.uid] = ssn.explain(task, job)
                    continue
                ssn.allocate(task, node)
