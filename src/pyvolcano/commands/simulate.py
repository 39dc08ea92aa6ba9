"""``pyvolcano simulate``: replay a workload on a simulated cluster through the real scheduler."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from pyvolcano.cache.manifests import load_objects
from pyvolcano.collapse import collapse
from pyvolcano.commands._output import emit, output_option
from pyvolcano.conf.loader import SchedulerConf
from pyvolcano.errors import UserError
from pyvolcano.framework.incremental.contracts import memo_note
from pyvolcano.framework.incremental.memo import plugin_contracts
from pyvolcano.sim import alibaba
from pyvolcano.sim import topology as simtopo
from pyvolcano.sim.compare import compare_table
from pyvolcano.sim.options import Option
from pyvolcano.sim.run import (
    Inputs,
    Run,
    alibaba_inputs,
    check_targets,
    common_window,
    compare_page,
    device_conf_note,
    has_gpus,
    load_cluster,
    load_conf_arg,
    load_numatopologies,
    load_queues,
    paired_over_jobs,
    parse_cancels,
    parse_failures,
    parse_gang_sizes,
    queue_weights,
    run_one,
)
from pyvolcano.sim.workload import MONTH, Workload, from_manifests, load_csv, services, synthetic

F = TypeVar("F", bound=Callable[..., Any])

#: options that take several values after one flag (``--compare a.conf b.conf``) as well as repeated flags
MULTI_VALUE = ("--compare", "--network-topology", "--partitions")


def expand_multi(args: list[str], flags: tuple[str, ...] = MULTI_VALUE) -> list[str]:
    """Rewrite ``--compare a b c`` as ``--compare a --compare b --compare c`` (click options take one value each):
    the words after such a flag, up to the next option (a word starting with ``-``), are all its values.  The
    command takes no arguments, so those words could mean nothing else."""
    out: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            out.extend(args[i:])
            break
        flag, eq, _ = a.partition("=")
        if flag in flags:
            out.append(a)
            i += 1 if eq else 2
            if not eq and i - 1 < len(args):
                out.append(args[i - 1])
            while i < len(args) and not args[i].startswith("-"):
                out.extend((flag, args[i]))
                i += 1
            continue
        out.append(a)
        i += 1
    return out


class SimulateCommand(click.Command):
    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, expand_multi(list(args)))


def _options(*options: Callable[[F], F]) -> Callable[[F], F]:
    """Several click options as one decorator, listed (and shown by ``--help``) in the order given."""
    def decorate(fn: F) -> F:
        for option in reversed(options):
            fn = option(fn)
        return fn
    return decorate


#: where the jobs come from (exactly one of the first five, or ``--alibaba``) and the synthetic generators' knobs
workload_options = _options(
    click.option("--cluster", help="Node manifests (YAML file) or a compact spec: '100x{cpu: 32, memory: 256Gi}'."),
    click.option("--queues", "queues_arg", help="Queue manifests (YAML file) or 'name:weight,...'."),
    click.option("--workload", help="Volcano Job manifests (YAML) with pyvolcano.io/arrival and /duration."),
    click.option("--csv", "csv_path", help="Generic CSV workload (see docs/simulator.md)."),
    click.option("--synthetic", "synth", type=Option("jobs"), default=None,
                 help="Generate this many synthetic jobs (queues drawn by weight from --queues)."),
    click.option("--rate", type=Option("rate"), default=0.2, show_default=True,
                 help="Synthetic: Poisson arrivals per second."),
    click.option("--gang-sizes", default="1,1,2,4,8", show_default=True,
                 help="Synthetic: gang sizes drawn uniformly from this list (repeat a size to weigh it more)."),
    click.option("--mean-duration", type=Option("mean_duration"), default=600.0, show_default=True,
                 help="Synthetic: mean of the exponential pod durations (s; at least 1 s each)."),
    click.option("--gpu-fraction", type=Option("gpu_fraction"), default=None,
                 help="Synthetic: share of jobs whose pods ask for 1 or 2 nvidia.com/gpu [default: 0.5, or 0 on a "
                      "cluster without GPUs]."),
    click.option("--synthetic-services", "services_n", type=Option("services"), default=None,
                 help="N single-pod long-running services over --span seconds (an oversubscribed month; "
                      "docs/simulator.md)."),
    click.option("--span", type=Option("span"), default=MONTH, show_default=True,
                 help="Seconds the --synthetic-services arrivals spread over."),
)

#: the bundled Alibaba trace and how it is sampled (``sim/alibaba.py: AlibabaKnobs``)
alibaba_options = _options(
    click.option("--alibaba", "use_alibaba", is_flag=True, help="Replay the bundled Alibaba GPU trace."),
    click.option("--trace-dir", help="Directory of the Alibaba openb CSVs (default: the bundled copy)."),
    click.option("--ali-nodes", type=Option("nodes"), default=120,
                 show_default=True, help="Down-sample the trace cluster."),
    click.option("--ali-pods", type=Option("pods"), default=1500,
                 show_default=True, help="Trace rows to replay (0: all)."),
    click.option("--compress", type=Option("compress"), default=20.0,
                 show_default=True, help="Arrival time compression."),
    click.option("--duration-scale", type=Option("duration_scale"), default=1.0, show_default=True),
    click.option("--gang-window", type=Option("gang_window"), default=60.0, show_default=True),
    click.option("--max-gang", type=Option("max_gang"), default=8, show_default=True),
    click.option("--fill", type=Option("fill"), default=0.0,
                 help="The FGD paper's protocol: the pod list sampled (seeded by --seed) to this many times the "
                      "cluster's GPUs, e.g. 1.3; on the GPU nodes' list, one pod a second, no departures, one try "
                      "each; summary.json gets the fill_curve (docs/simulator.md)."),
    click.option("--gpu-pool", is_flag=True,
                 help="The old mapping: a node's GPUs are one fractional nvidia.com/gpu pool (no per-device "
                      "placement)."),
)

#: the scheduler's confs and the simulated cluster's timing
run_options = _options(
    click.option("--config", "-c", help="volcano-scheduler.conf (default: Volcano's)."),
    click.option("--compare", multiple=True, metavar="CONF...",
                 help="Also run these confs on the same workload and compare: --compare a.conf b.conf "
                      "(or repeat the flag)."),
    click.option("--period", type=Option("period"), default=1.0, show_default=True,
                 help="Seconds between sessions."),
    click.option("--start-latency", type=Option("start_latency"), default=1.0, show_default=True),
    click.option("--grace", type=Option("grace"), default=5.0, show_default=True, help="Eviction grace period (s)."),
    click.option("--until", type=Option("until"), default=None, help="Stop at this simulated time (s)."),
    click.option("--horizon", type=Option("horizon"), default=None,
                 help="Average utilisation over [0, SECONDS] (every run of --compare alike); default: the end of "
                      "the run, or of the longest compared run."),
)

#: the network topology and the gangs' constraints on it (``sim/topology.py``)
topology_options = _options(
    click.option("--hypernodes", "hypernodes_arg", metavar="FILE",
                 help="HyperNode manifests (YAML; may be the --cluster file): the cluster's network topology."),
    click.option("--topology", "topology_arg", metavar="SPEC",
                 help="A regular topology over the nodes, from the lowest tier up: 'leaf=16,spine=8' is 16 nodes "
                      "per tier-1 hypernode, 8 of those per tier-2 one."),
    click.option("--network-topology", "network_topology", multiple=True, metavar="CONSTRAINT...",
                 help="none, soft, hard:TIER or hard:TIERNAME, set on a share of the gangs (the rest get none); "
                      "several values: one run each on the same jobs, compared like --compare."),
    click.option("--network-topology-fraction", "nt_fraction", type=Option("network_topology_fraction"), default=None,
                 help="Share of the gangs (minAvailable > 1) that get --network-topology (default 1)."),
    click.option("--partitions", "partitions_arg", multiple=True, metavar="SIZE[:CONSTRAINT]...",
                 help="Cut every full gang's task of at least two SIZE-pod partitions (replicas a multiple of "
                      "SIZE) into partitions (vcjob partitionPolicy: PodGroup sub-groups), each under CONSTRAINT "
                      "(none, soft, hard:TIER, hard:TIERNAME), e.g. 4:hard:leaf; several values (none: no "
                      "partitions): one run each on the same jobs, compared like --compare."),
)


@dataclasses.dataclass
class Synthetic:
    """The ``--synthetic`` generator's knobs (``sim/workload.py: synthetic``)."""

    rate: float
    gang_sizes: str
    mean_duration: float
    gpu_fraction: float | None


