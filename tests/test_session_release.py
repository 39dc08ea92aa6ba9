"""A session leaves no cyclic garbage (``Session.release``, called by ``run_session``): what it allocated is freed
by reference counting as soon as its result is built, so the collector's passes stay rare and memory flat."""

from __future__ import annotations

import gc

from pyvolcano.api.node_info import NodeArrays
from pyvolcano.conf.loader import load_conf_file
from pyvolcano.framework.cycle import run_session
from pyvolcano.framework.plugin import Plugin
from pyvolcano.framework.session import Session
from pyvolcano.sim.cluster import parse_cluster_spec
from pyvolcano.sim.engine import Simulator
from pyvolcano.sim.workload import synthetic


def test_sessions_leave_no_cyclic_garbage() -> None:
    queues = [{"kind": "Queue", "metadata": {"name": q}, "spec": {"weight": 1}} for q in ("a", "b")]
    sim = Simulator(parse_cluster_spec("8x{cpu: 8, memory: 32Gi, nvidia.com/gpu: 2}"), queues,
                    synthetic(seed=3, jobs=40, rate=1.0, queues={"a": 1, "b": 1}, mean_duration=30),
                    load_conf_file(None))
    sim.run(until=5.0)  # the cache filled, some pods running
    gc.collect()
    was = gc.isenabled()
    gc.disable()
    try:
        for _ in range(5):
            result = run_session(sim.cache, sim.conf)
            assert result.podgroups
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        knotted = [o for o in gc.garbage if isinstance(o, Session | Plugin | NodeArrays)]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if was:
            gc.enable()
    assert not knotted, f"{len(knotted)} session objects were only freed by the cyclic collector: {knotted[:3]}"
