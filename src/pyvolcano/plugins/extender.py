"""extender (``pkg/scheduler/plugins/extender/extender.go``, ``argument.go``): hand scheduling questions to an
HTTP server, Volcano's scheduler-extender protocol.

Every configured verb is one extension point answered by ``POST <extender.urlPrefix>/<verb>`` with a JSON body
(``Content-Type: application/json``); a verb left unset registers nothing.  The bodies and answers are
``argument.go``'s:

=====================  ==========================  =================================  ==============================
argument               point                       request                            response
=====================  ==========================  =================================  ==============================
onSessionOpenVerb      session open                ``{Jobs, Nodes, Queues, ...}``     (not read)
onSessionCloseVerb     session close               ``{}``                             (not read)
predicateVerb          predicate                   ``{"task", "node"}``               ``{"status": msg, "code"}``
prioritizeVerb         batchNodeOrder              ``{"task", "nodes": [...]}``       ``{"nodeScore", "errorMessage"}``
preemptableVerb        preemptable                 ``{"evictor", "evictees"}``        ``{"status": vote, "victims"}``
reclaimableVerb        reclaimable                 ``{"evictor", "evictees"}``        ``{"status": vote, "victims"}``
jobEnqueueableVerb     jobEnqueueable              ``{"job"}``                        ``{"status": vote}``
jobEnqueuedVerb        jobEnqueued                 ``{"job"}``                        (not read)
queueOverusedVerb      overused                    ``{"queue"}``                      ``{"overused": bool}``
jobReadyVerb           jobReady                    ``{"job"}``                        ``{"status": bool}``
allocateFuncVerb       allocate event              ``{"task"}``                       ``{"errorMessage"}``
deallocateFuncVerb     deallocate event            ``{"task"}``                       ``{"errorMessage"}``
=====================  ==========================  =================================  ==============================

Tasks, nodes, jobs and queues are sent with the field names Go's ``encoding/json`` gives Volcano's ``api``
structs (``UID``, ``Name``, ``Namespace``, ``Resreq`` as ``{MilliCPU, Memory, ScalarResources, MaxTaskNum}``,
``Pod``/``Node``/``PodGroup`` as the Kubernetes objects, ...): the fields an extender reads, not every internal
one (docs/volcano-differences.md).  Victims in an answer are matched to the candidates by ``UID``.

A call fails when the server does not answer within ``extender.httpTimeout`` (default 1s), answers another
status than 200, or answers JSON that does not decode.  Then, as Volcano: with ``extender.ignorable: true`` a
predicate passes, a prioritize adds no score, preemptable/reclaimable/enqueueable permit (with no victims),
overused and jobReady say false; otherwise a predicate fails the node with the error (code ``Error``), a
prioritize failure leaves the candidate nodes of that gradient without a best node (``util.PrioritizeNodes``
returns no scores), preemptable/reclaimable reject, enqueueable rejects, overused and jobReady say true.  A
failed ``onSessionOpen`` that is not ignorable registers nothing: the plugin sits the session out.

pyvolcano adds one rule so a slow or dead extender never stalls a session beyond one timeout: once a call
fails without an HTTP answer (timeout, connection refused, unknown host), every later call of the session fails
at once with the same error, where Volcano waits the timeout again on every call.  Each distinct failure is
logged once per session as a warning naming the extender's URL and the error.

With ``extender.managedResources`` (a list of resource names), only tasks requesting (or limiting) one of them
in a container or init container are sent (``IsInterested``); the others pass, score nothing and abstain.
"""

from __future__ import annotations

import json
import logging
import socket
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from pyvolcano.api.job_info import JobInfo, TaskInfo
from pyvolcano.api.node_info import NodeInfo
from pyvolcano.api.queue_info import QueueInfo
from pyvolcano.api.resource import CPU, MEMORY, PODS, ResourceIndex
from pyvolcano.api.status import Code, Status
from pyvolcano.conf.arguments import Arguments
from pyvolcano.errors import ConfigError
from pyvolcano.framework.plugin import Plugin
from pyvolcano.framework.points import ABSTAIN, PERMIT, REJECT, BatchScoreError, Vote
from pyvolcano.framework.registry import register_plugin
from pyvolcano.framework.session import EventHandler, Session
from pyvolcano.framework.state import SessionState, warn

log = logging.getLogger(__name__)