@dataclasses.dataclass
class RunSettings:
    """How each run simulates (``sim/run.py: run_one``'s keyword arguments)."""

    period: float
    start_latency: float
    grace: float
    until: float | None
    progress: bool
    horizon: float | None
    full_sessions: bool


def register(group: click.Group) -> None:
    @group.command("simulate", cls=SimulateCommand)
    @workload_options
    @alibaba_options
    @run_options
    @topology_options
    @click.option("--node-failures", help="TIME:NODE:DOWNTIME,... node failures.")
    @click.option("--cancel", help="TIME:[NS/]JOB,... job cancellations.")
    @click.option("--seed", type=int, default=0, show_default=True,
                  help="Seed of the synthetic generator and of the Alibaba node sample.")
    @click.option("--out", default="sim-out", show_default=True, type=click.Path(file_okay=False))
    @click.option("--no-progress", is_flag=True)
    @click.option("--full-sessions", is_flag=True,
                  help="Examine every pending job in every session (no blocked-job memo; same decisions, slower).")
    @output_option()
    def simulate(cluster: str | None, queues_arg: str | None, workload: str | None, csv_path: str | None,
                 synth: int | None, rate: float, gang_sizes: str, mean_duration: float, gpu_fraction: float | None,
                 services_n: int | None, span: float, use_alibaba: bool, trace_dir: str | None, ali_nodes: int,
                 ali_pods: int, compress: float,
                 duration_scale: float, gang_window: float, max_gang: int, fill: float, gpu_pool: bool,
                 config: str | None,
                 compare: tuple[str, ...], period: float, start_latency: float, grace: float, until: float | None,
                 horizon: float | None, hypernodes_arg: str | None, topology_arg: str | None,
                 network_topology: tuple[str, ...], nt_fraction: float | None, partitions_arg: tuple[str, ...],
                 node_failures: str | None, cancel: str | None, seed: int, out: str,
                 no_progress: bool, full_sessions: bool, output: str) -> None:
        """Simulate a workload (one of --workload, --csv, --synthetic, --synthetic-services, --alibaba) and write
        jobs.csv, summary.json and report.html into --out."""
        sources = [x for x in (workload, csv_path, synth, services_n, use_alibaba or None) if x]
        if len(sources) != 1:
            raise UserError("give exactly one workload: --workload, --csv, --synthetic N, --synthetic-services N "
                            "or --alibaba")
        if (fill or gpu_pool) and not use_alibaba:
            raise UserError("--fill and --gpu-pool apply to --alibaba")
        if use_alibaba:
            knobs = alibaba.AlibabaKnobs(nodes=ali_nodes, pods=ali_pods, compress=compress,
                                         duration_scale=duration_scale, gang_window=gang_window, max_gang=max_gang,
                                         seed=seed, fill=fill, gpu_pool=gpu_pool)
            inputs = alibaba_inputs(trace_dir, knobs, cluster)
        else:
            inputs = _inputs(cluster, queues_arg, workload, csv_path, synth, services_n, span, seed,
                             Synthetic(rate, gang_sizes, mean_duration, gpu_fraction))
        if cluster:
            inputs.numatopologies = load_numatopologies(cluster)
        inputs.node_failures = parse_failures(node_failures)
        inputs.cancellations = parse_cancels(cancel)
        check_targets(inputs)
        inputs.hypernodes, topo_text = simtopo.load_or_build(hypernodes_arg, topology_arg, inputs.nodes)
        if topo_text is not None:
            inputs.settings["network topology"] = topo_text
        variants = _variants(inputs, partitions_arg, network_topology, nt_fraction, seed)
        settings = RunSettings(period=period, start_latency=start_latency, grace=grace, until=until,
                               progress=not no_progress, horizon=horizon, full_sessions=full_sessions)
        _run_all(inputs, variants, [config, *compare], settings, out, output, several_partitions=len(partitions_arg) > 1)


