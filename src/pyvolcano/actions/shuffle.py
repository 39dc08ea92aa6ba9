"""shuffle (``pkg/scheduler/actions/shuffle/shuffle.go``): evict what the ``victimTasks`` plugins name.

Every running task of the session's jobs is offered to the plugins' ``victimTasks`` functions (the union of a
tier's answers, the first tier with any victim deciding: ``Session.VictimTasks``), and each victim is evicted
with the reason ``shuffle``.  The plugins that name victims are ``tdm`` (preemptable pods on revocable nodes
whose zone is closed) and ``rescheduling`` (pods to move off overloaded nodes).  Volcano walks the victims in Go
map order; pyvolcano in the order the plugins gave them.  tdm's victims are the nodes' own task objects, which
Volcano's ``Session.Evict`` cannot evict cleanly (``framework/victims.py: evict_victim``).
"""

from __future__ import annotations

from pyvolcano.api.job_info import TaskInfo
from pyvolcano.api.types import TaskStatus
from pyvolcano.framework.action import Action
from pyvolcano.framework.incremental.contracts import Contract
from pyvolcano.framework.registry import register_action
from pyvolcano.framework.session import Session
from pyvolcano.framework.victims import evict_victim

REASON = "shuffle"


@register_action
class Shuffle(Action):
    name = "shuffle"
    # it offers Running tasks only; a blocked job holds nothing (framework/incremental/plan.py), so it never
    # looks at one.  Its evictions (Releasing pods) turn allocate's memo off for the rest of the session
    contracts = frozenset({Contract.LEAVES_BLOCKED})

    def execute(self, ssn: Session) -> None:
        tasks: list[TaskInfo] = [t for job in ssn.jobs.values()
                                 for t in job.index.get(TaskStatus.Running, {}).values()]
        for victim in ssn.victim_tasks(tasks):
            if victim.status != TaskStatus.Running or not victim.node_name:
                continue  # already evicted by this loop (two plugins named it): Volcano's Evict fails and goes on
            evict_victim(ssn, victim, REASON)
