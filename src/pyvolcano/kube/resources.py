"""The API resources pyvolcano reads and writes, with their REST paths.

One table instead of the generated per-kind client classes: the scheduler lists and watches raw JSON
(parsed with orjson), which is several times faster than the official client's model deserialisation.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Resource:
    """One REST resource: ``group``/``version``/``plural``, its kind and whether it lives in a namespace."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(self, namespace: str | None = None, name: str | None = None, sub: str | None = None) -> str:
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        if name:
            base += f"/{name}"
            if sub:
                base += f"/{sub}"
        return base

    def typed(self, obj: dict) -> dict:
        """List items come without ``kind``/``apiVersion``; the cache dispatches on ``kind``."""
        obj["kind"] = self.kind
        obj["apiVersion"] = self.api_version
        return obj

    def __str__(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural


POD = Resource("", "v1", "pods", "Pod")
NODE = Resource("", "v1", "nodes", "Node", namespaced=False)
NAMESPACE = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
EVENT = Resource("", "v1", "events", "Event")
CONFIGMAP = Resource("", "v1", "configmaps", "ConfigMap")
SERVICE = Resource("", "v1", "services", "Service")
SERVICEACCOUNT = Resource("", "v1", "serviceaccounts", "ServiceAccount")
SECRET = Resource("", "v1", "secrets", "Secret")
RESOURCEQUOTA = Resource("", "v1", "resourcequotas", "ResourceQuota")
PVC = Resource("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim")
PRIORITYCLASS = Resource("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", namespaced=False)
PDB = Resource("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget")
NETWORKPOLICY = Resource("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy")
LEASE = Resource("coordination.k8s.io", "v1", "leases", "Lease")
CRD = Resource("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition",
               namespaced=False)
PODGROUP = Resource("scheduling.volcano.sh", "v1beta1", "podgroups", "PodGroup")
QUEUE = Resource("scheduling.volcano.sh", "v1beta1", "queues", "Queue", namespaced=False)
VCJOB = Resource("batch.volcano.sh", "v1alpha1", "jobs", "Job")
COMMAND = Resource("bus.volcano.sh", "v1alpha1", "commands", "Command")
HYPERNODE = Resource("topology.volcano.sh", "v1alpha1", "hypernodes", "HyperNode", namespaced=False)
NUMATOPOLOGY = Resource("nodeinfo.volcano.sh", "v1alpha1", "numatopologies", "Numatopology", namespaced=False)
DEPLOYMENT = Resource("apps", "v1", "deployments", "Deployment")
CLUSTERROLE = Resource("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", namespaced=False)
CLUSTERROLEBINDING = Resource("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding",
                              namespaced=False)
ROLE = Resource("rbac.authorization.k8s.io", "v1", "roles", "Role")
ROLEBINDING = Resource("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding")
CRONJOB = Resource("batch.volcano.sh", "v1alpha1", "cronjobs", "CronJob")
JOBFLOW = Resource("flow.volcano.sh", "v1alpha1", "jobflows", "JobFlow")
JOBTEMPLATE = Resource("flow.volcano.sh", "v1alpha1", "jobtemplates", "JobTemplate")
MUTATINGWEBHOOK = Resource("admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations",
                           "MutatingWebhookConfiguration", namespaced=False)
VALIDATINGWEBHOOK = Resource("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations",
                             "ValidatingWebhookConfiguration", namespaced=False)

ALL = (POD, NODE, NAMESPACE, EVENT, CONFIGMAP, SERVICE, SERVICEACCOUNT, SECRET, RESOURCEQUOTA, PVC, PRIORITYCLASS,
       PDB, NETWORKPOLICY, LEASE, CRD, PODGROUP, QUEUE, VCJOB, COMMAND, HYPERNODE, NUMATOPOLOGY, DEPLOYMENT,
       CLUSTERROLE, CLUSTERROLEBINDING, ROLE, ROLEBINDING, CRONJOB, JOBFLOW, JOBTEMPLATE, MUTATINGWEBHOOK,
       VALIDATINGWEBHOOK)
_BY_TYPE = {(r.api_version, r.kind): r for r in ALL}


def for_object(obj: dict) -> Resource:
    """The resource of a manifest, from its ``apiVersion`` and ``kind``."""
    key = (obj.get("apiVersion", ""), obj.get("kind", ""))
    try:
        return _BY_TYPE[key]
    except KeyError:
        raise KeyError(f"unsupported object type apiVersion={key[0]!r} kind={key[1]!r}") from None
