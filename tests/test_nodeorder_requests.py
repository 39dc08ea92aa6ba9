"""nodeorder's Kubernetes node view (``K8sNodeRequests``) is built when first read, from what the session held as
it opened: read before or after the session's placements, with or without the events that keep it, it is the
map built at open and kept (or not) by those events."""

from __future__ import annotations

import numpy as np

from pyvolcano.api.types import TaskStatus
from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.conf.loader import load_conf_file
from pyvolcano.framework.session import Session
from pyvolcano.plugins.nodeorder import K8sNodeRequests
from tests.kube.helpers import node, pod, podgroup, queue


def _session() -> Session:
    cache = SchedulerCache()
    for i in range(3):
        cache.upsert(node(f"n{i}", cpu="8", memory="16Gi"))
    cache.upsert(queue("q", weight=1))
    cache.upsert(podgroup("g", queue="q", min_member=1))
    cache.upsert(pod("run", "g", cpu="2", memory="3Gi", node_name="n1", phase="Running"))
    for k in range(3):
        cache.upsert(pod(f"p{k}", "g", cpu=str(k + 1)))
    ssn = Session(cache.snapshot(), load_conf_file(None))
    ssn.open()
    return ssn


def test_read_late_is_the_view_built_at_open_and_kept_by_the_events() -> None:
    ssn = _session()
    eager = K8sNodeRequests(ssn, track=True)
    at_open = eager.both.copy()  # read at once: built as the session opens
    lazy = K8sNodeRequests(ssn, track=True)
    frozen = K8sNodeRequests(ssn, track=False)
    job = next(iter(ssn.jobs.values()))
    pending = [t for t in job.tasks.values() if t.status == TaskStatus.Pending]
    ssn.place(pending[0], 0, TaskStatus.Allocated)  # the lazy view's first event builds it from the open state
    ssn.place(pending[1], 2, TaskStatus.Allocated)
    ssn.unplace(pending[0])
    ssn.place(pending[2], 0, TaskStatus.Allocated)
    assert not np.array_equal(eager.both, at_open)  # the events moved the map
    assert lazy.both.tobytes() == eager.both.tobytes()
    assert lazy.req.tobytes() == eager.req.tobytes() and lazy.nz.tobytes() == eager.nz.tobytes()
    # without the events (no predicates plugin) the map stays as the session opened, though ``nodes.used`` moved
    assert frozen.both.tobytes() == at_open.tobytes()
    assert not np.array_equal(ssn.nodes.used[:, :2], at_open[:, :2])
