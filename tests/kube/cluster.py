"""Helpers for the integration tests against a real API server: a stand-in kubelet, scheduler/controller
processes, a TCP proxy that can cut connections, and per-test namespaces and nodes."""

from __future__ import annotations

import contextlib
import copy
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import yaml

from pyvolcano.kube.client import ApiError, KubeClient
from pyvolcano.kube.resources import (
    COMMAND,
    CRONJOB,
    JOBFLOW,
    JOBTEMPLATE,
    NAMESPACE,
    NODE,
    POD,
    PODGROUP,
    SERVICEACCOUNT,
    VCJOB,
)

KUBECONFIG = os.environ.get("PYVOLCANO_KUBECONFIG", "")


def client() -> KubeClient:
    return KubeClient.from_config(KUBECONFIG)


class Kubelet:
    """Plays the kubelet for plain Node objects: bound Pending pods become Running, terminating pods go away."""

    def __init__(self, api: KubeClient, namespace: str, interval: float = 0.2) -> None:
        self.api = api
        self.namespace = namespace
        self.interval = interval
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Kubelet:
        self._t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._t.join(5)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                pods, _ = self.api.list(POD, self.namespace)
            except ApiError:
                continue
            for p in pods:
                md, spec = p["metadata"], p.get("spec") or {}
                try:
                    if md.get("deletionTimestamp"):
                        self.api.delete(POD, md["name"], self.namespace, grace_period=0)
                    elif spec.get("nodeName") and (p.get("status") or {}).get("phase") == "Pending":
                        self.api.patch(POD, md["name"], {"status": {
                            "phase": "Running", "startTime": md.get("creationTimestamp"),
                            "conditions": [{"type": "Ready", "status": "True"}]}}, self.namespace,
                            subresource="status", strategic=True)
                except ApiError:
                    pass


class Proc:
    """A ``pyvolcano`` subcommand in its own process, logging to a file."""

    def __init__(self, args: list[str], log: Path, kubeconfig: str = "") -> None:
        self.log = log
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        self.cmd = [sys.executable, "-m", "pyvolcano.cli", *args, "--kubeconfig", kubeconfig or KUBECONFIG]
        self._f = log.open("ab")
        self.p = subprocess.Popen(self.cmd, stdout=self._f, stderr=subprocess.STDOUT, env=env)

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def kill(self) -> None:
        """SIGKILL: no clean shutdown, no lease release (a crash)."""
        with contextlib.suppress(ProcessLookupError):
            self.p.kill()
        self.p.wait(10)

    def restart(self) -> None:
        """Stop the process and start the same command again, logging to the same file (a test that froze a
        shared process for a while: a controller that lost its Lease meanwhile exits, as Volcano's does)."""
        self.stop()
        self._f = self.log.open("ab")
        self.p = subprocess.Popen(self.cmd, stdout=self._f, stderr=subprocess.STDOUT,
                                  env={**os.environ, "PYTHONUNBUFFERED": "1"})

    def stop(self) -> int:
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(15)
            except subprocess.TimeoutExpired:
                self.kill()
        self._f.close()
        return self.p.returncode


def scheduler(tmp: Path, name: str, *extra: str, env: Env | None = None, kubeconfig: str = "",
              conf: str | None = None, leader: bool = False) -> Proc:
    """A scheduler process; with ``env`` it uses only that test's nodes and schedules only its pods."""
    sname = env.scheduler_name if env else "volcano"
    args = ["scheduler", "--scheduler-name", sname, "--schedule-period", "200ms", "--listen-address", ""]
    if conf:
        p = tmp / f"{name}.conf"
        p.write_text(conf)
        args += ["--scheduler-conf", str(p)]
    if env is not None:
        args += ["--node-selector", env.label]
    if not leader:
        args.append("--no-leader-elect")
    return Proc([*args, *extra], tmp / f"{name}.log", kubeconfig)


