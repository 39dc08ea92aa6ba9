"""Binds recorded as a simulator makes them, for tests that compare two runs decision by decision (carried
sessions against ``--full-sessions``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pyvolcano.sim.engine import Simulator


def record_binds(sim: Simulator, line: Callable[[Any, str], str]) -> list[str]:
    """Wrap ``sim``'s writer so every bind appends ``line(task, node)`` to the returned list, then binds."""
    binds: list[str] = []
    bind = sim.writer.bind

    def recording_bind(task: Any, node: str) -> None:
        binds.append(line(task, node))
        bind(task, node)

    sim.writer.bind = recording_bind  # type: ignore[method-assign]
    return binds
