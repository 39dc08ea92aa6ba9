"""Assemble a simulation from user inputs and run it with a progress bar; shared by ``simulate`` and ``demo``."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyvolcano.api import models
from pyvolcano.cache.manifests import load_objects
from pyvolcano.collapse import collapse
from pyvolcano.conf.loader import SchedulerConf, load_conf, load_conf_file
from pyvolcano.errors import ManifestError, UserError
from pyvolcano.sim import alibaba, figures, metrics, report
from pyvolcano.sim.cluster import parse_cluster_spec
from pyvolcano.sim.engine import SimResult, Simulator
from pyvolcano.sim.workload import Workload


@dataclass
class Inputs:
    nodes: list[dict[str, Any]]
    queues: list[dict[str, Any]]
    workload: Workload
    node_failures: list[tuple[float, str, float]] = field(default_factory=list)
    cancellations: list[tuple[float, str]] = field(default_factory=list)
    #: how the workload was made (source, knobs), shown on the report pages
    settings: dict[str, Any] = field(default_factory=dict)
    #: the cluster's HyperNode manifests (``--hypernodes`` or ``--topology``: ``sim/topology.py``)
    hypernodes: list[dict[str, Any]] = field(default_factory=list)
    #: the cluster's Numatopology manifests (from the ``--cluster`` file), for the numa-aware plugin
    numatopologies: list[dict[str, Any]] = field(default_factory=list)
    #: the conf run without ``-c`` (None: Volcano's default conf)
    default_conf: str | None = None
    #: the fill protocol (``--fill``): the cluster's milli-GPU, each job tried once (0: a normal run)
    fill_milli: int = 0


def describe(inputs: Inputs, capacity: Any, **options: Any) -> dict[str, Any]:
    """The workload, cluster and simulation settings a report page lists (``capacity``: the simulator's cpu
    cores, memory GiB and GPUs; ``options``: the simulation's)."""
    weights = ", ".join(f"{(q.get('metadata') or {}).get('name')}:{(q.get('spec') or {}).get('weight', 1)}"
                        for q in inputs.queues)
    out: dict[str, Any] = {**inputs.settings, "jobs": len(inputs.workload.jobs),
                           "cluster": f"{len(inputs.nodes)} nodes; cpu {capacity[0]:g}, memory "
                                      f"{capacity[1]:,.0f} Gi, gpu {capacity[2]:g}",
                           "queues (name:weight)": weights}
    if inputs.node_failures:
        out["node failures"] = ", ".join(f"{n} at {t:g} s for {d:g} s" for t, n, d in inputs.node_failures)
    if inputs.cancellations:
        out["cancellations"] = ", ".join(f"{k} at {t:g} s" for t, k in inputs.cancellations)
    out.update({k.replace("_", " "): v for k, v in options.items() if v is not None})
    return out


def load_cluster(arg: str) -> list[dict[str, Any]]:
    if Path(arg).is_file() or arg == "-":
        nodes = [o for o in load_objects(arg) if o.get("kind") == "Node"]
        if not nodes:
            raise UserError(f"{arg}: no Node objects")
    else:
        nodes = parse_cluster_spec(arg)
    for n in nodes:  # the simulated cluster must be whole: a malformed Node refuses the run
        models.validate(n)
    return nodes


def load_numatopologies(arg: str) -> list[dict[str, Any]]:
    """The Numatopology manifests of a ``--cluster`` file (none for a compact spec); a malformed one is skipped
    with a warning naming it and its field when the simulator's cache reads it."""
    if arg == "-" or not Path(arg).is_file():
        return []
    return [o for o in load_objects(arg) if o.get("kind") == "Numatopology"]


def queue_weights(arg: str | None) -> dict[str, int] | None:
    """``name:weight,...`` (weight defaults to 1) or the Queue manifests of a YAML file, as name -> weight; None
    without ``arg``."""
    if not arg:
        return None
    if Path(arg).is_file():
        weights = {}
        for o in load_objects(arg):
            if o.get("kind") != "Queue":
                continue
            try:  # the typed Queue (api/models.py): a weight of "x", 2.5 or -5 is refused, not read as 1
                q = models.validate_model(models.Queue, o, models.ref(o))
            except ManifestError as exc:
                raise UserError(f"--queues {arg}: {exc}") from None
            # no weight (or 0, which deserves nothing under proportion) reads as 1, as this option always did
            weights[q.metadata.name] = (q.spec.weight if q.spec is not None else None) or 1
        if not weights:
            raise UserError(f"--queues {arg}: no Queue objects")
        return weights
    weights = {}
    for part in arg.split(","):
        if not part.strip():
            continue
        name, _, w = part.strip().partition(":")
        name = name.strip()
        if not name:
            raise UserError(f"--queues: {part!r}: expected NAME:WEIGHT")
        try:
            weights[name] = models.ascii_int(w or "1")  # ASCII digits: int("٣") is 3 in Python
        except ValueError:
            raise UserError(f"--queues: {part!r}: weight must be an integer") from None
        if not 1 <= weights[name] <= models.MAX_COUNT:  # a Queue's spec.weight (api/models.py: QueueSpec)
            raise UserError(f"--queues: {part!r}: weight must be between 1 and {models.MAX_COUNT}")
    if not weights:
        raise UserError(f"--queues: {arg!r}: expected NAME:WEIGHT,...")
    return weights


def load_queues(arg: str | None, workload: Workload) -> list[dict[str, Any]]:
    """Queue manifests from a file, ``name:weight,...``, or one weight-1 queue per queue the workload names."""
    if arg and Path(arg).is_file():
        queue_weights(arg)  # refuses a file without Queue objects
        queues = [o for o in load_objects(arg) if o.get("kind") == "Queue"]
        for q in queues:  # a malformed Queue refuses the run, as a malformed Node does
            models.validate(q)
        return queues
    weights = queue_weights(arg) or {q: 1 for q in sorted(workload.queues)}
    return [{"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": n},
             "spec": {"weight": w, "reclaimable": True}, "status": {"state": "Open"}} for n, w in weights.items()]


