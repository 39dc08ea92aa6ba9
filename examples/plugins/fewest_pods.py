"""The worked example of docs/extending.md: a ``launch`` action (the kind Volcano's
``pkg/scheduler/actions`` hold), done gang-aware.

Each pending task of each admitted, valid job goes to the node that holds the fewest pods, among the nodes
that pass every predicate and have the idle resources for it.  A job's placements are made in one
Statement, committed when the job is ready (gang plugin: minMember reached) and discarded otherwise, so a
gang is placed whole or not at all.  Ties between nodes go to the node listed first in the snapshot.

Use it without installing anything, by naming ``module:Class`` in the conf::

    actions: "enqueue, fewest_pods:FewestPods"

with ``examples/plugins`` on ``PYTHONPATH``.  An installed package would declare it instead under the
``pyvolcano.actions`` entry-point group and be named by the entry point's name.
"""

from __future__ import annotations

import numpy as np

from pyvolcano.api.job_info import JobInfo, TaskInfo
from pyvolcano.api.resource import EPS
from pyvolcano.api.types import TaskStatus
from pyvolcano.framework.action import Action
from pyvolcano.framework.session import Session
from pyvolcano.framework.statement import Statement
from pyvolcano.framework.util import PriorityQueue


class FewestPods(Action):
    """Place every pending task on the feasible node with the fewest pods."""

    name = "fewest-pods"

    def execute(self, ssn: Session) -> None:
        jobs: PriorityQueue[JobInfo] = PriorityQueue(ssn.job_cmp)
        for job in ssn.jobs.values():
            queue = ssn.queues.get(job.queue)
            # enqueue admits jobs; a job still Pending, invalid (too few pods for its gang) or in a closed
            # queue is left alone, as allocate does
            if job.is_pending() or queue is None or not queue.is_open() or ssn.job_valid(job) is not None:
                continue
            jobs.push(job)
        while not jobs.empty():
            self.place_job(ssn, jobs.pop())

    def place_job(self, ssn: Session, job: JobInfo) -> None:
        pending = PriorityQueue(ssn.task_cmp, list(job.index.get(TaskStatus.Pending, {}).values()))
        if pending.empty():
            return
        stmt = Statement(ssn)
        while not pending.empty():
            task = pending.pop()
            node = self.choose_node(ssn, task, job)
            if node is None:
                job.nodes_fit_errors[task.uid] = ssn.explain(task, job)  # shown as the job's reason
                break
            stmt.allocate(task, node)
        if ssn.job_ready(job):
            stmt.commit()  # the allocated tasks are bound
        else:
            stmt.discard()  # not enough of the gang fits: undo every placement of this job

    @staticmethod
    def choose_node(ssn: Session, task: TaskInfo, job: JobInfo) -> int | None:
        """Index of the node with the fewest pods among those passing the predicates with idle room."""
        nodes = ssn.nodes
        feasible = ssn.feasible_nodes(task, job)  # every predicate of the configured plugins
        fits = np.all(task.init_resreq < nodes.idle + EPS, axis=1)  # idle resources (Volcano's LessEqual)
        candidates = np.nonzero(feasible & fits)[0]
        if len(candidates) == 0:
            return None
        pods = np.array([len(nodes.tasks[i]) for i in candidates])  # len(node.Tasks) in Volcano
        return int(candidates[np.argmin(pods)])  # argmin: the first of equals
