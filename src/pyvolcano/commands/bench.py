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
    @click.option("--output", "-o", type=click.Choice(["json", "table"]), default="table", show_default=True)
    def bench(nodes: int, pods: int, gang: int, queues: int, running: int, actions: str | None, config: str | None,
              engine: str, compare_engines: bool, force: bool, seed: int, output: str) -> None:
        """Build N nodes and P pending pods in gangs of G across Q queues, run one session, time each action."""
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
