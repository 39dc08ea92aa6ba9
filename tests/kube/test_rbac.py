"""The RBAC of ``deploy/`` covers every API call the scheduler and the controllers make, and no more is needed.

Each component talks to the in-memory API through a proxy that records (verb, API group, resource[/subresource],
namespace) for every call.  A run goes through what a cluster sees: leader election, a vcjob with the ``svc`` and
``env`` plugins (scaled while it runs), the PodGroup controller, suspend and resume Commands, preemption with a
PodDisruptionBudget, queue status.  Every recorded call must be allowed by the rules bound to that component's
ServiceAccount.
"""

from __future__ import annotations

import threading
from typing import Any

import yaml

from pyvolcano.commands.install import manifest_objects
from pyvolcano.kube.controller import JobRunner
from pyvolcano.kube.hypernode_controller import HyperNodeControllerRunner
from pyvolcano.kube.leader import LeaderElector
from pyvolcano.kube.podgroup_controller import PodGroupController
from pyvolcano.kube.queue_controller import QueueController
from pyvolcano.kube.resources import CONFIGMAP, HYPERNODE, NODE, PDB, POD, PODGROUP, PRIORITYCLASS, QUEUE, VCJOB, Resource
from pyvolcano.kube.scheduler import ConfFile, KubeScheduler, SchedulerOptions
from pyvolcano.kube.writer import EventRecorder, Writer
from tests.confs import PREEMPT_CONF as HELPERS_PREEMPT_CONF
from tests.kube.fakeapi import FakeApi
from tests.kube.helpers import eventually, job_command, node, priority_class
from tests.kube.test_vcctl import TF_JOB

Call = tuple[str, str, str, str]  # verb, group, resource[/sub], namespace ("" for cluster scope)


class Recording:
    """A KubeClient-shaped proxy that records what one component asks of the API server."""

    def __init__(self, api: FakeApi) -> None:
        self.api = api
        self.calls: set[Call] = set()
        self.lock = threading.Lock()

    def _rec(self, verb: str, res: Resource, namespace: str | None, sub: str | None = None) -> None:
        with self.lock:
            self.calls.add((verb, res.group, res.plural + (f"/{sub}" if sub else ""),
                            (namespace or "") if res.namespaced else ""))

    def list(self, res: Resource, namespace: str | None = None, **kw: Any) -> Any:
        self._rec("list", res, namespace)
        return self.api.list(res, namespace, **kw)

    def watch(self, res: Resource, resource_version: str, namespace: str | None = None, **kw: Any) -> Any:
        self._rec("watch", res, namespace)
        return self.api.watch(res, resource_version, namespace, **kw)

    def get(self, res: Resource, name: str, namespace: str | None = None) -> Any:
        self._rec("get", res, namespace)
        return self.api.get(res, name, namespace)

    def create(self, res: Resource, body: dict[str, Any], namespace: str | None = None) -> Any:
        self._rec("create", res, namespace)
        return self.api.create(res, body, namespace)

    def replace(self, res: Resource, body: dict[str, Any], namespace: str | None = None,
                subresource: str | None = None) -> Any:
        self._rec("update", res, namespace, subresource)
        return self.api.replace(res, body, namespace, subresource)

    def patch(self, res: Resource, name: str, patch: dict[str, Any], namespace: str | None = None,
              subresource: str | None = None, strategic: bool = False) -> Any:
        self._rec("patch", res, namespace, subresource)
        return self.api.patch(res, name, patch, namespace, subresource, strategic)

    def delete(self, res: Resource, name: str, namespace: str | None = None, **kw: Any) -> Any:
        self._rec("delete", res, namespace)
        return self.api.delete(res, name, namespace, **kw)

    def bind(self, namespace: str, name: str, uid: str, node: str) -> Any:
        self._rec("create", POD, namespace, "binding")
        return self.api.bind(namespace, name, uid, node)

    def evict(self, namespace: str, name: str, uid: str | None = None, grace_period: int | None = None) -> Any:
        self._rec("create", POD, namespace, "eviction")
        return self.api.evict(namespace, name, uid, grace_period)

    def __getattr__(self, name: str) -> Any:  # anything else (server_version, ...) is not an API request here
        return getattr(self.api, name)


def allowed(calls: set[Call], account: str, objs: list[dict[str, Any]]) -> list[Call]:
    """The calls no rule bound to ServiceAccount volcano-system/``account`` allows."""
    def bound_to(binding: dict[str, Any]) -> bool:
        return any(s.get("kind") == "ServiceAccount" and s.get("name") == account
                   and s.get("namespace") == "volcano-system" for s in binding.get("subjects") or [])

    roles = {(o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]): o["rules"]
             for o in objs if o["kind"] in ("ClusterRole", "Role")}
    grants: list[tuple[str, dict[str, Any]]] = []  # (namespace or "" for everywhere, rule)
    for o in objs:
        if o["kind"] in ("ClusterRoleBinding", "RoleBinding") and bound_to(o):
            ns = o["metadata"].get("namespace", "") if o["kind"] == "RoleBinding" else ""
            ref = o["roleRef"]
            rules = roles[(ref["kind"], ns if ref["kind"] == "Role" else "", ref["name"])]
            grants += [(ns, r) for r in rules]

    def ok(call: Call) -> bool:
        verb, group, resource, ns = call
        return any((not where or where == ns) and group in r["apiGroups"] and resource in r["resources"]
                   and verb in r["verbs"] for where, r in grants)
    return sorted(c for c in calls if not ok(c))


