"""``pyvolcano forecast``: when each pending job of a snapshot (or a live cluster) is predicted to start."""

from __future__ import annotations

import math
import time
from typing import Any

import click

from pyvolcano.commands._kube import api_errors, kube_options, make_client, parse_duration
from pyvolcano.commands._output import console, emit, output_option
from pyvolcano.errors import UserError

#: what ``forecast --kubeconfig`` lists: the kinds the scheduler cache reads, and Volcano Jobs (a Job whose pods are
#: not created yet is known only by it); CRDs that may not be installed are skipped when the server lacks them
_OPTIONAL = ("HyperNode", "Numatopology", "Job")


def human(s: float | None) -> str:
    """Seconds as ``45s``, ``12m``, ``3h05m``, ``2d04h``; ``-`` for None (not within the horizon)."""
    if s is None:
        return "-"
    s = round(s)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s" if s < 600 else f"{s // 60}m"
    if s < 86400:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 86400}d{s % 86400 // 3600:02d}h"


def read_cluster(kubeconfig: str | None, master: str | None, context: str | None) -> list[dict[str, Any]]:
    """Every object of the kinds the scheduler reads, and Volcano Jobs, listed from the API server."""
    from pyvolcano.kube import resources as r
    from pyvolcano.kube.client import ApiError

    api = make_client(kubeconfig, master, context)
    out: list[dict[str, Any]] = []
    for res in (r.NODE, r.POD, r.PODGROUP, r.QUEUE, r.PRIORITYCLASS, r.PDB, r.RESOURCEQUOTA, r.NAMESPACE,
                r.HYPERNODE, r.NUMATOPOLOGY, r.VCJOB):
        with api_errors(f"listing {res}"):
            try:
                items, _ = api.list(res)
            except ApiError as exc:
                if exc.not_found and res.kind in _OPTIONAL:  # the CRD is not installed
                    continue
                raise
        out.extend(items)
    return out


def register(group: click.Group) -> None:
    @group.command("forecast")
    @click.argument("snapshot", required=False)
    @click.option("-f", "--filename", default=None, help="The snapshot (instead of the argument; - for stdin).")
    @kube_options
    @click.option("--config", "-c", "config", default=None,
                  help="volcano-scheduler.conf or its ConfigMap (default: the scenario's config:, else Volcano's).")
    @output_option()
    @click.option("--runs", type=click.IntRange(1, 1000), default=40, show_default=True,
                  help="Simulations with freshly drawn durations (one when every duration is annotated).")
    @click.option("--seed", type=int, default=0, show_default=True, help="Seed of the drawn durations.")
    @click.option("--now", "now_arg", default=None,
                  help="The snapshot's time (RFC 3339 or seconds since the epoch; default: the clock with "
                       "--kubeconfig, else the latest time the snapshot records).")
    @click.option("--horizon", default="720h", show_default=True,
                  help="How far ahead to simulate (a duration such as 72h or seconds).")
    @click.option("--default-duration", type=click.FloatRange(0.0, 1e9, min_open=True), default=3600.0, show_default=True,
                  help="Seconds a pod runs when the snapshot has nothing to estimate it from.")
    @click.option("--arrivals", type=click.Choice(["none", "higher", "all", "recent", "mixed"]), default="mixed",
                  show_default=True,
                  help="New jobs drawn like those the snapshot shows, per queue (needs 10 jobs seen): none (the start "
                       "if nothing new arrives); higher (for each pending job, those of a higher priority, which go "
                       "first); all (at the rate over the whole snapshot); recent (at the rate of the 30 latest "
                       "submissions); mixed (half the runs none, half recent: the range covers both; "
                       "docs/forecast.md measures each).")
    @click.option("--scheduler-name", default="volcano", show_default=True)
    def forecast(snapshot: str | None, filename: str | None, kubeconfig: str | None, master: str | None,
                 context: str | None, config: str | None, output: str, runs: int, seed: int, now_arg: str | None,
                 horizon: str, default_duration: float, arrivals: str, scheduler_name: str) -> None:
        """Predict when each pending job of SNAPSHOT (or of the cluster of --kubeconfig) starts: the simulator runs
        forward from it RUNS times, with pod durations from their pyvolcano.io/duration annotation or drawn from the
        snapshot's finished and running pods, and prints each job's median start and 90 % range.

        Exit status: 0; 2 when an input cannot be used."""
        from pyvolcano.cache.manifests import load_snapshot
        from pyvolcano.conf.loader import load_conf, load_conf_file
        from pyvolcano.sim import forecast as fc

        if not math.isfinite(default_duration):
            raise UserError(f"--default-duration: {default_duration!r} is not a finite number of seconds")
        path = filename or snapshot
        if snapshot and filename:
            raise UserError("give the snapshot once: as an argument or with -f, not both")
        embedded = None
        if path is not None:
            snap = load_snapshot(path)
            objects, source, embedded = snap.objects, snap.source, snap.config
        elif kubeconfig is not None or master is not None:
            objects, source = read_cluster(kubeconfig, master, context), "the cluster"
        else:
            raise UserError("give a SNAPSHOT file (or -f FILE, - for stdin) or --kubeconfig")
        conf = load_conf(embedded, f"{source} (config:)") if config is None and embedded else load_conf_file(config)
        if now_arg is not None:
            try:
                given: float | None = float(now_arg)
            except ValueError:
                given = fc._time(now_arg)
            if given is None or not math.isfinite(given):
                raise UserError(f"--now: {now_arg!r} is not a time (RFC 3339, e.g. 2026-01-02T03:04:05Z, or seconds)")
            now = given
        elif path is None:
            now = time.time()
        else:
            latest = fc.snapshot_time(objects)
            now = latest if latest is not None else time.time()
        ahead = parse_duration(horizon, "--horizon")
        if not 0 < ahead < float("inf"):
            raise UserError(f"--horizon: {horizon!r} must be a positive, finite duration")
        result = fc.forecast(objects, conf, now, runs=runs, seed=seed, horizon=ahead,
                             default_duration=default_duration, scheduler_name=scheduler_name, arrivals=arrivals)
        if output in ("json", "yaml"):
            emit(result.as_dict(), output)
            for line in result.notes + [f"skipped {p}" for p in result.problems]:
                click.echo(f"pyvolcano: note: {line}", err=True)
            return
        c = console()
        from rich.markup import escape
        from rich.table import Table

        if not result.jobs:
            click.echo(f"no pending job in {source}: nothing to forecast")
        else:
            t = Table(title=f"forecast: {len(result.jobs)} pending job(s), {result.runs} run(s), from "
                            f"{fc.stamp(now)}")
            for col in ("PodGroup", "Queue", "Start in", "90% range", *(("At (UTC)", "Runs") if output == "wide"
                                                                         else ())):
                t.add_column(col, overflow="fold")
            for j in result.jobs:
                d = j.as_dict(now)
                lo, hi = d["start_p5_s"], d["start_p95_s"]
                rng = "-" if lo is None else f">{human(lo)}" if hi is None else \
                    "exactly" if human(lo) == human(hi) else f"{human(lo)}-{human(hi)}"
                start = human(d["start_median_s"]) if d["start_median_s"] is not None else \
                    f"not in {human(result.horizon)}"
                row = [escape(j.podgroup), escape(j.queue), start, rng]
                if output == "wide":
                    at = d["start_median_time"]
                    row += [at[5:16].replace("T", " ") if at else "-", f"{d['started_runs']}/{d['runs']}"]
                t.add_row(*row)
            c.print(t)
        for line in result.notes:
            c.print(f"[yellow]note:[/] {escape(line)}", highlight=False)
        for p in result.problems:
            c.print(f"[yellow]skipped object:[/] {escape(p)}", highlight=False)
