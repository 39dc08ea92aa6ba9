"""Volcano's job plugins (``pkg/controllers/job/plugins``): what a vcjob's pods need to find each other on a
real cluster.  A Job names them in ``spec.plugins: {name: [arguments]}``; the arguments are Go flags
(``api/job_plugin_args.py``).  Each plugin has Volcano's four hooks:

* ``OnJobAdd`` (``objects``): the objects a plugin creates once, owned by the Job;
* ``OnPodCreate`` (``mutate_pod``): what it adds to each pod before the pod is created;
* ``OnJobUpdate`` (``updated_objects``): svc rewrites its hosts ConfigMap when the job scales;
* ``OnJobDelete`` (``owned``): the objects deleted with the Job.

The plugins:

* ``env``: every container and init container gets ``VK_TASK_INDEX`` and ``VC_TASK_INDEX`` (the pod's index).
* ``svc`` (``--publish-not-ready-addresses``, ``--disable-network-policy``, ``--inject-hosts-env``, default true):
  a headless Service named after the job; a ConfigMap ``<job>-svc`` holding, per task, ``<task>.host`` (one DNS
  name per line), ``VC_<TASK>_HOSTS`` (comma-separated) and ``VC_<TASK>_NUM``, mounted at ``/etc/volcano``; the
  ``VC_<TASK>_HOSTS``/``_NUM`` env vars read from it (``configMapKeyRef``); each pod's ``hostname`` (its name) and
  ``subdomain`` (the job) unless the template sets them; a NetworkPolicy letting in only the job's own pods.
* ``ssh`` (``--ssh-key-file-path``, ``--ssh-private-key``, ``--ssh-public-key``, ``--ssh-port``): a Secret
  ``<job>-ssh`` with an RSA key pair (generated, 2048 bits, unless given), ``authorized_keys`` and an ssh
  ``config`` naming every pod's host, mounted at ``/root/.ssh`` (mode 0600; 0644 elsewhere).
* ``mpi`` (``--master``, ``--worker``, ``--port`` 22): a container port ``mpijob-port`` on every container; the
  master's containers get ``MPI_HOST``, the workers' host names.
* ``pytorch`` (``--master``, ``--worker``, ``--port`` 23456, ``--wait-master-enabled``, ``--wait-master-timeout``,
  ``--wait-master-image``): port ``pytorchjob-port``, ``MASTER_ADDR``, ``MASTER_PORT``, ``WORLD_SIZE`` and
  ``RANK`` (master 0, worker i+1); with ``--wait-master-enabled`` the workers wait for the master in an init
  container ``wait-for-master``.
* ``tensorflow`` (``--ps``, ``--worker``, ``--chief``, ``--evaluator``, ``--port`` 2222): ``TF_CONFIG`` (the
  cluster's hosts by role, the pod's own role and index), unless the job is a single pod.
* ``ray`` (``--head``, ``--headContainer``, ``--worker``, ``--workerContainer``, ``--port`` 6379,
  ``--dashboardPort`` 8265, ``--clientPort`` 10001): the head container's ports and ``ray start --head`` command,
  the workers' ``ray start --address`` command, and a Service ``<job>-head-svc`` in front of the head.
* ``hcclrank`` (``--master``, ``--worker``): annotation ``hccl/rankIndex``: the ``RANK`` env when a container has
  it, else the master's index, or the master replicas plus the worker's index.

Volcano runs the plugins in Go's random map order; here they run in the order the Job lists them.  They touch
only Kubernetes objects, so the simulator's job controller does not need them; the Kubernetes adapter
(``kube/cluster_api.py``, ``kube/controller.py``) applies them.
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Callable
from typing import Any

from pyvolcano.api.job_plugin_args import VOLCANO_PLUGINS, PluginArgs, parse
from pyvolcano.api.job_plugin_args import default_plugins as default_plugins  # the webhook applies it
from pyvolcano.kube.objects import owner_ref

log = logging.getLogger(__name__)

SUPPORTED = VOLCANO_PLUGINS
HOSTS_DIR = "/etc/volcano"
SSH_ROOT_PATH = "/root/.ssh"
SSH_KEYS = ("id_rsa", "id_rsa.pub", "authorized_keys", "config")
JOB_NAME = "volcano.sh/job-name"
JOB_NAMESPACE = "volcano.sh/job-namespace"
TASK_SPEC = "volcano.sh/task-spec"
TASK_INDEX = "volcano.sh/task-index"
HCCL_RANK = "hccl/rankIndex"

Obj = dict[str, Any]


# --- the job's shape (pkg/controllers/job/helpers) -----------------------------------------------------------
def _md(job: Obj) -> tuple[str, str]:
    md = job["metadata"]
    return md["name"], md.get("namespace") or "default"


def _tasks(job: Obj) -> list[Obj]:
    return [dict(t, name=t.get("name") or f"task{i}") for i, t in enumerate(job["spec"]["tasks"])]


def _task(job: Obj, name: str) -> Obj | None:
    """``GetTaskIndexUnderJob``: the task of that name, or None."""
    return next((t for t in _tasks(job) if t["name"] == name), None)


def _tmpl_spec(task: Obj) -> Obj:
    return (task.get("template") or {}).get("spec") or {}


def domain_name(job: Obj, task: Obj, index: int) -> str:
    """``MakeDomainName``: the template's hostname (else the pod's name) dot its subdomain (else the job's)."""
    spec = _tmpl_spec(task)
    name = _md(job)[0]
    host = spec.get("hostname") or f"{name}-{task['name']}-{index}"
    return f"{host}.{spec.get('subdomain') or name}"


def task_hosts(job: Obj, task: Obj) -> list[str]:
    """The task's pods' DNS names (svc's ``GenerateHosts``, mpi's ``generateTaskHosts``): one when the template
    sets a hostname (every replica has it)."""
    n = int(task.get("replicas", 1))
    if n <= 0:
        return []
    if _tmpl_spec(task).get("hostname"):
        return [domain_name(job, task, 0)]
    return [domain_name(job, task, i) for i in range(n)]


def hosts(job: Obj) -> dict[str, list[str]]:
    """task name -> the DNS names of its pods (resolvable through svc's headless Service)."""
    return {t["name"]: task_hosts(job, t) for t in _tasks(job)}


def _env_key(task: str) -> str:
    """svc's env-name form of a task name: ``-`` becomes ``_``, upper case."""
    return task.replace("-", "_").upper()


def pod_index(pod: Obj) -> str:
    """``GetPodIndexUnderTask``: the last ``-`` part of the pod's name when it has at least three parts."""
    parts = str(pod["metadata"].get("name", "")).split("-")
    return parts[-1] if len(parts) >= 3 else ""


def _task_of(pod: Obj) -> str:
    """``GetTaskKey``: the pod's task-spec annotation (``default`` without one)."""
    return (pod["metadata"].get("annotations") or {}).get(TASK_SPEC) or "default"


def plugin_args(job: Obj) -> dict[str, PluginArgs]:
    """Each plugin the job names, with its parsed arguments (in the Job's order)."""
    plugins = job["spec"].get("plugins") or {}
    return {name: parse(name, args) for name, args in plugins.items() if name in SUPPORTED}


def _owned(job: Obj, api_version: str, kind: str, name: str) -> Obj:
    ns = _md(job)[1]
    return {"apiVersion": api_version, "kind": kind,
            "metadata": {"name": name, "namespace": ns, "ownerReferences": [owner_ref(job)]}}


def _selector(job: Obj) -> dict[str, str]:
    name, ns = _md(job)
    return {JOB_NAME: name, JOB_NAMESPACE: ns}


# --- OnJobAdd / OnJobUpdate / OnJobDelete ----------------------------------------------------------------------
def hosts_configmap(job: Obj) -> Obj:
    """svc's ConfigMap ``<job>-svc`` (``GenerateHosts``): per task ``<task>.host``, ``VC_<TASK>_HOSTS`` and
    ``VC_<TASK>_NUM`` (the ``.host`` key keeps the task's case, with ``-`` as ``_``)."""
    data: dict[str, str] = {}
    for task, h in hosts(job).items():
        key = task.replace("-", "_")
        data[f"{key}.host"] = "\n".join(h)
        data[f"VC_{_env_key(task)}_HOSTS"] = ",".join(h)
        data[f"VC_{_env_key(task)}_NUM"] = str(len(h))
    cm = _owned(job, "v1", "ConfigMap", f"{_md(job)[0]}-svc")
    cm["data"] = data
    return cm


def _svc_objects(job: Obj, args: PluginArgs) -> list[Obj]:
    name = _md(job)[0]
    svc = _owned(job, "v1", "Service", name)
    svc["spec"] = {"clusterIP": "None", "selector": _selector(job)}
    if args.on("publish-not-ready-addresses"):
        svc["spec"]["publishNotReadyAddresses"] = True
    out = [hosts_configmap(job), svc]
    if not args.on("disable-network-policy"):
        np = _owned(job, "networking.k8s.io/v1", "NetworkPolicy", name)
        np["spec"] = {"podSelector": {"matchLabels": _selector(job)},
                      "ingress": [{"from": [{"podSelector": {"matchLabels": _selector(job)}}]}],
                      "policyTypes": ["Ingress"]}
        out.append(np)
    return out


def ssh_port(args: PluginArgs) -> int:
    """``validateSSHPort``: a port outside 1..65535 falls back to 22."""
    port = args.number("ssh-port")
    if port <= 0 or port > 65535:
        log.warning("invalid ssh port %d, falling back to default port 22", port)
        return 22
    return port


def ssh_config(job: Obj, port: int) -> str:
    """``generateSSHConfig``: one ``Host`` entry per pod (one per task whose template sets a hostname)."""
    out = "StrictHostKeyChecking no\nUserKnownHostsFile /dev/null\n"
    for task in _tasks(job):
        for h in task_hosts(job, task):
            short = h.split(".", 1)[0]
            out += f"Host {short}\n  HostName {h}\n  Port {port}\n"
    return out


def rsa_key_pair() -> tuple[bytes, bytes]:
    """A 2048-bit RSA key: the private key as PKCS#1 PEM (``RSA PRIVATE KEY``) and the public key in
    ``authorized_keys`` form with its newline (``generateRsaKey``: x509.MarshalPKCS1PrivateKey,
    ssh.MarshalAuthorizedKey)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                                serialization.NoEncryption())
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    return private, public + b"\n"


def _ssh_objects(job: Obj, args: PluginArgs) -> list[Obj]:
    if args.text("ssh-private-key"):
        private, public = args.text("ssh-private-key").encode(), args.text("ssh-public-key").encode()
    else:
        private, public = rsa_key_pair()
    data = {"id_rsa": private, "id_rsa.pub": public, "authorized_keys": public,
            "config": ssh_config(job, ssh_port(args)).encode()}
    secret = _owned(job, "v1", "Secret", f"{_md(job)[0]}-ssh")
    secret["data"] = {k: base64.b64encode(v).decode() for k, v in data.items()}
    return [secret]


def _ray_objects(job: Obj, args: PluginArgs) -> list[Obj]:
    svc = _owned(job, "v1", "Service", f"{_md(job)[0]}-head-svc")
    ports = [("gcs", args.number("port")), ("dashboard", args.number("dashboardPort")),
             ("client-server", args.number("clientPort"))]
    svc["spec"] = {"selector": {**_selector(job), TASK_SPEC: args.text("head")},
                   "ports": [{"name": n, "port": p, "targetPort": n, "protocol": "TCP"} for n, p in ports]}
    return [svc]


_ON_JOB_ADD: dict[str, Callable[[Obj, PluginArgs], list[Obj]]] = {
    "svc": _svc_objects, "ssh": _ssh_objects, "ray": _ray_objects}


def objects(job: Obj) -> list[Obj]:
    """The objects the job's plugins create when the job is added (``OnJobAdd``), owned by the Job."""
    out: list[Obj] = []
    for name, args in plugin_args(job).items():
        if name in _ON_JOB_ADD:
            out += _ON_JOB_ADD[name](job, args)
    return out


def updated_objects(job: Obj) -> list[Obj]:
    """What the plugins rewrite when a running job changes (``OnJobUpdate``): svc's hosts ConfigMap (a job that
    scaled has other hosts).  ssh keeps its Secret (its ``OnJobUpdate`` does nothing)."""
    return [hosts_configmap(job)] if "svc" in plugin_args(job) else []


def owned(job: Obj) -> list[tuple[str, str]]:
    """(kind, name) of every object the plugins made for the job (``OnJobDelete`` deletes them)."""
    name = _md(job)[0]
    out: list[tuple[str, str]] = []
    for plugin, args in plugin_args(job).items():
        if plugin == "svc":
            out += [("ConfigMap", f"{name}-svc"), ("Service", name)]
            if not args.on("disable-network-policy"):
                out.append(("NetworkPolicy", name))
        elif plugin == "ssh":
            out.append(("Secret", f"{name}-ssh"))
        elif plugin == "ray":
            out.append(("Service", f"{name}-head-svc"))
    return out


def controlled_resources(job: Obj) -> dict[str, str]:
    """``status.controlledResources``: ``plugin-<name>`` for each plugin whose ``OnJobAdd`` records itself (all
    but hcclrank)."""
    return {f"plugin-{p}": p for p in plugin_args(job) if p != "hcclrank"}


# --- OnPodCreate -----------------------------------------------------------------------------------------------
def _containers(pod: Obj, init: bool = True) -> list[Obj]:
    spec = pod["spec"]
    out = list(spec.get("containers") or [])
    return out + list(spec.get("initContainers") or []) if init else out


def _add_env(c: Obj, *env: Obj) -> None:
    c["env"] = [*(c.get("env") or []), *env]


def _open_port(c: Obj, name: str, port: int) -> None:
    """``openContainerPort``: add the port unless the container already exposes that number."""
    if not any(p.get("containerPort") == port for p in c.get("ports") or []):
        c["ports"] = [*(c.get("ports") or []), {"name": name, "containerPort": port}]


def _env_on_pod(job: Obj, pod: Obj, args: PluginArgs) -> None:
    index = pod_index(pod)
    for c in _containers(pod):
        _add_env(c, {"name": "VK_TASK_INDEX", "value": index}, {"name": "VC_TASK_INDEX", "value": index})


def _svc_on_pod(job: Obj, pod: Obj, args: PluginArgs) -> None:
    name = _md(job)[0]
    spec, cm = pod["spec"], f"{name}-svc"
    spec["hostname"] = spec.get("hostname") or pod["metadata"]["name"]
    spec["subdomain"] = spec.get("subdomain") or name
    if args.on("inject-hosts-env"):
        env = [{"name": f"VC_{_env_key(t['name'])}_{what}",
                "valueFrom": {"configMapKeyRef": {"name": cm, "key": f"VC_{_env_key(t['name'])}_{what}"}}}
               for t in _tasks(job) for what in ("HOSTS", "NUM")]
        for c in _containers(pod):
            _add_env(c, *env)
    spec["volumes"] = [*(spec.get("volumes") or []), {"name": cm, "configMap": {"name": cm}}]
    for c in _containers(pod):
        c["volumeMounts"] = [*(c.get("volumeMounts") or []), {"name": cm, "mountPath": HOSTS_DIR}]


def _ssh_on_pod(job: Obj, pod: Obj, args: PluginArgs) -> None:
    secret, path = f"{_md(job)[0]}-ssh", args.text("ssh-key-file-path")
    spec = pod["spec"]
    spec["volumes"] = [*(spec.get("volumes") or []), {"name": secret, "secret": {
        "secretName": secret, "items": [{"key": k, "path": f".ssh/{k}"} for k in SSH_KEYS],
        "defaultMode": 0o600 if path == SSH_ROOT_PATH else 0o644}}]
    for c in _containers(pod):
        c["volumeMounts"] = [*(c.get("volumeMounts") or []), {"name": secret, "mountPath": path, "subPath": ".ssh"}]


def _mpi_on_pod(job: Obj, pod: Obj, args: PluginArgs) -> None:
    env: Obj | None = None
    if _task_of(pod) == args.text("master"):
        worker = _task(job, args.text("worker"))
        if worker is None:
            return
        env = {"name": "MPI_HOST", "value": ",".join(task_hosts(job, worker))}
    for c in [*(pod["spec"].get("initContainers") or []), *(pod["spec"].get("containers") or [])]:
        _open_port(c, "mpijob-port", args.number("port"))
        if env is not None:
            _add_env(c, dict(env))


def wait_for_master_script(addr: str, port: int, timeout: int) -> str:
    """pytorch's ``generateWaitForMasterScript``: poll the master's port until it answers or ``timeout`` ends."""
    return (f'echo "Waiting for master node {addr}:{port} to be ready..."\n'
            f"TIMEOUT={timeout}\nELAPSED=0\n"
            f"until {{ nc -z {addr} {port} || echo > /dev/tcp/{addr}/{port}; }} 2>/dev/null; do\n"
            '  if [ $ELAPSED -ge $TIMEOUT ]; then\n'
            '    echo "Timeout waiting for master after ${TIMEOUT} seconds"\n'
            "    exit 1\n  fi\n"
            '  echo "Master not ready yet, retrying in 2 seconds... (elapsed: ${ELAPSED}s)"\n'
            "  sleep 2\n  ELAPSED=$((ELAPSED + 2))\ndone\n"
            'echo "Master node is ready!"')


def _pytorch_on_pod(job: Obj, pod: Obj, args: PluginArgs) -> None:
    master_name, worker_name, port = args.text("master"), args.text("worker"), args.number("port")
    master = _task(job, master_name)
    if master is None:
        log.error("job %s doesn't have task %s", _md(job)[0], master_name)
        return
    addr = domain_name(job, master, 0)
    task = _task_of(pod)
    rank: int | None = 0 if task == master_name else None
    spec = pod["spec"]
    if task == worker_name:
        rank = int(pod_index(pod)) + 1
        if args.on("wait-master-enabled") and not any(
                c.get("name") == "wait-for-master" for c in spec.get("initContainers") or []):
            spec["initContainers"] = [*(spec.get("initContainers") or []), {
                "name": "wait-for-master", "image": args.text("wait-master-image"),
                "command": ["sh", "-c", wait_for_master_script(addr, port, args.number("wait-master-timeout"))]}]
    world = sum(int(t.get("replicas", 1)) for t in _tasks(job) if t["name"] in (master_name, worker_name))
    for c in spec.get("containers") or []:
        _open_port(c, "pytorchjob-port", port)
        _add_env(c, {"name": "MASTER_ADDR", "value": addr}, {"name": "MASTER_PORT", "value": str(port)},
                 {"name": "WORLD_SIZE", "value": str(world)})
        if rank is not None:
            _add_env(c, {"name": "RANK", "value": str(rank)})


def tf_config(job: Obj, pod: Obj, args: PluginArgs) -> str:
    """tensorflow's ``TF_CONFIG`` as Go's json.Marshal writes it: the cluster (ps, worker, chief, evaluator;
    empty roles left out), then the pod's task (its role, or its task name, and index)."""
    port = args.number("port")
    cluster: dict[str, list[str]] = {}
    for t in _tasks(job):
        role = next((r for r in ("ps", "worker", "chief", "evaluator") if t["name"] == args.text(r)), None)
        if role is not None:
            cluster[role] = [f"{domain_name(job, t, i)}:{port}" for i in range(int(t.get("replicas", 1)))]
    ordered = {r: cluster[r] for r in ("ps", "worker", "chief", "evaluator") if cluster.get(r)}
    task = _task_of(pod)
    typ = next((r for r in ("chief", "worker", "ps", "evaluator") if task == args.text(r)), task)  # getTaskType
    return json.dumps({"cluster": ordered, "task": {"type": typ, "index": int(pod_index(pod))}},
                      separators=(",", ":"))


def _tf_on_pod(job: Obj, pod: Obj, args: PluginArgs) -> None:
    tasks = _tasks(job)
    if len(tasks) == 1 and int(tasks[0].get("replicas", 1)) == 1:
        return
    env = {"name": "TF_CONFIG", "value": tf_config(job, pod, args)}
    for c in pod["spec"].get("containers") or []:
        _add_env(c, dict(env))


def _ray_on_pod(job: Obj, pod: Obj, args: PluginArgs) -> None:
    head = _task(job, args.text("head"))
    if head is None:  # admission refuses such a job (api/job_validate.py); Volcano fails the pod's creation
        raise ValueError(f"job {_md(job)[0]} doesn't have head task {args.text('head')}")
    task, port = _task_of(pod), args.number("port")
    for c in pod["spec"].get("containers") or []:
        if task == args.text("head") and c.get("name") == args.text("headContainer"):
            _open_port(c, "gcs", port)
            _open_port(c, "dashboard", args.number("dashboardPort"))
            _open_port(c, "client-server", args.number("clientPort"))
            c["command"] = ["sh", "-c", f"ray start --head --block --dashboard-host=0.0.0.0 --port={port} "
                                        f"--dashboard-port={args.number('dashboardPort')} "
                                        f"--ray-client-server-port={args.number('clientPort')}"]
        if task == args.text("worker") and c.get("name") == args.text("workerContainer"):
            c["command"] = ["sh", "-c", f"ray start --block --address={domain_name(job, head, 0)}:{port}"]


def _hcclrank_on_pod(job: Obj, pod: Obj, args: PluginArgs) -> None:
    ann = pod["metadata"].setdefault("annotations", {})
    if ann.get(HCCL_RANK):
        return
    rank = next((e.get("value") for c in pod["spec"].get("containers") or [] for e in c.get("env") or []
                 if e.get("name") == "RANK"), None)
    if rank:
        ann[HCCL_RANK] = rank
        return
    task = _task_of(pod)
    if task not in (args.text("master"), args.text("worker")):
        return
    index = int((pod["metadata"].get("labels") or {})[TASK_INDEX])
    if task == args.text("master"):
        ann[HCCL_RANK] = str(index)
    else:
        master = _task(job, args.text("master"))
        ann[HCCL_RANK] = str((int(master.get("replicas", 1)) if master else 0) + index)


_ON_POD_CREATE: dict[str, Callable[[Obj, Obj, PluginArgs], None]] = {
    "env": _env_on_pod, "svc": _svc_on_pod, "ssh": _ssh_on_pod, "mpi": _mpi_on_pod, "pytorch": _pytorch_on_pod,
    "tensorflow": _tf_on_pod, "ray": _ray_on_pod, "hcclrank": _hcclrank_on_pod}


def mutate_pod(job: Obj, pod: Obj) -> Obj:
    """Apply the job's plugins to one of its pods before it is created (``OnPodCreate``, in the Job's order)."""
    pod.setdefault("spec", {})
    pod.setdefault("metadata", {})
    for name, args in plugin_args(job).items():
        _ON_POD_CREATE[name](job, pod, args)
    return pod
