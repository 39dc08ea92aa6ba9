"""The ``WhyPending`` Event on a real kube-apiserver (issue 30 item 1, ``kube/why.py``): a PodGroup that stays
unschedulable gets, besides Volcano's own ``Unschedulable`` condition and Event (their text unchanged), one
Event with the short reason and the best verified fix, as ``cycle -o wide`` gives them, and no second one while
nothing changes."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from pyvolcano.kube.client import KubeClient
from pyvolcano.kube.resources import EVENT, PODGROUP
from pyvolcano.kube.why import WHY_PENDING
from tests.kube.cluster import Env, bound, mk_pod, mk_podgroup, scheduler, wait

pytestmark = [pytest.mark.kube]


def pg_events(api: KubeClient, ns: str, name: str) -> list[dict[str, Any]]:
    return [e for e in api.list(EVENT, ns)[0]
            if e["involvedObject"].get("kind") == "PodGroup" and e["involvedObject"].get("name") == name]


def why(api: KubeClient, ns: str, name: str) -> list[str]:
    return [e["message"] for e in pg_events(api, ns, name) if e.get("reason") == WHY_PENDING]


def test_a_podgroup_too_big_for_the_cluster_is_told_why_and_what_fixes_it(api: KubeClient, env: Env, procs,
                                                                           tmp_path: Path) -> None:
    for n in ("n1", "n2", "n3"):
        env.node(n, cpu="8")
    mk_podgroup(api, env, "g", 4)  # 4 pods of 6 cpu: each fits a node, 3 fit at once
    for i in range(4):
        mk_pod(api, env, f"g-{i}", "g", cpu="6")
    mk_podgroup(api, env, "big", 1)  # larger than any node
    mk_pod(api, env, "big-0", "big", cpu="12")
    procs.append(scheduler(tmp_path, "sched", env=env))
    wait(lambda: why(api, env.ns, "g") and why(api, env.ns, "big"), 40, "the WhyPending Events")
    g, big = why(api, env.ns, "g")[0], why(api, env.ns, "big")[0]
    assert g.startswith("3 of 4 placed") and "fix: minAvailable 3 (from 4)" in g, g
    assert "pod big-0 requests 12 cpu (the largest node has 8): larger than any node" in big, big
    assert "fix: " in big, big
    for name, ev in (("g", g), ("big", big)):
        e = next(e for e in pg_events(api, env.ns, name) if e.get("reason") == WHY_PENDING)
        assert e["type"] == "Normal" and e["source"]["component"] == "volcano", e
        # Volcano's own words are kept as Volcano writes them: the condition and its Warning Event
        cond = next(c for c in api.get(PODGROUP, name, env.ns)["status"]["conditions"]
                    if c["type"] == "Unschedulable")
        assert "tasks in gang unschedulable" in cond["message"] and ev not in cond["message"], cond
        assert "fix:" not in cond["message"]
        volcano = [e for e in pg_events(api, env.ns, name) if e.get("reason") == "Unschedulable"]
        assert volcano and all(e["type"] == "Warning" and "fix:" not in e["message"] for e in volcano)
    time.sleep(2.0)  # ten more sessions, nothing changed: no second Event
    assert len(why(api, env.ns, "g")) == 1 and len(why(api, env.ns, "big")) == 1
    assert not bound(api, env.ns)
