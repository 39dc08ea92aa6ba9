"""Volcano's JobFlow and JobTemplate controllers (``pkg/controllers/jobflow``, ``pkg/controllers/jobtemplate``),
shared by the simulator and the Kubernetes mode through ``ClusterAPI``.

A JobFlow's flows name JobTemplates (same namespace); ``sync`` (``syncJobFlow`` + the state machine of
``jobflow/state``) creates the Job ``<jobflow>-<flow>`` of every flow whose ``dependsOn.targets`` Jobs are all
Completed (``deployJob``/``judge``), labelled and annotated ``volcano.sh/createdByJobFlow: <ns>.<jobflow>`` and
``volcano.sh/createdByJobTemplate: <ns>.<template>``, owned by the JobFlow; then writes the status (the Jobs by
phase, ``jobStatusList`` with running histories, ``conditions``) and the phase: Pending -> Running once a Job runs
or completed and none failed, -> Succeed when every flow's Job completed, -> Failed when one failed or was
terminated.  With ``jobRetainPolicy: delete`` a Succeed JobFlow deletes its Jobs.  A flow whose template is
missing is reported as a Warning event and retried on the next sync; a dependency cycle never starts the Jobs
on it (the webhook refuses such a JobFlow: ``api/admission.validate_jobflow``).

The JobTemplate controller (``syncJobTemplate``) lists the Jobs made from a template in its
``status.jobDependsOnList``.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pyvolcano.api.admission import validate_jobflow
from pyvolcano.controllers.api import ClusterAPI
from pyvolcano.controllers.cronjob import end_timestamp, fmt_time, job_phase

CREATED_BY_JOBFLOW = "volcano.sh/createdByJobFlow"
CREATED_BY_JOBTEMPLATE = "volcano.sh/createdByJobTemplate"
FLOW_API_VERSION = "flow.volcano.sh/v1alpha1"
_STATUS_LISTS = {"Pending": "pendingJobs", "Running": "runningJobs", "Failed": "failedJobs",
                 "Completed": "completedJobs", "Terminated": "terminatedJobs"}
_KNOWN = {"Pending", "Running", "Completing", "Completed", "Terminating", "Terminated", "Failed"}


def object_string(namespace: str, name: str) -> str:
    """``GenerateObjectString``: ``<namespace>.<name>``."""
    return f"{namespace}.{name}"


def flow_job_name(jobflow: str, flow: str) -> str:
    return f"{jobflow}-{flow}"


def owned_by_flow(jf: Mapping[str, Any], jobs: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The Jobs a JobFlow made (``getAllJobsCreatedByJobFlow``: by the createdByJobFlow label)."""
    md = jf["metadata"]
    mark = object_string(md.get("namespace") or "default", md["name"])
    return [j for j in jobs if ((j.get("metadata") or {}).get("labels") or {}).get(CREATED_BY_JOBFLOW) == mark]


