"""deploy/*.yaml and ``pyvolcano install``: Volcano-compatible CRDs, least-privilege RBAC, the default conf."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from pyvolcano.cli import main
from pyvolcano.commands.install import apply_all, manifest_objects
from pyvolcano.conf.loader import DEFAULT_CONF, load_conf
from pyvolcano.controllers.hypernode import parse_discovery_conf
from pyvolcano.kube.resources import CRD, for_object
from tests.kube import kubeserver
from tests.kube.fakeapi import FakeApi


def by_kind(kind: str) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in manifest_objects() if o["kind"] == kind}


def test_install_print_is_applyable_yaml_with_the_image_substituted() -> None:
    r = CliRunner().invoke(main, ["install", "--print", "--image", "registry.example/pyvolcano:9"])
    assert r.exit_code == 0
    docs = [d for d in yaml.safe_load_all(r.output) if d]
    kinds = [d["kind"] for d in docs]
    assert kinds[0] == "Namespace" and kinds.count("CustomResourceDefinition") == 9
    assert kinds.index("CustomResourceDefinition") < kinds.index("Deployment")
    images = [c["image"] for d in docs if d["kind"] == "Deployment"
              for c in d["spec"]["template"]["spec"]["containers"]]
    assert images == ["registry.example/pyvolcano:9"] * 3
    for d in docs:
        for_object(d)  # every object is of a known type
    crds = CliRunner().invoke(main, ["install", "--print", "--crds-only"]).output
    assert {d["kind"] for d in yaml.safe_load_all(crds) if d} == {"CustomResourceDefinition"}


def test_crds_match_volcanos_names() -> None:
    crds = by_kind("CustomResourceDefinition")
    expect = {
        "queues.scheduling.volcano.sh": ("scheduling.volcano.sh", "v1beta1", "Queue", "Cluster",
                                         ["q", "queue-v1beta1"]),
        "podgroups.scheduling.volcano.sh": ("scheduling.volcano.sh", "v1beta1", "PodGroup", "Namespaced",
                                            ["pg", "podgroup-v1beta1"]),
        "jobs.batch.volcano.sh": ("batch.volcano.sh", "v1alpha1", "Job", "Namespaced", ["vcjob", "vj"]),
        "commands.bus.volcano.sh": ("bus.volcano.sh", "v1alpha1", "Command", "Namespaced", []),
        "hypernodes.topology.volcano.sh": ("topology.volcano.sh", "v1alpha1", "HyperNode", "Cluster", ["hn"]),
        "numatopologies.nodeinfo.volcano.sh": ("nodeinfo.volcano.sh", "v1alpha1", "Numatopology", "Cluster",
                                               ["numatopo"]),
        "cronjobs.batch.volcano.sh": ("batch.volcano.sh", "v1alpha1", "CronJob", "Namespaced", ["cronvcjob", "cronvj"]),
        "jobflows.flow.volcano.sh": ("flow.volcano.sh", "v1alpha1", "JobFlow", "Namespaced", ["jf"]),
        "jobtemplates.flow.volcano.sh": ("flow.volcano.sh", "v1alpha1", "JobTemplate", "Namespaced", ["jt"]),
    }
    assert set(crds) == set(expect)
    for name, (group, version, kind, scope, short) in expect.items():
        spec = crds[name]["spec"]
        assert (spec["group"], spec["versions"][0]["name"], spec["names"]["kind"], spec["scope"]) == \
            (group, version, kind, scope)
        assert spec["names"].get("shortNames", []) == short
    # Volcano's PodGroup has no status subresource (status is written with the object); Queue and Job do
    assert "subresources" not in crds["podgroups.scheduling.volcano.sh"]["spec"]["versions"][0]
    assert crds["queues.scheduling.volcano.sh"]["spec"]["versions"][0]["subresources"] == {"status": {}}
    pg = crds["podgroups.scheduling.volcano.sh"]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    assert set(pg["properties"]["spec"]["properties"]) >= {"minMember", "minTaskMember", "minResources", "queue",
                                                           "priorityClassName"}
    assert set(pg["properties"]["status"]["properties"]) >= {"phase", "conditions", "running", "succeeded",
                                                             "failed"}
    hn = crds["hypernodes.topology.volcano.sh"]["spec"]["versions"][0]
    assert hn["subresources"] == {"status": {}}
    hn_schema = hn["schema"]["openAPIV3Schema"]["properties"]
    assert hn_schema["spec"]["required"] == ["tier"] and hn_schema["spec"]["properties"]["tier"]["minimum"] == 0
    assert hn_schema["spec"]["properties"]["members"]["minItems"] == 1
    assert set(hn_schema["status"]["properties"]) == {"conditions", "nodeCount"}
    job = crds["jobs.batch.volcano.sh"]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]
    assert set(job["spec"]["properties"]) >= {"schedulerName", "minAvailable", "tasks", "policies", "plugins",
                                              "queue", "maxRetry", "priorityClassName", "volumes",
                                              "ttlSecondsAfterFinished"}


def _structural(schema: dict[str, Any], path: str) -> list[str]:
    """Every node must say its type (or preserve unknown fields / be int-or-string): the API server rejects
    non-structural CRD schemas."""
    bad = []
    if not (schema.get("type") or schema.get("x-kubernetes-preserve-unknown-fields")
            or schema.get("x-kubernetes-int-or-string")):
        bad.append(path)
    for k, sub in (schema.get("properties") or {}).items():
        bad += _structural(sub, f"{path}.{k}")
    if isinstance(schema.get("items"), dict):
        bad += _structural(schema["items"], f"{path}[]")
    if isinstance(schema.get("additionalProperties"), dict):
        bad += _structural(schema["additionalProperties"], f"{path}{{}}")
    return bad


def test_crd_schemas_are_structural() -> None:
    for name, crd in by_kind("CustomResourceDefinition").items():
        for v in crd["spec"]["versions"]:
            assert _structural(v["schema"]["openAPIV3Schema"], name) == []


def test_configmap_carries_the_default_conf() -> None:
    cm = by_kind("ConfigMap")["volcano-scheduler-configmap"]
    text = cm["data"]["volcano-scheduler.conf"]
    assert load_conf(text) == load_conf(DEFAULT_CONF)


def test_hypernode_crd_is_volcanos_file_unchanged() -> None:
    """The HyperNode CRD is Volcano's own yaml (config/crd/volcano/bases/topology.volcano.sh_hypernodes.yaml at
    ed72c7c8, which the shared tools carry unchanged in ``volcano/crd/``): compared document for document."""
    theirs = kubeserver.TOOLS / "volcano" / "crd" / "topology.volcano.sh_hypernodes.yaml"
    if not theirs.exists():
        pytest.skip(f"no {theirs} (the shared tools)")
    assert by_kind("CustomResourceDefinition")["hypernodes.topology.volcano.sh"] == yaml.safe_load(theirs.read_text())


def test_numatopology_crd_is_volcanos_file_unchanged() -> None:
    """The Numatopology CRD is Volcano's own yaml (nodeinfo.volcano.sh_numatopologies.yaml at ed72c7c8)."""
    theirs = kubeserver.TOOLS / "volcano" / "crd" / "nodeinfo.volcano.sh_numatopologies.yaml"
    if not theirs.exists():
        pytest.skip(f"no {theirs} (the shared tools)")
    assert by_kind("CustomResourceDefinition")["numatopologies.nodeinfo.volcano.sh"] == \
        yaml.safe_load(theirs.read_text())


