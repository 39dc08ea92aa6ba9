"""A CronJob tick and a JobFlow with a dependency, side by side with Volcano's own controllers (marked ``slow``).

On a fresh kube-apiserver (``kube-up``), Volcano's ``vc-controller-manager`` (``volcano-up``, Volcano ed72c7c8)
runs a CronJob and a JobFlow in namespace ``vc``; then it is stopped and ``pyvolcano controller`` (its cronjob,
jobflow and jobtemplate controllers, next to its job controller as Volcano's) runs the same objects in namespace
``py``.  The Jobs they create (names,
labels, annotations, owners, spec) and the statuses they write (CronJob active/lastScheduleTime, JobFlow phase
and job lists, JobTemplate jobDependsOnList) must be the same, up to uids, times and namespaces.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from pyvolcano.controllers.cronjob import end_timestamp
from pyvolcano.kube.client import KubeClient
from pyvolcano.kube.resources import CRONJOB, JOBFLOW, JOBTEMPLATE, NAMESPACE, VCJOB
from tests.kube import cluster, kubeserver
from tests.kube.cluster import complete_job, wait

pytestmark = [pytest.mark.slow, pytest.mark.kube]

VOLCANO_UP = kubeserver.TOOLS / "volcano" / "volcano-up"
VOLCANO_DOWN = kubeserver.TOOLS / "volcano" / "volcano-down"
SPEC = {"queue": "default", "minAvailable": 1, "schedulerName": "nobody",
        "tasks": [{"name": "t", "replicas": 1, "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}}]}


def create_objects(api: KubeClient, ns: str) -> None:
    api.create(NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    api.create(CRONJOB, {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "CronJob",
                         "metadata": {"name": "tick", "namespace": ns},
                         "spec": {"schedule": "@every 3s", "concurrencyPolicy": "Forbid",
                                  "jobTemplate": {"metadata": {"labels": {"app": "tick"}}, "spec": SPEC}}}, ns)
    for t in ("prep", "train"):
        api.create(JOBTEMPLATE, {"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobTemplate",
                                 "metadata": {"name": t, "namespace": ns}, "spec": SPEC}, ns)
    api.create(JOBFLOW, {"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlow",
                         "metadata": {"name": "flow", "namespace": ns},
                         "spec": {"jobRetainPolicy": "retain",
                                  "flows": [{"name": "prep"}, {"name": "train", "dependsOn": {"targets": ["prep"]}}]}},
               ns)


def drive(api: KubeClient, ns: str) -> dict[str, Any]:
    """Wait for the first CronJob tick and the JobFlow's first Job, complete it, wait for the second; snapshot."""
    def names() -> set[str]:
        return {j["metadata"]["name"] for j in api.list(VCJOB, ns)[0]}

    wait(lambda: any(n.startswith("tick-") for n in names()) and "flow-prep" in names(), 60, f"the first Jobs in {ns}")
    complete_job(api, ns, "flow-prep")
    wait(lambda: "flow-train" in names(), 60, f"the dependent Job in {ns}")
    wait(lambda: (api.get(JOBFLOW, "flow", ns).get("status") or {}).get("completedJobs") and
         (api.get(JOBTEMPLATE, "prep", ns).get("status") or {}).get("jobDependsOnList") and
         (api.get(CRONJOB, "tick", ns).get("status") or {}).get("active"), 60, f"the statuses in {ns}")
    return {"jobs": api.list(VCJOB, ns)[0], "cronjob": api.get(CRONJOB, "tick", ns),
            "jobflow": api.get(JOBFLOW, "flow", ns), "template": api.get(JOBTEMPLATE, "prep", ns)}


def _entry(jobflow: dict[str, Any], job: str) -> dict[str, Any] | None:
    return next((e for e in (jobflow.get("status") or {}).get("jobStatusList") or [] if e.get("name") == job), None)


