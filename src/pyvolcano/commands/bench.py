"""``pyvolcano bench``: time one scheduling session on a synthetic cluster and backlog."""

from __future__ import annotations

import json

import click

from pyvolcano.bench.run import build, decisions, run
from pyvolcano.conf.loader import load_conf, load_conf_file
from pyvolcano.errors import UserError

#: node x pod pairs above which the scalar engine is refused without --force
SCALAR_LIMIT = 1_000_000
#: the scalar engine's cost per node and pod, measured on the project's 2-core machine
SCALAR_SECONDS = 45e-6


def register(group: click.Group) -> None:
    @group.command("bench")
    @click.option("--nodes", type=int, default=5000, show_default=True)
    @click.option("--pods", type=int, default=50000, show_default=True, help="Pending pods.")
    @click.option("--gang", type=int, default=10, show_default=True, help="Pods per PodGroup (minMember).")
    @click.option("--queues", type=int, default=10, show_default=True)
    @click.option("--running", type=int, default=0, show_default=True,
                  help="Low-priority pods already running (the backlog is then high priority: a preempt test).")
    @click.option("--actions", default=None, help="Override the conf's actions, e.g. 'enqueue, allocate'.")
    @click.option("--config", "-c", default=None, help="volcano-scheduler.conf (default: Volcano's).")
    @click.option("--engine", type=click.Choice(["vector", "scalar"]), default="vector", show_default=True)
    @click.option("--compare-engines", is_flag=True, help="Also run the scalar engine on the same input.")
    @click.option("--force", is_flag=True, help="Run --compare-engines even on inputs too big for the scalar engine.")
    @click.option("--seed", type=int, default=0, show_default=True)
    @click.option("--topology", is_flag=True,
                  help="The network-topology case (issue 14): --nodes under leaves of 16 and spines of 8, --gangs "
                       "hard-constrained gangs of 8-128 pods (tier 1 or 2) and --pods one-pod jobs, the default conf "
                       "plus network-topology-aware (--pods defaults to 5000 here, --gang and --queues are unused).")
    @click.option("--gangs", type=int, default=1000, show_default=True, help="With --topology: constrained gangs.")
    @click.option("--oracle", "oracle", default=None, metavar="VC_ORACLE",
                  help="With --topology: also time the same snapshot through the real Volcano (the path of "
                       "vc-oracle, e.g. ../shared/tools/volcano/vc-oracle); can take hours at full size.")
    @click.option("--oracle-timeout", type=float, default=3600.0, show_default=True,
                  help="Seconds after which the oracle run is stopped and reported unfinished.")
    @click.option("--forecast", "forecast_", is_flag=True,
                  help="Measure `pyvolcano forecast`'s accuracy on a small synthetic workload instead (snapshots "
                       "of a simulated run part-way, compared with when each job then started; docs/forecast.md).")
    @click.option("--output", "-o", type=click.Choice(["json", "table"]), default="table", show_default=True)
    def bench(nodes: int, pods: int, gang: int, queues: int, running: int, actions: str | None, config: str | None,
              engine: str, compare_engines: bool, force: bool, seed: int, topology: bool, gangs: int,
              oracle: str | None, oracle_timeout: float, forecast_: bool, output: str) -> None:
        """Build N nodes and P pending pods in gangs of G across Q queues, run one session, time each action."""
        if forecast_:
            from pyvolcano.bench.forecast import synthetic_case

            res = synthetic_case("tiny", seed=seed if _given("seed") else 1)
            fields = ("jobs", "median_abs_error_ratio", "coverage90")
            click.echo(json.dumps({k: res[k] for k in fields}) if output == "json" else
                       f"forecast accuracy on {res['jobs']} jobs: median |error| {res['median_abs_error_ratio']} of "
                       f"the actual wait, {res['coverage90']} of starts inside the 90 % range")
            return
        if topology:
            _topology_bench(nodes, gangs, pods, seed, oracle, oracle_timeout, engine, output,
                            pods_given=_given("pods"))
            return
        if oracle:
            raise UserError("--oracle times the --topology case only")
        if min(nodes, queues, gang) < 1 or pods < 0 or running < 0:
            raise UserError("--nodes, --queues and --gang must be at least 1; --pods and --running not negative")
        if compare_engines and nodes * (pods + running) > SCALAR_LIMIT and not force:
            minutes = nodes * (pods + running) * SCALAR_SECONDS / 60
            raise UserError(f"--compare-engines runs the scalar engine, a Python loop over every node for every pod: "
                            f"{nodes} nodes x {pods + running} pods would take about {minutes:.0f} minutes. Compare at "
                            f"up to {SCALAR_LIMIT:,} node-pods (e.g. --nodes 500 --pods 2000), or add --force")
        conf = load_conf_file(config)
        if actions:
            conf = load_conf(_with_actions(config, actions), "bench conf")
        objs = build(nodes, pods, gang, queues, running=running, seed=seed)
        out, result = run(objs, conf, engine)
        if compare_engines:
            other, other_result = run(objs, conf, "scalar" if engine == "vector" else "vector")
            vec, sca = (out, other) if engine == "vector" else (other, out)
            tv = sum(vec["seconds"].values())
            ts = sum(sca["seconds"].values())
            out["scalar_seconds"] = sca["seconds"]
            out["vector_speedup"] = round(ts / tv, 2) if tv > 0 else None
            out["same_decisions"] = decisions(result) == decisions(other_result)
        if output == "json":
            click.echo(json.dumps(out))
            return
        from rich.console import Console
        from rich.table import Table

        click.echo(f"pyvolcano bench: {out['nodes']} nodes, {out['pods']} pods, engine {out['engine']}")
        t = Table()
        t.add_column("step")
        t.add_column("seconds", justify="right")
        for k, v in out["seconds"].items():
            t.add_row(k, f"{v:.3f}")
        Console().print(t)
        click.echo(f"placed {out['placed']} pods, evicted {out['evictions']}, {out['pods_per_second']} pods/s, "
                   f"peak RSS {out['peak_rss_mb']} MB (cache load {out['load_seconds']} s)")
        if compare_engines:
            click.echo(f"vector engine speed-up over scalar: {out['vector_speedup']}x "
                       f"(same decisions: {out['same_decisions']})")