def test_controller_configmap_is_empty_discovery_conf() -> None:
    cm = by_kind("ConfigMap")["volcano-controller-configmap"]
    assert cm["metadata"]["namespace"] == "volcano-system"
    assert parse_discovery_conf(cm["data"]["volcano-controller.conf"]).label_types is None


def test_scheduler_rbac_is_least_privilege() -> None:
    role = by_kind("ClusterRole")["volcano-scheduler"]
    grants = {(g, r): set(rule["verbs"]) for rule in role["rules"] for g in rule["apiGroups"]
              for r in rule["resources"]}
    assert grants[("", "pods/binding")] == {"create"}
    assert grants[("", "pods/eviction")] == {"create"}
    assert "delete" not in grants[("", "pods")] and "create" not in grants[("", "pods")]
    assert not any("*" in verbs or "*" in r for (_, r), verbs in grants.items())
    assert not any(g == "coordination.k8s.io" for g, _ in grants)  # leases only via the namespaced Role
    lease_role = by_kind("Role")["volcano-scheduler-leader-election"]
    assert lease_role["metadata"]["namespace"] == "volcano-system"


def test_install_applies_everything_and_waits_for_the_crds() -> None:
    api = FakeApi()
    objects = manifest_objects()
    # the fake has no CRD controller: mark them Established as the API server would
    orig = api.apply

    def apply(res, body, field_manager="pyvolcano"):
        out = orig(res, body, field_manager)
        if res == CRD:
            api.patch(CRD, body["metadata"]["name"], {"status": {"conditions": [
                {"type": "Established", "status": "True"}]}})
        return out

    api.apply = apply  # type: ignore[method-assign]
    lines: list[str] = []
    apply_all(api, objects, lines.append)
    assert len(lines) == len(objects)
    assert api.obj(CRD, "jobs.batch.volcano.sh") is not None