def _inputs(cluster: str | None, queues_arg: str | None, workload: str | None, csv_path: str | None,
            synth: int | None, services_n: int | None, span: float, seed: int, knobs: Synthetic) -> Inputs:
    """The cluster and the one workload given (Job manifests, a CSV, synthetic services or synthetic jobs)."""
    if not cluster:
        raise UserError("--cluster is required (a Node YAML or a spec like '10x{cpu: 32, memory: 128Gi}')")
    nodes = load_cluster(cluster)
    if workload:
        wl = from_manifests(load_objects(workload))
        source = {"workload": f"Job manifests {workload}"}
    elif csv_path:
        wl = load_csv(csv_path)
        source = {"workload": f"CSV {csv_path}"}
    elif services_n:
        wl = services(seed=seed, jobs=services_n, span=span, queues=queue_weights(queues_arg))
        source = {"workload": f"synthetic services, {services_n} over {span:g} s"}
    else:
        gpu_fraction = knobs.gpu_fraction
        if gpu_fraction is None:  # GPU jobs on a cluster without GPUs could never run
            gpu_fraction = 0.5 if has_gpus(nodes) else 0.0
        elif gpu_fraction > 0 and not has_gpus(nodes):
            raise UserError(f"--gpu-fraction {gpu_fraction:g}: the cluster has no nvidia.com/gpu; "
                            "use --gpu-fraction 0")
        wl = synthetic(seed=seed, jobs=int(synth or 0), rate=knobs.rate, queues=queue_weights(queues_arg),
                       gang_sizes=parse_gang_sizes(knobs.gang_sizes), mean_duration=knobs.mean_duration,
                       gpu_fraction=gpu_fraction)
        source = {"workload": f"synthetic, {synth} jobs", "synthetic knobs":
                  f"rate={knobs.rate:g}/s, gang sizes {knobs.gang_sizes}, mean duration {knobs.mean_duration:g} s, "
                  f"gpu fraction {gpu_fraction:g}, seed {seed}"}
    return Inputs(nodes, load_queues(queues_arg, wl), wl, settings=source)