def _with_actions(config: str | None, actions: str) -> str:
    """The conf text with its actions string replaced."""
    import yaml

    from pyvolcano import safeyaml
    from pyvolcano.conf.loader import DEFAULT_CONF

    text, source = DEFAULT_CONF, "default conf"
    if config:
        text, source = safeyaml.read_text(config, "scheduler conf")
    data = safeyaml.load(text, source)
    if isinstance(data, dict) and data.get("kind") == "ConfigMap":
        raise UserError("--actions cannot be combined with a ConfigMap conf; give the conf file itself")
    if not isinstance(data, dict):
        raise UserError(f"{source}: expected a mapping with 'actions' and 'tiers', got {type(data).__name__}")
    data["actions"] = actions
    return yaml.safe_dump(data)


def _given(param: str) -> bool:
    """Whether the option was on the command line (not its default)."""
    ctx = click.get_current_context()
    return ctx.get_parameter_source(param) is click.core.ParameterSource.COMMANDLINE


def _topology_bench(nodes: int, gangs: int, pods: int, seed: int, oracle: str | None, oracle_timeout: float,
                    engine: str, output: str, *, pods_given: bool) -> None:
    """``bench --topology``: one session on ``bench/topology.py``'s cluster, and optionally the oracle's time."""
    import tempfile

    from pyvolcano.bench import topology

    if nodes < 1 or gangs < 0 or pods < 0:
        raise UserError("--nodes must be at least 1; --gangs and --pods not negative")
    plain = pods if pods_given else 5000
    objs = topology.build(nodes, gangs, plain, seed=seed)
    conf = load_conf(topology.CONF, "topology bench conf")
    out, _ = run(objs, conf, engine)
    out["case"] = "topology"
    out["gangs"] = gangs
    cpu = out["session_cpu_seconds"]
    out["pods_per_cpu_second"] = round(out["placed"] / cpu, 1) if cpu > 0 else None
    if oracle:
        with tempfile.TemporaryDirectory(prefix="pyvolcano-topo-bench-") as wd:
            out["oracle"] = topology.time_oracle(objs, oracle, wd, timeout=oracle_timeout)
    if output == "json":
        click.echo(json.dumps(out))
        return
    s = out["seconds"]
    click.echo(f"pyvolcano bench --topology: {out['nodes']} nodes, {gangs} hard gangs + {plain} one-pod jobs "
               f"({out['pods']} pods)")
    click.echo(f"placed {out['placed']} pods in {sum(s.values()):.2f} s (allocate {s.get('allocate', 0):.2f} s): "
               f"{out['pods_per_second']} pods/s; session CPU {cpu} s ({out['pods_per_cpu_second']} pods per CPU "
               f"second); cache load {out['load_seconds']} s")
    o = out.get("oracle")
    if o:
        state = "" if o["finished"] else f" (NOT finished: stopped after {oracle_timeout:.0f} s)"
        click.echo(f"Volcano (vc-oracle) on the same snapshot: allocate+backfill {o['allocate_seconds']} s wall, "
                   f"{o['allocate_cpu_seconds']} s CPU{state}")