def parse_gang_sizes(arg: str) -> tuple[int, ...]:
    """``1,1,2,4,8``: the gang sizes the synthetic generator draws from (uniformly, so repeats weigh more)."""
    from pyvolcano.sim import options

    try:
        sizes = tuple(options.check("gang_size", x) for x in arg.split(",") if x.strip())
    except ValueError as exc:
        raise UserError(f"--gang-sizes: {arg[:80]!r}: {exc}; expected comma-separated integers, e.g. 1,1,2,4,8") \
            from None
    if not sizes:
        raise UserError(f"--gang-sizes: {arg[:80]!r}: expected comma-separated integers >= 1, e.g. 1,1,2,4,8")
    return sizes


def parse_failures(arg: str | None) -> list[tuple[float, str, float]]:
    """``TIME:NODE:DOWNTIME,...`` (seconds >= 0, finite; a node name)."""
    out = []
    for part in (arg or "").split(","):
        if part.strip():
            fields = part.strip().split(":")
            if len(fields) != 3 or not fields[1].strip():
                raise UserError(f"--node-failures: {part.strip()!r}: expected TIME:NODE:DOWNTIME")
            try:
                out.append((models.seconds(fields[0]), fields[1].strip(), models.seconds(fields[2])))
            except ValueError as exc:
                raise UserError(f"--node-failures: {part.strip()!r}: {exc} (expected TIME:NODE:DOWNTIME, times in "
                                "seconds)") from None
    return out


def parse_cancels(arg: str | None) -> list[tuple[float, str]]:
    """``TIME:[NAMESPACE/]JOB,...`` (seconds >= 0, finite; the namespace defaults to ``default``)."""
    out = []
    for part in (arg or "").split(","):
        if part.strip():
            t, _, key = part.strip().partition(":")
            key = key.strip()
            if not key or key.endswith("/") or key.startswith("/"):
                raise UserError(f"--cancel: {part.strip()!r}: expected TIME:[NAMESPACE/]JOB")
            try:
                out.append((models.seconds(t), key if "/" in key else f"default/{key}"))
            except ValueError as exc:
                raise UserError(f"--cancel: {part.strip()!r}: {exc} (expected TIME:[NAMESPACE/]JOB, the time in "
                                "seconds)") from None
    return out


