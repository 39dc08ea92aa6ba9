"""Events per scheduled pod on a real kube-apiserver (issue 16): one ``Scheduled`` Event per pod, as
kube-scheduler; the "pod group is ready" Event only where it tells the user something its pods' Events do not.

``pyvolcano scheduler`` (default ``--podgroup-ready-events gangs``) drains five one-pod PodGroups, a gang of
three and a one-pod group that fits nowhere until a bigger node comes.  The Events in the namespace are what
it POSTed (its recorder only creates Events, it never patches a count), and what ``kubectl describe pod`` /
``kubectl describe podgroup`` would list (they select Events by ``involvedObject``).
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import pytest

from pyvolcano.kube.client import KubeClient
from pyvolcano.kube.resources import EVENT, PODGROUP
from tests.kube.cluster import Env, Kubelet, bound, mk_pod, mk_podgroup, scheduler, wait

pytestmark = [pytest.mark.kube]

ONE_POD_GROUPS = ("a", "b", "c", "d", "e")


def events(api: KubeClient, ns: str) -> Counter[tuple[str, str, str]]:
    """(involved kind, involved name, reason) of every Event in ``ns``, with how many Event objects each."""
    return Counter((e["involvedObject"].get("kind", ""), e["involvedObject"].get("name", ""), e.get("reason", ""))
                   for e in api.list(EVENT, ns)[0])


def phase(api: KubeClient, ns: str, name: str) -> str:
    return str((api.get(PODGROUP, name, ns).get("status") or {}).get("phase"))


def test_one_scheduled_event_per_pod(api: KubeClient, env: Env, procs, tmp_path: Path) -> None:
    env.node("n1", cpu="8")
    for g in ONE_POD_GROUPS:
        mk_podgroup(api, env, g, 1)
        mk_pod(api, env, f"{g}-0", g)
    mk_podgroup(api, env, "gang", 3)
    for i in range(3):
        mk_pod(api, env, f"gang-{i}", "gang")
    mk_podgroup(api, env, "big", 1)
    mk_pod(api, env, "big-0", "big", cpu="12")
    pods = [f"{g}-0" for g in ONE_POD_GROUPS] + [f"gang-{i}" for i in range(3)]
    procs.append(scheduler(tmp_path, "sched", env=env))
    with Kubelet(api, env.ns):
        wait(lambda: set(bound(api, env.ns)) == set(pods), 30, "the eight pods that fit bound")
        wait(lambda: events(api, env.ns)[("PodGroup", "big", "Unschedulable")] == 1, 20,
             "the big group's Unschedulable Event")
        env.node("n2", cpu="16")
        wait(lambda: "big-0" in bound(api, env.ns), 30, "big-0 bound on the new node")
        groups = (*ONE_POD_GROUPS, "gang", "big")
        wait(lambda: all(phase(api, env.ns, g) == "Running" for g in groups), 30, "every PodGroup Running")
        want = {("Pod", p, "Scheduled") for p in (*pods, "big-0")} | {("PodGroup", g, "Scheduled") for g in
                                                                       ("gang", "big")}
        wait(lambda: want <= set(events(api, env.ns)), 30, "the Scheduled Events")
        time.sleep(1.0)  # five more periods: nothing else may come
    ev = events(api, env.ns)
    # kubectl describe pod: exactly one Scheduled Event for each pod (never a second one: one bind each)
    assert {p: ev[("Pod", p, "Scheduled")] for p in (*pods, "big-0")} == dict.fromkeys((*pods, "big-0"), 1)
    # a one-pod group ready at its first try: its pod's Event is the only one, and the group's status says ready
    for g in ONE_POD_GROUPS:
        assert not [k for k in ev if k[:2] == ("PodGroup", g)], (g, ev)
        conds = {c["type"]: c for c in api.get(PODGROUP, g, env.ns)["status"]["conditions"]}
        assert conds["Scheduled"]["status"] == "True"
    # a gang, and a one-pod group that was Unschedulable first, keep Volcano's ready Event (once)
    assert ev[("PodGroup", "gang", "Scheduled")] == 1 and ev[("PodGroup", "big", "Scheduled")] == 1
    assert ev[("PodGroup", "big", "Unschedulable")] == 1 and ev[("Pod", "big-0", "FailedScheduling")] >= 1
    # Event POSTs per pod for the drain of the one-pod groups and the gang: one per pod, plus one per gang
    one_pod = sum(v for (_, name, _), v in ev.items() if name.split("-")[0] in ONE_POD_GROUPS)
    assert one_pod == len(ONE_POD_GROUPS)
    assert sum(v for (_, name, _), v in ev.items() if name.split("-")[0] == "gang") == 3 + 1
