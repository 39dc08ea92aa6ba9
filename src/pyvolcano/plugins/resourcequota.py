"""resourcequota (Volcano 1.9): admit a PodGroup only while its minResources fit its namespace's quotas.

For every ResourceQuota in the job's namespace, used (``status.used``, or what the namespace's pods hold
when the status is absent) plus what this session already admitted there plus the job's minResources must
stay within ``spec.hard`` (``status.hard`` when given) for each resource the quota names (``cpu`` and
``requests.cpu`` both mean the cpu request, likewise memory, and ``pods``/``count/pods``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pyvolcano.api.job_info import JobInfo
from pyvolcano.api.resource import EPS, amount
from pyvolcano.api.types import ALLOCATED
from pyvolcano.framework.plugin import Plugin
from pyvolcano.framework.points import PERMIT, REJECT
from pyvolcano.framework.registry import register_plugin
from pyvolcano.framework.session import Session


def quota_resource(name: str) -> str:
    for prefix in ("requests.", "count/"):
        if name.startswith(prefix):
            return name[len(prefix):]
    return name


def _vec(ssn: Session, rl: dict[str, Any] | None) -> tuple[np.ndarray, set[int]]:
    v = np.full(ssn.res.size, np.inf)
    dims: set[int] = set()
    for k, q in (rl or {}).items():
        name = quota_resource(str(k))
        i = ssn.res.pos.get(name)
        if i is None or str(k).startswith("limits."):
            continue
        v[i] = min(v[i], amount(name, q))
        dims.add(i)
    return v, dims


@register_plugin
class ResourceQuota(Plugin):
    name = "resourcequota"

    def on_session_open(self, ssn: Session) -> None:
        held: dict[str, np.ndarray] = {}
        for job in ssn.jobs.values():
            for t in job.tasks_in(ALLOCATED):
                held[t.namespace] = held.get(t.namespace, ssn.res.zeros()) + t.resreq
        pending: dict[str, np.ndarray] = {}

        def enqueueable(job: JobInfo) -> int:
            quotas = [q for q in ssn.snapshot.quotas
                      if ((q.get("metadata") or {}).get("namespace") or "default") == job.namespace]
            if not quotas or not job.has_min_resources():
                return PERMIT
            need = job.min_resources(ssn.res.size).copy()
            need[ssn.res.pos["pods"]] = max(need[ssn.res.pos["pods"]], job.min_available)
            for q in quotas:
                hard, dims = _vec(ssn, (q.get("status") or {}).get("hard") or (q.get("spec") or {}).get("hard"))
                used_rl = (q.get("status") or {}).get("used")
                used = _vec(ssn, used_rl)[0] if used_rl else held.get(job.namespace, ssn.res.zeros())
                used = np.where(np.isinf(used), 0.0, used)
                total = used + pending.get(job.namespace, ssn.res.zeros()) + need
                bad = [ssn.res.names[i] for i in sorted(dims) if total[i] > hard[i] + EPS]
                if bad:
                    name = (q.get("metadata") or {}).get("name")
                    job.enqueue_reason = (f"namespace {job.namespace} ResourceQuota {name} exceeded for "
                                          f"{', '.join(bad)}: PodGroup minResources do not fit its hard limit")
                    return REJECT
            pending[job.namespace] = pending.get(job.namespace, ssn.res.zeros()) + need
            return PERMIT
        ssn.add_fn("jobEnqueueable", self.name, enqueueable)
