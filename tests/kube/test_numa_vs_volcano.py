"""numa-aware scenarios (``tests/scenarios/numaaware/``) against Volcano's own vc-scheduler (marked ``slow``).

The oracle cannot load Numatopology objects, so these scenarios are confirmed on a fresh kube-apiserver
(``kube-up``) with Volcano's CRDs, controller and scheduler (``volcano-up``, Volcano ed72c7c8) running the
scenario's conf: each scenario's objects are created (its nodes renamed with the scenario's number, so that no pod
can land on an earlier scenario's nodes, which are deleted anyway), and the pods Volcano binds must be what the file
expects; pods the file expects to wait must still be unbound a few seconds after the others.  Every file of the
directory must share one conf (vc-scheduler runs one).
"""

from __future__ import annotations

import contextlib
import subprocess
import time
from pathlib import Path

import pytest

from pyvolcano.kube.client import ApiError, KubeClient
from pyvolcano.kube.resources import NAMESPACE, NODE, NUMATOPOLOGY, POD, PODGROUP
from tests.kube import kubeserver
from tests.kube.cluster import renamed, wait
from tests.scenario_check import OWN, load

pytestmark = [pytest.mark.slow, pytest.mark.kube]

VOLCANO_UP = kubeserver.TOOLS / "volcano" / "volcano-up"
VOLCANO_DOWN = kubeserver.TOOLS / "volcano" / "volcano-down"
FILES = sorted((OWN / "numaaware").glob("*.yaml"))
SETTLE = 5.0


def test_numa_scenarios_are_what_vc_scheduler_decides(tmp_path: Path) -> None:
    if not kubeserver.tools_available() or not VOLCANO_UP.exists():
        pytest.skip(kubeserver.HOW_TO_RUN)
    confs = {load(f)["config"] for f in FILES}
    assert len(confs) == 1, "every numaaware scenario must use the same conf"
    conf = tmp_path / "volcano-scheduler.conf"
    conf.write_text(confs.pop())
    srv = kubeserver.up(kubeserver.new_dir())
    vdir = tmp_path / "volcano"
    errors: list[str] = []
    try:
        api = KubeClient.from_config(srv.kubeconfig)
        r = subprocess.run([str(VOLCANO_UP), srv.kubeconfig, str(vdir), "--conf", str(conf)], capture_output=True,
                           text=True, timeout=300)
        assert r.returncode == 0, r.stderr[-2000:]
        for k, path in enumerate(FILES):
            sc = load(path)
            objects, names = renamed(sc["objects"], k)
            api.create(NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": f"s{k}"}})
            for kind, res in (("Node", NODE), ("Numatopology", NUMATOPOLOGY), ("PodGroup", PODGROUP), ("Pod", POD)):
                for o in objects:
                    if o["kind"] == kind:
                        api.create(res, o, o["metadata"].get("namespace"))
            want = {f"s{k}/{p.split('/', 1)[1]}": (n if n == "*" else names[n])
                    for p, n in (sc["expect"].get("binds") or {}).items()}

            def bound(ns: str = f"s{k}") -> dict[str, str]:
                return {f"{ns}/{p['metadata']['name']}": p["spec"]["nodeName"]
                        for p in api.list(POD, ns)[0] if p["spec"].get("nodeName")}
            try:
                wait(lambda want=want: set(bound()) >= set(want), 60, f"{path.name}: Volcano to bind {sorted(want)}")
            except AssertionError as exc:
                errors.append(f"{path.name}: {exc}; bound {bound()}")
            time.sleep(SETTLE)
            got = bound()
            if set(got) != set(want) or any(n != "*" and got.get(p) != n for p, n in want.items()):
                errors.append(f"{path.name}: Volcano bound {got}, the file expects {want}")
            for n in names.values():
                with contextlib.suppress(ApiError):
                    api.delete(NODE, n)
        assert not errors, "\n".join(errors) + "\n" + (vdir / "logs" / "vc-scheduler.log").read_text()[-3000:]
    finally:
        subprocess.run([str(VOLCANO_DOWN), str(vdir)], capture_output=True, timeout=120)
        srv.down()
