"""``pyvolcano queue create|list|get|delete|operate``: vcctl's queue commands."""

from __future__ import annotations

from typing import Any

import click

from pyvolcano.commands._kube import age, api_errors, kube_options, make_client, render_table
from pyvolcano.commands._output import output_option
from pyvolcano.errors import UserError

QUEUE_API = "scheduling.volcano.sh/v1beta1"


def _resources(text: str, flag: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        if "=" not in part:
            raise UserError(f"{flag}: {part!r} is not name=quantity (example: cpu=4,memory=8Gi)")
        k, v = part.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def queue_command(q: dict[str, Any], action: str) -> dict[str, Any]:
    """A Command the queue controller consumes (OpenQueue / CloseQueue), as vcctl queue operate makes it.
    Commands are namespaced and queues are not: Volcano puts them in the default namespace."""
    ref = {"apiVersion": QUEUE_API, "kind": "Queue", "name": q["metadata"]["name"], "uid": q["metadata"]["uid"],
           "controller": True, "blockOwnerDeletion": True}
    return {"apiVersion": "bus.volcano.sh/v1alpha1", "kind": "Command",
            "metadata": {"generateName": f"{q['metadata']['name']}-{action.lower()}-", "namespace": "default",
                         "ownerReferences": [ref]},
            "target": ref, "action": action}


def _row(q: dict[str, Any]) -> list[Any]:
    st = q.get("status") or {}
    return [q["metadata"]["name"], (q.get("spec") or {}).get("weight", 1), st.get("state") or "Open",
            st.get("inqueue", 0), st.get("pending", 0), st.get("running", 0), st.get("unknown", 0),
            st.get("completed", 0), age(q["metadata"].get("creationTimestamp"))]


_COLUMNS = ["Name", "Weight", "State", "Inqueue", "Pending", "Running", "Unknown", "Completed", "Age"]


def register(group: click.Group) -> None:
    @group.group("queue")
    def queue() -> None:
        """Volcano queues (scheduling.volcano.sh/v1beta1 Queue), like vcctl queue."""

    @queue.command("create")
    @kube_options
    @click.option("-n", "--name", required=True)
    @click.option("-w", "--weight", default=1, show_default=True, type=int)
    @click.option("-s", "--state", default="Open", show_default=True, type=click.Choice(["Open", "Closed"]))
    @click.option("-c", "--capability", default="", help="Most the queue may use, e.g. cpu=8,memory=16Gi.")
    @click.option("-d", "--deserved", default="", help="Deserved resources (capacity plugin).")
    @click.option("-p", "--parent", default="", help="Parent queue (hierarchical queues).")
    @click.option("--reclaimable/--not-reclaimable", default=True, show_default=True)
    def create(kubeconfig: str | None, master: str | None, context: str | None, name: str, weight: int,
               state: str, capability: str, deserved: str, parent: str, reclaimable: bool) -> None:
        """Create a queue."""
        from pyvolcano.kube.resources import COMMAND, QUEUE
        from pyvolcano.kube.validation import validate_queue

        spec: dict[str, Any] = {"weight": weight, "reclaimable": reclaimable}
        if capability:
            spec["capability"] = _resources(capability, "--capability")
        if deserved:
            spec["deserved"] = _resources(deserved, "--deserved")
        if parent:
            spec["parent"] = parent
        body = {"apiVersion": QUEUE_API, "kind": "Queue", "metadata": {"name": name}, "spec": spec}
        api = make_client(kubeconfig, master, context)
        with api_errors(f"queue create {name}"):
            queues = {q["metadata"]["name"]: q for q in api.list(QUEUE)[0]}
        errs = validate_queue(body, queues)
        if errs:
            raise UserError(errs[0])
        with api_errors(f"queue create {name}"):
            created = api.create(QUEUE, body)
            if state == "Closed":
                api.create(COMMAND, queue_command(created, "CloseQueue"), "default")
        click.echo(f"create queue {name} successfully")

    @queue.command("list")
    @kube_options
    @output_option()
    def list_(kubeconfig: str | None, master: str | None, context: str | None, output: str) -> None:
        """List queues with their state and PodGroup counts."""
        from pyvolcano.kube.resources import QUEUE

        api = make_client(kubeconfig, master, context)
        with api_errors("queue list"):
            queues, _ = api.list(QUEUE)
        if not queues and output in ("table", "wide"):
            click.echo("No resources found")
            return
        render_table("", _COLUMNS, [_row(q) for q in queues], output)

    @queue.command("get")
    @kube_options
    @click.option("-n", "--name", required=True)
    def get(kubeconfig: str | None, master: str | None, context: str | None, name: str) -> None:
        """Show one queue."""
        from pyvolcano.kube.resources import QUEUE

        api = make_client(kubeconfig, master, context)
        with api_errors(f"queue get {name}"):
            q = api.get(QUEUE, name)
        render_table("", _COLUMNS, [_row(q)])
        alloc = (q.get("status") or {}).get("allocated")
        if alloc:
            click.echo("Allocated: " + ", ".join(f"{k}={v}" for k, v in sorted(alloc.items())))

    @queue.command("delete")
    @kube_options
    @click.option("-n", "--name", required=True)
    def delete(kubeconfig: str | None, master: str | None, context: str | None, name: str) -> None:
        """Delete a Closed queue (Volcano refuses to delete an open queue or the default queue)."""
        from pyvolcano.kube.resources import QUEUE

        if name == "default":
            raise UserError("queue delete default: the default queue can not be deleted")
        api = make_client(kubeconfig, master, context)
        with api_errors(f"queue delete {name}"):
            q = api.get(QUEUE, name)
            state = (q.get("status") or {}).get("state") or "Open"
            if state != "Closed":
                raise UserError(f"queue delete {name}: only a Closed queue can be deleted, queue {name} is "
                                f"{state} (close it first: pyvolcano queue operate -n {name} -a close)")
            api.delete(QUEUE, name)
        click.echo(f"delete queue {name} successfully")

    @queue.command("operate")
    @kube_options
    @click.option("-n", "--name", required=True)
    @click.option("-a", "--action", required=True, type=click.Choice(["open", "close", "update"]))
    @click.option("-w", "--weight", default=0, type=int, help="New weight (with -a update).")
    def operate(kubeconfig: str | None, master: str | None, context: str | None, name: str, action: str,
                weight: int) -> None:
        """Open or close a queue (through the queue controller), or update its weight."""
        from pyvolcano.kube.resources import COMMAND, QUEUE

        api = make_client(kubeconfig, master, context)
        with api_errors(f"queue operate {name}"):
            q = api.get(QUEUE, name)
            if action == "update":
                if weight <= 0:
                    raise UserError("queue operate -a update: give a positive --weight")
                api.patch(QUEUE, name, {"spec": {"weight": weight}})
            else:
                api.create(COMMAND, queue_command(q, "OpenQueue" if action == "open" else "CloseQueue"), "default")
        click.echo(f"{action} queue {name} successfully")