def has_gpus(nodes: list[dict[str, Any]]) -> bool:
    """Whether any node offers ``nvidia.com/gpu``."""
    for n in nodes:
        alloc = ((n.get("status") or {}).get("allocatable") or {})
        v = alloc.get("nvidia.com/gpu")
        try:
            if v is not None and float(str(v)) > 0:
                return True
        except ValueError:
            return True  # a quantity such as "8k": validated elsewhere; it is a GPU all the same
    return False


def check_targets(inputs: Inputs) -> None:
    """``--node-failures`` must name nodes of the cluster and ``--cancel`` jobs of the workload (a typo would
    otherwise silently inject nothing): UserError naming the first unknown one and what exists."""
    names = {n["metadata"]["name"] for n in inputs.nodes}
    for t, node, _ in inputs.node_failures:
        if node not in names:
            some = ", ".join(sorted(names)[:3]) + (", ..." if len(names) > 3 else "")
            raise UserError(f"--node-failures: {t:g}:{node}: no node {node!r} in the cluster ({len(names)} nodes: "
                            f"{some})")
    jobs = {f"{(j.get('metadata') or {}).get('namespace') or 'default'}/{(j.get('metadata') or {}).get('name')}"
            for _, j in inputs.workload.jobs}
    for t, key in inputs.cancellations:
        if key not in jobs:
            some = ", ".join(sorted(jobs)[:3]) + (", ..." if len(jobs) > 3 else "")
            raise UserError(f"--cancel: {t:g}:{key}: no job {key!r} in the workload ({len(jobs)} jobs: {some})")


def run_one(inputs: Inputs, conf: SchedulerConf, conf_name: str, out: Path, *, period: float = 1.0,
            start_latency: float = 1.0, grace: float = 5.0, until: float | None = None, progress: bool = True,
            title: str = "pyvolcano simulation", warn: Callable[[str], None] | None = None,
            keep: list[Run] | None = None, horizon: float | None = None,
            full_sessions: bool = False) -> dict[str, Any]:
    """One simulation into ``out``; its summary.  ``warn`` is called with every problem found (the workload's,
    the jobs the simulator refuses on this cluster, and those found while running), each once per call.  Writes
    jobs.csv, evictions.csv, summary.json and report.html; with ``keep`` the run is appended there instead of its
    report.html being written: :func:`common_window` writes it (over the window of all kept runs).  ``horizon``:
    utilisation is averaged over [0, horizon] instead of [0, end of the run]."""
    import copy

    sim = Simulator(copy.deepcopy(inputs.nodes), copy.deepcopy(inputs.queues),
                    Workload(copy.deepcopy(inputs.workload.jobs), inputs.workload.priority_classes,
                             list(inputs.workload.problems), copy.deepcopy(inputs.workload.flows),
                             inputs.workload.task_mix),
                    conf, period=period, start_latency=start_latency, grace=grace,
                    node_failures=inputs.node_failures, cancellations=inputs.cancellations,
                    full_sessions=full_sessions, hypernodes=copy.deepcopy(inputs.hypernodes) or None,
                    numatopologies=copy.deepcopy(inputs.numatopologies) or None, one_try=inputs.fill_milli > 0)
    if inputs.fill_milli and until is None:  # one arrival a second: the last is tried two sessions later
        until = max((t for t, _ in inputs.workload.jobs), default=0.0) + 2 * period + start_latency + 1
    known = len(sim.problems)  # the run's problems start with these
    if warn is not None:
        for p in collapse(sim.problems):  # the same problem of many jobs: one line with a count
            warn(p)
    if not sim.total_jobs and not inputs.workload.flows:  # nothing can run: refuse, after the problems that say why
        n = len(inputs.workload.jobs)
        if n:
            raise UserError(f"nothing to simulate: none of the workload's {n} jobs can run here (problems above)")
        raise UserError("nothing to simulate: the workload has no jobs"
                        + (" that load (problems above)" if inputs.workload.problems else ""))
    if progress:
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

        total = sim.total_jobs
        with Progress(TextColumn("[bold]{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total} jobs"),
                      TextColumn("sim t={task.fields[t]}"), TimeElapsedColumn(), TimeRemainingColumn(),
                      transient=True) as bar:
            task = bar.add_task(conf_name, total=total, t="0s")
            state = {"n": 0}

            def tick(s: Simulator) -> None:
                state["n"] += 1
                if state["n"] % 200 == 0:
                    done = sum(1 for r in s.records.values() if r.finished is not None)
                    bar.update(task, completed=done, t=f"{s.now / 3600:.1f}h")
            result = sim.run(until, tick)
    else:
        result = sim.run(until)
    if inputs.fill_milli:
        keys = [f"{(j['metadata'].get('namespace') or 'default')}/{j['metadata']['name']}"
                for _, j in inputs.workload.jobs]
        result.fill = ([alibaba.job_milli_gpu(j) for _, j in inputs.workload.jobs],
                       [k in result.records and result.records[k].first_start is not None for k in keys],
                       inputs.fill_milli)
    elif not result.interrupted:
        sim.why_waiting()  # jobs.csv's why column, after the run's own timing
    if warn is not None:
        for p in collapse(result.problems[known:]):
            warn(p)
    summ = metrics.write(out, result, conf_name, horizon)
    figures.write_evictions(out / "evictions.csv", result)
    rows = metrics.job_rows(result)
    text = report.conf_text(conf)
    settings = describe(inputs, sim.capacity, period_s=period, start_latency_s=start_latency, grace_s=grace, until_s=until)
    if keep is None:  # a run compared with others is written by common_window, over the common window
        report.write(out, result, rows, summ, title, text, settings)
    else:
        keep.append(Run(out, result, conf_name, title, text, settings))
    return summ


