"""CronJobs, JobFlows and JobTemplates in the simulator: the controllers of ``controllers/cronjob.py`` and
``controllers/jobflow.py`` (the ones ``pyvolcano controller`` runs) on a ``ClusterAPI`` over the simulator.

Simulated time ``t`` is the instant ``1970-01-01T00:00:00Z + t`` seconds for cron schedules.  A CronJob fires on
that clock (a ``CronTick`` event at each time its ``sync`` asks for) at the schedule times up to its
``pyvolcano.io/until`` annotation (simulated seconds) or ``--until``; one with neither is reported and does not
fire, as the simulation would never end.  A Job a CronJob or JobFlow creates arrives like a workload Job (the
same admission checks, records and report rows).  A JobFlow is synced when it arrives and whenever one of its
Jobs changes phase.
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from pyvolcano.api.job_model import UNTIL
from pyvolcano.controllers.cronjob import NEXT_DELTA, CronJobController, fmt_time, running_duration
from pyvolcano.controllers.jobflow import JobFlowController, owned_by_flow
from pyvolcano.controllers.vcjob import FINAL

if TYPE_CHECKING:
    from pyvolcano.sim.engine import Simulator

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def clock(t: float) -> datetime:
    return EPOCH + timedelta(seconds=t)


class SimFlowAPI:
    """``ClusterAPI`` for the flow controllers: Jobs go through the simulator's arrival path; CronJobs, JobFlows
    and JobTemplates are kept here."""

    def __init__(self, sim: Simulator) -> None:
        self.sim = sim
        self.objects: dict[tuple[str, str], dict[str, Any]] = {}
        #: Job key -> its metadata as created (labels, owners) and whether it was deleted
        self.jobs: dict[str, dict[str, Any]] = {}
        self.deleted: set[str] = set()

    def create(self, obj: dict[str, Any]) -> None:
        obj = copy.deepcopy(obj)
        md = obj["metadata"]
        ns = md.setdefault("namespace", "default")
        key = f"{ns}/{md['name']}"
        if obj["kind"] != "Job":
            md.setdefault("creationTimestamp", fmt_time(clock(self.sim.now)))
            md.setdefault("uid", f"{obj['kind'].lower()}-{next(self.sim.uids)}")
            self.objects[(obj["kind"], key)] = obj
            return
        bad = self.sim.job_problem(obj)
        if bad:
            self.sim.problems.append(f"{bad}; job skipped")
            return
        self.sim.total_jobs += 1
        self.jobs[key] = copy.deepcopy(md)
        self.deleted.discard(key)
        self.sim._arrive(obj)

    def delete(self, kind: str, namespace: str, name: str) -> bool:
        key = f"{namespace}/{name}"
        if kind != "Job":
            self.objects.pop((kind, key), None)
            return True
        st = self.sim.controller.jobs.get(key)
        rec = self.sim.records.get(key)
        if st is not None and rec is not None and st.phase not in FINAL:
            # deleted while it ran (CronJob Replace): the report shows it ended here, as Terminated
            rec.phase, rec.finished, rec.running = "Terminated", self.sim.now, 0
        self.sim.controller.delete_job(key)  # its pods and PodGroup go with it, as Kubernetes' garbage collector does
        self.deleted.add(key)
        return True

    def get(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        key = f"{namespace}/{name}"
        if kind != "Job":
            return self.objects.get((kind, key))
        if key in self.deleted or key not in self.jobs:
            return None
        return self.job_view(key)

    def job_view(self, key: str) -> dict[str, Any]:
        """The Job as the flow controllers read it: its metadata and ``status.state.phase``."""
        st = self.sim.controller.jobs.get(key)
        rec = self.sim.records.get(key)
        md = dict(self.jobs[key])
        if rec is not None:
            md["creationTimestamp"] = fmt_time(clock(rec.submit))
        state: dict[str, Any] = {"phase": st.phase if st is not None else "Pending"}
        status: dict[str, Any] = {"state": state}
        if rec is not None and rec.finished is not None:
            state["lastTransitionTime"] = fmt_time(clock(rec.finished))
            status["runningDuration"] = running_duration(md.get("creationTimestamp"), state["lastTransitionTime"])
        return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": md, "status": status}

    def namespace_jobs(self, ns: str) -> list[dict[str, Any]]:
        return [self.job_view(k) for k in self.jobs if k not in self.deleted and k.split("/", 1)[0] == ns]

    def update_status(self, kind: str, namespace: str, name: str, status: dict[str, Any]) -> None:
        obj = self.objects.get((kind, f"{namespace}/{name}"))
        if obj is not None:
            obj["status"] = copy.deepcopy(status)

    def patch_spec(self, kind: str, namespace: str, name: str, fields: dict[str, Any]) -> None:
        obj = self.objects.get((kind, f"{namespace}/{name}"))
        if obj is not None:
            obj["spec"] = {**(obj.get("spec") or {}), **fields}

    def event(self, obj: dict[str, Any], etype: str, reason: str, message: str) -> None:
        md = obj.get("metadata") or {}
        self.sim.event_log.append((self.sim.now, etype, reason,
                                   f"{obj.get('kind')} {md.get('namespace', 'default')}/{md.get('name')}: {message}"))


class SimFlows:
    """The flow controllers' side of the simulator (``Simulator.flows``)."""

    def __init__(self, sim: Simulator) -> None:
        self.sim = sim
        self.api = SimFlowAPI(sim)
        self.cron = CronJobController(self.api)
        self.flow = JobFlowController(self.api)
        #: Job key -> the JobFlow key that made it
        self.flow_of: dict[str, str] = {}
        self.unbounded: set[str] = set()

    def arrive(self, obj: dict[str, Any]) -> None:
        """A CronJob, JobFlow or JobTemplate from the workload is created."""
        self.api.create(obj)
        md = obj["metadata"]
        key = f"{md.get('namespace') or 'default'}/{md['name']}"
        if obj["kind"] == "CronJob":
            self.tick(key)
        elif obj["kind"] == "JobFlow":
            self.sync_flow(key)

    def tick(self, key: str) -> None:
        """Sync a CronJob at the current simulated time and schedule its next tick."""
        from pyvolcano.sim.engine import CronTick

        cj = self.api.objects.get(("CronJob", key))
        if cj is None:
            return
        ns = key.split("/", 1)[0]
        uid = cj["metadata"].get("uid")
        owned = [j for j in self.api.namespace_jobs(ns)
                 if any(o.get("uid") == uid for o in j["metadata"].get("ownerReferences") or [])]
        wait = self.cron.sync(cj, owned, clock(self.sim.now))
        if wait is None:
            return
        ann = cj["metadata"].get("annotations") or {}
        end = self.sim.until
        if ann.get(UNTIL) not in (None, ""):
            end = float(ann[UNTIL])
        if end is None:
            if key not in self.unbounded:
                self.unbounded.add(key)
                self.sim.problems.append(f"CronJob {key}: no end: give it a {UNTIL} annotation (simulated seconds) "
                                         "or run with --until; it does not fire")
            return
        t = self.sim.now + max(wait, 1e-3)
        if t - NEXT_DELTA.total_seconds() <= end + 1e-6:  # the schedule time (the tick comes NEXT_DELTA after it)
            self.sim._push(t, CronTick(key))

    def sync_flow(self, key: str) -> None:
        jf = self.api.objects.get(("JobFlow", key))
        if jf is None:
            return
        ns = key.split("/", 1)[0]
        templates = {k.split("/", 1)[1]: o for (kind, k), o in self.api.objects.items()
                     if kind == "JobTemplate" and k.split("/", 1)[0] == ns}
        jobs = self.api.namespace_jobs(ns)
        self.flow.sync(jf, jobs, templates, clock(self.sim.now))
        for j in owned_by_flow(jf, self.api.namespace_jobs(ns)):
            self.flow_of[f"{ns}/{j['metadata']['name']}"] = key

    def job_changed(self, job_key: str) -> None:
        flow = self.flow_of.get(job_key)
        if flow is not None:
            self.sync_flow(flow)
