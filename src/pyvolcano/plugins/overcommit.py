"""overcommit (``pkg/scheduler/plugins/overcommit/overcommit.go``): admit PodGroups while their minResources fit the
cluster's allocatable times ``overcommit-factor`` (default 1.2; below 1 means the default) minus what is used and what
admitted jobs still wait for: the minResources of Inqueue groups, and for Running groups with at least minMember tasks
holding resources, the part of minResources they do not hold yet."""

from __future__ import annotations

from pyvolcano.api.job_info import JobInfo
from pyvolcano.api.resource import EPS
from pyvolcano.framework.incremental.contracts import Contract
from pyvolcano.framework.plugin import Plugin
from pyvolcano.framework.points import PERMIT, REJECT, Vote
from pyvolcano.framework.registry import register_plugin
from pyvolcano.framework.session import Session
from pyvolcano.plugins._shared import session_sums


@register_plugin
class Overcommit(Plugin):
    name = "overcommit"
    contracts = frozenset({Contract.FINGERPRINTED, Contract.ENQUEUE_VOTER})

    def on_session_open(self, ssn: Session) -> None:
        factor = self.arguments.get_float("overcommit-factor", 1.2)
        if factor < 1.0:
            factor = 1.2
        # plain floats over a handful of dimensions: the same IEEE operations as NumPy's on the rows (Volcano's
        # ``LessEqualWithDimension``, ``less_equal_with_dimension``; a float times the mask's True or False is NumPy's
        # times 1.0 or 0.0), without a NumPy call's cost here and on every waiting job's turn (enqueue's group
        # checks, every session the room came back)
        fair = ssn.res.fair_mask.tolist()
        idle = [(t * factor - u) * m for t, u, m in zip(ssn.total_resource.tolist(), ssn.nodes.used_total().tolist(),
                                                        fair, strict=True)]
        names = ssn.res.names
        state = {"inqueue": [q * m for q, m in zip(session_sums(ssn).inqueue_total().tolist(), fair, strict=True)]}

        def enqueueable(job: JobInfo) -> Vote:
            pg = job.podgroup
            if pg is None or pg.min_resources is None:  # ``has_min_resources``
                return PERMIT
            # one pass: need = minResources * mask, then Volcano's ``q + need < idle`` on the dimensions it names
            short = [i for i, (a, m, q, h) in enumerate(zip(pg.min_resources.tolist(), fair, state["inqueue"], idle,
                                                            strict=True))
                     if a * m > 0 and not q + a * m < h + EPS]
            if not short:
                return PERMIT
            # Volcano's text (``util.FormatResourceNames`` in overcommit's JobEnqueueableFn): the overused
            # resources, not amounts, so a job refused again for the same reason keeps last session's status
            job.enqueue_reason = "resource in cluster is overused: " + ", ".join(f"overused {names[i]}" for i in short)
            return REJECT

        def enqueued(job: JobInfo) -> None:
            pg = job.podgroup
            if pg is not None and pg.min_resources is not None:
                state["inqueue"] = [q + a * m for q, a, m in zip(state["inqueue"], pg.min_resources.tolist(), fair,
                                                                 strict=True)]
        ssn.add_job_enqueueable_fn(self.name, enqueueable)
        ssn.add_job_enqueued_fn(self.name, enqueued)