@dataclass
class Run:
    """A finished simulation and where it was written (for :func:`common_window`)."""

    out: Path
    result: SimResult
    conf_name: str
    title: str
    conf: str = ""
    settings: dict[str, Any] = field(default_factory=dict)


def common_window(runs: list[Run], horizon: float | None = None) -> list[dict[str, Any]]:
    """Rewrite each run's summary.json over one window, [0, ``horizon``] or else [0, the longest run's end], so that
    runs compared side by side (``--compare``, ``make demo``) average utilisation over the same time: a run that
    finished early counts as idle until the others end.  Each run's own report.html is over its own window (its
    end, or ``horizon`` when given): a page about one run does not stretch to another run's end."""
    common = horizon if horizon is not None else max((r.result.end_time for r in runs), default=0.0)
    out = []
    for r in runs:
        rows = metrics.job_rows(r.result)
        summ = metrics.write(r.out, r.result, r.conf_name, common)
        own = summ if horizon is not None else metrics.summary(r.result, rows, r.conf_name)
        report.write(r.out, r.result, rows, own, r.title, r.conf, r.settings)
        out.append(summ)
    return out


def compare_page(runs: list[Run], summaries: list[dict[str, Any]], path: Path, title: str,
                 names: list[str] | None = None) -> Path:
    """The one page comparing ``runs`` (the first is the baseline; ``summaries`` from :func:`common_window`):
    ``sim/report.py``.  ``names`` label the runs (default: each conf's file name)."""
    labels = names or [r.conf_name.rsplit("/", 1)[-1] for r in runs]
    data = [report.RunData(n, r.result, metrics.job_rows(r.result), s, r.conf)
            for n, r, s in zip(labels, runs, summaries, strict=True)]
    return report.write_comparison(path, data, title, runs[0].settings if runs else None)


def paired_over_jobs(runs: list[Run], summaries: list[dict[str, Any]],
                     names: list[str] | None = None) -> list[dict[str, Any]]:
    """Every compared run against the first, over the same jobs (``report.paired_stats``): for ``--compare``'s
    terminal lines and JSON.  The window is the common one (``summaries``' ``window_s``)."""
    labels = names or [r.conf_name.rsplit("/", 1)[-1] for r in runs]
    data = [report.RunData(n, r.result, metrics.job_rows(r.result), s)
            for n, r, s in zip(labels, runs, summaries, strict=True)]
    out = []
    for r in data[1:]:
        window = max(float(data[0].summary.get("window_s") or 0.0), float(r.summary.get("window_s") or 0.0))
        for what, p in report.paired_stats(data[0], r, window):
            out.append({"a": data[0].name, "b": r.name, "what": what, "metric": p.metric.name, "jobs": p.n,
                        "diff": round(p.diff_mean, 4), "diff_ci": [round(p.diff_ci[0], 4), round(p.diff_ci[1], 4)],
                        "verdict": p.verdict("jobs")})
    return out