URL_PREFIX = "extender.urlPrefix"
HTTP_TIMEOUT = "extender.httpTimeout"
IGNORABLE = "extender.ignorable"
MANAGED_RESOURCES = "extender.managedResources"
#: the verb arguments, by the name used below
VERBS = {
    "onSessionOpen": "extender.onSessionOpenVerb",
    "onSessionClose": "extender.onSessionCloseVerb",
    "predicate": "extender.predicateVerb",
    "prioritize": "extender.prioritizeVerb",
    "preemptable": "extender.preemptableVerb",
    "reclaimable": "extender.reclaimableVerb",
    "queueOverused": "extender.queueOverusedVerb",
    "jobEnqueueable": "extender.jobEnqueueableVerb",
    "jobEnqueued": "extender.jobEnqueuedVerb",
    "jobReady": "extender.jobReadyVerb",
    "allocateFunc": "extender.allocateFuncVerb",
    "deallocateFunc": "extender.deallocateFuncVerb",
}
#: Volcano's ``maxBodySize``: a longer answer is an error
MAX_BODY = 10 << 20
DEFAULT_TIMEOUT = 1.0


@dataclass(frozen=True)
class ExtenderConfig:
    """``parseExtenderConfig``: the URL prefix, the timeout, the verbs set, ``ignorable`` and the managed
    resources."""

    url_prefix: str
    timeout: float
    verbs: dict[str, str]
    ignorable: bool
    managed: frozenset[str]

    @classmethod
    def parse(cls, args: Arguments) -> ExtenderConfig:
        verbs: dict[str, str] = {}
        for name, key in VERBS.items():
            v = args.get(key)
            if v is None or v == "":
                continue
            if not isinstance(v, str):
                raise ConfigError(f"plugin extender: argument {key!r} = {v!r} is not a string")
            verbs[name] = v
        url = args.get_str(URL_PREFIX, "")
        if verbs and not url:
            raise ConfigError(f"plugin extender: argument {URL_PREFIX!r} is required when a verb is set "
                              f"(e.g. http://127.0.0.1:8888)")
        if url and not url.startswith(("http://", "https://")):
            raise ConfigError(f"plugin extender: argument {URL_PREFIX!r} = {url!r} is not an http:// or https:// URL")
        timeout = args.get_duration(HTTP_TIMEOUT, DEFAULT_TIMEOUT)
        assert timeout is not None
        if timeout <= 0:
            raise ConfigError(f"plugin extender: argument {HTTP_TIMEOUT!r} = {args[HTTP_TIMEOUT]!r} "
                              "must be a positive duration")
        raw = args.get(MANAGED_RESOURCES)
        if raw is None:
            managed: frozenset[str] = frozenset()
        elif isinstance(raw, list) and all(isinstance(x, str) for x in raw):
            managed = frozenset(raw)
        else:
            raise ConfigError(f"plugin extender: argument {MANAGED_RESOURCES!r} = {raw!r} is not a list of "
                              "resource names (e.g. [nvidia.com/gpu])")
        return cls(url, timeout, verbs, args.get_bool(IGNORABLE, False), managed)


class ExtenderError(Exception):
    """One failed call: the message names the extender's URL and the error."""

    def __init__(self, message: str, answered: bool) -> None:
        super().__init__(message)
        #: the server gave an HTTP answer (a bad status or body): later calls are still made
        self.answered = answered