@dataclass
class JobFlowController:
    api: ClusterAPI

    def sync(self, jf: dict[str, Any], jobs: Iterable[dict[str, Any]], templates: Mapping[str, dict[str, Any]],
             now: datetime) -> None:
        """One sync of a JobFlow given the Jobs of its namespace and its namespace's JobTemplates by name."""
        md, spec = jf["metadata"], jf.get("spec") or {}
        ns, name = md.get("namespace") or "default", md["name"]
        status = copy.deepcopy(jf.get("status") or {})
        phase = (status.get("state") or {}).get("phase") or "Pending"
        by_name = {j["metadata"]["name"]: j for j in jobs}
        mine = owned_by_flow(jf, by_name.values())
        if phase == "Succeed" and spec.get("jobRetainPolicy") == "delete":
            for j in mine:
                self.api.delete("Job", ns, j["metadata"]["name"])
            return
        if phase not in ("Pending", "Running", "Succeed"):  # Failed, Terminating: Volcano's states do nothing
            return
        problem = validate_jobflow(jf)
        for flow in spec.get("flows") or []:
            fname = str(flow.get("name") or "")
            jname = flow_job_name(name, fname)
            if jname in by_name:
                continue
            targets = (flow.get("dependsOn") or {}).get("targets") or []
            if problem and targets:
                continue  # a cycle or an undefined target: the flows on it never start
            if all(job_phase(by_name.get(flow_job_name(name, t)) or {}) == "Completed" for t in targets):
                created = self._create(jf, fname, jname, templates.get(fname))
                if created is not None:
                    mine.append(created)
        flows = len(spec.get("flows") or [])
        status = self._status(status, mine, now)
        lists = {k: status.get(k) or [] for k in _STATUS_LISTS.values()}
        if phase == "Pending":
            if (lists["runningJobs"] or lists["completedJobs"]) and not lists["failedJobs"]:
                phase = "Running"
            elif lists["failedJobs"] or lists["terminatedJobs"]:
                phase = "Failed"
        elif phase == "Running":
            if len(lists["completedJobs"]) == flows:
                phase = "Succeed"
            elif lists["failedJobs"] or lists["terminatedJobs"]:
                phase = "Failed"
        status["state"] = {"phase": phase}
        if status != (jf.get("status") or {}):
            self.api.update_status("JobFlow", ns, name, status)

    def _create(self, jf: dict[str, Any], flow: str, jname: str, template: dict[str, Any] | None
                ) -> dict[str, Any] | None:
        """``createJob`` + ``loadJobTemplateAndSetJob``."""
        md = jf["metadata"]
        ns = md.get("namespace") or "default"
        if template is None:
            self.api.event(jf, "Warning", "FailedCreate", f"jobtemplate.flow.volcano.sh {flow!r} not found")
            return None
        marks = {CREATED_BY_JOBTEMPLATE: object_string(ns, flow), CREATED_BY_JOBFLOW: object_string(ns, md["name"])}
        job = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
               "metadata": {"name": jname, "namespace": ns, "labels": dict(marks), "annotations": dict(marks),
                            "ownerReferences": [{"apiVersion": FLOW_API_VERSION, "kind": "JobFlow", "name": md["name"],
                                                 "uid": md.get("uid", ""), "controller": True,
                                                 "blockOwnerDeletion": True}]},
               "spec": copy.deepcopy(template.get("spec") or {})}
        self.api.create(job)
        self.api.event(jf, "Normal", "Created", f"create a job named {jname}!")
        return self.api.get("Job", ns, jname) or job

    def _status(self, old: dict[str, Any], jobs: list[dict[str, Any]], now: datetime) -> dict[str, Any]:
        """``getAllJobStatus``."""
        lists: dict[str, list[str]] = {k: [] for k in _STATUS_LISTS.values()}
        unknown: list[str] = []
        conditions: dict[str, Any] = {}
        history = {s.get("name"): s for s in old.get("jobStatusList") or []}
        out_list = list(old.get("jobStatusList") or [])
        for j in sorted(jobs, key=lambda j: j["metadata"]["name"]):
            jname, phase = j["metadata"]["name"], job_phase(j)
            if phase in _STATUS_LISTS:
                lists[_STATUS_LISTS[phase]].append(jname)
            elif phase not in _KNOWN:
                unknown.append(jname)
            jst = j.get("status") or {}
            cond = {"phase": phase, "createTime": j["metadata"].get("creationTimestamp"),
                    "runningDuration": jst.get("runningDuration"), "taskStatusCount": jst.get("taskStatusCount")}
            conditions[jname] = {k: v for k, v in cond.items() if v not in (None, "")}
            runs = copy.deepcopy((history.get(jname) or {}).get("runningHistories") or [])
            if runs and runs[-1].get("state") != phase:
                runs[-1]["endTimestamp"] = fmt_time(now)
                runs.append({"startTimestamp": fmt_time(now), "state": phase})
            elif not runs and phase:
                runs.append({"startTimestamp": fmt_time(now), "state": phase})
            entry: dict[str, Any] = {"name": jname, "state": phase,
                                     "startTimestamp": j["metadata"].get("creationTimestamp"), "runningHistories": runs}
            end = end_timestamp(j["metadata"].get("creationTimestamp"), jst.get("runningDuration"))
            if end is not None:
                entry["endTimestamp"] = end
            if jst.get("retryCount"):
                entry["restartCount"] = int(jst["retryCount"])
            idx = next((i for i, s in enumerate(out_list) if s.get("name") == jname), None)
            if idx is None:
                out_list.append(entry)
            else:
                out_list[idx] = entry
        # Volcano's JobFlowStatus fields are ``omitempty``: an empty list is not written
        out = {**{k: v for k, v in lists.items() if v}, "unKnowJobs": unknown, "jobStatusList": out_list,
               "conditions": conditions, "state": old.get("state") or {}}
        return {k: v for k, v in out.items() if v or k == "state"}


def template_status(template: Mapping[str, Any], jobs: Iterable[dict[str, Any]]) -> dict[str, Any] | None:
    """``syncJobTemplate``: the JobTemplate's new status (the Jobs made from it), or None when nothing made one."""
    md = template["metadata"]
    mark = object_string(md.get("namespace") or "default", md["name"])
    names = sorted(j["metadata"]["name"] for j in jobs
                   if ((j.get("metadata") or {}).get("labels") or {}).get(CREATED_BY_JOBTEMPLATE) == mark)
    if not names:
        return None
    return {**(template.get("status") or {}), "jobDependsOnList": names}