def _run_all(inputs: Inputs, variants: list[tuple[str, Inputs]], confs: list[str | None], settings: RunSettings,
             out: str, output: str, several_partitions: bool) -> None:
    """Every variant under every conf, each into its own directory under ``out`` (``out`` itself for one run);
    a comparison page when there are several runs; the summaries as a table or as ``--output`` asks."""
    seen: set[str] = set()

    def warn(p: str) -> None:  # each problem once, even when --compare finds it in every run
        if p not in seen:
            seen.add(p)
            click.echo(f"pyvolcano: warning: {p}", err=True)

    for p in collapse(inputs.workload.problems):  # one line per kind of problem, with a count
        warn(p)
    loaded = [load_conf_arg(c, inputs.default_conf) for c in confs]  # a bad conf is refused before any run
    for conf, name in loaded:
        note = device_conf_note(inputs, conf, name)
        if note is not None:
            warn(note)
    if not settings.full_sessions:
        _memo_notes(loaded)
    summaries = []
    runs: list[Run] = []
    labels: list[str] = []
    for label, inp in variants:  # each constraint (or the workload as written) under every conf
        for c, (conf, name) in zip(confs, loaded, strict=True):
            run_name = f"run{len(labels)}" + (f"-{Path(c).stem if c else 'default'}"
                                              if len(confs) > 1 or len(variants) == 1 else "") \
                + (f"-{label.replace(':', '-').replace(',', '_')}" if len(variants) > 1 else "")
            d = Path(out) if len(confs) * len(variants) == 1 else Path(out) / run_name
            s = run_one(inp, conf, name, d, period=settings.period, start_latency=settings.start_latency,
                        grace=settings.grace, until=settings.until, progress=settings.progress, warn=warn, keep=runs,
                        horizon=settings.horizon, full_sessions=settings.full_sessions)
            summaries.append(s)
            labels.append(run_name)
            click.echo(f"report: {d / 'report.html'}", err=output in ("json", "yaml"))
    summaries = common_window(runs, settings.horizon)  # writes each report.html; compared runs share one window
    if len(runs) > 1:
        what = f"{len(confs)} confs" if len(variants) == 1 else (
            f"{len(variants)} network topology {'variants' if several_partitions else 'constraints'}"
            + (f" x {len(confs)} confs" if len(confs) > 1 else ""))
        page = compare_page(runs, summaries, Path(out) / "compare.html",
                            f"pyvolcano simulate --compare: {what} on one workload", labels)
        click.echo(f"comparison: {page}", err=output in ("json", "yaml"))
    pairs = paired_over_jobs(runs, summaries, labels) if len(runs) > 1 else []
    if output in ("json", "yaml"):
        data = [{k: v for k, v in s.items() if k != "problems"} for s in summaries]
        emit(data[0] if len(data) == 1 else {"runs": data, "paired": pairs}, output)
    else:
        compare_table(summaries, wide=output == "wide", names=labels if len(variants) > 1 else None)
        for pair in pairs:  # the same jobs in every run: each job's wait paired (docs/simulator.md, the statistics)
            click.echo(f"{pair['b']} vs {pair['a']}, {pair['what']}: {pair['verdict']}")


