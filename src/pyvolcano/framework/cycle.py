"""One scheduling cycle from a cache: the single code path the CLI, the simulator and the Kubernetes mode share."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Protocol, TypeVar

from pyvolcano.api.job_info import TaskInfo
from pyvolcano.cache.cache import SchedulerCache, Snapshot
from pyvolcano.conf.loader import SchedulerConf
from pyvolcano.framework.result import SessionResult
from pyvolcano.framework.session import Session

T = TypeVar("T")


class SnapshotSource(Protocol):
    """What a session needs from a cache: a private snapshot (``SchedulerCache``, or the Kubernetes mode's cache
    behind its informers' lock)."""

    def snapshot(self) -> Snapshot: ...


def run_session(cache: SnapshotSource, conf: SchedulerConf, engine: str = "vector",
                record_ties: bool = False, explain: int = 0,
                on_dispatch: Callable[[TaskInfo], None] | None = None) -> SessionResult:
    """Snapshot the cache, run every configured action, close, and return the decisions (not applied; see
    ``framework.result.apply``).  Every front-end -- ``cycle``, ``simulate``, ``bench``, ``queues`` and the
    Kubernetes scheduler -- runs its sessions through here (Volcano's ``Scheduler.runOnce``,
    ``pkg/scheduler/scheduler.go``).  ``record_ties``: also fill ``SessionResult.ties`` (every best-scored node of
    each placement) and ``SessionResult.hypernode_ties`` (every best-scored hypernode of each job), for comparing with
    Volcano, which picks among equal nodes and hypernodes at random.  ``explain``: also fill
    ``SessionResult.scores`` with each pending pod's ``explain`` best nodes and every plugin's score on them.
    ``on_dispatch``: called with each task as the session dispatches it (``Session.on_dispatch``)."""
    ssn = Session(cache.snapshot(), conf, engine)
    ssn.on_dispatch = on_dispatch
    if record_ties:
        ssn.selector.ties = {}
        ssn.topology.ties = {}
    result = ssn.run(explain)
    ssn.release()
    return result


def inspect_session(cache: SnapshotSource, conf: SchedulerConf, look: Callable[[Session], T],
                    engine: str = "vector") -> T:
    """Open a session on the cache's snapshot, hand it to ``look`` as it stands once every plugin has opened
    (before any action), and release it: no action runs and nothing is decided.  ``pyvolcano explain`` reads a
    job's path through it (each enqueue plugin's vote, each node's refusals, ``framework/explain.py: job_path``);
    the session is dropped as ``run_session`` drops it."""
    ssn = Session(cache.snapshot(), conf, engine)
    try:
        ssn.open()
        return look(ssn)
    finally:
        ssn.release()


def cycle_objects(objects: Iterable[dict[str, Any]], conf: SchedulerConf, scheduler_name: str = "volcano",
                  engine: str = "vector", record_ties: bool = False) -> tuple[SessionResult, SchedulerCache]:
    cache = SchedulerCache.from_objects(objects, scheduler_name)
    return run_session(cache, conf, engine, record_ties), cache


def result_json(result: SessionResult) -> dict[str, Any]:
    """The ``pyvolcano cycle --output json`` contract (shared/scenarios/README.md)."""
    out = {
        "binds": dict(sorted(result.binds.items())),
        "evictions": sorted(e.task.uid for e in result.evictions),
        "pipelined": dict(sorted(result.pipelined.items())),
        "podgroups": {uid: {"phase": pg.phase} for uid, pg in sorted(result.podgroups.items())},
        "unschedulable": dict(sorted(result.unschedulable.items())),
        # pods whose status.nominatedNodeName the session writes (pipelined after evictions)
        "nominated": dict(sorted(result.nominated.items())),
    }
    if result.bind_annotations:  # the annotations bound pods carry (deviceshare's GPUs), only when there are any
        out["annotations"] = dict(sorted(result.bind_annotations.items()))
    return out
