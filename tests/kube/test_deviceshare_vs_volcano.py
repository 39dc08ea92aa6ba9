"""deviceshare scenarios (``tests/scenarios/deviceshare/``) against Volcano's own vc-scheduler (marked ``slow``).

The oracle cannot check devices: Volcano builds a node's device pool when the node enters its cache, and the
deviceshare switches (``deviceshare.VGPUEnable`` ...) are set only when the plugin is first built, in the first
session, so in the oracle every node enters before and has no devices.  These scenarios are confirmed on a fresh
kube-apiserver (``kube-up``) with Volcano's CRDs, controller and scheduler (``volcano-up``, Volcano ed72c7c8) running
each conf in turn: once vc-scheduler has run a session, each scenario's objects are created (nodes renamed with the
scenario's number; PodGroups and pods one second apart, so that Volcano sees the file's order), the pods Volcano
binds must be what the file expects, each on the expected node with the
expected annotations on the pod (``volcano.sh/vgpu-ids-new``, ``volcano.sh/gpu-index``: the GPUs Volcano chose,
written through the Binding), and a pod the file expects to wait must still be unbound a few seconds later, its
PodGroup's condition naming the file's reason.  Each scenario's pods are deleted before the next one's objects
are created.  A file's ``volcanoExpect`` replaces parts of its ``expect`` where Volcano decides differently
(docs/volcano-differences.md says why pyvolcano does not follow).  Then pyvolcano's own Kubernetes scheduler runs
the same files on the same server, and must bind as the files expect, its Bindings carrying the same annotations.
"""

from __future__ import annotations

import contextlib
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from pyvolcano.kube.client import ApiError, KubeClient
from pyvolcano.kube.resources import NAMESPACE, NODE, POD, PODGROUP
from pyvolcano.kube.scheduler import ConfFile, KubeScheduler, SchedulerOptions
from tests.kube import kubeserver
from tests.kube.cluster import renamed, wait
from tests.scenario_check import OWN, load

pytestmark = [pytest.mark.slow, pytest.mark.kube]

VOLCANO_UP = kubeserver.TOOLS / "volcano" / "volcano-up"
VOLCANO_DOWN = kubeserver.TOOLS / "volcano" / "volcano-down"
FILES = sorted((OWN / "deviceshare").glob("*.yaml"))
SETTLE = 5.0
ORDER_GAP = 1.1
#: annotations whose values hold a time or the node's name: compared only where the file asks for them
RENAMED = "volcano.sh/vgpu-node"


def _by_conf() -> dict[str, list[Path]]:
    groups: dict[str, list[Path]] = {}
    for f in FILES:
        groups.setdefault(load(f)["config"], []).append(f)
    return groups