def _memo_notes(loaded: list[tuple[SchedulerConf, str]]) -> None:
    """Once per conf: the plugin that turns the blocked-job memo off, if any (it declares no memo contract)."""
    for conf, name in loaded:
        note = memo_note(plugin_contracts(conf))
        if note is not None:
            click.echo(f"pyvolcano: note: {name}: {note}", err=True)


def _variants(inputs: Inputs, partitions: tuple[str, ...], network_topology: tuple[str, ...],
              fraction: float | None, seed: int) -> list[tuple[str, Inputs]]:
    """The runs one workload makes: every ``--partitions`` value under every ``--network-topology`` value (the
    workload as written without either), labelled ``CONSTRAINT``, ``p:PARTITIONS`` or ``CONSTRAINT,p:PARTITIONS``
    when both give several values."""
    out = []
    for k, (plabel, pinp) in enumerate(_partition_variants(inputs, partitions)):
        for clabel, cinp in _constraint_variants(pinp, network_topology, fraction, seed, quiet=k > 0):
            out.append((clabel if plabel is None else plabel if clabel == "as written" else f"{clabel},{plabel}",
                        cinp))
    return out


def _partition_variants(inputs: Inputs, values: tuple[str, ...]) -> list[tuple[str | None, Inputs]]:
    """One (label, inputs) per ``--partitions`` value (``none``: the workload as it is), each the same jobs with
    a task ``partitionPolicy`` on the full gangs (``sim/topology.py: with_partitions``); the workload as written
    (label None) without the option.  A partition constraint other than ``none`` needs a topology (refused
    otherwise); an unknown tier name, or no gang that can be cut, is a warning."""
    if not values:
        return [(None, inputs)]
    parsed = [None if v.strip() == "none" else simtopo.parse_partitions(v) for v in values]
    if len({str(p) for p in parsed}) != len(parsed):
        raise UserError(f"--partitions: a value is given twice ({', '.join(values)})")
    names = simtopo.build_topology(inputs.hypernodes, inputs.nodes).tier_names() if inputs.hypernodes else {}
    for v, parts in zip(values, parsed, strict=True):
        c = parts.constraint if parts is not None else None
        if c is not None and c.mode is not None and not inputs.hypernodes:
            raise UserError(f"--partitions {v!r}: a partition constraint needs a topology: --topology SPEC (e.g. "
                            "leaf=16,spine=8) or --hypernodes FILE")
        if c is not None and c.tier_name and c.tier_name not in names:
            click.echo(f"pyvolcano: warning: --partitions {v}: no HyperNode has tierName {c.tier_name!r} "
                       f"({', '.join(sorted(names)) or 'none has a tierName'}); Volcano then sets no hard limit",
                       err=True)
    wl = inputs.workload
    gangs = sum(1 for _, j in wl.jobs if simtopo.gang_size(j) > 1)
    out: list[tuple[str | None, Inputs]] = []
    texts = []
    for parts in parsed:
        if parts is None:
            out.append(("p:none", inputs))
            texts.append("none")
            continue
        jobs, n = simtopo.with_partitions(wl.jobs, parts)
        if n == 0:
            click.echo(f"pyvolcano: warning: --partitions {parts}: no gang has a task of at least two partitions "
                       f"of {parts.size} pods (replicas a multiple of {parts.size}); nothing was partitioned",
                       err=True)
        c = parts.constraint
        texts.append(f"{parts.size} pods each" + (f", {c} per partition" if c.mode else "") + f" on {n} of "
                     f"{gangs} gangs")
        out.append((f"p:{parts}", dataclasses.replace(
            inputs, workload=Workload(jobs, wl.priority_classes, list(wl.problems), wl.flows,
                                      wl.task_mix))))
    text = texts[0] if len(texts) == 1 else ", ".join(str(p or "none") for p in parsed) + " (" + "; ".join(
        texts) + "): one run each"
    if any(p is not None for p in parsed):
        text += " (vcjob partitionPolicy: PodGroup sub-groups)"
    out = [(label, dataclasses.replace(inp, settings={**inp.settings, "partitions": text})) for label, inp in out]
    return out if len(out) > 1 else [(None, out[0][1])]


