"""One timed scheduling session on a synthetic cluster (``pyvolcano bench``)."""

from __future__ import annotations

import resource
import sys
import time
from typing import Any

from pyvolcano.bench import synthetic
from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.conf.loader import SchedulerConf
from pyvolcano.framework.cycle import run_session
from pyvolcano.framework.result import SessionResult


def build(nodes: int, pods: int, gang: int, queues: int, *, running: int = 0, seed: int = 0) -> list[dict[str, Any]]:
    """Objects for a bench run; with ``running`` the cluster is full of low-priority pods and the backlog is
    high priority, so preempt has work."""
    node_objs = synthetic.nodes(nodes, seed)
    objs = [*synthetic.priority_classes(), *synthetic.queues(queues), *node_objs]
    if running:
        objs += synthetic.running(node_objs, running, 10, queues)
        objs += synthetic.backlog(pods, gang, queues, seed, priority="high", phase="Inqueue", templates=(0,),
                                  weights=(1,))
    else:
        objs += synthetic.backlog(pods, gang, queues, seed)
    return objs


def peak_rss_mb() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return r / 1024 / 1024 if sys.platform == "darwin" else r / 1024


def decisions(result: SessionResult) -> tuple[Any, ...]:
    """What a session decided, comparable across engines: binds, pipelined pods, evictions."""
    return (sorted(result.binds.items()), sorted(result.pipelined.items()),
            sorted(e.task.uid for e in result.evictions))


def run(objs: list[dict[str, Any]], conf: SchedulerConf, engine: str = "vector") -> tuple[dict[str, Any], SessionResult]:
    """Time one session; the summary is what ``pyvolcano bench -o json`` prints."""
    t0 = time.perf_counter()
    cache = SchedulerCache.from_objects(objs)
    load = time.perf_counter() - t0
    c0 = time.process_time()
    result = run_session(cache, conf, engine)
    cpu = time.process_time() - c0
    st = result.stats
    seconds: dict[str, float] = {"open": st.open_seconds, **st.action_seconds, "close": st.close_seconds}
    placed = len(result.binds) + len(result.pipelined)
    scheduling = sum(st.action_seconds.values())
    return {"nodes": result.nodes, "pods": result.pods,
            "placed": placed, "evictions": len(result.evictions),
            "seconds": {k: round(v, 4) for k, v in seconds.items()}, "load_seconds": round(load, 3),
            "pods_per_second": round(placed / scheduling, 1) if scheduling > 0 else None,
            "peak_rss_mb": round(peak_rss_mb(), 1), "engine": engine,
            # the session's process CPU time: on a shared machine, less sensitive to load than the wall times above
            "session_cpu_seconds": round(cpu, 3)}, result
