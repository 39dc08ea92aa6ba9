"""``pyvolcano cycle``: what one Volcano scheduling session would decide for a cluster snapshot."""

from __future__ import annotations

import sys
import time

import click

from pyvolcano.cache.cache import KINDS, SchedulerCache
from pyvolcano.cache.manifests import SnapshotFile, load_snapshot, unused_kinds
from pyvolcano.collapse import collapse
from pyvolcano.commands._output import console, emit, output_option, pick_file
from pyvolcano.conf.loader import SchedulerConf, load_conf, load_conf_file
from pyvolcano.errors import UserError
from pyvolcano.framework.cycle import result_json, run_session
from pyvolcano.framework.explain import ScoreBreakdown
from pyvolcano.framework.incremental.contracts import memo_note
from pyvolcano.framework.incremental.memo import plugin_contracts
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


#: ``-o wide`` searches fixes for this many waiting PodGroups at most (``pyvolcano explain`` for the others) ...
WIDE_EXPLAIN = 5
#: ... with this many sessions re-run for each, and no more than this many seconds' worth
WIDE_RUNS = 8
WIDE_BUDGET = 10.0


def short_reasons(snap: SnapshotFile, conf: SchedulerConf, result: SessionResult, scheduler_name: str,
                  pace: float) -> dict[str, str]:
    """For ``-o wide``: per waiting PodGroup, the short reason and the best verified fix
    (``analysis/whatif.py``), each search bounded; past ``WIDE_EXPLAIN`` groups, a pointer to ``explain``."""
    from pyvolcano.analysis.whatif import explain

    out: dict[str, str] = {}
    waiting = [uid for uid, pg in sorted(result.podgroups.items()) if pg.reason]
    for uid in waiting[:WIDE_EXPLAIN]:
        try:
            e = explain(snap.objects, conf, uid, scheduler_name=scheduler_name, max_runs=WIDE_RUNS,
                        budget=WIDE_BUDGET, base=result, pace=pace)
        except UserError:  # nothing pending, or a snapshot too large to re-run: Volcano's reason alone
            continue
        if not e.schedulable:
            out[uid] = e.short()
    for uid in waiting[WIDE_EXPLAIN:]:
        out[uid] = f"pyvolcano explain SNAPSHOT {uid}: the fixes"
    return out


def table(result: SessionResult, problems: list[str], wide: bool, short: dict[str, str] | None = None) -> None:
    """The decisions per PodGroup; ``wide`` adds why a PodGroup waits (the table only marks that it does):
    Volcano's message, then (``short``) the short reason and the best fix, after an arrow."""
    from rich.markup import escape

    short = short or {}
    from rich.table import Table

    t = Table(title="pyvolcano cycle", show_lines=wide)
    for col in ("PodGroup", "Phase", "Outcome", *(("Why",) if wide else ())):
        t.add_column(col, overflow="fold")
    # the texts are data, not markup: a reason such as "task topology policy[best-effort] ..." keeps its brackets
    for uid, phase, outcome, why in rows(result):
        if wide:
            t.add_row(escape(uid), phase, escape(outcome), escape(why + (f"\n-> {short[uid]}" if uid in short else "")))
        else:
            t.add_row(escape(uid), phase,
                      escape(outcome) + (" (waiting: -o wide says why)" if why and outcome == "-" else ""))
    c = console()
    c.print(t)
    for p in collapse(problems):
        c.print(f"[yellow]skipped object:[/] {escape(p)}", highlight=False)
    for w in collapse(result.warnings):
        c.print(f"[yellow]warning:[/] {escape(w)}", highlight=False)


def print_scores(scores: dict[str, ScoreBreakdown]) -> None:
    from rich.table import Table

    c = console()
    for uid, s in sorted(scores.items()):
        if not s.best:
            refused = ", ".join(f"{n} {r}" for r, n in sorted(s.failed.items(), key=lambda kv: (-kv[1], kv[0])))
            c.print(f"{uid}: no node passes every predicate with room" + (f"; refused: {refused}" if refused
                                                                              else ""), highlight=False)
            continue
        plugins = sorted({p for b in s.best for p in b.plugins})
        refused = ", ".join(f"{n} {r}" for r, n in sorted(s.failed.items(), key=lambda kv: (-kv[1], kv[0])))
        c.print(f"[bold]{uid}[/]: best of {s.feasible_nodes} node(s) passing every predicate and with room"
                + (f"; refused: {refused}" if refused else ""), highlight=False)
        t = Table()
        for col in ("Node", "Total", *plugins):
            t.add_column(col, overflow="fold", justify="left" if col == "Node" else "right")
        for b in s.best:
            t.add_row(b.node, f"{b.total:g}", *(f"{b.plugins.get(p, 0.0):g}" for p in plugins))
        c.print(t)


def load_inputs(path: str, config: str | None) -> tuple[SnapshotFile, SchedulerConf]:
    """The snapshot and the conf, as ``cycle`` and ``explain`` read them: ``--config``, else a scenario file's
    ``config:``, else Volcano's default; a file with no scheduling object at all is refused."""
    snap = load_snapshot(path)
    if config is None and snap.config is not None:
        conf = load_conf(snap.config, f"{snap.source} (config:)")
    else:
        if snap.config is not None:
            click.echo(f"pyvolcano: warning: {snap.source}: its config: is ignored, --config {config} is used",
                       err=True)
        conf = load_conf_file(config)
    snap.require_cluster()
    unused = unused_kinds(snap.objects, KINDS, snap.source)
    if unused:
        click.echo(f"pyvolcano: warning: {unused}", err=True)
    return snap, conf


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
        snap, conf = load_inputs(pick_file(snapshot, filename, "snapshot"), config)
        cache = SchedulerCache.from_objects(snap.objects, scheduler_name)
        if strict and cache.problems:
            raise UserError(f"{len(cache.problems)} malformed object(s) in {snap.source}: "
                            + "; ".join(cache.problems))
        if verbose:  # the one line saying which plugin keeps a scheduler or simulator of this conf exact and slower
            note = memo_note(plugin_contracts(conf))
            if note is not None:
                click.echo(f"pyvolcano: note: {note}", err=True)
        t0 = time.perf_counter()
        result = run_session(cache, conf, engine, explain=3 if verbose else 0)
        pace = time.perf_counter() - t0
        if output in ("json", "yaml"):  # the table shows these itself
            for line in collapse([*(f"skipped {p}" for p in cache.problems),
                                  *(f"job {uid} not scheduled: {why}" for uid, why in result.skipped.items()),
                                  *result.warnings]):
                print(f"pyvolcano: warning: {line}", file=sys.stderr)
            data = result_json(result)
            if verbose:
                data["scores"] = {uid: s.as_dict() for uid, s in sorted(result.scores.items())}
            emit(data, output)
        else:
            short = short_reasons(snap, conf, result, scheduler_name, pace) if output == "wide" else None
            table(result, cache.problems, output == "wide", short)
            if verbose:
                print_scores(result.scores)
        if cache.problems:  # the rest was scheduled and printed; the mistake still fails the command
            sys.exit(2)
