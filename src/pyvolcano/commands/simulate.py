"""``pyvolcano simulate``: replay a workload on a simulated cluster through the real scheduler."""

from __future__ import annotations

from pathlib import Path

import click

from pyvolcano.cache.manifests import load_objects
from pyvolcano.errors import UserError
from pyvolcano.sim import alibaba
from pyvolcano.sim.compare import compare_table
from pyvolcano.sim.run import (
    Inputs,
    alibaba_inputs,
    load_cluster,
    load_conf_arg,
    load_queues,
    parse_cancels,
    parse_failures,
    print_summary,
    run_one,
)
from pyvolcano.sim.workload import from_manifests, load_csv, synthetic


def register(group: click.Group) -> None:
    @group.command("simulate")
    @click.option("--cluster", help="Node manifests (YAML file) or a compact spec: '100x{cpu: 32, memory: 256Gi}'.")
    @click.option("--queues", "queues_arg", help="Queue manifests (YAML file) or 'name:weight,...'.")
    @click.option("--workload", help="Volcano Job manifests (YAML) with pyvolcano.io/arrival and /duration.")
    @click.option("--csv", "csv_path", help="Generic CSV workload (see docs/simulator.md).")
    @click.option("--synthetic", "synth", type=int, default=None, help="Generate this many synthetic jobs.")
    @click.option("--rate", type=float, default=0.2, show_default=True, help="Synthetic arrivals per second.")
    @click.option("--alibaba", "use_alibaba", is_flag=True, help="Replay the bundled Alibaba GPU trace.")
    @click.option("--trace-dir", help="Directory of the Alibaba openb CSVs (default: the bundled copy).")
    @click.option("--ali-nodes", type=int, default=120, show_default=True, help="Down-sample the trace cluster.")
    @click.option("--ali-pods", type=int, default=1500, show_default=True, help="Trace rows to replay (0: all).")
    @click.option("--compress", type=float, default=20.0, show_default=True, help="Arrival time compression.")
    @click.option("--duration-scale", type=float, default=1.0, show_default=True)
    @click.option("--gang-window", type=float, default=60.0, show_default=True)
    @click.option("--max-gang", type=int, default=8, show_default=True)
    @click.option("--config", "-c", help="volcano-scheduler.conf (default: Volcano's).")
    @click.option("--compare", multiple=True, help="Also run these confs on the same workload and compare.")
    @click.option("--period", type=float, default=1.0, show_default=True, help="Seconds between sessions.")
    @click.option("--start-latency", type=float, default=1.0, show_default=True)
    @click.option("--grace", type=float, default=5.0, show_default=True, help="Eviction grace period (s).")
    @click.option("--until", type=float, default=None, help="Stop at this simulated time (s).")
    @click.option("--node-failures", help="TIME:NODE:DOWNTIME,... node failures.")
    @click.option("--cancel", help="TIME:[NS/]JOB,... job cancellations.")
    @click.option("--seed", type=int, default=0, show_default=True)
    @click.option("--out", default="sim-out", show_default=True, type=click.Path(file_okay=False))
    @click.option("--no-progress", is_flag=True)
    def simulate(cluster: str | None, queues_arg: str | None, workload: str | None, csv_path: str | None,
                 synth: int | None, rate: float, use_alibaba: bool, trace_dir: str | None, ali_nodes: int,
                 ali_pods: int, compress: float, duration_scale: float, gang_window: float, max_gang: int,
                 config: str | None, compare: tuple[str, ...], period: float, start_latency: float, grace: float,
                 until: float | None, node_failures: str | None, cancel: str | None, seed: int, out: str,
                 no_progress: bool) -> None:
        """Simulate a workload (one of --workload, --csv, --synthetic, --alibaba) and write jobs.csv,
        summary.json and report.html into --out."""
        sources = [x for x in (workload, csv_path, synth, use_alibaba or None) if x]
        if len(sources) != 1:
            raise UserError("give exactly one workload: --workload, --csv, --synthetic N or --alibaba")
        if use_alibaba:
            knobs = alibaba.AlibabaKnobs(nodes=ali_nodes, pods=ali_pods, compress=compress,
                                         duration_scale=duration_scale, gang_window=gang_window, max_gang=max_gang,
                                         seed=seed)
            inputs = alibaba_inputs(trace_dir, knobs, cluster)
        else:
            if not cluster:
                raise UserError("--cluster is required (a Node YAML or a spec like '10x{cpu: 32, memory: 128Gi}')")
            if workload:
                wl = from_manifests(load_objects(workload))
            elif csv_path:
                wl = load_csv(csv_path)
            else:
                wl = synthetic(seed=seed, jobs=int(synth or 0), rate=rate)
            inputs = Inputs(load_cluster(cluster), load_queues(queues_arg, wl), wl)
        inputs.node_failures = parse_failures(node_failures)
        inputs.cancellations = parse_cancels(cancel)
        for p in inputs.workload.problems[:20]:
            click.echo(f"pyvolcano: warning: {p}", err=True)
        confs = [config, *compare]
        summaries = []
        for i, c in enumerate(confs):
            conf, name = load_conf_arg(c)
            d = Path(out) if len(confs) == 1 else Path(out) / f"run{i}-{Path(c).stem if c else 'default'}"
            s = run_one(inputs, conf, name, d, period=period, start_latency=start_latency, grace=grace,
                        until=until, progress=not no_progress)
            summaries.append(s)
            if len(confs) == 1:
                print_summary(s)
            click.echo(f"report: {d / 'report.html'}")
        if len(confs) > 1:
            compare_table(summaries)
