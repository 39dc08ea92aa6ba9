"""cdp, cooldown protection (``pkg/scheduler/plugins/cdp/cdp.go``): a pod that started recently is not a victim.

Elastic jobs' pods may be preempted and restarted over and over; ``volcano.sh/cooldown-time`` (a pod label, else
a pod annotation; a Go duration such as ``600s``) protects a pod for that long after it was scheduled.  As in
Volcano's ``filterVictimFn``, a candidate is kept off the victim list only when all of these hold: it has the
label or annotation, the value parses as a Go duration, the pod's ``status.phase`` is ``Running``, and its first
``PodScheduled`` condition with status ``True`` has ``lastTransitionTime + cooldown`` after now.  Every other
candidate is a victim (a malformed value only warns in Volcano, so it protects nothing here either; pyvolcano
reports it among the session's warnings, naming the pod and field).  The plugin
votes Permit on both ``preemptable`` and ``reclaimable`` and has no arguments.

``now`` is the snapshot's clock (simulated time in the simulator), or the wall clock when the snapshot has none
(``pyvolcano cycle`` on a manifest file), as Volcano reads ``time.Now()``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from pyvolcano.api.convert import parse_time
from pyvolcano.api.job_info import TaskInfo
from pyvolcano.framework.arguments import parse_duration
from pyvolcano.framework.incremental.contracts import Contract
from pyvolcano.framework.plugin import Plugin
from pyvolcano.framework.points import PERMIT, Vote
from pyvolcano.framework.registry import register_plugin
from pyvolcano.framework.session import Session
from pyvolcano.framework.state import warn

#: ``volcano.sh/apis`` ``scheduling/v1beta1.CooldownTime``
COOLDOWN_TIME = "volcano.sh/cooldown-time"


def go_duration(text: str) -> float | None:
    """Go's ``time.ParseDuration`` in seconds (a sign, and a bare ``0``, included), None when it does not parse."""
    s = text.strip()
    sign = 1.0
    if s[:1] in ("-", "+"):
        sign, s = (-1.0 if s[0] == "-" else 1.0), s[1:]
    if s == "0":
        return 0.0
    try:
        return sign * parse_duration(s)
    except ValueError:
        return None


def cooldown_of(pod: dict[str, Any], bad: Callable[[str], None] | None = None) -> float | None:
    """The pod's cooldown in seconds (label first, then annotation: ``podCooldownTime``), None without one or
    when it is not a duration (then ``bad`` is told which field holds what)."""
    meta = pod.get("metadata") or {}
    labels = meta.get("labels") or {}
    raw, where = labels.get(COOLDOWN_TIME), "labels"
    if raw is None:
        raw, where = (meta.get("annotations") or {}).get(COOLDOWN_TIME), "annotations"
        if raw is None:
            return None
    got = go_duration(str(raw))
    if got is None and bad is not None:
        bad(f"metadata.{where}.{COOLDOWN_TIME}: {raw!r} is not a duration (e.g. 600s, 1h30m)")
    return got


def scheduled_at(pod: dict[str, Any]) -> float | None:
    """``lastTransitionTime`` of the first ``PodScheduled`` condition that is ``True`` (None: no such condition;
    Volcano's loop stops at the first one)."""
    for c in (pod.get("status") or {}).get("conditions") or []:
        if isinstance(c, dict) and c.get("type") == "PodScheduled" and c.get("status") == "True":
            try:
                return parse_time(c.get("lastTransitionTime"))
            except (TypeError, ValueError):
                return 0.0  # Go's zero time: long ago, so the cooldown has passed
    return None


def cooling_down(pod: dict[str, Any], now: float, bad: Callable[[str], None] | None = None) -> bool:
    """Whether ``filterVictimFn`` keeps this pod off the victim list."""
    cooldown = cooldown_of(pod, bad)
    if cooldown is None or (pod.get("status") or {}).get("phase") != "Running":
        return False
    at = scheduled_at(pod)
    return at is not None and at + cooldown > now


@register_plugin
class CooldownProtection(Plugin):
    name = "cdp"
    # registers preemptable/reclaimable only: enqueue and allocate never ask it, so it gives none of the refusals
    # the memo skips; the clock and the victims' labels it reads decide preempt's and reclaim's victims alone
    contracts = frozenset({Contract.FINGERPRINTED})

    def on_session_open(self, ssn: Session) -> None:
        now = ssn.now or time.time()

        def victims(_: TaskInfo, candidates: list[TaskInfo]) -> tuple[list[TaskInfo], Vote]:
            out = []
            for t in candidates:
                def bad(why: str, uid: str = t.uid) -> None:
                    warn(ssn.state, f"Pod {uid}: {why}; cdp does not protect it")
                if not cooling_down(t.pod, now, bad):
                    out.append(t)
            return out, PERMIT
        ssn.add_preemptable_fn(self.name, victims)
        ssn.add_reclaimable_fn(self.name, victims)
