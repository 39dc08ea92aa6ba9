"""Job order as a sort key, where every jobOrder function of the session allows it (issue 15: sessions whose
cost follows what changed).

Volcano orders jobs with ``Session.JobOrderFn`` (``pkg/scheduler/framework/session_plugins.go``): the first
plugin, tier by tier, whose comparison is not 0 decides, else the older job, then the smaller uid
(``Session.job_cmp``).  Every heap comparison asks every plugin again; gang's asks whether each job is ready,
which counts its tasks by status, so ordering a backlog of n jobs costs about 2 n log n of those recounts.

The built-in job orders are all "compare one value of each job" (priority: the job's priority, higher first;
gang: ready after not ready; drf: the dominant share, smaller first).  A plugin says so by registering its
comparison through ``keyed`` with the value it compares; when *every* registered jobOrder function carries such
a value, the session's order is exactly the lexicographic order of the tuple ``(value of each function, in tier
order..., creation, uid)``: a tuple comparison stops at the first part that differs, as ``combine``'s
FIRST_DECIDES stops at the first comparison that is not 0, and the fallback is the tuple's tail.  The uid makes
it a total order (two jobs never share one), so a heap over keys pops the jobs in the very order a heap over the
comparison pops them, whatever the insertion order, *as long as no job's value changes while it waits*: the
callers use keys only where that holds (enqueue: admitting a job changes no other job's readiness, share or
priority).  A session with any jobOrder function without a value (sla's, a user plugin's) keeps the comparison.

Task order is the same (``Session.task_cmp``, Volcano's ``TaskOrderFn``: the first deciding plugin, else the older
task, then the smaller uid): priority's is "the task's priority, higher first", a value fixed for the session, so
allocate's per-job task heaps (``task_order_key``) compare tuples in C instead of asking the plugins at each sift.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from pyvolcano.api.job_info import JobInfo, TaskInfo

if TYPE_CHECKING:
    from pyvolcano.framework.session import Session

JobCmp = Callable[[JobInfo, JobInfo], int]
JobKey = Callable[[JobInfo], Any]
C = TypeVar("C", bound=Callable[..., int])


def keyed(cmp: C, key: Callable[[Any], Any]) -> C:
    """Mark ``cmp`` as "compare ``key`` of both items (jobs or tasks), smaller first": ``cmp(a, b)`` must be
    ``-1 if key(a) < key(b) else 1 if key(a) > key(b) else 0`` for every pair of the session.  Returns ``cmp``
    itself, so ``ssn.add_job_order_fn(name, keyed(cmp, key))`` registers the comparison unchanged."""
    cmp.order_key = key  # type: ignore[attr-defined]
    return cmp


def _keys(ssn: Session, point: str) -> list[Callable[[Any], Any]] | None:
    """The value each registered ``point`` function compares, in tier order; None if one has none."""
    parts: list[Callable[[Any], Any]] = []
    for tier in ssn.fns.get(point, ()):
        for _, fn in tier:
            k = getattr(fn, "order_key", None)
            if k is None:
                return None
            parts.append(k)
    return parts


def task_order_key(ssn: Session) -> Callable[[TaskInfo], tuple[Any, ...]] | None:
    """The session's task order as a key function: (each taskOrder function's value in tier order, creation,
    uid), or None when some registered taskOrder function has no key (then callers use ``Session.task_cmp``).
    Exact for heaps whose tasks' values do not change while they wait (a task's priority does not)."""
    parts = _keys(ssn, "taskOrder")
    if parts is None:
        return None
    if len(parts) == 1:  # the default conf's priority alone
        (a,) = parts
        return lambda t: (a(t), t.creation, t.uid)
    return lambda t: (*[p(t) for p in parts], t.creation, t.uid)


def job_order_key(ssn: Session) -> Callable[[JobInfo], tuple[Any, ...]] | None:
    """The session's job order as a key function (see the module docstring), or None when some registered
    jobOrder function has no key (then callers use ``Session.job_cmp``)."""
    parts = _keys(ssn, "jobOrder")
    if parts is None:
        return None
    if len(parts) == 3:  # the default conf's priority, gang, drf: spelled out, a backlog asks it per job
        a, b, c = parts
        return lambda j: (a(j), b(j), c(j), j.creation, j.uid)
    return lambda j: (*[p(j) for p in parts], j.creation, j.uid)


def ordered(jobs: list[JobInfo], key: Callable[[JobInfo], tuple[Any, ...]]) -> list[JobInfo]:
    """``jobs`` in job order, *last first*: callers pop from the end."""
    return sorted(jobs, key=key, reverse=True)
