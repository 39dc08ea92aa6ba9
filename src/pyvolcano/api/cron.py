"""Cron schedules of Volcano CronJobs, parsed as Kubernetes does.

Volcano's CronJob (``pkg/controllers/cronjob``, a port of Kubernetes' CronJob controller v2) parses
``spec.schedule`` with ``robfig/cron``'s ``ParseStandard``: five fields (minute, hour, day of month, month, day of
week) or a descriptor (``@yearly``, ``@annually``, ``@monthly``, ``@weekly``, ``@daily``, ``@midnight``,
``@hourly``, ``@every <duration>``), evaluated in ``spec.timeZone`` (an IANA name; the controller's local zone,
UTC here, when unset).  The five-field evaluation is ``croniter``'s (day of month and day of week OR-ed when both
are restricted, as in robfig/cron and Vixie cron).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter

from pyvolcano.errors import UserError

#: robfig/cron's descriptors (``parser.go: parseDescriptor``) as five-field expressions
DESCRIPTORS = {"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *", "@weekly": "0 0 * * 0",
               "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *"}
_GO_DURATION = re.compile(r"^(?:(\d+(?:\.\d+)?)(h|m|s|ms))+$")
_GO_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_UNIT = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
#: Kubernetes' valid time zone characters per path element (``validateTimeZone`` in Volcano's cronjob webhook)
_TZ_PART = re.compile(r"^[A-Za-z.\-_0-9+]{1,14}$")


class CronError(UserError):
    """A schedule or time zone that does not parse; the message says which and why."""


def zone(name: str | None) -> tzinfo:
    """``spec.timeZone`` as a tzinfo (None or empty: UTC, the controller's zone here)."""
    if not name:
        return UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise CronError(f"invalid timeZone {name!r}: {exc}") from None


def time_zone_problems(name: str | None) -> list[str]:
    """Volcano's cronjob webhook checks of ``spec.timeZone`` (``validateCronjobSpec``), in its words."""
    if name is None:
        return []
    if name == "":
        return ["timeZone must be nil or non-empty string, got empty string"]
    out = []
    for part in name.split("/"):
        if part in (".", "..") or part.startswith("-") or not _TZ_PART.match(part):
            out.append("unknown timeZone")
    if name.lower() == "local":
        out.append("timeZone can't be Local, and must be defined in https://www.iana.org/time-zones")
    else:
        try:
            ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError):
            out.append("invalid timeZone")
    return out


@dataclass(frozen=True)
class Schedule:
    """A parsed schedule: ``next(t)`` is the first activation strictly after ``t`` (robfig's ``Schedule.Next``)."""

    expr: str
    tz: tzinfo
    every: timedelta | None = None

    def next(self, after: datetime) -> datetime:
        if self.every is not None:  # ConstantDelaySchedule: t + delay, truncated to the second
            return after.replace(microsecond=0) + self.every
        local = after.astimezone(self.tz)
        nxt = croniter(self.expr, local).get_next(datetime)
        return nxt.astimezone(UTC)


def parse(schedule: str, time_zone: str | None = None) -> Schedule:
    """Parse ``spec.schedule`` in ``spec.timeZone``; raise CronError naming the problem."""
    expr = (schedule or "").strip()
    if not expr:
        raise CronError("schedule is required, but got empty")
    if "TZ" in expr:
        raise CronError("schedule should not contain TZ or CRON_TZ, TZ should only be set in the timeZone field")
    tz = zone(time_zone)
    if expr.startswith("@every"):
        dur = expr[len("@every"):].strip()
        if not _GO_DURATION.match(dur):
            raise CronError(f"schedule is not a valid cron expression: failed to parse duration {expr!r}")
        secs = sum(float(n) * _UNIT[u] for n, u in _GO_PART.findall(dur))
        return Schedule(expr, tz, timedelta(seconds=max(1.0, round(secs))))
    if expr.startswith("@"):
        if expr not in DESCRIPTORS:
            raise CronError(f"schedule is not a valid cron expression: unrecognized descriptor: {expr}")
        expr = DESCRIPTORS[expr]
    fields = expr.split()
    if len(fields) != 5:
        raise CronError(f"schedule is not a valid cron expression: expected exactly 5 fields, found {len(fields)}: "
                        f"{schedule!r}")
    if not croniter.is_valid(expr):
        raise CronError(f"schedule is not a valid cron expression: {schedule!r}")
    try:  # croniter accepts a few expressions it cannot evaluate (``0 0 31 2 *``): find out now
        croniter(expr, datetime(2000, 1, 1, tzinfo=tz)).get_next(datetime)
    except Exception as exc:  # croniter raises its own CroniterBadDateError and friends
        raise CronError(f"schedule is not a valid cron expression: {schedule!r}: {exc}") from None
    return Schedule(expr, tz)
