"""``pyvolcano cycle``: what one Volcano scheduling session would decide for a cluster snapshot."""

from __future__ import annotations

import sys

import click

from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.cache.manifests import load_snapshot
from pyvolcano.commands._output import console, emit, output_option, pick_file
from pyvolcano.conf.loader import load_conf, load_conf_file
from pyvolcano.errors import UserError
from pyvolcano.framework.cycle import result_json, run_session
from pyvolcano.framework.explain import ScoreBreakdown
from pyvolcano.framework.result import SessionResult


def rows(result: SessionResult) -> list[tuple[str, str, str, str]]:
    """(PodGroup, phase, outcome, why) per PodGroup, skipped job and stray decision."""
    by_job: dict[str, list[str]] = {}
    job_of = {t.uid: t.job for t in result.bind_tasks}
    job_of.update(result.pipelined_jobs)
    for uid in result.binds:
        by_job.setdefault(job_of.get(uid, ""), []).append(f"bind {uid.split('/', 1)[1]} -> {result.binds[uid]}")
    for uid, node in result.pipelined.items():
        by_job.setdefault(job_of.get(uid, ""), []).append(f"pipeline {uid.split('/', 1)[1]} -> {node}")
    for e in result.evictions:
        by_job.setdefault(e.task.job, []).append(f"evict {e.task.uid} ({e.reason})")
    for uid, pg in result.podgroups.items():
        for pod, node in pg.nominated.items():
            by_job.setdefault(uid, []).append(f"nominate {pod.split('/', 1)[1]} -> {node}")
    out = []
    for uid, pg in sorted(result.podgroups.items()):
        outcome = "; ".join(by_job.pop(uid, [])) or "-"
        out.append((uid, pg.phase, outcome, pg.reason))
    for uid, why in sorted(result.skipped.items()):
        out.append((uid, "-", "skipped", why))
    for uid, lines in by_job.items():
        out.append((uid or "-", "", "; ".join(lines), ""))
    return out


def table(result: SessionResult, problems: list[str], wide: bool) -> None:
    """The decisions per PodGroup; ``wide`` adds why a PodGroup waits (the table only marks that it does)."""
    from rich.table import Table

    t = Table(title="pyvolcano cycle", show_lines=wide)
    for col in ("PodGroup", "Phase", "Outcome", *(("Why",) if wide else ())):
        t.add_column(col, overflow="fold")
    for uid, phase, outcome, why in rows(result):
        if wide:
            t.add_row(uid, phase, outcome, why)
        else:
            t.add_row(uid, phase, outcome + (" (waiting: -o wide says why)" if why and outcome == "-" else ""))
    c = console()
    c.print(t)
    for p in problems:
        c.print(f"[yellow]skipped object:[/] {p}", highlight=False)


def print_scores(scores: dict[str, ScoreBreakdown]) -> None:
    from rich.table import Table

    c = console()
    for uid, s in sorted(scores.items()):
        if not s.best:
            c.print(f"{uid}: no node passes the predicates", highlight=False)
            continue
        plugins = sorted({p for b in s.best for p in b.plugins})
        c.print(f"[bold]{uid}[/]: best of {s.feasible_nodes} node(s) passing the predicates", highlight=False)
        t = Table()
        for col in ("Node", "Total", *plugins):
            t.add_column(col, overflow="fold", justify="left" if col == "Node" else "right")
        for b in s.best:
            t.add_row(b.node, f"{b.total:g}", *(f"{b.plugins.get(p, 0.0):g}" for p in plugins))
        c.print(t)


def register(group: click.Group) -> None:
    @group.command("cycle")
    @click.argument("snapshot", required=False)
    @click.option("-f", "--filename", default=None, help="The snapshot (instead of the argument; - for stdin).")
    @click.option("--config", "-c", "config", default=None,
                  help="volcano-scheduler.conf or its ConfigMap (default: the scenario's config:, else Volcano's).")
    @output_option()
    @click.option("--scheduler-name", default="volcano", show_default=True,
                  help="Pods with this spec.schedulerName are scheduled; others only use node resources.")
    @click.option("--strict", is_flag=True,
                  help="Refuse to schedule anything when an object is malformed (without it, malformed objects "
                       "are skipped with a warning, the rest is scheduled and printed, and the exit code is 2).")
    @click.option("-v", "--verbose", is_flag=True,
                  help="Also show, per pending pod, the best nodes with each plugin's score.")
    @click.option("--engine", type=click.Choice(["vector", "scalar"]), default="vector", hidden=True)
    def cycle(snapshot: str | None, filename: str | None, config: str | None, output: str, scheduler_name: str,
              strict: bool, verbose: bool, engine: str) -> None:
        """Run one scheduling session on SNAPSHOT (YAML manifests, a kind: List, a scenario file with objects:
        and config:, or - for stdin) and print what it decides.

        Exit status: 0; 2 when an input is wrong (malformed objects are skipped, the rest is scheduled)."""
        path = pick_file(snapshot, filename, "snapshot")
        snap = load_snapshot(path)
        if config is None and snap.config is not None:
            conf = load_conf(snap.config, f"{snap.source} (config:)")
        else:
            if snap.config is not None:
                click.echo(f"pyvolcano: warning: {snap.source}: its config: is ignored, --config {config} is used",
                           err=True)
            conf = load_conf_file(config)
        snap.require_cluster()
        cache = SchedulerCache.from_objects(snap.objects, scheduler_name)
        if strict and cache.problems:
            raise UserError(f"{len(cache.problems)} malformed object(s) in {snap.source}: "
                            + "; ".join(cache.problems))
        result = run_session(cache, conf, engine, explain=3 if verbose else 0)
        if output in ("json", "yaml"):  # the table shows these itself
            for p in cache.problems:
                print(f"pyvolcano: warning: skipped {p}", file=sys.stderr)
            for uid, why in result.skipped.items():
                print(f"pyvolcano: warning: job {uid} not scheduled: {why}", file=sys.stderr)
            data = result_json(result)
            if verbose:
                data["scores"] = {uid: s.as_dict() for uid, s in sorted(result.scores.items())}
            emit(data, output)
        else:
            table(result, cache.problems, output == "wide")
            if verbose:
                print_scores(result.scores)
        if cache.problems:  # the rest was scheduled and printed; the mistake still fails the command
            sys.exit(2)