def load_conf_arg(path: str | None, default: str | None = None) -> tuple[SchedulerConf, str]:
    """The conf file ``path``, else ``default`` (a conf's text), else Volcano's default conf."""
    if path is None and default is not None:
        return load_conf(default, "default conf"), "default (Volcano's, with deviceshare)"
    return load_conf_file(path), path or "default (Volcano's)"


def device_conf_note(inputs: Inputs, conf: SchedulerConf, name: str) -> str | None:
    """A warning when the workload asks for gpushare GPUs and the conf has no deviceshare placing them: Volcano
    then checks them against the nodes' totals only, one pool per node.  Shares (``volcano.sh/gpu-memory``) need
    ``GPUSharingEnable``; whole GPUs (``volcano.sh/gpu-number``) ``GPUNumberEnable``, or beside shares
    ``GPUShareWholeGPUs``."""
    text = " ".join(str(((t.get("template") or {}).get("spec") or {}).get("containers"))
                    for _, j in inputs.workload.jobs for t in (j.get("spec") or {}).get("tasks") or [])
    asks_mem, asks_num = "volcano.sh/gpu-memory" in text, "volcano.sh/gpu-number" in text
    if not (asks_mem or asks_num):
        return None
    on: dict[str, bool] = {}
    for tier in conf.tiers:
        for p in tier.plugins:
            if p.name == "deviceshare":
                on = {k: str(v).lower() in ("true", "1", "yes") for k, v in p.arguments.items()}
    sharing, number = on.get("deviceshare.GPUSharingEnable", False), on.get("deviceshare.GPUNumberEnable", False)
    whole = sharing and on.get("deviceshare.GPUShareWholeGPUs", False)
    if (not asks_mem or sharing) and (not asks_num or number or whole):
        return None
    return (f"conf {name}: the workload asks for shared GPUs (volcano.sh/gpu-memory, volcano.sh/gpu-number) that "
            "the conf's deviceshare does not place, so they are checked against each node's totals only, one pool "
            "per node; add deviceshare with deviceshare.GPUSharingEnable and deviceshare.GPUShareWholeGPUs "
            "(docs/gpu-sharing.md), or run the pooled mapping with --gpu-pool")


def alibaba_inputs(trace_dir: str | None, knobs: alibaba.AlibabaKnobs, cluster: str | None) -> Inputs:
    d = Path(trace_dir) if trace_dir else alibaba.default_dir()
    alibaba.pod_list(d)  # refused before anything is read when the directory has none
    if knobs.fill:
        knobs.node_list, knobs.skip = alibaba.GPU_NODE_LIST, 0
    nodes = load_cluster(cluster) if cluster else alibaba.load_nodes(d, knobs)
    milli = alibaba.cluster_milli_gpu(nodes) if knobs.fill else 0
    wl = alibaba.fill_workload(d, knobs, milli, alibaba.node_models(nodes)) if knobs.fill else \
        alibaba.load_workload(d, knobs, alibaba.node_models(nodes))
    from dataclasses import asdict

    settings = {"workload": f"Alibaba openb trace ({d.name})",
                "trace knobs": ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}"
                                         for k, v in asdict(knobs).items())}
    queues = [{"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "default"},
               "spec": {"weight": 1}}] if knobs.fill else alibaba.queues()
    return Inputs(nodes, queues, wl, settings=settings, default_conf=None if knobs.gpu_pool else alibaba.DEVICE_CONF,
                  fill_milli=milli)


def print_summary(s: dict[str, Any]) -> None:
    print(json.dumps({k: v for k, v in s.items() if k not in ("problems",)}, indent=2))