def pruned(v: Any) -> Any:
    """Without empty mappings: Go writes a struct's zero value (``metadata: {}``, ``resources: {}``) where the
    template had none."""
    if isinstance(v, dict):
        return {k: pruned(x) for k, x in v.items() if x != {}}
    if isinstance(v, list):
        return [pruned(x) for x in v]
    return v


def canon(snap: dict[str, Any], ns: str) -> dict[str, Any]:
    def job(j: dict[str, Any]) -> tuple[Any, ...]:
        md = j["metadata"]
        name = re.sub(r"^tick-\d+$", "tick-<minutes>", md["name"])
        ann = {k: ("<time>" if k == "volcano.sh/cronjob-scheduled-timestamp" else v.replace(ns, "<ns>"))
               for k, v in (md.get("annotations") or {}).items()}
        labels = {k: v.replace(ns, "<ns>") for k, v in (md.get("labels") or {}).items()}
        owners = [{k: v for k, v in o.items() if k != "uid"} for o in md.get("ownerReferences") or []]
        return name, sorted(labels.items()), sorted(ann.items()), owners, pruned(j["spec"])

    firsts = {}
    for j in sorted(snap["jobs"], key=lambda j: j["metadata"]["name"]):
        c = job(j)
        firsts.setdefault(c[0], c)  # one tick Job stands for all
    cj = snap["cronjob"]["status"]
    jf = snap["jobflow"]["status"]
    return {"jobs": sorted(firsts.values(), key=lambda c: c[0]),
            "cron_active": sorted(sorted(k for k in a if a[k] not in ("", None)) for a in cj["active"]),
            "cron_last": bool(cj.get("lastScheduleTime")),
            "flow": {k: jf.get(k) for k in ("completedJobs", "failedJobs", "terminatedJobs")},
            "flow_phase": (jf.get("state") or {}).get("phase"),
            "flow_list": sorted(s["name"] for s in jf.get("jobStatusList") or []),
            # getAllJobStatus: endTimestamp = the Job's creation time + its runningDuration (a Go duration); flow-train
            # has none on either side (its status comes from syncJob, not from a kill)
            "train_end": (lambda e, c: (bool(e.get("endTimestamp")), e.get("endTimestamp") == end_timestamp(
                e.get("startTimestamp"), c.get("runningDuration"))))(
                _entry(snap["jobflow"], "flow-train") or {}, (jf.get("conditions") or {}).get("flow-train") or {}),
            "template": snap["template"]["status"]}


def test_cronjob_and_jobflow_agree_with_volcanos_controllers(tmp_path: Path) -> None:
    if not kubeserver.tools_available() or not VOLCANO_UP.exists():
        pytest.skip(kubeserver.HOW_TO_RUN)
    srv = kubeserver.up(kubeserver.new_dir())
    vdir = tmp_path / "volcano"
    proc = None
    try:
        api = KubeClient.from_config(srv.kubeconfig)
        r = subprocess.run([str(VOLCANO_UP), srv.kubeconfig, str(vdir)], capture_output=True, text=True,
                           timeout=300)
        assert r.returncode == 0, r.stderr[-2000:]
        create_objects(api, "vc")
        volcano = drive(api, "vc")
        subprocess.run([str(VOLCANO_DOWN), str(vdir)], capture_output=True, timeout=120)
        for res, name in ((CRONJOB, "tick"), (JOBFLOW, "flow")):
            api.delete(res, name, "vc")
        proc = cluster.Proc(["controller", "--no-leader-elect", "--listen-address", ""],
                            tmp_path / "controller.log", srv.kubeconfig)
        create_objects(api, "py")
        ours = drive(api, "py")
        mine, theirs = canon(ours, "py"), canon(volcano, "vc")
        for k in theirs:
            assert mine[k] == theirs[k], k
    finally:
        if proc is not None:
            proc.stop()
        subprocess.run([str(VOLCANO_DOWN), str(vdir)], capture_output=True, timeout=120)
        srv.down()
