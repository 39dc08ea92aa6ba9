"""``pyvolcano sweep``: run a grid of simulations (confs x knobs x seeds) and summarise it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from pyvolcano.errors import UserError

if TYPE_CHECKING:
    from pyvolcano.sim.sweep import Row


def register(group: click.Group) -> None:
    @group.command("sweep")
    @click.argument("sweep_file", type=click.Path(dir_okay=False))
    @click.option("--out", default="sweep-out", show_default=True, type=click.Path(file_okay=False),
                  help="Results folder: one sub-folder per point; a rerun skips the finished points.")
    @click.option("--jobs", "-j", "workers", type=click.IntRange(min=1, max=1024), default=None,
                  help="Parallel processes on this machine (default: one per core).")
    @click.option("--ray", "ray_address", metavar="ADDRESS", default=None,
                  help="Run each point as a task on this Ray cluster ('auto', 'ray://head:10001'; '' starts a "
                       "local Ray). Needs pip install 'pyvolcano[ray]'.")
    @click.option("--output", "-o", type=click.Choice(["table", "json"]), default="table", show_default=True)
    @click.option("--no-progress", is_flag=True)
    @click.option("--list", "list_only", is_flag=True, help="Print the points and exit without running.")
    def sweep(sweep_file: str, out: str, workers: int | None, ray_address: str | None, output: str,
              no_progress: bool, list_only: bool) -> None:
        """Simulate every point of SWEEP_FILE (a YAML naming the workload, cluster, confs, knob grids and seeds;
        see docs/simulator.md) and write sweep.html, summary.csv, results.csv and sweep.json into --out."""
        from pyvolcano.sim import sweep as sw

        pl = sw.plan(sw.load_spec(sweep_file))
        dest = Path(out)
        if list_only:
            for p in pl.points:
                click.echo(f"{'done ' if pl.finished(dest, p) else 'to do'}  {p.folder}")
            return
        if dest.exists() and not dest.is_dir():
            raise UserError(f"--out {out}: not a directory")
        if no_progress or output == "json":
            run = sw.run_sweep(pl, dest, workers=workers, ray_address=ray_address)
        else:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            with Progress(TextColumn("[bold]sweep"), BarColumn(), MofNCompleteColumn(), TextColumn("points"),
                          TimeElapsedColumn(), transient=True) as bar:
                task = bar.add_task("points", total=None)
                run = sw.run_sweep(pl, dest, workers=workers, ray_address=ray_address,
                                   progress=lambda n, total: bar.update(task, completed=n, total=total))
        rows = sw.aggregate(pl, dest)
        doc = sw.write_summary(pl, dest, rows)
        for p, why in run.failed.items():
            click.echo(f"pyvolcano: warning: point {p.folder} failed: {why}", err=True)
        if output == "json":
            click.echo(json.dumps({**doc, "ran": len(run.done), "skipped": len(run.skipped),
                                   "failed": {p.folder: why for p, why in run.failed.items()}}, indent=2))
        else:
            _table(rows, doc)
            click.echo(f"{len(run.done)} run, {len(run.skipped)} already done, {len(run.failed)} failed; "
                       f"page: {dest / 'sweep.html'}")
        if run.failed:
            raise UserError(f"{len(run.failed)} of {len(pl.points)} points failed (warnings above)")


def _table(rows: list[Row], doc: dict[str, Any]) -> None:
    from rich import box
    from rich.console import Console
    from rich.table import Table

    from pyvolcano.sim.sweep import best_note, describe, num

    obj = doc["objective"]["metric"]
    seeds = sorted({len(r.seeds) for r in rows})
    t = Table(title=f"sweep {doc['name']}: means over {'/'.join(map(str, seeds))} seeds", title_justify="left",
              box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    for col in ("conf", "knobs", obj, "95% interval", "util_gpu", "evict", "failed"):
        text = col in ("conf", "knobs")  # names fold; numbers never wrap
        t.add_column(col, overflow="fold", no_wrap=not text, justify="left" if text else "right")
    best = [(b["conf"], b["params"]) for b in doc.get("best") or []]
    for r in rows:
        o = r.metrics.get(obj)
        t.add_row(r.conf, describe(r.params), num(o and o[0]), f"[{num(o[1])}, {num(o[2])}]" if o else "-",
                  *(num(v and v[0]) for v in (r.metrics.get(m) for m in ("util_gpu", "evictions", "failed"))),
                  style="bold green" if (r.conf, r.params) in best else None)
    Console().print(t)
    for b in doc.get("best") or []:
        where = f"at {describe(b['knobs'])}" if b["knobs"] else "overall"
        top = next(r for r in rows if (r.conf, r.params) == (b["conf"], b["params"]))
        note = best_note(top, doc.get("paired") or [], obj)
        click.echo(f"best ({doc['objective']['goal']} {obj}) {where}: {top.variant}" + (f" ({note})" if note else ""))
    for p in doc.get("paired") or []:
        if p["metric"] == obj:
            where = f" at {describe(p['knobs'])}" if p["knobs"] else ""
            click.echo(f"{p['b']} vs {p['a']}{where}: {p['verdict']}")
