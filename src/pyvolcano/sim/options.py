"""The simulator's numeric options, typed once: ``simulate``'s flags and a sweep file (its ``workload`` and
``simulate`` settings and every ``grid`` value) go through the same fields, so a value a sweep may set is exactly
a value ``simulate`` accepts for that option.

Each field is finite, within bounds that keep a run meaningful and its memory bounded (``jobs: 1e8`` would build a
hundred million manifests; a zero mean duration or a NaN period never lets simulated time advance), and written
with ASCII digits only, as Kubernetes reads numbers (Python's ``float("١٠")`` is 10; Go's ``ParseFloat`` refuses
it).  Times stay within ``api/models.py: MAX_TIME``, so every time a run reaches can be formatted as RFC 3339.
"""

from __future__ import annotations

import math
from typing import Annotated, Any

import click
from pydantic import BeforeValidator, TypeAdapter, ValidationError

from pyvolcano.api.models import MAX_TIME, _integer, first_error

#: a simulated run's largest pod count per generated workload and node count
MAX_JOBS = 1_000_000
MAX_NODES = 100_000


def _number(lo: float, hi: float, *, lo_open: bool = False) -> Any:
    """A finite number in [lo, hi] (or (lo, hi] with ``lo_open``): a number or a string of ASCII digits, never a
    bool, NaN or infinity."""
    def check(v: Any) -> float:
        if isinstance(v, bool) or not isinstance(v, int | float | str):
            raise ValueError(f"{v!r} is not a number")
        if isinstance(v, str):
            t = v.strip()
            if not t.isascii() or "_" in t:
                raise ValueError(f"{v[:80]!r} is not a number (ASCII digits only)")
            try:
                x = float(t)
            except ValueError:
                raise ValueError(f"{v[:80]!r} is not a number") from None
        else:
            x = float(v)
        if not math.isfinite(x):
            raise ValueError(f"{v!r} is not a finite number")
        if x < lo or (lo_open and x == lo):
            raise ValueError(f"{v!r} must be {'>' if lo_open else '>='} {lo:g}")
        if x > hi:
            raise ValueError(f"{v!r} must be <= {hi:g}")
        return x
    return BeforeValidator(check)


Jobs = Annotated[int, _integer(1, MAX_JOBS)]
Rate = Annotated[float, _number(1e-6, 1e6)]
MeanDuration = Annotated[float, _number(0, 1e9, lo_open=True)]
Share = Annotated[float, _number(0, 1)]
Span = Annotated[float, _number(0, 1e10, lo_open=True)]
Nodes = Annotated[int, _integer(1, MAX_NODES)]
#: ``--ali-nodes``: 0 is every node of the list (no sampling)
AliNodes = Annotated[int, _integer(0, MAX_NODES)]
#: ``--fill``: the pod list sampled to this many times the cluster's GPUs (0: no fill run)
Fill = Annotated[float, _number(0, 100)]
Pods = Annotated[int, _integer(0, 10_000_000)]
Factor = Annotated[float, _number(0, 1e6, lo_open=True)]
Window = Annotated[float, _number(0, 1e9)]
Period = Annotated[float, _number(0.001, 1e6)]
Delay = Annotated[float, _number(0, 1e6)]
Until = Annotated[float, _number(0, MAX_TIME)]
Horizon = Annotated[float, _number(0, MAX_TIME, lo_open=True)]
Failures = Annotated[int, _integer(0, MAX_NODES)]
#: one gang's size, as ``--gang-sizes`` and a sweep's ``gang_sizes`` list it
GangSize = Annotated[int, _integer(1, 100_000)]

#: every numeric option of ``simulate`` by its sweep-file name (the flag ``--mean-duration`` is ``mean_duration``;
#: ``FLAGS`` names the flags spelt otherwise): the one table both read
FIELDS: dict[str, Any] = {
    "jobs": Jobs, "rate": Rate, "mean_duration": MeanDuration, "gpu_fraction": Share, "services": Jobs,
    "span": Span, "nodes": AliNodes, "fill": Fill, "pods": Pods, "compress": Factor, "duration_scale": Factor,
    "gang_window": Window,
    "max_gang": Nodes, "period": Period, "start_latency": Delay, "grace": Delay, "until": Until,
    "horizon": Horizon, "network_topology_fraction": Share, "node_failures": Failures, "cluster_size": Nodes,
    "gang_size": GangSize,
}
#: the flag of each field whose name differs from ``--field-name``
FLAGS = {"jobs": "--synthetic", "services": "--synthetic-services", "nodes": "--ali-nodes", "pods": "--ali-pods"}



def flag(name: str) -> str:
    """The ``simulate`` flag that sets the field ``name``."""
    return FLAGS.get(name, "--" + name.replace("_", "-"))


_ADAPTERS = {name: TypeAdapter(t) for name, t in FIELDS.items()}


def check(name: str, value: Any) -> Any:
    """``value`` as the option ``name`` takes it (an int or a float); ValueError saying why not."""
    try:
        return _ADAPTERS[name].validate_python(value)
    except ValidationError as exc:
        raise ValueError(first_error(exc)[1]) from None


class Option(click.ParamType):
    """A ``simulate`` flag typed by its SimOptions field (the same bounds a sweep file's value meets)."""

    def __init__(self, field: str) -> None:
        self.field = field
        self.name = "integer" if FIELDS[field].__origin__ is int else "number"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        try:
            return check(self.field, value)
        except ValueError as exc:
            self.fail(str(exc), param, ctx)