class ExtenderClient:
    """``extenderPlugin.send``: one POST per call, JSON in and out, within the timeout."""

    def __init__(self, cfg: ExtenderConfig, state: SessionState | None = None) -> None:
        self.cfg = cfg
        #: the session's state, where failures are recorded (``SessionResult.warnings``)
        self.state = state
        #: the error of the first call that got no HTTP answer: every later call fails with it at once
        self.down: ExtenderError | None = None
        self._logged: set[str] = set()
        self.calls = 0

    def url(self, verb: str) -> str:
        return self.cfg.url_prefix.rstrip("/") + "/" + verb

    def send(self, verb: str, body: Any, want: bool = True) -> Any:
        """POST ``body`` to the verb; the decoded answer (a dict) when ``want``.  Raises ExtenderError."""
        if self.down is not None:
            raise self.down
        url = self.url(verb)
        data = json.dumps(body, separators=(",", ":"), default=_json_default).encode()
        req = urllib.request.Request(url, data=data, method="POST", headers={"Content-Type": "application/json"})
        self.calls += 1
        try:
            with urllib.request.urlopen(req, timeout=self.cfg.timeout) as resp:
                status = resp.status
                raw = resp.read(MAX_BODY + 1) if want and status == 200 else b""
        except urllib.error.HTTPError as exc:
            status = exc.code
            exc.close()
        except (urllib.error.URLError, TimeoutError, OSError, ValueError) as exc:
            reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
            if isinstance(reason, (TimeoutError, socket.timeout)):
                why = f"no answer within {self.cfg.timeout:g}s (extender.httpTimeout)"
            else:
                why = str(reason) or type(reason).__name__
            self.down = ExtenderError(f"extender {url}: {why}", answered=False)
            raise self.down from None
        if status != 200:  # Volcano's message
            raise ExtenderError(f"extender {url}: failed {verb} with extender at URL {url}, code {status}", True)
        if not want:
            return None
        if len(raw) > MAX_BODY:
            raise ExtenderError(f"extender {url}: answer longer than {MAX_BODY} bytes", True)
        try:
            out = json.loads(raw)
        except ValueError as exc:
            raise ExtenderError(f"extender {url}: answer is not JSON: {exc}", True) from None
        if not isinstance(out, dict):
            raise ExtenderError(f"extender {url}: answer is not a JSON object", True)
        return out

    def warn(self, point: str, err: ExtenderError) -> None:
        """Volcano's ``klog.Warningf("<Point> failed with error %v")``, once per distinct failure and session: a
        session warning (``cycle`` prints it, the simulator lists it among its problems, the Kubernetes scheduler
        logs it when it appears), or a log warning without a session."""
        msg = f"extender: {point} failed: {err}"
        if msg not in self._logged:
            self._logged.add(msg)
            if self.state is not None:
                warn(self.state, msg)
            else:
                log.warning("%s", msg)


def _json_default(o: Any) -> Any:
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    return str(o)


# --- Go's encoding/json view of Volcano's api structs ------------------------------------------------------------
def go_resource(v: np.ndarray, res: ResourceIndex, max_tasks: bool = False) -> dict[str, Any]:
    """``api.Resource``: MilliCPU, Memory (bytes), ScalarResources (milli-units, and ``pods`` as a count), and
    MaxTaskNum (the pod count, set on a node's allocatable and capacity only, as Volcano's NodeInfo does)."""
    scalars = {n: float(v[i]) for i, n in enumerate(res.names) if n not in (CPU, MEMORY) and v[i] != 0}
    pods = float(v[res.pos[PODS]])
    return {"MilliCPU": float(v[res.pos[CPU]]), "Memory": float(v[res.pos[MEMORY]]),
            "ScalarResources": scalars or None,
            "MaxTaskNum": int(pods) if max_tasks and np.isfinite(pods) else 0}


def go_task(t: TaskInfo, res: ResourceIndex, pod: bool = True) -> dict[str, Any]:
    """``api.TaskInfo`` (with its embedded ``TransactionContext``)."""
    out: dict[str, Any] = {
        "UID": t.uid, "Job": t.job, "Name": t.name, "Namespace": t.namespace, "TaskRole": t.task_spec,
        "Resreq": go_resource(t.resreq, res), "InitResreq": go_resource(t.init_resreq, res),
        "NodeName": t.node_name, "Status": int(t.status), "Priority": t.priority,
        "Preemptable": t.preemptable, "BestEffort": t.best_effort, "SchGated": t.sch_gated,
        "RevocableZone": ((t.pod.get("metadata") or {}).get("annotations") or {}).get("volcano.sh/revocable-zone", ""),
    }
    if pod:
        out["Pod"] = t.pod
    return out


def go_node(n: NodeInfo, res: ResourceIndex) -> dict[str, Any]:
    """``api.NodeInfo``: the Node object, its resource sums and its tasks (by UID, without their pods)."""
    return {
        "Name": n.name, "Node": n.node,
        "Idle": go_resource(n.idle, res), "Used": go_resource(n.used, res),
        "Releasing": go_resource(n.releasing, res), "Pipelined": go_resource(n.pipelined, res),
        "Allocatable": go_resource(n.allocatable, res, True), "Capacity": go_resource(n.capability, res, True),
        "RevocableZone": n.labels.get("volcano.sh/revocable-zone", ""),
        "Tasks": {uid: go_task(t, res, pod=False) for uid, t in n.tasks.items()},
    }


def go_job(j: JobInfo, res: ResourceIndex) -> dict[str, Any]:
    """``api.JobInfo``: identity, queue, gang sizes, PodGroup, request sums and tasks (without their pods)."""
    pg = j.podgroup
    return {
        "UID": j.uid, "Name": j.name, "Namespace": j.namespace, "Queue": j.queue, "Priority": j.priority,
        "MinAvailable": j.min_available, "TaskMinAvailable": j.task_min_available or None,
        "PodGroup": pg.manifest if pg is not None and hasattr(pg, "manifest") else None,
        "Allocated": go_resource(j.allocated, res), "TotalRequest": go_resource(j.total_request, res),
        "Preemptable": j.preemptable,
        "Tasks": {uid: go_task(t, res, pod=False) for uid, t in j.tasks.items()},
    }


