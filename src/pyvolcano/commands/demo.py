"""``pyvolcano demo``: the main job on bundled data -- the real Alibaba GPU trace through the simulator, with
Volcano's default conf and with preempt+reclaim added, side by side."""

from __future__ import annotations

from pathlib import Path

import click

from pyvolcano.conf.loader import DEFAULT_CONF, load_conf
from pyvolcano.sim import alibaba
from pyvolcano.sim.compare import compare_table
from pyvolcano.sim.run import Run, alibaba_inputs, common_window, compare_page, run_one

RECLAIM_PREEMPT = DEFAULT_CONF.replace('actions: "enqueue, allocate, backfill"',
                                       'actions: "enqueue, allocate, preempt, reclaim, backfill"').replace(
    "    enablePreemptable: false\n", "")
#: the knobs of the demo run (docs/simulator.md explains each)
DEMO_KNOBS = alibaba.AlibabaKnobs(nodes=30, pods=400, compress=250, max_duration=7200.0)


def register(group: click.Group) -> None:
    @group.command("demo")
    @click.option("--out", default="demo-out", show_default=True, type=click.Path(file_okay=False))
    @click.option("--no-progress", is_flag=True)
    def demo(out: str, no_progress: bool) -> None:
        """Replay the bundled Alibaba GPU trace (400 rows on 30 of its nodes, arrivals 250x faster) with Volcano's
        default conf and with preempt+reclaim, and write jobs.csv, summary.json and report.html for each."""
        inputs = alibaba_inputs(None, DEMO_KNOBS, None)
        click.echo(f"workload: {len(inputs.workload.jobs)} jobs from the Alibaba openb trace on "
                   f"{len(inputs.nodes)} nodes, queues {', '.join(sorted(inputs.workload.queues))}")
        runs = [("default", load_conf(DEFAULT_CONF, "default conf")),
                ("reclaim-preempt", load_conf(RECLAIM_PREEMPT, "reclaim-preempt conf"))]
        done: list[Run] = []
        for name, conf in runs:
            run_one(inputs, conf, name, Path(out) / name, progress=not no_progress,
                    title=f"pyvolcano demo: Alibaba openb trace, {name} conf", keep=done)
        summaries = common_window(done)  # both runs' utilisation over the same window
        compare_table(summaries)
        page = compare_page(done, summaries, Path(out) / "compare.html",
                            "pyvolcano demo: what changes with preempt+reclaim (Alibaba openb trace)",
                            [name for name, _ in runs])
        for name, _ in runs:
            click.echo(f"report: {Path(out) / name / 'report.html'}")
        click.echo(f"comparison: {page}")
