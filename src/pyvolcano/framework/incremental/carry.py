"""Per-job values carried from one session to the next (issue 15: sessions whose cost follows what changed).

A session opens and closes over every live job, and most jobs are the same as in the last session: the cache's
job did not change, so the snapshot handed over the same clone again (``JobInfo.reuse``) or a fresh clone of the
same version.  What a session derives from such a job alone -- its reservations (overcommit, proportion), its
pending request, whether gang finds it valid, its PodGroup phase and task counts at close -- is then the same
too, so it is computed once and carried in ``JobInfo.derived``.

Why a carried value is exact:

* ``JobInfo.derived`` is one dict per *cache* job, shared by every clone of it (``clone`` and ``reuse`` copy the
  reference), created with the job and dropped with it, so a job deleted and created again under the same name
  starts empty.
* an entry is keyed by the cache job's ``version`` the clone was made at (``cloned_from``), and is only read or
  written while the clone is unchanged (``version == cloned_from``): the version moves with every change to the
  job's pods, their statuses or nodes and its PodGroup object (``cache/cache.py``), so two clones made at the same
  version hold the same tasks in the same statuses.  The one thing that changes in place without a new version is
  the PodGroup's phase (``SchedulerCache.set_podgroup_phase`` in the Kubernetes mode; enqueue and allocate's
  promotion on a session's clone), so entries that read the phase are keyed by ``(version, phase)``.
* a clone the session changed (a task placed, evicted, pipelined, even if a statement put it back) has a higher
  ``version`` than ``cloned_from`` and is computed afresh for the rest of that session; so is a job that is not a
  clone (``cloned_from == -1``: a snapshot built by hand in a test).

Sessions carry values exactly when they use the blocked-job memo (``Session.carry``: the snapshot has a memo);
``--full-sessions`` computes everything in every session, as before.

Nothing else is read: the session-specific parts of a result (conditions, fit errors, the jobValid message,
enqueue reasons) are added to the carried values by their callers.  ``tests/test_carry.py`` checks
each carried value against its computation after random changes, and ``tests/sim/test_memo.py`` whole
simulations against ``--full-sessions``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

from pyvolcano.api.job_info import JobInfo

T = TypeVar("T")


def unchanged(job: JobInfo) -> bool:
    """The job is a clone the session has not changed: values carried under its version apply to it."""
    return job.version == job.cloned_from >= 0


def carried(job: JobInfo, name: str, key: Any, compute: Callable[[JobInfo], T], enabled: bool = True) -> T:
    """``compute(job)``, or the value carried under ``name`` when ``key`` (which must include ``job.version``,
    and the PodGroup phase if ``compute`` reads it) is the key it was computed under.  A changed job is
    computed afresh and nothing is stored; so is every job when not ``enabled`` (``Session.carry``)."""
    if not enabled or job.version != job.cloned_from or job.cloned_from < 0:
        return compute(job)
    hit = job.derived.get(name)
    if hit is not None and hit[0] == key:
        return cast(T, hit[1])  # stored by this function under ``name``: a ``T``
    value = compute(job)
    job.derived[name] = (key, value)
    return value