def go_queue(q: QueueInfo) -> dict[str, Any]:
    """``api.QueueInfo``: UID, Name, Weight and the Queue object."""
    return {"UID": q.name, "Name": q.name, "Weight": q.weight, "Hierarchy": q.hierarchy, "Weights": q.weights,
            "Queue": q.manifest or None}


def _names(resources: Any) -> Iterable[str]:
    return resources.keys() if isinstance(resources, dict) else ()


def interested(managed: frozenset[str], task: TaskInfo) -> bool:
    """``IsInterested``: no managed resources, or a container or init container requesting or limiting one."""
    if not managed:
        return True
    spec = task.pod.get("spec") or {}
    for c in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]:
        r = (c or {}).get("resources") or {}
        if any(n in managed for n in _names(r.get("requests"))) or any(n in managed for n in _names(r.get("limits"))):
            return True
    return False


def _vote(v: Any) -> Vote:
    """The answer's ``status`` as Volcano's int vote (any other integer keeps its sign; Go decodes ints)."""
    try:
        i = int(v)
    except (TypeError, ValueError):
        return ABSTAIN
    return PERMIT if i > 0 else REJECT if i < 0 else ABSTAIN


@register_plugin
class Extender(Plugin):
    name = "extender"

    def on_session_open(self, ssn: Session) -> None:
        """Volcano's ``OnSessionOpen`` of ``plugins/extender/extender.go``: tell the extender the session opened,
        then register one callback per configured verb."""
        cfg = ExtenderConfig.parse(self.arguments)
        client = self.client = ExtenderClient(cfg, ssn.state)
        verbs = cfg.verbs
        if "onSessionOpen" in verbs:
            res = ssn.res
            body = {"Jobs": {u: go_job(j, res) for u, j in ssn.jobs.items()},
                    "Nodes": {v.name: go_node(v, res) for v in ssn.nodes.views},
                    "Queues": {q.name: go_queue(q) for q in ssn.queues.values()},
                    "NamespaceInfo": {}, "RevocableNodes": {}, "NodeList": None}
            try:
                client.send(verbs["onSessionOpen"], body, want=False)
            except ExtenderError as err:
                client.warn("OnSessionOpen", err)
                if not cfg.ignorable:
                    return
        hooks = _Hooks(client, cfg, ssn.res, self.name)
        if "predicate" in verbs:
            ssn.add_predicate_fn(self.name, hooks.predicate)
        if "prioritize" in verbs:
            ssn.add_batch_node_order_fn(self.name, hooks.prioritize)
        if "preemptable" in verbs:
            ssn.add_preemptable_fn(self.name, hooks.evictable("Preemptable", verbs["preemptable"]))
        if "reclaimable" in verbs:
            ssn.add_reclaimable_fn(self.name, hooks.evictable("Reclaimable", verbs["reclaimable"]))
        if "jobEnqueueable" in verbs:
            ssn.add_job_enqueueable_fn(self.name, hooks.enqueueable)
        if "jobEnqueued" in verbs:
            ssn.add_job_enqueued_fn(self.name, hooks.enqueued)
        if "queueOverused" in verbs:
            ssn.add_overused_fn(self.name, hooks.overused)
        if "jobReady" in verbs:
            ssn.add_job_ready_fn(self.name, hooks.ready)
        if "allocateFunc" in verbs or "deallocateFunc" in verbs:
            ssn.add_event_handler(EventHandler(
                allocate=hooks.event("AllocateFunc", verbs["allocateFunc"]) if "allocateFunc" in verbs else None,
                deallocate=(hooks.event("DeallocateFunc", verbs["deallocateFunc"]) if "deallocateFunc" in verbs
                            else None)))

    def on_session_close(self, ssn: Session) -> None:
        client: ExtenderClient | None = getattr(self, "client", None)
        if client is None or "onSessionClose" not in client.cfg.verbs:
            return
        try:
            client.send(client.cfg.verbs["onSessionClose"], {}, want=False)
        except ExtenderError as err:
            client.warn("OnSessionClose", err)


