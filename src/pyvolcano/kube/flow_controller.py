"""The CronJob, JobFlow and JobTemplate controllers on a real cluster (``controllers/cronjob.py`` and
``controllers/jobflow.py``, shared with the simulator, behind ``KubeClusterAPI``).

Informers on CronJobs, JobFlows, JobTemplates and Volcano Jobs feed one worker thread: a change to any of them
(or to a Job one of them owns: CronJob owner reference, ``volcano.sh/createdByJobFlow`` /
``createdByJobTemplate`` labels) queues a sync of its owner, and each CronJob is synced again when its next
schedule is due (the duration ``sync`` returns), as Volcano's controllers requeue after
``nextScheduleTimeDuration``.  A sync that fails (an API error, a Job the webhook refuses) is logged and
retried on the next change or tick; it never stops the worker.
"""

from __future__ import annotations

import heapq
import logging
import queue
import threading
import time
from datetime import UTC, datetime
from typing import Any

from pyvolcano.controllers.cronjob import CronJobController
from pyvolcano.controllers.jobflow import CREATED_BY_JOBFLOW, CREATED_BY_JOBTEMPLATE, JobFlowController, template_status
from pyvolcano.kube.cluster_api import KubeClusterAPI
from pyvolcano.kube.objects import key_of
from pyvolcano.kube.reflector import Reflector
from pyvolcano.kube.resources import CRONJOB, JOBFLOW, JOBTEMPLATE, VCJOB
from pyvolcano.kube.writer import EventRecorder

log = logging.getLogger(__name__)

#: Volcano's controller names (``Name()`` in pkg/controllers/cronjob, jobflow, jobtemplate)
NAMES = ("cronjob-controller", "jobflow-controller", "jobtemplate-controller")
#: how often every CronJob is synced even without a change (a missed timer, a clock step)
RESYNC = 60.0


