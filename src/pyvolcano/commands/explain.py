"""``pyvolcano explain``: why a job is pending in a session on a snapshot, and the smallest changes that start it."""

from __future__ import annotations

import textwrap

import click

from pyvolcano.analysis.whatif import Explanation, explain
from pyvolcano.commands._output import emit
from pyvolcano.framework.explain import RESOURCES

#: lines are wrapped to this width (an 80-column terminal), continuation lines indented
WIDTH = 80


def _say(text: str, indent: int = 0, hang: int = 2) -> None:
    pad = " " * indent
    click.echo(textwrap.fill(text, WIDTH, initial_indent=pad, subsequent_indent=pad + " " * hang,
                             break_on_hyphens=False, break_long_words=False))


def _names(items: list[str], most: int = 4) -> str:
    short = [i.split("/", 1)[-1] for i in items[:most]]
    return ", ".join(short) + (f" and {len(items) - most} more" if len(items) > most else "")


def print_text(e: Explanation) -> None:
    p = e.path
    _say(f"{e.podgroup}: {e.phase}, {p.pods} pod(s) ({len(p.pending)} pending), minAvailable {p.min_member}, "
         f"queue {p.queue}")
    if e.message:
        _say(f"Volcano: {e.message}", 2)
    _say(f"Why: {e.reason}", 2)
    if e.schedulable:
        return
    click.echo("\nPath through the session:")
    if p.enqueue:
        _say("enqueue: " + "; ".join(f"{v.plugin} {v.vote}" + (f" ({v.reason})" if v.reason else "")
                                     for v in p.enqueue), 2)
    else:
        _say("enqueue: not asked (the PodGroup is already admitted)", 2)
    for tp in p.tasks:
        req = ", ".join(f"{v:g}" if r == "pods" else f"{_q(r, v)} {r}" for r, v in tp.request.items())
        _say(f"pod {_names(tp.pods)}" + (f" ({req})" if req else "") + ": "
             + (f"fits {len(tp.feasible)} node(s): {_names(tp.feasible)}" if tp.feasible else "fits no node"), 2)
        for r, (a, b) in tp.too_big.items():
            _say(f"larger than any node: requests {_q(r, a)} {r}, the largest node has {_q(r, b)}", 4)
        for g in tp.refused[:6]:
            why = "; ".join(text if plugin == RESOURCES else f"{plugin}: {text}" for plugin, text in g.reasons)
            _say(f"{len(g.nodes)} node(s) ({_names(g.nodes, 3)}): {why}", 4)
        if len(tp.refused) > 6:
            _say(f"... {len(tp.refused) - 6} more group(s) of nodes (-o json lists every one)", 4)
    _say(f"dry run with the gang lowered to one pod: {e.placed} of {e.needed} placed", 2)
    _say("preempt/reclaim would take: " + (_names(e.victims) if e.victims else "nothing"), 2)
    click.echo("\nFixes (each checked by running the session again with the change):")
    if not e.fixes:
        _say("none found" + (" within the search's bound" if e.stopped else ""), 2)
    for i, f in enumerate(e.fixes, 1):
        _say(f"{i}. {f.text}" + ("" if f.verified else " (does not start it)"), 2, 3)
    _say(f"{e.runs} session(s) re-run" + (f"; {e.stopped}" if e.stopped else ""), 2)


def _q(resource: str, internal: float) -> str:
    from pyvolcano.api.quantity import format_quantity

    return format_quantity(resource, internal)


def register(group: click.Group) -> None:
    @group.command("explain")
    @click.argument("snapshot")
    @click.argument("target", metavar="NS/NAME")
    @click.option("--config", "-c", "config", default=None,
                  help="volcano-scheduler.conf or its ConfigMap (default: the scenario's config:, else Volcano's).")
    @click.option("--output", "-o", "output", type=click.Choice(["text", "json", "yaml"]), default="text",
                  show_default=True, help="text for people; json or yaml: every field.")
    @click.option("--scheduler-name", default="volcano", show_default=True,
                  help="Pods with this spec.schedulerName are scheduled; others only use node resources.")
    @click.option("--max-runs", type=click.IntRange(0, 500), default=24, show_default=True,
                  help="At most this many sessions re-run to search and check fixes.")
    @click.option("--budget", type=click.FloatRange(0, 3600, min_open=True), default=120.0, show_default=True,
                  help="Seconds of re-runs at most, at the pace of the first session.")
    def explain_cmd(snapshot: str, target: str, config: str | None, output: str, scheduler_name: str,
                    max_runs: int, budget: float) -> None:
        """Why the PodGroup NS/NAME (or the job of the pod NS/NAME) is pending in a session on SNAPSHOT, and
        the smallest changes that would start it: minAvailable, requests, queue, topology, nodes to add,
        preemption. Each fix is checked by running the session again with it.

        Exit status: 0; 2 when an input is wrong or the target does not exist or is not pending."""
        from pyvolcano.commands.cycle import load_inputs
        from pyvolcano.errors import UserError

        if "/" not in target:
            raise UserError(f"{target}: give the target as NAMESPACE/NAME (a PodGroup, or a pod)")
        snap, conf = load_inputs(snapshot, config)
        e = explain(snap.objects, conf, target, scheduler_name=scheduler_name, max_runs=max_runs, budget=budget)
        if output == "text":
            print_text(e)
        else:
            emit(e.as_dict(), output)
