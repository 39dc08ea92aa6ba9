"""Volcano's CronJob controller (``pkg/controllers/cronjob``, Kubernetes' CronJob controller v2 for Volcano Jobs),
shared by the simulator and the Kubernetes mode through ``ClusterAPI``.

One ``sync`` per CronJob (``syncCronJob``): finished Jobs leave ``status.active`` (a Completed one moves
``lastSuccessfulTime``) and the oldest beyond ``successfulJobsHistoryLimit``/``failedJobsHistoryLimit`` are deleted;
active references to Jobs that are gone are dropped; then, unless suspended, the most recent missed schedule
time (not older than ``startingDeadlineSeconds``) starts a Job named ``<cronjob>-<minutes since epoch>`` with
the template's labels and annotations, ``volcano.sh/cronjob-scheduled-timestamp`` and the CronJob as controller
owner, after the concurrency policy (Forbid skips while a Job is active, Replace deletes the active ones first).
``sync`` returns how long until the next schedule, so the caller (the simulator's clock or the controller's
timer) syncs again then.  A schedule that does not parse is reported once as a Warning event, never raised.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from pyvolcano.api.cron import CronError, Schedule, parse
from pyvolcano.controllers.api import ClusterAPI

SCHEDULED_TIMESTAMP = "volcano.sh/cronjob-scheduled-timestamp"
API_VERSION = "batch.volcano.sh/v1alpha1"
#: Kubernetes' ``nextScheduleDelta``: wake up a little after the schedule so that ``now`` is past it
NEXT_DELTA = timedelta(milliseconds=100)
FINISHED = ("Completed", "Failed", "Terminated", "Aborted")


def parse_time(v: Any) -> datetime | None:
    if not v:
        return None
    if isinstance(v, datetime):
        return v if v.tzinfo else v.replace(tzinfo=UTC)
    try:
        t = datetime.fromisoformat(str(v).replace("Z", "+00:00"))
    except ValueError:
        return None
    return t if t.tzinfo else t.replace(tzinfo=UTC)


def fmt_time(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def fmt_duration(seconds: float) -> str:
    """Go's ``time.Duration.String`` of whole seconds (``0s``, ``42s``, ``1m30s``, ``2h0m5s``), the form a
    ``metav1.Duration`` takes in JSON."""
    total = round(seconds)
    sign, total = ("-", -total) if total < 0 else ("", total)
    h, rest = divmod(total, 3600)
    m, sec = divmod(rest, 60)
    if h:
        return f"{sign}{h}h{m}m{sec}s"
    if m:
        return f"{sign}{m}m{sec}s"
    return f"{sign}{sec}s"


def running_duration(created: Any, transitioned: Any) -> str | None:
    """A Job's ``status.runningDuration``: its ``state.lastTransitionTime`` minus its ``creationTimestamp``
    (``pkg/controllers/job/job_controller_actions.go: syncJob``); None when either time is unknown."""
    c, t = parse_time(created), parse_time(transitioned)
    return None if c is None or t is None else fmt_duration((t - c).total_seconds())


def end_timestamp(created: Any, duration: Any) -> str | None:
    """A JobFlow's ``jobStatusList[].endTimestamp``: the Job's ``creationTimestamp`` plus its
    ``status.runningDuration`` (``jobflow_controller_action.go: getAllJobStatus``); None without both (Volcano
    writes a zero time then)."""
    from pyvolcano.conf.arguments import parse_duration

    c = parse_time(created)
    if c is None or not duration:
        return None
    try:
        return fmt_time(c + timedelta(seconds=parse_duration(str(duration))))
    except (ValueError, OverflowError):
        return None


def job_phase(job: dict[str, Any]) -> str:
    return str(((job.get("status") or {}).get("state") or {}).get("phase") or "")


def job_name(cj: dict[str, Any], scheduled: datetime) -> str:
    """``getJobName``: the CronJob's name and the scheduled time in minutes since the epoch."""
    return f"{cj['metadata']['name']}-{int(scheduled.timestamp()) // 60}"


