"""resourcequota (Volcano 1.9): admit a PodGroup only while its minResources fit its namespace's quotas.

Volcano's check, name for name: for every ResourceQuota of the job's namespace, the PodGroup's
``spec.minResources`` is cut down to the resource names the quota's ``hard`` lists *literally*; used (the
quota's ``status.used``) plus what this session already admitted in the namespace plus that cut-down request
must stay within ``hard`` for each of those names.  So a quota on ``cpu``/``memory``/``nvidia.com/gpu``
limits admission, while ``requests.cpu``, ``requests.nvidia.com/gpu``, ``pods`` or ``count/pods`` -- names a
PodGroup's minResources never carries -- do not (docs/queues.md lists this among Volcano's gaps).

``status.hard``/``status.used`` are what the quota controller maintains; for a manifest without a status,
``spec.hard`` is used and ``used`` is what the namespace's running pods request, as the controller would count.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pyvolcano.api.job_info import JobInfo
from pyvolcano.api.resource import EPS, amount
from pyvolcano.api.types import ALLOCATED
from pyvolcano.framework.plugin import Plugin
from pyvolcano.framework.points import PERMIT, REJECT, Vote
from pyvolcano.framework.registry import register_plugin
from pyvolcano.framework.session import Session


def requested_names(job: JobInfo, size: int, names: tuple[str, ...]) -> set[str]:
    """The resource names the PodGroup's minResources carries (its manifest's keys; for a PodGroup pyvolcano
    made for a bare pod, the resources the pod requests)."""
    pg = job.podgroup
    spec = ((pg.manifest or {}).get("spec") or {}) if pg is not None else {}
    rl = spec.get("minResources")
    if isinstance(rl, dict):
        return {str(k) for k in rl}
    v = job.min_resources(size)
    return {n for i, n in enumerate(names) if v[i] > 0}


@register_plugin
class ResourceQuota(Plugin):
    name = "resourcequota"
    # No contract: its vote counts a job it admitted only in the session that admitted it (``pending``); from the
    # next session on the job's pods count for nothing until they are bound (``held``), so a refusal can lift with
    # no change that moves the cache's epochs (an admission does not).

    def on_session_open(self, ssn: Session) -> None:
        res = ssn.res
        held: dict[str, np.ndarray] = {}
        for job in ssn.jobs.values():
            for t in job.tasks_in(ALLOCATED):
                held[t.namespace] = held.get(t.namespace, res.zeros()) + t.resreq
        pending: dict[str, np.ndarray] = {}

        def enqueueable(job: JobInfo) -> Vote:
            quotas = [q for q in ssn.snapshot.quotas
                      if ((q.get("metadata") or {}).get("namespace") or "default") == job.namespace]
            if not quotas or not job.has_min_resources():
                return PERMIT
            need = job.min_resources(res.size)
            asked = requested_names(job, res.size, res.names)
            for q in quotas:
                status = q.get("status") or {}
                hard: dict[str, Any] = status.get("hard") or (q.get("spec") or {}).get("hard") or {}
                used_rl: dict[str, Any] | None = status.get("used")
                bad = []
                for name in sorted(asked & {str(k) for k in hard}):
                    i = res.pos.get(name)
                    if i is None:
                        continue
                    if used_rl is not None:
                        used = amount(name, used_rl[name]) if name in used_rl else 0.0
                    else:
                        used = float(held.get(job.namespace, res.zeros())[i])
                    total = used + float(pending.get(job.namespace, res.zeros())[i]) + float(need[i])
                    if total > amount(name, hard[name]) + EPS:
                        bad.append(name)
                if bad:
                    qname = (q.get("metadata") or {}).get("name")
                    job.enqueue_reason = (f"namespace {job.namespace} ResourceQuota {qname} exceeded for "
                                          f"{', '.join(bad)}: PodGroup minResources do not fit its hard limit")
                    return REJECT
            pending[job.namespace] = pending.get(job.namespace, res.zeros()) + need
            return PERMIT
        ssn.add_job_enqueueable_fn(self.name, enqueueable)
