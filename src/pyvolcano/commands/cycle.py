"""``pyvolcano cycle``: what one Volcano scheduling session would decide for a cluster snapshot."""

from __future__ import annotations

import json
import sys

import click

from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.cache.manifests import load_objects
from pyvolcano.conf.loader import load_conf_file
from pyvolcano.errors import UserError
from pyvolcano.framework.cycle import result_json, run_session
from pyvolcano.framework.session import SessionResult


def table(result: SessionResult, problems: list[str]) -> None:
    from rich.console import Console
    from rich.table import Table

    t = Table(title="pyvolcano cycle", show_lines=False)
    for col in ("PodGroup", "Phase", "Outcome", "Why"):
        t.add_column(col, overflow="fold")
    by_job: dict[str, list[str]] = {}
    job_of = {t.uid: t.job for t in result.bind_tasks}
    job_of.update(result.pipelined_jobs)
    for uid in result.binds:
        by_job.setdefault(job_of.get(uid, ""), []).append(f"bind {uid.split('/', 1)[1]} -> {result.binds[uid]}")
    for uid, node in result.pipelined.items():
        by_job.setdefault(job_of.get(uid, ""), []).append(f"pipeline {uid.split('/', 1)[1]} -> {node}")
    for e in result.evictions:
        by_job.setdefault(e.task.job, []).append(f"evict {e.task.uid} ({e.reason})")
    for uid, pg in sorted(result.podgroups.items()):
        outcome = "; ".join(by_job.pop(uid, [])) or "-"
        t.add_row(uid, pg.phase, outcome, pg.reason)
    for uid, why in sorted(result.skipped.items()):
        t.add_row(uid, "-", "skipped", why)
    for uid, lines in by_job.items():
        t.add_row(uid or "-", "", "; ".join(lines), "")
    console = Console(width=max(120, Console().width))
    console.print(t)
    for p in problems:
        console.print(f"[yellow]skipped object:[/] {p}")



def register(group: click.Group) -> None:
    @group.command("cycle")
    @click.argument("snapshot")
    @click.option("--config", "-c", "config", default=None, help="volcano-scheduler.conf (default: Volcano's).")
    @click.option("--output", "-o", type=click.Choice(["json", "table"]), default="table", show_default=True)
    @click.option("--scheduler-name", default="volcano", show_default=True,
                  help="Pods with this spec.schedulerName are scheduled; others only use node resources.")
    @click.option("--strict", is_flag=True,
                  help="Refuse to schedule anything when an object is malformed (without it, malformed objects "
                       "are skipped with a warning, the rest is scheduled and printed, and the exit code is 2).")
    @click.option("--engine", type=click.Choice(["vector", "scalar"]), default="vector", hidden=True)
    def cycle(snapshot: str, config: str | None, output: str, scheduler_name: str, strict: bool,
              engine: str) -> None:
        """Run one scheduling session on SNAPSHOT (YAML manifests, a kind: List, or - for stdin).

        CONFIG is a volcano-scheduler.conf, or the ConfigMap that holds one."""
        conf = load_conf_file(config)
        objects = load_objects(snapshot)
        cache = SchedulerCache.from_objects(objects, scheduler_name)
        if strict and cache.problems:
            raise UserError(f"{len(cache.problems)} malformed object(s) in {snapshot}: " + "; ".join(cache.problems))
        result = run_session(cache, conf, engine)
        if output == "json":  # the table shows these itself
            for p in cache.problems:
                print(f"pyvolcano: warning: skipped {p}", file=sys.stderr)
            for uid, why in result.skipped.items():
                print(f"pyvolcano: warning: job {uid} not scheduled: {why}", file=sys.stderr)
            click.echo(json.dumps(result_json(result)))
        else:
            table(result, cache.problems)
        if cache.problems:  # the rest was scheduled and printed; the mistake still fails the command
            sys.exit(2)
