"""When allocate may dry-run a gradient's candidate hypernodes best score first and stop at the first success.

Volcano's ``allocateForJob`` (``pkg/scheduler/actions/allocate/allocate.go``) dry-runs the whole job in every
candidate of a gradient and keeps the best-scoring solution; with 300 leaves in a gradient that is 300 dry runs per
gang.  The choice is the same from far fewer dry runs when each candidate's score is known before its dry run and
does not depend on which other candidates succeed.  That holds when:

* every candidate has no child hypernode: its sub-group search (``allocateForSubJob``) then has the candidate
  itself as its only gradient, so the sub-group's score is ``HyperNodeOrderFn`` on that one hypernode, taken in
  the session as it is before the dry run (``SessionTopology.order_alone`` gives all of them in one call);
* no task can be pipelined: with nothing releasing and nothing pipelined on any node, future idle is idle, so a
  dry run ends ready or places nothing that counts, after one sub-group pass (a pipelined-but-not-ready job would
  take a second pass and add its score);
* readiness is gang's alone (``jobReady``/``jobPipelined`` registered only by plugins that declare
  ``Contract.GANG_READINESS``), so "pipelined" cannot hold
  without pipelined tasks;
* the job has only its default sub-group (every job today: ``subGroupPolicy`` is not read yet).  With several
  sub-groups a candidate's score is the sum of its sub-groups' scores, each taken after the previous sub-groups'
  placements, which ``order_alone`` does not predict: sub-group support must add that condition here.

Every dry run is undone exactly (node arrays and plugin state hold integral resource amounts), so the candidates
tried later see the session as the plain loop's would.  ``actions/_hypernode.py: _search_by_score`` does the
search; ``tests/test_topology_trials.py`` checks it against the plain loop on random topologies and gangs.
"""

from __future__ import annotations

import numpy as np

from pyvolcano.api.job_info import JobInfo
from pyvolcano.framework.incremental.contracts import Contract
from pyvolcano.framework.points import JOB_PIPELINED, JOB_READY
from pyvolcano.framework.session import Session

#: set False to force the plain loop (the equivalence test compares both)
ENABLED = True


def _readiness_known(ssn: Session) -> bool:
    """jobReady and jobPipelined are registered only by plugins that decide them as gang does (the ordered search
    knows those votes, ``Contract.GANG_READINESS``)."""
    return all(ssn.registered_only_by(point, Contract.GANG_READINESS) for point in (JOB_READY, JOB_PIPELINED))


def ordered_trials(ssn: Session, job: JobInfo, gradient: list[int]) -> np.ndarray | None:
    """Each candidate's score (``order(job, [h])[h]``) when the ordered search applies to this gradient, else
    None (the plain loop over every candidate)."""
    if not ENABLED or len(gradient) < 2:
        return None
    children = ssn.topology.topo.children
    if any(children[h] for h in gradient):
        return None
    nodes = ssn.nodes
    if nodes.releasing.any() or nodes.pipelined.any() or not _readiness_known(ssn):
        return None
    return ssn.topology.order_alone(job, gradient)
