"""``pyvolcano install``: the CRDs, RBAC, default conf and Deployments that replace Volcano's components.

``--print`` writes the manifests for ``kubectl apply -f -``; without it they are applied directly
(server-side apply), so a cluster without kubectl can still be set up.
"""

from __future__ import annotations

import time
from importlib import resources
from typing import Any

import click
import yaml

from pyvolcano.commands._kube import kube_options, make_client
from pyvolcano.errors import UserError

DEFAULT_IMAGE = "pyvolcano:0.1.0"


def manifest_files() -> list[tuple[str, str]]:
    """(file name, text) of every deploy/*.yaml, in install order (the names are numbered)."""
    root = resources.files("pyvolcano") / "deploy"
    return sorted((f.name, f.read_text()) for f in root.iterdir() if f.name.endswith(".yaml"))


def manifests_text(image: str = DEFAULT_IMAGE, crds_only: bool = False) -> str:
    parts = []
    for name, text in manifest_files():
        if crds_only and "-crd-" not in name:
            continue
        text = text.replace(f"image: {DEFAULT_IMAGE}", f"image: {image}")
        parts.append(f"# Source: pyvolcano/deploy/{name}\n{text}")
    if not crds_only:
        parts.append(webhook_configurations_text())
    return "---\n".join(p if p.endswith("\n") else p + "\n" for p in parts)


def webhook_configurations_text() -> str:
    """The admission webhooks' Mutating/ValidatingWebhookConfigurations (``kube/webhook.py``: Volcano's paths,
    failure policies and selectors), pointing at the webhook's Service; the webhook adds the caBundle of the
    certificate it makes when it starts (``--register``)."""
    from pyvolcano.kube.webhook import service_client_config, webhook_configurations

    objs = webhook_configurations(service_client_config("volcano-system", "volcano-admission-service"))
    return "# Source: pyvolcano/kube/webhook.py (webhook configurations)\n" + yaml.safe_dump_all(
        objs, sort_keys=False, explicit_start=False)


def manifest_objects(image: str = DEFAULT_IMAGE, crds_only: bool = False) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(manifests_text(image, crds_only)) if d]


def _wait_established(api: Any, names: list[str], timeout: float = 60.0) -> None:
    from pyvolcano.kube.resources import CRD

    deadline = time.monotonic() + timeout
    for name in names:
        while True:
            crd = api.get(CRD, name)
            conds = {c.get("type"): c.get("status") for c in (crd.get("status") or {}).get("conditions") or []}
            if conds.get("Established") == "True":
                break
            if time.monotonic() > deadline:
                raise UserError(f"CustomResourceDefinition {name} is not Established after {timeout:.0f}s")
            time.sleep(0.2)


def apply_all(api: Any, objects: list[dict[str, Any]], echo: Any = None) -> None:
    from pyvolcano.kube.client import ApiError
    from pyvolcano.kube.resources import for_object

    crds = []
    for obj in objects:
        res = for_object(obj)
        try:
            api.apply(res, obj)
        except ApiError as exc:
            raise UserError(f"cannot apply {obj['kind']} {obj['metadata']['name']}: {exc}") from None
        if echo:
            echo(f"{obj['kind'].lower()}/{obj['metadata']['name']} applied")
        if obj["kind"] == "CustomResourceDefinition":
            crds.append(obj["metadata"]["name"])
    if crds:
        _wait_established(api, crds)


def register(group: click.Group) -> None:
    @group.command("install")
    @kube_options
    @click.option("--print", "print_only", is_flag=True, help="Print the manifests instead of applying them.")
    @click.option("--image", default=DEFAULT_IMAGE, show_default=True, help="Image of the scheduler and "
                  "controller Deployments (build it with the Dockerfile at the repository root).")
    @click.option("--crds-only", is_flag=True, help="Only the CustomResourceDefinitions (to run the scheduler "
                  "and controller outside the cluster).")
    def install(kubeconfig: str | None, master: str | None, context: str | None, print_only: bool, image: str,
                crds_only: bool) -> None:
        """Install pyvolcano in place of Volcano's scheduler and controllers."""
        if print_only:
            click.echo(manifests_text(image, crds_only), nl=False)
            return
        api = make_client(kubeconfig, master, context)
        apply_all(api, manifest_objects(image, crds_only), click.echo)