def _constraint_variants(inputs: Inputs, values: tuple[str, ...], fraction: float | None,
                         seed: int, quiet: bool = False) -> list[tuple[str, Inputs]]:
    """One (label, inputs) per ``--network-topology`` value, each the same jobs with that constraint on the same
    share of gangs (``sim/topology.py: with_constraint``); the workload as written without the option."""
    if fraction is not None and not values:
        raise UserError("--network-topology-fraction needs --network-topology")
    if not values:
        return [("as written", inputs)]
    constraints = [simtopo.parse_constraint(v) for v in values]
    if len({str(c) for c in constraints}) != len(constraints):
        raise UserError(f"--network-topology: a value is given twice ({', '.join(values)})")
    if not inputs.hypernodes and any(c.mode is not None for c in constraints):
        raise UserError("--network-topology needs a topology: --topology SPEC (e.g. leaf=16,spine=8) or "
                        "--hypernodes FILE")
    names = simtopo.build_topology(inputs.hypernodes, inputs.nodes).tier_names() if inputs.hypernodes else {}
    for c in constraints:
        if c.tier_name and c.tier_name not in names and not quiet:
            click.echo(f"pyvolcano: warning: --network-topology {c}: no HyperNode has tierName {c.tier_name!r} "
                       f"({', '.join(sorted(names)) or 'none has a tierName'}); Volcano then sets no hard limit",
                       err=True)
    share = 1.0 if fraction is None else fraction
    out = []
    for c in constraints:
        wl = inputs.workload
        jobs = simtopo.with_constraint(wl.jobs, c, share, seed)
        settings = {**inputs.settings, "network topology constraint":
                    "none" if c.mode is None else f"{c} on {share:.0%} of the gangs (seed {seed})"}
        if len(constraints) > 1:
            settings["network topology constraint"] = ", ".join(
                f"{x}" for x in constraints) + f": one run each, on {share:.0%} of the gangs (seed {seed})"
        out.append((str(c), dataclasses.replace(inputs, workload=Workload(jobs, wl.priority_classes,
                                                                          list(wl.problems), wl.flows,
                                                                          wl.task_mix),
                                                settings=settings)))
    return out
