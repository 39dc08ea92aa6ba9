"""``pyvolcano job run|list|view|delete|suspend|resume``: vcctl's job commands.

Suspend and resume create a ``bus.volcano.sh`` Command (AbortJob / ResumeJob) for the job controller, exactly as
vcctl does, so they work with Volcano's controller too.
"""

from __future__ import annotations

from typing import Any

import click

from pyvolcano.commands._kube import age, api_errors, kube_options, make_client, render_table
from pyvolcano.commands._output import output_option
from pyvolcano.errors import UserError

JOB_API = "batch.volcano.sh/v1alpha1"


def _parse_resources(text: str, flag: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        if "=" not in part:
            raise UserError(f"{flag}: {part!r} is not name=quantity (example: cpu=1000m,memory=100Mi)")
        k, v = part.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def job_from_flags(name: str, namespace: str, image: str, min_available: int, replicas: int, requests: str,
                   limits: str, scheduler: str, queue: str) -> dict[str, Any]:
    """The one-task job ``vcctl job run`` builds from its flags."""
    res: dict[str, Any] = {}
    if requests:
        res["requests"] = _parse_resources(requests, "--requests")
    if limits:
        res["limits"] = _parse_resources(limits, "--limits")
    return {
        "apiVersion": JOB_API, "kind": "Job", "metadata": {"name": name, "namespace": namespace},
        "spec": {"minAvailable": min_available, "schedulerName": scheduler, "queue": queue,
                 "tasks": [{"name": name, "replicas": replicas, "template": {
                     "metadata": {"name": name}, "spec": {"restartPolicy": "Never", "containers": [
                         {"name": name, "image": image, "imagePullPolicy": "IfNotPresent", "resources": res}]}}}]},
    }


def _command(job: dict[str, Any], action: str) -> dict[str, Any]:
    md = job["metadata"]
    ref = {"apiVersion": JOB_API, "kind": "Job", "name": md["name"], "uid": md["uid"], "controller": True,
           "blockOwnerDeletion": True}
    return {"apiVersion": "bus.volcano.sh/v1alpha1", "kind": "Command",
            "metadata": {"generateName": f"{md['name']}-{action.lower()}-", "namespace": md["namespace"],
                         "ownerReferences": [ref]},
            "target": ref, "action": action}


def _counts(job: dict[str, Any]) -> dict[str, int]:
    st = job.get("status") or {}
    return {k: int(st.get(k) or 0) for k in ("pending", "running", "succeeded", "failed", "unknown", "retryCount")}


@click.command("run")
@kube_options
@click.option("-f", "--filename", default=None, help="Job manifest(s) (YAML; - for stdin).")
@click.option("-N", "--name", default="", help="Job name (without -f).")
@click.option("-n", "--namespace", default="default", show_default=True)
@click.option("-i", "--image", default="busybox", show_default=True)
@click.option("-m", "--min", "min_available", default=1, show_default=True, type=click.IntRange(0, 100_000))
@click.option("-r", "--replicas", default=1, show_default=True, type=click.IntRange(0, 100_000))
@click.option("-R", "--requests", default="cpu=1000m,memory=100Mi", show_default=True)
@click.option("-L", "--limits", default="cpu=1000m,memory=100Mi", show_default=True)
@click.option("-S", "--scheduler", default="volcano", show_default=True)
@click.option("-q", "--queue", default="default", show_default=True)
def run_job(kubeconfig: str | None, master: str | None, context: str | None, filename: str | None, name: str,
            namespace: str, image: str, min_available: int, replicas: int, requests: str, limits: str,
            scheduler: str, queue: str) -> None:
    """Submit a job from a manifest (-f) or from flags."""
    from pyvolcano.cache.manifests import load_objects
    from pyvolcano.kube.resources import QUEUE, VCJOB
    from pyvolcano.kube.validation import validate_job

    if filename:
        jobs = [o for o in load_objects(filename) if o.get("kind") == "Job"
                and str(o.get("apiVersion", "")).startswith("batch.volcano.sh/")]
        if not jobs:
            raise UserError(f"{filename}: no batch.volcano.sh Job in it")
    else:
        if not name:
            raise UserError("job run: give -f FILE or a job name with -N/--name")
        jobs = [job_from_flags(name, namespace, image, min_available, replicas, requests, limits, scheduler,
                               queue)]
    api = make_client(kubeconfig, master, context)
    with api_errors("job run"):
        queues = {q["metadata"]["name"]: q for q in api.list(QUEUE)[0]}
    for j in jobs:
        md = j.setdefault("metadata", {})
        md.setdefault("namespace", namespace)
        errs = validate_job(j, queues)
        if errs:
            raise UserError(errs[0] + (f" (and {len(errs) - 1} more)" if len(errs) > 1 else ""))
        with api_errors(f"job run {md['namespace']}/{md.get('name')}"):
            created = api.create(VCJOB, j, md["namespace"])
        click.echo(f"run job {created['metadata']['namespace']}/{created['metadata']['name']} successfully")


@click.command("list")
@kube_options
@click.option("-n", "--namespace", default="default", show_default=True)
@click.option("--all-namespaces", "-A", is_flag=True)
@click.option("-S", "--scheduler", default="", help="Only jobs of this scheduler.")
@click.option("-q", "--queue", default="", help="Only jobs in this queue.")
@output_option()
def list_jobs(kubeconfig: str | None, master: str | None, context: str | None, namespace: str,
              all_namespaces: bool, scheduler: str, queue: str, output: str) -> None:
    """List jobs with their phase and pod counts."""
    from pyvolcano.kube.resources import VCJOB

    api = make_client(kubeconfig, master, context)
    with api_errors("job list"):
        jobs, _ = api.list(VCJOB, None if all_namespaces else namespace)
    rows = []
    for j in jobs:
        spec = j.get("spec") or {}
        if (scheduler and spec.get("schedulerName") != scheduler) or (queue and spec.get("queue") != queue):
            continue
        c = _counts(j)
        replicas = sum(int(t.get("replicas") or 0) for t in spec.get("tasks") or [])
        row = [j["metadata"]["name"], age(j["metadata"].get("creationTimestamp")),
               ((j.get("status") or {}).get("state") or {}).get("phase", "") or "Pending",
               (j["metadata"].get("labels") or {}).get("volcano.sh/job-type", "Batch"), replicas,
               spec.get("minAvailable", 0), c["pending"], c["running"], c["succeeded"], c["failed"],
               c["unknown"], c["retryCount"]]
        rows.append(([j["metadata"]["namespace"]] if all_namespaces else []) + row)
    if not rows and output in ("table", "wide"):
        click.echo(f"No resources found in {'any' if all_namespaces else namespace} namespace.")
        return
    cols = ["Name", "Creation", "Phase", "JobType", "Replicas", "Min", "Pending", "Running", "Succeeded",
            "Failed", "Unknown", "RetryCount"]
    render_table("", (["Namespace"] if all_namespaces else []) + cols, rows, output)


@click.command("view")
@kube_options
@click.option("-N", "--name", required=True)
@click.option("-n", "--namespace", default="default", show_default=True)
def view_job(kubeconfig: str | None, master: str | None, context: str | None, name: str, namespace: str) -> None:
    """Show one job: spec summary, status, its pods and recent events."""
    from pyvolcano.kube.resources import EVENT, POD, VCJOB

    api = make_client(kubeconfig, master, context)
    with api_errors(f"job view {namespace}/{name}"):
        j = api.get(VCJOB, name, namespace)
        pods, _ = api.list(POD, namespace, label_selector=f"volcano.sh/job-name={name}")
        events, _ = api.list(EVENT, namespace, field_selector=f"involvedObject.name={name}")
    spec, st = j.get("spec") or {}, j.get("status") or {}
    state = st.get("state") or {}
    click.echo(f"Name:         {name}\nNamespace:    {namespace}\nQueue:        {spec.get('queue', 'default')}")
    click.echo(f"Scheduler:    {spec.get('schedulerName', '')}\nMinAvailable: {spec.get('minAvailable', 0)}")
    click.echo(f"Phase:        {state.get('phase', 'Pending')}"
               + (f" ({state.get('reason')})" if state.get("reason") else ""))
    if state.get("message"):
        click.echo(f"Message:      {state['message']}")
    c = _counts(j)
    click.echo("Counts:       " + ", ".join(f"{k} {v}" for k, v in c.items()))
    click.echo("Tasks:")
    for t in spec.get("tasks") or []:
        click.echo(f"  {t.get('name', '')}: replicas {t.get('replicas', 1)}")
    if pods:
        render_table("Pods", ["Name", "Phase", "Node"],
                     [[p["metadata"]["name"], (p.get("status") or {}).get("phase", ""),
                       (p.get("spec") or {}).get("nodeName", "") or "<none>"] for p in pods])
    if events:
        render_table("Events", ["Type", "Reason", "Message"],
                     [[e.get("type", ""), e.get("reason", ""), e.get("message", "")] for e in events[-10:]])


def _simple(cmd: str, doc: str, action: str | None) -> click.Command:
    """``job delete``, ``job suspend`` or ``job resume``: one job by name, one API call."""

    @click.command(cmd, help=doc)
    @kube_options
    @click.option("-N", "--name", required=True)
    @click.option("-n", "--namespace", default="default", show_default=True)
    def handler(kubeconfig: str | None, master: str | None, context: str | None, name: str,
                namespace: str) -> None:
        from pyvolcano.kube.resources import COMMAND, VCJOB

        api = make_client(kubeconfig, master, context)
        with api_errors(f"job {cmd} {namespace}/{name}"):
            if action is None:
                api.delete(VCJOB, name, namespace, propagation="Background")
                click.echo(f"delete job {name} successfully")
                return
            j = api.get(VCJOB, name, namespace)
            api.create(COMMAND, _command(j, action), namespace)
        click.echo(f"{cmd} job {name} successfully")

    return handler


def register(group: click.Group) -> None:
    @group.group("job")
    def job() -> None:
        """Volcano jobs (batch.volcano.sh/v1alpha1 Job), like vcctl job."""

    for cmd in (run_job, list_jobs, view_job):
        job.add_command(cmd)
    job.add_command(_simple("delete", "Delete a job (its pods and PodGroup go with it).", None))
    job.add_command(_simple("suspend", "Suspend a job: its pods are deleted, the job kept (AbortJob).", "AbortJob"))
    job.add_command(_simple("resume", "Resume a suspended job (ResumeJob).", "ResumeJob"))
