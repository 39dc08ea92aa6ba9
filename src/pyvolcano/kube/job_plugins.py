"""Volcano's ``env`` and ``svc`` job plugins: what a vcjob's pods need to find each other on a real cluster.

* ``env``: every container gets ``VK_TASK_INDEX`` and ``VC_TASK_INDEX`` (the pod's index within its task).
* ``svc``: a headless Service named after the job, a ConfigMap ``<job>-svc`` with one ``<task>.host`` file per
  task listing the pods' DNS names (``<job>-<task>-<i>.<job>``), mounted at ``/etc/volcano`` in every
  container, ``VC_<TASK>_HOSTS`` / ``VC_<TASK>_NUM`` env vars, and each pod's ``hostname``/``subdomain`` so the
  names resolve.  This is how Volcano's TensorFlow example finds its ps and worker hosts.

They touch only Kubernetes objects, so the simulator's job controller does not need them; the Kubernetes
adapter applies them when the controller creates a job's pods.
"""

from __future__ import annotations

import re
from typing import Any

from pyvolcano.kube.objects import owner_ref

SUPPORTED = ("env", "svc")
HOSTS_DIR = "/etc/volcano"


def _tasks(job: dict[str, Any]) -> list[tuple[str, int]]:
    return [(t.get("name") or f"task{i}", int(t.get("replicas", 1))) for i, t in enumerate(job["spec"]["tasks"])]


def hosts(job: dict[str, Any]) -> dict[str, list[str]]:
    """task name -> the DNS names of its pods (resolvable through the job's headless Service)."""
    name = job["metadata"]["name"]
    return {task: [f"{name}-{task}-{i}.{name}" for i in range(n)] for task, n in _tasks(job)}


def _env_name(task: str) -> str:
    return re.sub(r"[^A-Z0-9_]", "_", task.upper())


def objects(job: dict[str, Any]) -> list[dict[str, Any]]:
    """The Service and ConfigMap the job's plugins need (created once, owned by the job)."""
    plugins = job["spec"].get("plugins") or {}
    if "svc" not in plugins:
        return []
    md = job["metadata"]
    name, ns = md["name"], md.get("namespace") or "default"
    owner = [owner_ref(job)]
    selector = {"volcano.sh/job-name": name, "volcano.sh/job-namespace": ns}
    svc = {"apiVersion": "v1", "kind": "Service",
           "metadata": {"name": name, "namespace": ns, "ownerReferences": owner},
           "spec": {"clusterIP": "None", "selector": selector, "publishNotReadyAddresses": True,
                    "ports": [{"name": "placeholder-volcano", "port": 1, "protocol": "TCP", "targetPort": 1}]}}
    cm = {"apiVersion": "v1", "kind": "ConfigMap",
          "metadata": {"name": f"{name}-svc", "namespace": ns, "ownerReferences": owner},
          "data": {f"{task}.host": "\n".join(h) for task, h in hosts(job).items()}}
    return [svc, cm]


def mutate_pod(job: dict[str, Any], pod: dict[str, Any]) -> dict[str, Any]:
    """Apply the job's plugins to one of its pods before it is created."""
    plugins = job["spec"].get("plugins") or {}
    spec = pod.setdefault("spec", {})
    md = pod.setdefault("metadata", {})
    containers = list(spec.get("containers") or []) + list(spec.get("initContainers") or [])
    index = md.get("name", "").rsplit("-", 1)[-1]
    if "env" in plugins and index.isdigit():
        for c in containers:
            env = [e for e in c.get("env") or [] if e.get("name") not in ("VK_TASK_INDEX", "VC_TASK_INDEX")]
            c["env"] = [*env, {"name": "VK_TASK_INDEX", "value": index}, {"name": "VC_TASK_INDEX", "value": index}]
    if "svc" in plugins:
        name = job["metadata"]["name"]
        spec["hostname"] = md.get("name", "")
        spec["subdomain"] = name
        vol = f"{name}-svc"
        spec["volumes"] = [v for v in spec.get("volumes") or [] if v.get("name") != vol] + [
            {"name": vol, "configMap": {"name": vol}}]
        extra_env = []
        for task, h in hosts(job).items():
            extra_env += [{"name": f"VC_{_env_name(task)}_HOSTS", "value": ",".join(h)},
                          {"name": f"VC_{_env_name(task)}_NUM", "value": str(len(h))}]
        names = {e["name"] for e in extra_env}
        for c in containers:
            mounts = [m for m in c.get("volumeMounts") or [] if m.get("name") != vol]
            c["volumeMounts"] = [*mounts, {"name": vol, "mountPath": HOSTS_DIR}]
            c["env"] = [e for e in c.get("env") or [] if e.get("name") not in names] + extra_env
    return pod
