"""cdp (``plugins/cdp.py``): which pods its cooldown keeps off the victim list (Volcano's ``cdp.go``)."""

from __future__ import annotations

from typing import Any

import pytest

from pyvolcano.plugins.cdp import COOLDOWN_TIME, cooling_down, go_duration

T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z


def pod(*, label: str | None = None, annotation: str | None = None, phase: str = "Running",
        scheduled: str | None = "2026-01-01T00:00:00Z", status: str = "True") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "p", "labels": {}, "annotations": {}}
    if label is not None:
        meta["labels"][COOLDOWN_TIME] = label
    if annotation is not None:
        meta["annotations"][COOLDOWN_TIME] = annotation
    conds = [] if scheduled is None else [{"type": "PodScheduled", "status": status, "lastTransitionTime": scheduled}]
    return {"metadata": meta, "status": {"phase": phase, "conditions": conds}}


@pytest.mark.parametrize(("text", "want"), [("600s", 600.0), ("1h30m", 5400.0), ("-5s", -5.0), ("+2m", 120.0),
                                            ("0", 0.0), ("ten minutes", None), ("10", None), ("", None)])
def test_go_duration(text: str, want: float | None) -> None:
    assert go_duration(text) == want


def test_inside_and_past_the_cooldown() -> None:
    assert cooling_down(pod(annotation="600s"), T0 + 599)
    assert not cooling_down(pod(annotation="600s"), T0 + 600)  # After(now) is strict


def test_label_wins_over_annotation() -> None:
    assert not cooling_down(pod(label="1s", annotation="600s"), T0 + 10)
    assert cooling_down(pod(label="600s", annotation="1s"), T0 + 10)


@pytest.mark.parametrize("p", [
    pod(),  # no cooldown at all
    pod(annotation="ten minutes"),  # not a duration: Volcano warns and lets it be a victim
    pod(annotation="600s", phase="Pending"),  # only Running pods are protected
    pod(annotation="600s", scheduled=None),  # no PodScheduled condition
    pod(annotation="600s", status="False"),  # the condition is not True
    pod(annotation="-600s"),  # a negative cooldown ended before it began
])
def test_not_protected(p: dict[str, Any]) -> None:
    assert not cooling_down(p, T0 + 10)