def _check(api: KubeClient, path: Path, k: int, volcano: bool = True) -> list[str]:
    """Create scenario ``path``'s objects as scenario number ``k`` and compare what the running scheduler does
    with the file (``volcano``: with its ``volcanoExpect`` overrides)."""
    sc = load(path)
    objects, names = renamed(sc["objects"], k)
    ns = f"s{k}"
    api.create(NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    for kind, res in (("Node", NODE), ("PodGroup", PODGROUP), ("Pod", POD)):
        for o in objects:
            if o["kind"] == kind:
                if kind != "Node" and not (o.get("spec") or {}).get("nodeName"):
                    # Volcano orders jobs and tasks by creation time (whole seconds), then by uid: one second apart,
                    # they come in the file's order, as its creationTimestamps say
                    time.sleep(ORDER_GAP)
                api.create(res, o, o["metadata"].get("namespace"))
    pre = {f"{ns}/{o['metadata']['name']}" for o in objects if o["kind"] == "Pod" and o["spec"].get("nodeName")}
    expect = {**sc["expect"], **((sc.get("volcanoExpect") or {}) if volcano else {})}
    want = {f"{ns}/{p.split('/', 1)[1]}": (n if n == "*" else names[n]) for p, n in (expect.get("binds") or {}).items()}

    def pods() -> dict[str, dict[str, Any]]:
        return {f"{ns}/{p['metadata']['name']}": p for p in api.list(POD, ns)[0]}

    def bound() -> dict[str, str]:
        return {key: p["spec"]["nodeName"] for key, p in pods().items() if p["spec"].get("nodeName") and key not in pre}

    errors = []
    try:
        wait(lambda: set(bound()) >= set(want), 60, f"{path.name}: Volcano to bind {sorted(want)}")
    except AssertionError as exc:
        errors.append(f"{path.name}: {exc}; bound {bound()}")
    time.sleep(SETTLE)
    got = bound()
    if set(got) != set(want) or any(n != "*" and got.get(p) != n for p, n in want.items()):
        errors.append(f"{path.name}: Volcano bound {got}, the file expects {want}")
    now = pods()
    for pod, ann in (expect.get("annotations") or {}).items():
        have = (now.get(f"{ns}/{pod.split('/', 1)[1]}", {}).get("metadata") or {}).get("annotations") or {}
        for key, value in ann.items():
            value = names.get(value, value) if key == RENAMED else value
            if have.get(key) not in (value if isinstance(value, list) else [value]):
                errors.append(f"{path.name}: {pod} {key} is {have.get(key)!r} in Volcano, the file expects {value!r}")
    for pg, text in (expect.get("unschedulable") or {}).items():
        for n, m in names.items():
            text = text.replace(f"on node {n}", f"on node {m}")
        obj = api.get(PODGROUP, pg.split("/", 1)[1], ns)
        msgs = " | ".join(str(c.get("message", "")) for c in (obj.get("status") or {}).get("conditions") or [])
        if text not in msgs:
            errors.append(f"{path.name}: {pg}'s conditions say {msgs!r}, the file expects {text!r}")
    # the scenario's pods go (a pending one would otherwise be placed on the next scenario's nodes), then its nodes
    for key in pods():
        with contextlib.suppress(ApiError):
            api.delete(POD, key.split("/", 1)[1], ns, grace_period=0)
    for n in names.values():
        with contextlib.suppress(ApiError):
            api.delete(NODE, n)
    return errors


def test_deviceshare_scenarios_are_what_vc_scheduler_decides(tmp_path: Path) -> None:
    if not kubeserver.tools_available() or not VOLCANO_UP.exists():
        pytest.skip(kubeserver.HOW_TO_RUN)
    srv = kubeserver.up(kubeserver.new_dir())
    errors: list[str] = []
    log = ""
    try:
        api = KubeClient.from_config(srv.kubeconfig)
        k = 0
        for g, (text, files) in enumerate(_by_conf().items()):
            conf = tmp_path / f"volcano-scheduler-{g}.conf"
            conf.write_text(text)
            vdir = tmp_path / f"volcano-{g}"
            try:
                r = subprocess.run([str(VOLCANO_UP), srv.kubeconfig, str(vdir), "--conf", str(conf)],
                                   capture_output=True, text=True, timeout=300)
                assert r.returncode == 0, r.stderr[-2000:]
                time.sleep(3)  # a first session builds the plugin, which sets the device switches
                for path in files:
                    errors += _check(api, path, k)
                    k += 1
                if errors and not log:
                    log = (vdir / "logs" / "vc-scheduler.log").read_text()[-3000:]
            finally:
                subprocess.run([str(VOLCANO_DOWN), str(vdir)], capture_output=True, timeout=120)
        # pyvolcano's own Kubernetes scheduler on the same server and files: the same binds and annotations
        # (its Binding carries them), without the overrides
        for g, (text, files) in enumerate(_by_conf().items()):
            conf = tmp_path / f"pyvolcano-{g}.conf"
            conf.write_text(text)
            stop = threading.Event()
            sched = KubeScheduler(KubeClient.from_config(srv.kubeconfig), ConfFile(str(conf)),
                                  SchedulerOptions(period=0.2))
            thread = threading.Thread(target=sched.run, args=(stop,), daemon=True)
            thread.start()
            try:
                for path in files:
                    errors += [f"pyvolcano: {e}" for e in _check(api, path, k, volcano=False)]
                    k += 1
            finally:
                stop.set()
                sched.stop()
                thread.join(30)
        assert not errors, "\n".join(errors) + "\n" + log
    finally:
        srv.down()