class FlowControllers:
    def __init__(self, api: Any, recorder: EventRecorder, enabled: set[str] | None = None) -> None:
        self.api = api
        self.enabled = set(NAMES) if enabled is None else enabled & set(NAMES)
        self.capi = KubeClusterAPI(api, recorder)
        self.cron = CronJobController(self.capi)
        self.flow = JobFlowController(self.capi)
        self.work: queue.Queue[tuple[str, str] | None] = queue.Queue()
        self.timers: list[tuple[float, str]] = []
        #: each CronJob's pending timer
        self.due: dict[str, float] = {}
        self.lock = threading.Lock()
        self._stop = threading.Event()
        self._worker: threading.Thread | None = None
        self.syncs = 0

        def feed(kind: str) -> Any:
            return lambda typ, obj: self._changed(kind, typ, obj)

        self.jobs = Reflector(api, VCJOB, feed("Job"))
        self.reflectors = [self.jobs]
        self.cronjobs = self.flows = self.templates = None
        if "cronjob-controller" in self.enabled:
            self.cronjobs = Reflector(api, CRONJOB, feed("CronJob"), optional=True)
            self.reflectors.append(self.cronjobs)
        if "jobflow-controller" in self.enabled:
            self.flows = Reflector(api, JOBFLOW, feed("JobFlow"), optional=True)
            self.reflectors.append(self.flows)
        if "jobflow-controller" in self.enabled or "jobtemplate-controller" in self.enabled:
            self.templates = Reflector(api, JOBTEMPLATE, feed("JobTemplate"), optional=True)
            self.reflectors.append(self.templates)

    # --- lifecycle ---------------------------------------------------------------------------------------
    def start(self, timeout: float | None = None) -> bool:
        for r in self.reflectors:
            r.start()
        ok = all(r.synced.wait(timeout) for r in self.reflectors)
        self._worker = threading.Thread(target=self._loop, name="flow-controllers", daemon=True)
        self._worker.start()
        return ok

    def stop(self) -> None:
        self._stop.set()
        self.work.put(None)
        for r in self.reflectors:
            r.stop()
        if self._worker is not None:
            self._worker.join(5)

    @property
    def alive(self) -> bool:
        return self._worker is not None and self._worker.is_alive() and all(r.alive for r in self.reflectors)

    # --- events ------------------------------------------------------------------------------------------
    def _changed(self, kind: str, typ: str, obj: dict[str, Any]) -> None:
        md = obj.get("metadata") or {}
        ns = md.get("namespace") or "default"
        if kind != "Job":
            if typ != "DELETED":
                self.work.put((kind, key_of(obj)))
            return
        for o in md.get("ownerReferences") or []:
            if o.get("controller") and o.get("kind") == "CronJob":
                self.work.put(("CronJob", f"{ns}/{o.get('name')}"))
        labels = md.get("labels") or {}
        for label, kind_ in ((CREATED_BY_JOBFLOW, "JobFlow"), (CREATED_BY_JOBTEMPLATE, "JobTemplate")):
            mark = labels.get(label)
            if mark and mark.startswith(f"{ns}."):
                self.work.put((kind_, f"{ns}/{mark[len(ns) + 1:]}"))

    def _loop(self) -> None:
        next_resync = time.monotonic() + RESYNC
        for key in list(self.cronjobs.store) if self.cronjobs else []:
            self.work.put(("CronJob", key))
        while not self._stop.is_set():
            with self.lock:
                due = self.timers[0][0] if self.timers else next_resync
            try:
                item = self.work.get(timeout=max(0.0, min(due, next_resync) - time.monotonic()))
            except queue.Empty:
                item = ("", "")
            if item is None:
                return
            now = time.monotonic()
            todo = [item] if item[0] else []
            with self.lock:
                while self.timers and self.timers[0][0] <= now:
                    due, key = heapq.heappop(self.timers)
                    if self.due.get(key) == due:  # else superseded by an earlier timer
                        del self.due[key]
                        todo.append(("CronJob", key))
            if now >= next_resync:
                next_resync = now + RESYNC
                todo += [("CronJob", k) for k in (self.cronjobs.store if self.cronjobs else {})]
            for kind, key in dict.fromkeys(todo):
                try:
                    self._sync(kind, key)
                except Exception:  # one bad object must not stop the controllers
                    log.exception("sync of %s %s failed", kind, key)
                self.syncs += 1

    def _namespace_jobs(self, ns: str) -> list[dict[str, Any]]:
        return [j for j in list(self.jobs.store.values()) if (j["metadata"].get("namespace") or "default") == ns]

    def _sync(self, kind: str, key: str) -> None:
        ns = key.split("/", 1)[0]
        if kind == "CronJob" and self.cronjobs is not None:
            cj = self.cronjobs.store.get(key)
            if cj is None:
                return
            uid = cj["metadata"].get("uid")
            owned = [j for j in self._namespace_jobs(ns)
                     if any(o.get("controller") and o.get("kind") == "CronJob" and o.get("uid") == uid
                            for o in j["metadata"].get("ownerReferences") or [])]
            wait = self.cron.sync(cj, owned, datetime.now(UTC))
            if wait is not None:
                due = time.monotonic() + wait
                with self.lock:  # one timer per CronJob: a sync on a Job change does not add another
                    if self.due.get(key, float("inf")) > due:
                        self.due[key] = due
                        heapq.heappush(self.timers, (due, key))
        elif kind == "JobFlow" and self.flows is not None:
            jf = self.flows.store.get(key)
            if jf is None:
                return
            templates = {t["metadata"]["name"]: t for t in list((self.templates.store if self.templates else
                                                                  {}).values())
                         if (t["metadata"].get("namespace") or "default") == ns}
            self.flow.sync(jf, self._namespace_jobs(ns), templates, datetime.now(UTC))
        elif kind == "JobTemplate" and self.templates is not None and "jobtemplate-controller" in self.enabled:
            t = self.templates.store.get(key)
            if t is None:
                return
            status = template_status(t, self._namespace_jobs(ns))
            if status is not None and status != t.get("status"):
                self.capi.update_status("JobTemplate", ns, t["metadata"]["name"], status)