class Env:
    """A namespace (with its default ServiceAccount, which pod admission wants) and labelled nodes."""

    def __init__(self, api: KubeClient) -> None:
        self.api = api
        self.id = uuid.uuid4().hex[:6]
        self.ns = f"pv-{self.id}"
        self.label = f"pyvolcano-test={self.id}"
        #: each test schedules its own pods only, so tests running side by side never place each other's pods
        self.scheduler_name = f"volcano-{self.id}"
        self.nodes: list[str] = []
        api.create(NAMESPACE, {"apiVersion": "v1", "kind": "Namespace",
                               "metadata": {"name": self.ns, "labels": {"pyvolcano-test": self.id}}})
        with contextlib.suppress(ApiError):
            api.create(SERVICEACCOUNT, {"apiVersion": "v1", "kind": "ServiceAccount",
                                        "metadata": {"name": "default", "namespace": self.ns}}, self.ns)

    def node(self, name: str, cpu: str = "4", memory: str = "16Gi") -> str:
        full = f"{self.ns}-{name}"
        self.api.create(NODE, {"apiVersion": "v1", "kind": "Node", "metadata": {
            "name": full, "labels": {"pyvolcano-test": self.id, "kubernetes.io/hostname": full}},
            "status": {"capacity": {"cpu": cpu, "memory": memory, "pods": "110"},
                       "allocatable": {"cpu": cpu, "memory": memory, "pods": "110"},
                       "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]}})
        self.nodes.append(full)
        # the TaintNodesByCondition admission plugin taints every new node not-ready; with no node lifecycle
        # controller nothing would ever lift it, so do what it would once the (absent) kubelet reports Ready
        self.api.patch(NODE, full, {"spec": {"taints": None}})
        return full

    def cleanup(self) -> None:
        clean_namespace(self.api, self.ns)
        for n in self.nodes:
            with contextlib.suppress(ApiError):
                self.api.delete(NODE, n)
        with contextlib.suppress(ApiError):
            self.api.delete(NAMESPACE, self.ns)


def clean_namespace(api: KubeClient, ns: str) -> None:
    """Delete what a test left (there is no namespace controller or garbage collector to do it)."""
    for res in (CRONJOB, JOBFLOW, JOBTEMPLATE, VCJOB, PODGROUP, POD, COMMAND):  # owners first: nothing re-creates
        with contextlib.suppress(ApiError):  # one deletecollection rather than a request per object
            api.request("DELETE", res.path(ns), {"gracePeriodSeconds": 0})


def mk_podgroup(api: KubeClient, env: Env, name: str, min_member: int, queue: str = "default",
                priority_class: str = "", phase: str = "") -> None:
    spec: dict = {"minMember": min_member, "queue": queue}
    if priority_class:
        spec["priorityClassName"] = priority_class
    body = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": env.ns}, "spec": spec}
    if phase:
        body["status"] = {"phase": phase}
    api.create(PODGROUP, body, env.ns)


def mk_pod(api: KubeClient, env: Env, name: str, group: str, cpu: str = "1", priority_class: str = "") -> None:
    spec: dict = {"schedulerName": env.scheduler_name, "terminationGracePeriodSeconds": 1, "containers": [
        {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu, "memory": "64Mi"}}}]}
    if priority_class:
        spec["priorityClassName"] = priority_class
    api.create(POD, {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": name, "namespace": env.ns, "annotations": {"scheduling.k8s.io/group-name": group}},
        "spec": spec}, env.ns)


def bound(api: KubeClient, ns: str) -> dict[str, str]:
    return {p["metadata"]["name"]: p["spec"]["nodeName"] for p in api.list(POD, ns)[0]
            if (p.get("spec") or {}).get("nodeName")}


def wait(cond: Any, timeout: float, what: str, interval: float = 0.2) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        try:
            v = cond()
        except ApiError:
            v = None
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)


class CutProxy:
    """A TCP proxy to the API server that the test can cut (drop every connection) or take down (refuse)."""

    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.conns: list[socket.socket] = []
        self.lock = threading.Lock()
        self.down = False
        self.cuts = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            if self.down:
                c.close()
                continue
            try:
                u = socket.create_connection(self.target, timeout=5)
            except OSError:
                c.close()
                continue
            with self.lock:
                self.conns += [c, u]
            threading.Thread(target=self._pump, args=(c, u), daemon=True).start()

    def _pump(self, a: socket.socket, b: socket.socket) -> None:
        try:
            while True:
                r, _, _ = select.select([a, b], [], [], 1.0)
                for s in r:
                    data = s.recv(65536)
                    if not data:
                        raise OSError
                    (b if s is a else a).sendall(data)
        except (OSError, ValueError):
            pass
        finally:
            for s in (a, b):
                with contextlib.suppress(OSError):
                    s.close()

    def cut(self) -> None:
        with self.lock:
            conns, self.conns = self.conns, []
            self.cuts += 1
        for s in conns:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                s.close()

    def close(self) -> None:
        self.sock.close()
        self.cut()