# single-pod victims: gang would refuse them (as in Volcano) unless it stays out of the preemptable vote
PREEMPT_CONF = HELPERS_PREEMPT_CONF.replace("  - name: gang\n", "  - name: gang\n    enablePreemptable: false\n")


def phase(api: FakeApi) -> str:
    return ((api.obj(VCJOB, "tensorflow-benchmark", "default").get("status") or {}).get("state") or {}).get("phase", "")


def test_deploy_rbac_allows_every_call_the_components_make(tmp_path) -> None:  # type: ignore[no-untyped-def]
    api = FakeApi()
    api.create(NODE, node("n1", cpu="8", memory="32Gi", labels={"example.com/tor": "t1"}))
    api.create(PRIORITYCLASS, priority_class("low", 1))
    api.create(PRIORITYCLASS, priority_class("high", 1000))
    api.create(PDB, {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                     "metadata": {"name": "low", "namespace": "default"},
                     "spec": {"minAvailable": 0, "selector": {"matchLabels": {"app": "low"}}}}, "default")
    sched_api, ctrl_api = Recording(api), Recording(api)
    conf = tmp_path / "sched.conf"
    conf.write_text(PREEMPT_CONF)
    stop = threading.Event()
    writer = Writer(2)
    electors = [LeaderElector(a, "volcano-system", name, name, lease_duration=3, renew_deadline=2, retry_period=0.5)
                for a, name in ((sched_api, "vc-scheduler"), (ctrl_api, "vc-controller-manager"))]
    for e in electors:
        threading.Thread(target=e.run, args=(stop, None, None), daemon=True).start()
    sched = KubeScheduler(sched_api, ConfFile(str(conf)), SchedulerOptions(period=0.05))
    jobs = JobRunner(ctrl_api, EventRecorder(ctrl_api, writer))
    queues = QueueController(ctrl_api, EventRecorder(ctrl_api, writer), resync=0.2)
    podgroups = PodGroupController(ctrl_api, ("volcano",))
    hypernodes = HyperNodeControllerRunner(ctrl_api, ("volcano-system", "volcano-controller-configmap"), settle=0.01)
    threading.Thread(target=sched.run, args=(stop,), daemon=True).start()

    def kubelet() -> None:
        while not stop.wait(0.05):
            api.run_bound_pods()
    threading.Thread(target=kubelet, daemon=True).start()
    try:
        assert queues.start(5) and jobs.start(5) and podgroups.start(5) and hypernodes.start(5)
        # HyperNode discovery from node labels: create, update (a node joins the leaf), nodeCount, delete
        api.create(CONFIGMAP, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
            "name": "volcano-controller-configmap", "namespace": "volcano-system"}, "data": {
            "volcano-controller.conf": "networkTopologyDiscovery:\n- source: label\n  enabled: true\n  config:\n"
            "    networkTopologyTypes: {t: [{nodeLabel: example.com/tor}, {nodeLabel: kubernetes.io/hostname}]}\n"}},
                   "volcano-system")
        eventually(lambda: [(h.get("status") or {}).get("nodeCount") for h in api.objects(HYPERNODE)] == [1],
                   what="the discovered leaf")
        api.create(NODE, node("n2", cpu="1", labels={"example.com/tor": "t1"}))
        eventually(lambda: [(h.get("status") or {}).get("nodeCount") for h in api.objects(HYPERNODE)] == [2],
                   what="the leaf updated")
        api.create(NODE, node("n3", cpu="1", labels={"example.com/tor": "t3"}))
        eventually(lambda: len(api.objects(HYPERNODE)) == 2, what="a second leaf")
        api.delete(NODE, "n3")
        eventually(lambda: len(api.objects(HYPERNODE)) == 1, what="the second leaf deleted")
        eventually(lambda: api.obj(QUEUE, "default"), what="the scheduler to create the default queue")
        eventually(lambda: all(e.is_leader for e in electors), what="both leases")
        api.create(VCJOB, yaml.safe_load(TF_JOB), "default")
        eventually(lambda: phase(api) == "Running", what="the TF job to run")
        job_command(api, "abort", "AbortJob")
        eventually(lambda: phase(api) == "Aborted", what="suspend")
        job_command(api, "resume", "ResumeJob")
        eventually(lambda: phase(api) == "Running", what="resume")
        scaled = api.obj(VCJOB, "tensorflow-benchmark", "default")  # one more worker: PodGroup and hosts follow
        scaled["spec"]["tasks"][1]["replicas"] = 3
        api.replace(VCJOB, scaled, "default")
        eventually(lambda: ("update", "", "configmaps", "default") in ctrl_api.calls, what="the hosts rewritten")
        for i in range(3):  # bare low-priority pods: the PodGroup controller gives each its PodGroup
            api.create(POD, {"apiVersion": "v1", "kind": "Pod", "metadata": {
                "name": f"low-{i}", "namespace": "default", "labels": {"app": "low"},
                "annotations": {"volcano.sh/preemptable": "true"}},
                "spec": {"schedulerName": "volcano", "priorityClassName": "low", "containers": [
                    {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}, "default")
        eventually(lambda: all((api.obj(POD, f"low-{i}", "default")["status"].get("phase") == "Running")
                               for i in range(3)), what="the low pods to run")
        api.create(PODGROUP, {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                              "metadata": {"name": "high", "namespace": "default"},
                              "spec": {"minMember": 1, "queue": "default", "priorityClassName": "high"},
                              "status": {"phase": "Inqueue"}}, "default")
        api.create(POD, {"apiVersion": "v1", "kind": "Pod", "metadata": {
            "name": "high-0", "namespace": "default", "annotations": {"scheduling.k8s.io/group-name": "high"}},
            "spec": {"schedulerName": "volcano", "priorityClassName": "high", "containers": [
                {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "2"}}}]}}, "default")
        eventually(lambda: (api.obj(POD, "high-0", "default")["spec"].get("nodeName")), what="preemption")
        eventually(lambda: (api.obj(QUEUE, "default").get("status") or {}).get("running"), what="queue status")
        # a pod no node can hold: the scheduler writes its PodScheduled=False condition (pods/status)
        api.create(PODGROUP, {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                              "metadata": {"name": "huge", "namespace": "default"},
                              "spec": {"minMember": 1, "queue": "default"}}, "default")
        api.create(POD, {"apiVersion": "v1", "kind": "Pod", "metadata": {
            "name": "huge-0", "namespace": "default", "annotations": {"scheduling.k8s.io/group-name": "huge"}},
            "spec": {"schedulerName": "volcano", "containers": [
                {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "100"}}}]}}, "default")
        eventually(lambda: ("patch", "", "pods/status", "default") in sched_api.calls, what="a pod condition")
        api.delete(VCJOB, "tensorflow-benchmark", "default")  # the controller removes what the job owned
        eventually(lambda: ("delete", "", "configmaps", "default") in ctrl_api.calls, what="the job's cleanup")
    finally:
        stop.set()
        for c in (jobs, queues, podgroups, hypernodes):
            c.stop()
        sched.stop()
        writer.shutdown()

    sched_calls, ctrl_calls = sched_api.calls, ctrl_api.calls
    # the run did reach the calls that matter, so the check below is not vacuous
    assert {("create", "", "pods/binding", "default"), ("create", "", "pods/eviction", "default"),
            ("update", "coordination.k8s.io", "leases", "volcano-system"), ("list", "policy", "poddisruptionbudgets", ""),
            ("patch", "", "pods/status", "default"), ("watch", "topology.volcano.sh", "hypernodes", "")} <= sched_calls
    assert {("create", "", "pods", "default"), ("create", "", "services", "default"),
            ("create", "", "configmaps", "default"), ("delete", "bus.volcano.sh", "commands", "default"),
            ("update", "", "configmaps", "default"), ("patch", "scheduling.volcano.sh", "podgroups", "default"),
            ("create", "networking.k8s.io", "networkpolicies", "default"),
            ("patch", "", "pods", "default"), ("create", "scheduling.volcano.sh", "podgroups", "default"),
            ("update", "batch.volcano.sh", "jobs/status", "default"), ("delete", "", "services", "default"),
            ("list", "", "configmaps", "volcano-system"), ("list", "", "nodes", ""),
            ("create", "topology.volcano.sh", "hypernodes", ""), ("update", "topology.volcano.sh", "hypernodes", ""),
            ("delete", "topology.volcano.sh", "hypernodes", ""),
            ("patch", "topology.volcano.sh", "hypernodes/status", "")} <= ctrl_calls
    objs = manifest_objects()
    assert allowed(sched_calls, "volcano-scheduler", objs) == []
    assert allowed(ctrl_calls, "volcano-controllers", objs) == []
    # least privilege: the scheduler never writes the controllers' objects and the controllers never bind
    assert allowed({("create", "", "pods", "default")}, "volcano-scheduler", objs)
    assert allowed({("create", "", "pods/binding", "default")}, "volcano-controllers", objs)
    # the scheduler only reads HyperNodes; the controllers read ConfigMaps only in their own namespace
    assert allowed({("create", "topology.volcano.sh", "hypernodes", "")}, "volcano-scheduler", objs)
    assert allowed({("list", "", "configmaps", "default")}, "volcano-controllers", objs)