def most_recent(cj: dict[str, Any], now: datetime, sch: Schedule, with_deadline: bool
                ) -> tuple[datetime, datetime | None, int]:
    """``mostRecentScheduleTime``: (earliest time considered, the latest schedule time <= now or None, how many
    schedules were missed)."""
    md, spec, st = cj.get("metadata") or {}, cj.get("spec") or {}, cj.get("status") or {}
    earliest = parse_time(st.get("lastScheduleTime")) or parse_time(md.get("creationTimestamp")) or now
    deadline = spec.get("startingDeadlineSeconds")
    if with_deadline and deadline is not None:
        earliest = max(earliest, now - timedelta(seconds=int(deadline)))
    t1 = sch.next(earliest)
    if now < t1:
        return earliest, None, 0
    t2 = sch.next(t1)
    if now < t2:
        return earliest, t1, 1
    period = max(1, round((t2 - t1).total_seconds()))
    missed = int((now - t1).total_seconds()) // period + 1
    t = sch.next(t1 + timedelta(seconds=(missed - 2) * period))
    latest = None
    while t <= now:
        latest, t = t, sch.next(t)
    return earliest, latest, missed


@dataclass
class CronJobController:
    api: ClusterAPI
    #: CronJobs whose bad schedule was already reported (``ns/name`` -> schedule), so the event is sent once
    reported: dict[str, str] = field(default_factory=dict)

    def sync(self, cj: dict[str, Any], jobs: Iterable[dict[str, Any]], now: datetime) -> float | None:
        """Bring one CronJob up to ``now`` given the Jobs it owns; seconds until it needs a sync again (None:
        only when it changes)."""
        cj = copy.deepcopy(cj)
        md, spec = cj["metadata"], cj.get("spec") or {}
        ns, name = md.get("namespace") or "default", md["name"]
        status: dict[str, Any] = copy.deepcopy(cj.get("status") or {})
        cj["status"] = status
        before = copy.deepcopy(status)
        owned = list(jobs)
        self._finished(cj, owned)
        self._active(cj, owned)
        try:
            if spec.get("suspend"):
                return None
            try:
                sch = parse(str(spec.get("schedule") or ""), spec.get("timeZone"))
            except CronError as exc:
                key = f"{ns}/{name}"
                if self.reported.get(key) != spec.get("schedule"):
                    self.reported[key] = str(spec.get("schedule"))
                    self.api.event(cj, "Warning", "UnparseableSchedule", f"unparseable schedule: {exc}")
                return None
            _, scheduled, missed = most_recent(cj, now, sch, True)
            wait = self._next(cj, now, sch)
            if scheduled is None:
                return wait
            if missed > 100:
                self.api.event(cj, "Warning", "TooManyMissedTimes", "too many missed start times. Set or decrease "
                               ".spec.startingDeadlineSeconds or check clock skew")
            jname = job_name(cj, scheduled)
            if any(a.get("name") == jname for a in status.get("active") or []) or \
                    parse_time(status.get("lastScheduleTime")) == scheduled:
                return wait
            policy = spec.get("concurrencyPolicy") or "Allow"
            if policy == "Forbid" and status.get("active"):
                self.api.event(cj, "Warning", "ForbidConcurrent",
                               "Skipping job creation because another job is already running")
                return wait
            if policy == "Replace" and status.get("active"):
                self.api.event(cj, "Warning", "ReplaceConcurrent", "Replacing active job for CronJob")
                for a in list(status["active"]):
                    self.api.delete("Job", ns, a["name"])
                    self.api.event(cj, "Normal", "SuccessfulDelete", f"Deleted job {a['name']}")
                status["active"] = []
            created = self._create(cj, scheduled, jname)
            if created is not None and not any(a.get("name") == jname for a in status.get("active") or []):
                status.setdefault("active", []).append(
                    {"apiVersion": API_VERSION, "kind": "Job", "name": jname, "namespace": ns,
                     "uid": created["metadata"].get("uid", ""),
                     "resourceVersion": created["metadata"].get("resourceVersion", "")})
                status["lastScheduleTime"] = fmt_time(scheduled)
            return wait
        finally:
            if status != before:
                self.api.update_status("CronJob", ns, name, status)

    def _next(self, cj: dict[str, Any], now: datetime, sch: Schedule) -> float:
        """``nextScheduleTimeDuration``."""
        earliest, latest, missed = most_recent(cj, now, sch, False)
        base = latest or (earliest if missed == 0 else now)
        return max(0.0, (sch.next(base) + NEXT_DELTA - now).total_seconds())

    def _finished(self, cj: dict[str, Any], jobs: list[dict[str, Any]]) -> None:
        """``processFinishedJobs``: finished Jobs leave ``active``; history limits delete the oldest."""
        status = cj["status"]
        done: dict[str, list[dict[str, Any]]] = {"Completed": [], "Failed": []}
        for job in jobs:
            phase = job_phase(job)
            if phase not in FINISHED:
                continue
            jname = job["metadata"]["name"]
            if any(a.get("name") == jname for a in status.get("active") or []):
                status["active"] = [a for a in status["active"] if a.get("name") != jname]
                self.api.event(cj, "Normal", "SawCompletedJob", f"Saw completed job: {jname} in active, remove")
            if phase == "Completed":
                t = parse_time(((job.get("status") or {}).get("state") or {}).get("lastTransitionTime"))
                last = parse_time(status.get("lastSuccessfulTime"))
                if t is not None and (last is None or t > last):
                    status["lastSuccessfulTime"] = fmt_time(t)
                done["Completed"].append(job)
            elif phase == "Failed":
                done["Failed"].append(job)
        spec = cj.get("spec") or {}
        for phase, limit_key in (("Completed", "successfulJobsHistoryLimit"), ("Failed", "failedJobsHistoryLimit")):
            limit = spec.get(limit_key)
            if limit is None:
                continue
            olds = sorted(done[phase], key=lambda j: (str(j["metadata"].get("creationTimestamp") or ""),
                                                      j["metadata"]["name"]))
            for job in olds[:max(0, len(olds) - int(limit))]:
                self.api.delete("Job", job["metadata"].get("namespace") or "default", job["metadata"]["name"])
                self.api.event(cj, "Normal", "SuccessfulDelete", f"Deleted job {job['metadata']['name']}")

    def _active(self, cj: dict[str, Any], jobs: list[dict[str, Any]]) -> None:
        """``processCtlJobAndActiveJob``: references to Jobs that no longer exist leave ``active``."""
        status = cj["status"]
        names = {j["metadata"]["name"] for j in jobs}
        keep = []
        for a in status.get("active") or []:
            if a.get("name") in names:
                keep.append(a)
            else:
                self.api.event(cj, "Warning", "StaleReference",
                               f"Active job {a.get('name')!r} no longer exists (UID: {a.get('uid', '')})")
        if "active" in status:
            status["active"] = keep

    def _create(self, cj: dict[str, Any], scheduled: datetime, jname: str) -> dict[str, Any] | None:
        """``getJobFromTemplate`` + ``createJob``."""
        md = cj["metadata"]
        ns = md.get("namespace") or "default"
        tmpl = (cj.get("spec") or {}).get("jobTemplate") or {}
        tmd = tmpl.get("metadata") or {}
        from pyvolcano.api.cron import zone

        tz = zone((cj.get("spec") or {}).get("timeZone"))
        annotations = {**(tmd.get("annotations") or {}),
                       SCHEDULED_TIMESTAMP: scheduled.astimezone(tz).isoformat().replace("+00:00", "Z")}
        job = {"apiVersion": API_VERSION, "kind": "Job",
               "metadata": {"name": jname, "namespace": ns, "labels": dict(tmd.get("labels") or {}),
                            "annotations": annotations,
                            "ownerReferences": [{"apiVersion": API_VERSION, "kind": "CronJob", "name": md["name"],
                                                 "uid": md.get("uid", ""), "controller": True,
                                                 "blockOwnerDeletion": True}]},
               "spec": copy.deepcopy(tmpl.get("spec") or {})}
        existing = self.api.get("Job", ns, jname)
        if existing is not None:
            owners = [o for o in existing["metadata"].get("ownerReferences") or [] if o.get("controller")]
            if not owners or owners[0].get("kind") != "CronJob" or owners[0].get("name") != md["name"]:
                self.api.event(cj, "Warning", "ForeignJob", f"Job {jname} exists but is not owned by this CronJob "
                               f"(current owner: {owners[0].get('name') if owners else 'none'})")
                return None
            return None if job_phase(existing) in FINISHED else existing
        self.api.create(job)
        created = self.api.get("Job", ns, jname)
        if created is None:
            self.api.event(cj, "Warning", "FailedCreate", f"Failed to create job {jname}")
            return None
        self.api.event(cj, "Normal", "SuccessfulCreate", f"Created job {jname}")
        return created