def proxied_kubeconfig(tmp: Path) -> tuple[str, CutProxy]:
    """A copy of the test kubeconfig whose server goes through a ``CutProxy``."""
    cfg = yaml.safe_load(Path(KUBECONFIG).read_text())
    base = Path(KUBECONFIG).resolve().parent
    for c in cfg.get("clusters") or []:
        cl = c["cluster"]
        for k in ("certificate-authority",):
            if cl.get(k) and not os.path.isabs(cl[k]):
                cl[k] = str(base / cl[k])
    for u in cfg.get("users") or []:
        for k in ("client-certificate", "client-key", "tokenFile"):
            v = (u.get("user") or {}).get(k)
            if v and not os.path.isabs(v):
                u["user"][k] = str(base / v)
    ctx_name = cfg.get("current-context")
    ctx = next((c["context"] for c in cfg["contexts"] if c["name"] == ctx_name), cfg["contexts"][0]["context"])
    cluster = next(c["cluster"] for c in cfg["clusters"] if c["name"] == ctx["cluster"])
    u = urlparse(cluster["server"])
    port = u.port or (443 if u.scheme == "https" else 80)
    proxy = CutProxy(u.hostname or "127.0.0.1", port)
    host = u.hostname if u.hostname not in ("localhost",) else "127.0.0.1"
    if host == "127.0.0.1" and u.hostname == "localhost":
        cluster["tls-server-name"] = "localhost"
    cluster["server"] = f"{u.scheme}://{host}:{proxy.port}"
    if host not in ("127.0.0.1", "localhost"):
        cluster["server"] = f"{u.scheme}://127.0.0.1:{proxy.port}"
        cluster["tls-server-name"] = u.hostname
    out = tmp / "proxied-kubeconfig"
    out.write_text(yaml.safe_dump(cfg))
    return str(out), proxy


def complete_job(api: KubeClient, ns: str, name: str) -> None:
    """Set a Job's phase to Completed, once the job controller wrote its own first status (else that write could
    land after this one and undo it); a conflict with another write is retried."""
    wait(lambda: ((api.get(VCJOB, name, ns).get("status") or {}).get("state") or {}).get("phase"), 30,
         f"the job controller's status of {ns}/{name}")
    for _ in range(20):
        job = api.get(VCJOB, name, ns)
        job["status"] = {"state": {"phase": "Completed"}}
        try:
            api.replace(VCJOB, job, ns, subresource="status")
            return
        except ApiError as exc:
            if not exc.conflict:
                raise
    raise AssertionError(f"could not complete Job {ns}/{name}")


def renamed(objects: list[dict[str, Any]], k: int) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """A scenario's objects for the ``k``-th run on one shared API server (the side-by-side tests with
    vc-scheduler): node ``n`` (and its Numatopology) renamed ``s<k>-n`` also where a pod names it, namespace
    renamed ``s<k>``, and an image on every container (the API server requires one; scenario files leave it out)."""
    names = {o["metadata"]["name"]: f"s{k}-{o['metadata']['name']}" for o in objects if o["kind"] == "Node"}
    out = []
    for o in copy.deepcopy(objects):
        md = o["metadata"]
        if o["kind"] in ("Node", "Numatopology"):
            md["name"] = names[md["name"]]
        if md.get("namespace"):
            md["namespace"] = f"s{k}"
        if o["kind"] == "Pod":
            for c in o["spec"]["containers"]:
                c.setdefault("image", "busybox")
            if o["spec"].get("nodeName"):
                o["spec"]["nodeName"] = names[o["spec"]["nodeName"]]
        out.append(o)
    return out, names