class _Hooks:
    """The session's callbacks for one extender (Volcano's ``extender.go``: one HTTP call per callback); a failed
    call is logged once per session (``ExtenderClient.warn``) and answered as ``ignorable`` says."""

    def __init__(self, client: ExtenderClient, cfg: ExtenderConfig, res: ResourceIndex, name: str) -> None:
        self.client, self.cfg, self.res, self.name = client, cfg, res, name
        self.verbs, self.managed = cfg.verbs, cfg.managed

    def predicate(self, task: TaskInfo, node: NodeInfo) -> Status | None:
        if not interested(self.managed, task):
            return None
        try:
            resp = self.client.send(self.verbs["predicate"], {"task": go_task(task, self.res),
                                                              "node": go_node(node, self.res)})
        except ExtenderError as err:
            self.client.warn("Predicate", err)
            return None if self.cfg.ignorable else Status(Code.ERROR, (str(err),), self.name)
        msg = resp.get("status") or ""
        if not msg:
            return None
        try:
            code = Code(int(resp.get("code") or 0))
        except (TypeError, ValueError):
            code = Code.ERROR
        # an error message with code 0 (Success) is an Error, for extenders written before "code" existed
        return Status(Code.ERROR if code == Code.SUCCESS else code, (str(msg),), self.name)

    def prioritize(self, task: TaskInfo, nodes: list[NodeInfo]) -> dict[str, float]:
        if not interested(self.managed, task):
            return {}
        verb = self.verbs["prioritize"]
        try:
            resp = self.client.send(verb, {"task": go_task(task, self.res),
                                           "nodes": [go_node(n, self.res) for n in nodes]})
        except ExtenderError as err:
            self.client.warn("Prioritize", err)
            if self.cfg.ignorable:
                return {}
            raise BatchScoreError(str(err)) from None
        scores = resp.get("nodeScore")
        if not resp.get("errorMessage") and isinstance(scores, dict):
            try:
                return {str(k): float(v) for k, v in scores.items()}
            except (TypeError, ValueError):
                pass
        bad = ExtenderError(f"extender {self.client.url(verb)}: "
                            f"{resp.get('errorMessage') or 'no nodeScore in the answer'}", True)
        self.client.warn("Prioritize", bad)
        raise BatchScoreError(str(bad))

    def evictable(self, point: str, verb: str) -> Callable[[TaskInfo, list[TaskInfo]], tuple[list[TaskInfo], Vote]]:
        def fn(evictor: TaskInfo, evictees: list[TaskInfo]) -> tuple[list[TaskInfo], Vote]:
            if not interested(self.managed, evictor):
                return [], ABSTAIN
            try:
                resp = self.client.send(verb, {"evictor": go_task(evictor, self.res),
                                               "evictees": [go_task(t, self.res) for t in evictees]})
            except ExtenderError as err:
                self.client.warn(point, err)
                return [], PERMIT if self.cfg.ignorable else REJECT
            by_uid = {t.uid: t for t in evictees}
            victims = [by_uid[v["UID"]] for v in resp.get("victims") or []
                       if isinstance(v, dict) and v.get("UID") in by_uid]
            return victims, _vote(resp.get("status"))
        return fn

    def enqueueable(self, job: JobInfo) -> Vote:
        try:
            resp = self.client.send(self.verbs["jobEnqueueable"], {"job": go_job(job, self.res)})
        except ExtenderError as err:
            self.client.warn("JobEnqueueable", err)
            return PERMIT if self.cfg.ignorable else REJECT
        return _vote(resp.get("status"))

    def enqueued(self, job: JobInfo) -> None:
        try:
            self.client.send(self.verbs["jobEnqueued"], {"job": go_job(job, self.res)})
        except ExtenderError as err:
            self.client.warn("JobEnqueued", err)

    def overused(self, queue: QueueInfo) -> bool:
        try:
            resp = self.client.send(self.verbs["queueOverused"], {"queue": go_queue(queue)})
        except ExtenderError as err:
            self.client.warn("QueueOverused", err)
            return not self.cfg.ignorable
        return bool(resp.get("overused"))

    def ready(self, job: JobInfo) -> bool:
        try:
            resp = self.client.send(self.verbs["jobReady"], {"job": go_job(job, self.res)})
        except ExtenderError as err:
            self.client.warn("JobReady", err)
            return not self.cfg.ignorable
        return bool(resp.get("status"))

    def event(self, point: str, verb: str) -> Callable[[TaskInfo], None]:
        def fn(task: TaskInfo) -> None:
            # Volcano stores a failure in the event's Err, which the session never reads: only logged here
            if not interested(self.managed, task):
                return
            try:
                self.client.send(verb, {"task": go_task(task, self.res)})
            except ExtenderError as err:
                self.client.warn(point, err)
        return fn
