"""When will a pending job start: the simulator run forward from a snapshot, many times over.

``forecast`` starts a :class:`ForecastSim` (the discrete-event ``Simulator`` with its real scheduler, Volcano's job
controller and kubelet) from a snapshot's objects: nodes, queues, priority classes and HyperNodes as they are;
running pods keep their node and run for their remaining time; pending pods and PodGroups enter as they are; Volcano
Jobs whose pods are not created yet are handed to the job controller, which creates them once the scheduler admits
their PodGroup.  The first time at which at least ``minMember`` pods of a pending PodGroup run is its predicted start
(``JobRecord.all_started``, where the simulator's wait metric ends).

How long a pod runs is read from its ``pyvolcano.io/duration`` annotation (seconds; a running pod has run for
``now - status.startTime`` of it) and otherwise drawn from what the snapshot shows (:class:`Durations`): the
Kaplan-Meier estimate (:class:`Survival`) over the finished jobs of the same queue (``status.startTime`` to the last
container's ``finishedAt``; a gang's pods that started and ended together count once) with its running jobs' ages as
"at least this long", pooled with the estimate over every queue by the queue's number of ends (``POOL_PRIOR``; a
queue without an end uses every queue's); with no finished pod at all, twice the ages of the running pods (a pod
seen running at a random moment is on average half way through: the renewal-theory estimate); with nothing at all,
``DEFAULT_DURATION``.  A running pod's remaining time is a duration drawn given its age, minus its age.  One duration
is drawn per job (per job and start time for running pods): a gang's pods do the same work and end together.  Each
run draws from a bootstrap resample of the jobs seen (:meth:`Durations.resampled`), so the range also carries the
uncertainty of the estimate.

By default (``arrivals="mixed"``) half the runs draw no new job (the start if nothing new arrives) and half draw new
jobs like the seen ones (:class:`Arrivals`: copies of a random seen job of the queue, as a Poisson stream) at the
rate of the ``RECENT`` latest submissions, so the range covers both and the median sits between: a forecast cannot
know whether the recent rate goes on, and either model alone measured worse on one of the two benchmark cases
(docs/forecast.md).  ``"none"``, ``"recent"``, ``"all"`` (every seen job, at the rate over the whole time the
snapshot covers) and ``"higher"`` (each priority level of pending jobs gets runs of its own that draw the seen jobs
of a higher priority only) use one model in every run; new jobs need at least ``MIN_SEEN`` jobs seen.

Durations and new jobs are drawn again in each of ``runs`` simulations (seeded per run, so a forecast is
reproducible); a job's predicted start is the median over the runs and its 90 % range the 5th to 95th percentile.
When nothing was drawn (every duration annotated, no new jobs), one run is exact and the range is a point.

``RecordingSim`` and :func:`export` turn a simulation part-way into such a snapshot (pod start times, finished pods
with their container times), and :func:`measure` checks the forecast against what the same run did next.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np

from pyvolcano.api.convert import parse_time
from pyvolcano.api.types import GROUP_NAME_ANNOTATION, JOB_NAME_ANNOTATION, TASK_SPEC_ANNOTATION
from pyvolcano.conf.loader import SchedulerConf
from pyvolcano.controllers.vcjob import ENDED, FINAL, JobState
from pyvolcano.errors import UserError
from pyvolcano.sim.engine import Arrive, JobRecord, PodFinish, PodRunning, Simulator
from pyvolcano.sim.workload import DURATION, Workload

#: seconds a pod is taken to run when the snapshot shows nothing to estimate from (no annotation, no finished or
#: running pod)
DEFAULT_DURATION = 3600.0
#: how far ahead a forecast simulates (seconds): a job not started by then has no predicted start
DEFAULT_HORIZON = 30 * 86400.0
#: PodGroup phases of a job still waiting to start
_WAITING = ("", "Pending", "Inqueue")
_CLUSTER_KINDS = ("Node", "Queue", "PriorityClass", "HyperNode", "Numatopology")


def stamp(t: float) -> str:
    """``t`` (seconds since the epoch) as an RFC 3339 time, to the second."""
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _time(v: Any) -> float | None:
    if v in (None, ""):
        return None
    try:
        return parse_time(v)
    except (ValueError, TypeError):
        return None


def _md(obj: dict[str, Any]) -> dict[str, Any]:
    md = obj.get("metadata")
    return md if isinstance(md, dict) else {}


def _key(obj: dict[str, Any]) -> str:
    md = _md(obj)
    return f"{md.get('namespace') or 'default'}/{md.get('name')}"


def group_of(pod: dict[str, Any]) -> str:
    """The job a pod belongs to, as ``namespace/name``: its vcjob (the ``volcano.sh/job-name`` label, which is also
    its PodGroup's name here), else its PodGroup (``scheduling.k8s.io/group-name``), else the pod itself (Volcano
    gives a pod without a group a PodGroup of its own: ``cache/event_handlers.go: createShadowPodGroup``)."""
    md = _md(pod)
    ns = md.get("namespace") or "default"
    group = (md.get("labels") or {}).get(JOB_NAME_ANNOTATION) or (md.get("annotations") or {}).get(
        GROUP_NAME_ANNOTATION)
    return f"{ns}/{group or md.get('name')}"


def _phase(obj: dict[str, Any]) -> str:
    st = obj.get("status")
    return str((st or {}).get("phase") or "") if isinstance(st, dict) else ""


def _annotated(pod: dict[str, Any]) -> float | None:
    v = (_md(pod).get("annotations") or {}).get(DURATION)
    try:
        d = float(v) if v is not None else None
    except (TypeError, ValueError):
        return None
    return d if d is not None and math.isfinite(d) and d >= 0 else None


def started_at(pod: dict[str, Any]) -> float | None:
    """When a pod started running: ``status.startTime``, else its PodScheduled condition's time."""
    st = pod.get("status") or {}
    t = _time(st.get("startTime"))
    if t is None:
        for c in st.get("conditions") or ():
            if isinstance(c, dict) and c.get("type") == "PodScheduled" and c.get("status") == "True":
                t = _time(c.get("lastTransitionTime"))
    return t


def finished_at(pod: dict[str, Any]) -> float | None:
    """When a finished pod's last container ended (``containerStatuses[].state.terminated.finishedAt``)."""
    ends = [_time(((cs.get("state") or {}).get("terminated") or {}).get("finishedAt"))
            for cs in (pod.get("status") or {}).get("containerStatuses") or () if isinstance(cs, dict)]
    known = [t for t in ends if t is not None]
    return max(known) if known else None


class Survival:
    """How long pods run, as the Kaplan-Meier estimate over finished pods' run times (observed ends) and running
    pods' ages (ends not seen yet: censored).  Counting only the finished ones would favour short pods, as the long
    ones of the same period are still running; the running ones count as "at least this long".  Past the last end
    seen, the rest of the probability is an exponential tail: that end (or the age asked about, if later) plus an
    exponential draw with the censored-data mean (all seconds seen run, finished or not, over the ends seen)."""

    def __init__(self, done: Iterable[float], alive: Iterable[float]) -> None:
        d = np.sort(np.array(list(done), dtype=float))
        c = np.sort(np.array(list(alive), dtype=float))
        ts, ss, surv = [], [], 1.0
        for t in np.unique(d):
            at_risk = (len(d) - np.searchsorted(d, t, "left")) + (len(c) - np.searchsorted(c, t, "left"))
            ended = np.searchsorted(d, t, "right") - np.searchsorted(d, t, "left")
            surv *= 1.0 - ended / at_risk
            ts.append(float(t))
            ss.append(surv)
        self.t, self.s = np.array(ts), np.array(ss)
        self.longest = float(max(d[-1] if len(d) else 0.0, c[-1] if len(c) else 0.0))
        self.ended = len(d)
        #: the mean run time if run times were exponential: every second seen run, over the ends seen (the
        #: estimate for censored data), for the tail past the last end seen
        self.mean = float((d.sum() + c.sum()) / len(d)) if len(d) else self.longest

    def survival(self, age: float) -> float:
        """The Kaplan-Meier survival at ``age`` (flat past the last end seen: what :meth:`draw` splits)."""
        i = int(np.searchsorted(self.t, age, "right"))
        return float(self.s[i - 1]) if i else 1.0

    def survival_with_tail(self, age: float) -> float:
        """The survival at ``age`` with the exponential tail past the last end seen: the chance, under this estimate,
        that a run lasts beyond ``age`` (how :class:`Durations` weighs two estimates given a pod's age)."""
        last = float(self.t[-1]) if len(self.t) else 0.0
        s = self.survival(age)
        return s * math.exp(-(age - last) / max(self.mean, 1.0)) if age > last else s

    def draw(self, rng: np.random.Generator, age: float = 0.0) -> float:
        """A run time, given that the pod has run ``age`` seconds already."""
        u = float(rng.uniform(0.0, self.survival(age)))
        i = int(np.searchsorted(-self.s, -u, "left"))  # the first end time at which survival has fallen to u
        if i < len(self.t):
            return max(float(self.t[i]), age)
        base = max(float(self.t[-1]) if len(self.t) else 0.0, age)
        return base + float(rng.exponential(max(self.mean, 1.0)))


#: partial pooling of the duration estimates: a queue's own estimate weighs its ends over its ends plus this many,
#: the estimate over every queue the rest (a queue with a few ends says little past them, and all queues' pods run
#: on the same cluster)
POOL_PRIOR = 20


class Durations:
    """How long pods run, estimated from a snapshot (the module docstring gives the rule): per queue, the finished
    jobs' run times and the running jobs' ages.  ``notes`` says what each queue's estimate rests on."""

    def __init__(self, finished: dict[str, list[float]], ages: dict[str, list[float]],
                 default: float = DEFAULT_DURATION, origin: Durations | None = None,
                 pool_prior: float = POOL_PRIOR) -> None:
        self.pool_prior = pool_prior
        self.finished = {q: list(v) for q, v in finished.items() if v}
        self.ages = {q: [a for a in v if a > 0] for q, v in ages.items()}
        every_age = [a for v in self.ages.values() for a in v]
        self.all = Survival([d for v in self.finished.values() for d in v], every_age)
        self.per_queue = {q: Survival(v, self.ages.get(q, [])) for q, v in self.finished.items()}
        self.running_only = np.array(sorted(every_age))
        self.default = default
        #: the estimate this one was resampled from: its notes are shared and its counts told
        self.origin = origin if origin is not None else self
        self.notes: list[str] = origin.notes if origin is not None else []
        self._told: set[str] = origin._told if origin is not None else set()

    def resampled(self, rng: np.random.Generator) -> Durations:
        """The same estimate from a bootstrap resample of each queue's jobs (finished and running drawn together,
        with replacement, as many as seen): one run's durations then carry the uncertainty of the estimate itself
        (a few dozen ends say little about the tail), not only the spread of run times around it.  A queue whose
        resample holds no end keeps its jobs as seen (its estimate would otherwise fall back to other queues'); the
        notes are shared with this one."""
        finished: dict[str, list[float]] = {}
        ages: dict[str, list[float]] = {}
        for q in sorted(set(self.finished) | set(self.ages)):  # sorted: the draws do not follow hash order
            done, alive = self.finished.get(q, []), self.ages.get(q, [])
            n = len(done) + len(alive)
            if not n:
                continue
            pick = rng.integers(n, size=n)
            finished[q] = [done[i] for i in pick if i < len(done)]
            ages[q] = [alive[i - len(done)] for i in pick if i >= len(done)]
            if done and not finished[q]:
                finished[q], ages[q] = list(done), list(alive)
        return Durations(finished, ages, self.default, self.origin, self.pool_prior)

    def _tell(self, key: str, note: str) -> None:
        if key not in self._told:
            self._told.add(key)
            self.notes.append(note)

    def draw(self, queue: str, age: float, rng: np.random.Generator) -> float:
        """A run time of a pod of ``queue`` that has run ``age`` seconds: from the mixture of the queue's estimate
        (weight ``w`` = its ends / (its ends + ``POOL_PRIOR``)) and the estimate over every queue (``1 - w``), given
        the age: the queue's part is taken with chance ``w S_q(age) / (w S_q(age) + (1 - w) S_all(age))``."""
        own = self.per_queue.get(queue)
        if own is not None:
            if len(self.per_queue) > 1 and self.pool_prior > 0:
                w = own.ended / (own.ended + self.pool_prior)
                mine, other = w * own.survival_with_tail(age), (1 - w) * self.all.survival_with_tail(age)
                if mine + other > 0 and float(rng.uniform()) * (mine + other) >= mine:
                    return self.all.draw(rng, age)
            return own.draw(rng, age)
        if self.all.ended:
            self._tell(queue, f"queue {queue}: no finished pod; durations drawn from all queues' "
                              f"{self.origin.all.ended} finished jobs")
            return self.all.draw(rng, age)
        if len(self.running_only):
            self._tell("", f"no finished pod in the snapshot: durations drawn as twice the ages of the "
                           f"{len(self.origin.running_only)} running job(s)")
            longer = self.running_only[self.running_only * 2 > age]
            if len(longer):
                return max(2 * float(longer[rng.integers(len(longer))]), age)
            return age * (1.0 + float(rng.exponential(1.0)))
        self._tell("", f"no finished or running pod to estimate durations from: pods without a {DURATION} "
                       f"annotation are taken to run {self.default:g} s")
        return max(self.default, age)

    def total(self, queue: str, rng: np.random.Generator) -> float:
        return self.draw(queue, 0.0, rng)

    def remaining(self, queue: str, age: float, rng: np.random.Generator) -> float:
        return self.draw(queue, age, rng) - age


def durations_of(objects: Iterable[dict[str, Any]], now: float, default: float = DEFAULT_DURATION,
                 pool_prior: float = POOL_PRIOR) -> Durations:
    """The finished jobs' run times and the running jobs' ages per queue in ``objects`` at ``now``.  The unit is a
    job's pods that started (and ended) together: a gang's pods end together, and counting each pod would weigh a
    job of 8 pods as 8 observations of one run time."""
    objs = list(objects)
    queue_of_group = {_key(o): str((o.get("spec") or {}).get("queue") or "default")
                      for o in objs if o.get("kind") == "PodGroup"}
    finished: dict[str, list[float]] = {}
    ages: dict[str, list[float]] = {}
    seen: set[tuple[Any, ...]] = set()
    for p in objs:
        if p.get("kind") != "Pod":
            continue
        q = pod_queue(p, queue_of_group)
        if _phase(p) == "Succeeded":
            d = _annotated(p)
            s = started_at(p)
            if d is None:
                e = finished_at(p)
                d = e - s if s is not None and e is not None and e >= s else None
            done = ("done", group_of(p), round(s) if s is not None else _key(p), round(d or 0.0))
            if d is not None and done not in seen:
                seen.add(done)
                finished.setdefault(q, []).append(d)
        elif _phase(p) == "Running" and not _md(p).get("deletionTimestamp"):
            s = started_at(p)
            run = ("run", group_of(p), round(s or 0.0))
            if s is not None and run not in seen:
                seen.add(run)
                ages.setdefault(q, []).append(max(now - s, 0.0))
    return Durations(finished, ages, default, pool_prior=pool_prior)


def pod_queue(pod: dict[str, Any], queue_of_group: dict[str, str]) -> str:
    q = queue_of_group.get(group_of(pod))
    return q or str((_md(pod).get("annotations") or {}).get("volcano.sh/queue-name") or "default")


class ForecastSim(Simulator):
    """The simulator over a snapshot's jobs: a pod's job is :func:`group_of` (snapshot pods need not come from the
    job controller), and a pod that starts without a duration annotation gets one drawn from ``durations``."""

    def __init__(self, nodes: list[dict[str, Any]], queues: list[dict[str, Any]], conf: SchedulerConf,
                 durations: Durations, rng: np.random.Generator, queue_of_group: dict[str, str], **kw: Any) -> None:
        self.durations = durations
        self.rng = rng
        self.queue_of_group = queue_of_group
        #: durations drawn in this run (none: the run is exact)
        self.drawn = 0
        #: the PodGroups whose start is forecast and that have not started yet (the run stops when none is left)
        self.waiting: set[str] = set()
        #: new jobs drawn as the run goes (``push_arrival``), and how many so far
        self.future: Arrivals | None = None
        #: the duration drawn for each job's pods (a gang's pods run as long as each other)
        self.job_duration: dict[str, float] = {}
        self.arrived = 0
        super().__init__(nodes, queues, Workload([]), conf, **kw)

    def push_arrival(self, queue: str, after: float) -> None:
        """Draw the next new job of ``queue`` (one at a time: each arrival draws the next)."""
        if self.future is None or self.arrived >= MAX_ARRIVALS * self.future.seen:
            return
        t, job = self.future.next(queue, after, self.rng, self.arrived)
        self.arrived += 1
        self.drawn += 1
        self._push(t, Arrive(job))

    def _arrive(self, job: dict[str, Any]) -> None:
        super()._arrive(job)
        queue = (job["metadata"].get("annotations") or {}).get(ARRIVAL_QUEUE)
        if queue is not None:
            self.push_arrival(queue, self.now)

    def _job_of(self, pod: dict[str, Any]) -> tuple[str, str]:
        md = pod["metadata"]
        return group_of(pod), str((md.get("annotations") or {}).get(TASK_SPEC_ANNOTATION)
                                  or (md.get("labels") or {}).get("volcano.sh/task-spec") or "")

    def _running(self, key: str, uid: str) -> None:
        pod = self._pod(key)
        if pod is not None and pod["metadata"]["uid"] == uid and _annotated(pod) is None:
            md = pod["metadata"]
            if not isinstance(md.get("annotations"), dict):
                md["annotations"] = {}
            job = group_of(pod)
            if job not in self.job_duration:  # one draw per job: a job's pods end together as its work does
                self.job_duration[job] = self.durations.total(pod_queue(pod, self.queue_of_group), self.rng)
                self.drawn += 1
            md["annotations"][DURATION] = repr(self.job_duration[job])
        super()._running(key, uid)
        if pod is not None:
            job = group_of(pod)
            rec = self.records.get(job)
            if job in self.waiting and rec is not None and rec.all_started is not None:
                self.waiting.discard(job)
                if not self.waiting:
                    self.stop = True


#: the most new jobs one run draws, as a multiple of the jobs the snapshot shows (a job that never starts would
#: otherwise keep a run drawing until the horizon)
MAX_ARRIVALS = 2
#: the fewest jobs a snapshot must show for new ones to be drawn like them (fewer say little about a rate)
MIN_SEEN = 10
#: the name prefix of a drawn new job, and the annotation naming the queue it was drawn for
ARRIVAL_PREFIX = "forecast-new-"
ARRIVAL_QUEUE = "pyvolcano.io/forecast-queue"
_OWN_KEYS = ("volcano.sh/", "scheduling.k8s.io/group-name", DURATION)


def _template(pod: dict[str, Any]) -> dict[str, Any]:
    """A pod as a Job task's template: its spec without the node, labels and annotations without Volcano's own."""
    md = _md(pod)
    spec = {k: v for k, v in (pod.get("spec") or {}).items() if k not in ("nodeName", "priority")}
    keep = {k: v for k, v in (md.get("annotations") or {}).items() if not k.startswith(_OWN_KEYS)}
    labels = {k: v for k, v in (md.get("labels") or {}).items() if not k.startswith(_OWN_KEYS)}
    return {"metadata": {"annotations": keep, "labels": labels}, "spec": copy.deepcopy(spec)}


@dataclass
class Arrivals:
    """New jobs like the snapshot's: per queue, the jobs seen (live or finished) as Volcano Job manifests, and their
    rate over the time the snapshot covers (first job seen to now).  Each run draws a Poisson stream of copies of
    them (:meth:`draw`): a forecast that ignores them would let every future high-priority or fairer-queue job
    jump ahead unseen."""

    jobs: dict[str, list[dict[str, Any]]]
    rate: dict[str, float]
    window: float
    #: only jobs of a priority above this one are drawn (None: every job)
    above: int | None = None
    #: the jobs the rate was read from (those submitted within ``window``)
    counted: int = 0

    @property
    def seen(self) -> int:
        return sum(len(v) for v in self.jobs.values())

    def next(self, queue: str, after: float, rng: np.random.Generator, n: int) -> tuple[float, dict[str, Any]]:
        """The next new job of ``queue`` after time ``after`` (the ``n``-th drawn: its name)."""
        t = after + float(rng.exponential(1 / self.rate[queue]))
        pool = self.jobs[queue]
        job = copy.deepcopy(pool[rng.integers(len(pool))])
        job["metadata"]["name"] = f"{ARRIVAL_PREFIX}{n}"
        job["metadata"]["annotations"] = {ARRIVAL_QUEUE: queue}
        return t, job

    def note(self) -> str:
        per = ", ".join(f"{q} {r * 3600:.3g}/h" for q, r in sorted(self.rate.items()))
        which = "new jobs" if self.above is None else f"new jobs of priority above {self.above}"
        if self.counted in (0, self.seen):
            return f"{which} drawn like the {self.seen} seen over the last {self.window:.0f} s: {per}"
        return (f"{which} drawn like the {self.seen} seen, at the rate of the {self.counted} submitted in the last "
                f"{self.window:.0f} s: {per}")


def priority_classes(objects: Iterable[dict[str, Any]]) -> tuple[dict[str, int], int]:
    """The snapshot's PriorityClass values by name, and the global default's value (0 without one)."""
    values: dict[str, int] = {}
    default = 0
    for o in objects:
        if o.get("kind") == "PriorityClass":
            try:
                values[str(_md(o).get("name"))] = v = int(o.get("value") or 0)
            except (TypeError, ValueError):
                continue
            if o.get("globalDefault"):
                default = v
    return values, default


def priority_of(obj: dict[str, Any], classes: tuple[dict[str, int], int]) -> int:
    """A pod's resolved ``spec.priority``, else the value of its (or a PodGroup's or Job's) ``priorityClassName``:
    the job priority Volcano's priority plugin orders by (``plugins/priority/priority.go: JobOrderFn``)."""
    spec = obj.get("spec") or {}
    if isinstance(spec.get("priority"), int):
        return int(spec["priority"])
    values, default = classes
    return values.get(str(spec.get("priorityClassName") or ""), default)


def arrivals_of(objects: list[dict[str, Any]], now: float, above: int | None = None,
                recent: int | None = None) -> Arrivals | None:
    """The snapshot's jobs as Job manifests per queue with their arrival rates; only those of a priority above
    ``above`` when given.  A job is seen as its pods (grouped by :func:`group_of`, submitted at their PodGroup's
    creation or else their first pod's), or, before its pods exist, as its Volcano Job (the manifest as it is) or
    its PodGroup (counted in the rate only: it says nothing of its pods).  The rate is the jobs seen over the time
    since the first one; with ``recent``, over the time since the ``recent``-th latest one (a rate that changes is
    read where it is now; the manifests drawn stay every one seen, for their variety).  None with fewer than
    ``MIN_SEEN`` jobs seen in all, or none above ``above``."""
    pgs = {_key(o): o for o in objects if o.get("kind") == "PodGroup"}
    vcjobs = {_key(o): o for o in objects if o.get("kind") == "Job" and str(o.get("apiVersion", "")).startswith(
        "batch.volcano.sh") and isinstance(o.get("spec"), dict) and (o["spec"].get("tasks") or None)}
    classes = priority_classes(objects)
    groups: dict[str, list[dict[str, Any]]] = {}
    for p in objects:
        if p.get("kind") == "Pod" and not _md(p).get("deletionTimestamp"):
            groups.setdefault(group_of(p), []).append(p)
    queue_of_group = {k: str((pg.get("spec") or {}).get("queue") or "default") for k, pg in pgs.items()}
    #: every job seen: (submitted, queue, its manifest or None, priority)
    seen: list[tuple[float, str, dict[str, Any] | None, int]] = []
    for g, pods in sorted(groups.items()):
        pg = pgs.get(g)
        created = [t for t in (_time(_md(x).get("creationTimestamp")) for x in ([pg] if pg else pods)) if t is not None]
        q = queue_of_group.get(g) or pod_queue(pods[0], queue_of_group)
        # a finished job's PodGroup may be gone: take it as the gang of all its pods (a Volcano Job's minAvailable
        # defaults to the sum of its tasks' replicas: ``pkg/webhooks/admission/jobs/mutate/mutate_job.go:
        # patchDefaultMinAvailable``), not as 1, which would let its copies start pod by pod and take every
        # fragment a waiting gang needs
        mm = int(((pg or {}).get("spec") or {}).get("minMember") or 1) if pg else len(pods)
        pods = sorted(pods, key=lambda x: str(_md(x).get("name")))
        spec0 = pods[0].get("spec") or {}
        job = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "", "namespace":
               _md(pods[0]).get("namespace") or "default"},
               "spec": {"queue": q, "minAvailable": min(mm, len(pods)),
                        "schedulerName": spec0.get("schedulerName") or "volcano",
                        **({"priorityClassName": spec0["priorityClassName"]} if spec0.get("priorityClassName") else {}),
                        "tasks": [{"name": f"t{i}", "replicas": 1, "template": _template(x)}
                                  for i, x in enumerate(pods)]}}
        seen.append((min(created) if created else now, q, job, max(priority_of(x, classes) for x in pods)))
    for k, vj in sorted(vcjobs.items()):  # a Job whose pods are not created yet (its PodGroup not admitted)
        if k in groups:
            continue
        spec = copy.deepcopy(vj["spec"])
        job = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
               "metadata": {"name": "", "namespace": _md(vj).get("namespace") or "default"}, "spec": spec}
        seen.append((_time(_md(vj).get("creationTimestamp")) or now, str(spec.get("queue") or "default"), job,
                     priority_of(vj, classes)))
    for k, pg in sorted(pgs.items()):  # a PodGroup whose pods are not created yet, of no Job: its rate only
        if k not in groups and k not in vcjobs:
            seen.append((_time(_md(pg).get("creationTimestamp")) or now, queue_of_group[k], None,
                         priority_of(pg, classes)))
    if len(seen) < MIN_SEEN:
        return None
    times = sorted(t for t, *_ in seen)
    first = times[0] if recent is None or recent >= len(times) else times[-recent]
    window = now - first
    jobs: dict[str, list[dict[str, Any]]] = {}
    counts: dict[str, int] = {}
    for t, q, manifest, prio in seen:
        if above is not None and prio <= above:
            continue
        if manifest is not None:
            jobs.setdefault(q, []).append(manifest)
        if t >= first:
            counts[q] = counts.get(q, 0) + 1
    rate = {q: n / window for q, n in counts.items() if q in jobs} if window > 0 else {}
    if not rate:
        return None
    return Arrivals(jobs, rate, window, above, sum(counts.values()))


@dataclass
class JobForecast:
    podgroup: str
    queue: str
    min_member: int
    #: when it started in each run, seconds after now (inf: not within the horizon)
    starts: list[float]

    def quantile(self, q: float) -> float | None:
        v = float(np.quantile(np.array(self.starts), q, method="inverted_cdf"))
        return v if math.isfinite(v) else None

    def as_dict(self, now: float) -> dict[str, Any]:
        med, lo, hi = self.quantile(0.5), self.quantile(0.05), self.quantile(0.95)
        return {"podgroup": self.podgroup, "queue": self.queue, "minMember": self.min_member,
                "start_median_s": med, "start_p5_s": lo, "start_p95_s": hi,
                "start_median_time": stamp(now + med) if med is not None else None,
                "started_runs": sum(1 for s in self.starts if math.isfinite(s)), "runs": len(self.starts)}


@dataclass
class Forecast:
    now: float
    runs: int
    seed: int
    horizon: float
    jobs: list[JobForecast]
    notes: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"now": stamp(self.now), "runs": self.runs, "seed": self.seed, "horizon_s": self.horizon,
                "jobs": [j.as_dict(self.now) for j in self.jobs], "notes": self.notes, "problems": self.problems}


@dataclass
class _Plan:
    """A snapshot sorted for :func:`_build`: what each run starts from."""

    cluster: list[dict[str, Any]]
    podgroups: dict[str, dict[str, Any]]
    pods: list[dict[str, Any]]
    jobs: dict[str, dict[str, Any]]
    waiting: dict[str, int]  # PodGroup -> minMember, for the jobs whose start is forecast
    queue_of_group: dict[str, str]


def _plan(objects: list[dict[str, Any]], scheduler_name: str) -> _Plan:
    cluster = [o for o in objects if o.get("kind") in _CLUSTER_KINDS]
    podgroups = {_key(o): o for o in objects if o.get("kind") == "PodGroup"}
    pods = [o for o in objects if o.get("kind") == "Pod" and not _md(o).get("deletionTimestamp")
            and _phase(o) not in ("Succeeded", "Failed")]
    jobs = {_key(o): o for o in objects if o.get("kind") == "Job" and str(o.get("apiVersion", "")).startswith(
        "batch.volcano.sh") and str(((o.get("status") or {}).get("state") or {}).get("phase") or "Pending")
        not in (*FINAL, *ENDED)}
    queue_of_group = {k: str((pg.get("spec") or {}).get("queue") or "default") for k, pg in podgroups.items()}
    for k, j in jobs.items():
        queue_of_group.setdefault(k, str((j.get("spec") or {}).get("queue") or "default"))
    started: dict[str, int] = {}
    for p in objects:
        if p.get("kind") == "Pod" and _phase(p) in ("Running", "Succeeded") and not _md(p).get("deletionTimestamp"):
            started[group_of(p)] = started.get(group_of(p), 0) + 1
    waiting: dict[str, int] = {}
    for k, pg in podgroups.items():
        mm = int((pg.get("spec") or {}).get("minMember") or 1)
        if _phase(pg) in _WAITING and started.get(k, 0) < mm:
            waiting[k] = mm
    for k, j in jobs.items():
        if k not in podgroups:
            spec = j.get("spec") or {}
            total = sum(int(t.get("replicas", 1)) for t in spec.get("tasks") or () if isinstance(t, dict))
            waiting[k] = int(spec.get("minAvailable", total) or 1)
    for p in pods:  # a pod of no PodGroup is a one-pod job of its own
        g = group_of(p)
        if g not in podgroups and g not in jobs and _phase(p) in ("", "Pending") and \
                not (p.get("spec") or {}).get("nodeName") and \
                ((p.get("spec") or {}).get("schedulerName") or "default-scheduler") == scheduler_name:
            waiting[g] = 1
    return _Plan(cluster, podgroups, pods, jobs, waiting, queue_of_group)


def _build(plan: _Plan, conf: SchedulerConf, now: float, durations: Durations, rng: np.random.Generator, *,
           period: float, start_latency: float, scheduler_name: str = "volcano") -> ForecastSim:
    """One simulator at ``now`` holding ``plan``'s objects (copies), running pods finishing at their remaining time."""
    cluster = copy.deepcopy(plan.cluster)
    nodes = [o for o in cluster if o["kind"] == "Node"]
    queues = [o for o in cluster if o["kind"] == "Queue"]
    others = [o for o in cluster if o["kind"] not in ("Node", "Queue")]
    sim = ForecastSim(nodes, queues, conf, durations, rng, plan.queue_of_group, period=period,
                      start_latency=start_latency)
    sim.now = now
    sim.cache.scheduler_name = scheduler_name  # before any pod enters: it picks the pods this scheduler places
    for o in others:
        sim.api.create(o, trusted=False)
    pods = copy.deepcopy(plan.pods)
    by_group: dict[str, list[dict[str, Any]]] = {}
    for p in pods:
        by_group.setdefault(group_of(p), []).append(p)
    for key, pg in plan.podgroups.items():
        pg = copy.deepcopy(pg)
        spec = pg.get("spec") or {}
        members = by_group.get(key, [])
        mm = int(spec.get("minMember") or 1)
        sim.records[key] = JobRecord(key, str(spec.get("queue") or "default"), max(len(members), mm), mm,
                                     parse_time(_md(pg).get("creationTimestamp")))
        sim.api.create(pg, trusted=False)
    for key, job in plan.jobs.items():
        job = copy.deepcopy(job)
        job["metadata"].setdefault("namespace", "default")
        st_body = job.get("status") or {}
        if key in plan.podgroups:
            st = JobState(job, phase=str((st_body.get("state") or {}).get("phase") or "Pending"),
                          retries=int(st_body.get("retryCount") or 0), version=int(st_body.get("version") or 0))
            st.pods = {_md(p)["name"]: _phase(p) or "Pending" for p in by_group.get(key, [])}
            sim.controller.jobs[key] = st
            sim.controller.on_podgroup(key, _phase(plan.podgroups[key]) or "Pending")  # admitted: its pods come
        else:  # not admitted yet: its PodGroup is made as the controller makes it
            sim.controller.add_job(job)
            spec = job["spec"]
            tasks = sum(int(t.get("replicas", 1)) for t in spec["tasks"])
            sim.records[key] = JobRecord(key, str(spec.get("queue") or "default"), tasks,
                                         int(spec.get("minAvailable", tasks)), parse_time(_md(job).get("creationTimestamp")))
    left_of: dict[tuple[str, int], float] = {}
    for p in pods:
        g = group_of(p)
        if g not in sim.records:
            sim.records[g] = JobRecord(g, pod_queue(p, plan.queue_of_group), 1, 1,
                                       parse_time(_md(p).get("creationTimestamp")))
        sim.api.create(p, trusted=False)
        if sim._pod(_key(p)) is None:  # refused by the cache's validation (a problem is recorded)
            continue
        node = (p.get("spec") or {}).get("nodeName")
        rec = sim.records[g]
        if _phase(p) == "Running":
            rec.running += 1
            if rec.first_start is None:
                rec.first_start = started_at(p) or now
            if rec.running >= max(rec.min_available, 1) and rec.all_started is None:
                rec.all_started = started_at(p) or now
            d = _annotated(p)
            begun = started_at(p)
            age = max(now - begun, 0.0) if begun is not None else 0.0
            if d is not None:
                left = max(d - age, 0.0)
            else:  # one draw per job and start: pods started together end together
                mark = (g, round(begun or now))
                if mark not in left_of:
                    left_of[mark] = durations.remaining(pod_queue(p, plan.queue_of_group), age, rng)
                    sim.drawn += 1
                left = left_of[mark]
            sim._push(now + left, PodFinish(_key(p), _md(p)["uid"]))
        elif node:  # bound, not running yet: it runs the start latency after its bind (PodScheduled=True)
            bound = started_at(p)
            sim._push(max(now, (bound if bound is not None else now) + start_latency),
                      PodRunning(_key(p), _md(p)["uid"]))
    sim.problems.extend(sim.cache.problems)
    sim.cache.problems.clear()
    sim.waiting = {k for k in plan.waiting if k in sim.records}
    return sim


#: which new jobs a forecast draws: none (the start if nothing new arrives); for each priority level of pending
#: jobs, those of a higher priority (they go first: the start if nothing new of its own rank or lower arrives); all
#: (every seen job, at the rate over the whole time the snapshot covers); recent (every seen job, at the rate of the
#: ``RECENT`` latest submissions); mixed (half the runs none, half recent: the range covers both)
ARRIVALS = ("none", "higher", "all", "recent", "mixed")
#: how many of the latest submissions the ``recent`` rate is read from
RECENT = 30


def waiting_priorities(plan: _Plan, objects: list[dict[str, Any]]) -> dict[str, int]:
    """The priority of each job whose start is forecast (its PodGroup's or Job's priorityClassName, or its pods'
    resolved priority, whichever is higher)."""
    classes = priority_classes(objects)
    pods_of: dict[str, list[dict[str, Any]]] = {}
    for p in plan.pods:
        pods_of.setdefault(group_of(p), []).append(p)
    out = {}
    for k in plan.waiting:
        own = plan.podgroups.get(k) or plan.jobs.get(k)
        cands = [priority_of(x, classes) for x in pods_of.get(k, [])]
        if own is not None and (own.get("spec") or {}).get("priorityClassName"):
            cands.append(priority_of(own, classes))
        out[k] = max(cands) if cands else classes[1]
    return out


def forecast(objects: list[dict[str, Any]], conf: SchedulerConf, now: float, *, runs: int = 40, seed: int = 0,
             horizon: float = DEFAULT_HORIZON, period: float = 1.0, start_latency: float = 0.0,
             default_duration: float = DEFAULT_DURATION, scheduler_name: str = "volcano",
             arrivals: str = "mixed", pool_prior: float = POOL_PRIOR) -> Forecast:
    """Each pending job's start after ``now`` (seconds since the epoch, the snapshot's time) over ``runs`` seeded
    simulations of ``objects``.  UserError when the snapshot has no node."""
    if runs < 1:
        raise UserError("--runs must be at least 1")
    for o in objects:  # uids tell a pod's events apart; a snapshot written by hand may have none
        md = _md(o)
        if md and o.get("kind") in ("Pod", "PodGroup") and not md.get("uid"):
            md["uid"] = f"snap-{_key(o)}"
    if not any(o.get("kind") == "Node" for o in objects):
        raise UserError("nothing to forecast on: the snapshot has no Node objects")
    plan = _plan(objects, scheduler_name)
    durations = durations_of(objects, now, default_duration, pool_prior)
    if arrivals not in ARRIVALS:
        raise UserError(f"arrivals: {arrivals!r} is not one of {', '.join(ARRIVALS)}")
    # "higher": each priority level of pending jobs gets runs of its own, drawing the new jobs that outrank it
    prio = waiting_priorities(plan, objects) if arrivals == "higher" else {k: 0 for k in plan.waiting}
    levels: list[tuple[set[str], Arrivals | None]] = []
    for level in sorted(set(prio.values())):
        above = level if arrivals == "higher" else None
        recent = RECENT if arrivals in ("recent", "mixed") else None
        future = arrivals_of(objects, now, above, recent) if arrivals != "none" else None
        levels.append(({k for k, v in prio.items() if v == level}, future))
    starts: dict[str, list[float]] = {k: [] for k in plan.waiting}
    problems: list[str] = []
    done = 0
    told: list[str] = []
    for n, (targets, future) in enumerate(levels):
        for i in range(runs):
            rng = np.random.default_rng([seed, i] if n == 0 else [seed, i, n])
            sim = _build(plan, conf, now, durations.resampled(rng), rng, period=period, start_latency=start_latency,
                         scheduler_name=scheduler_name)
            sim.waiting &= targets
            # "mixed": the even runs draw no new job, the odd ones draw them
            drawing = future if arrivals != "mixed" or i % 2 == 1 else None
            if drawing is not None:
                sim.future = drawing
                for q in sorted(drawing.rate):
                    sim.push_arrival(q, now)
            if i == 0 and n == 0:
                problems = list(sim.problems)
            sim.run(until=now + horizon)
            for k in targets:
                rec = sim.records.get(k)
                t = rec.all_started if rec is not None else None
                starts[k].append(t - now if t is not None and t >= now else (0.0 if t is not None else math.inf))
            done = max(done, i + 1)
            if sim.drawn == 0 and future is None:  # nothing was drawn: every run would be this one
                break
        said = future.note() if future is not None else None
        if said is not None and arrivals == "mixed":
            said = f"half the runs draw no new job, the other half: {said}"
        if said is not None and said not in told:
            told.append(said)
    notes = durations.notes + told
    jobs = [JobForecast(k, plan.queue_of_group.get(k, "default"), plan.waiting[k], v) for k, v in starts.items()]
    jobs.sort(key=lambda j: (j.quantile(0.5) is None, j.quantile(0.5) or 0.0, j.podgroup))
    return Forecast(now, done, seed, horizon, jobs, notes, problems)


def snapshot_time(objects: Iterable[dict[str, Any]]) -> float | None:
    """The latest time a snapshot's objects record (creation, start, finish, condition changes): a lower bound of
    when it was taken, for a snapshot file that does not say."""
    best: float | None = None

    def see(v: Any) -> None:
        nonlocal best
        t = _time(v)
        if t is not None and (best is None or t > best):
            best = t

    for o in objects:
        see(_md(o).get("creationTimestamp"))
        st = o.get("status")
        if not isinstance(st, dict):
            continue
        see(st.get("startTime"))
        for c in st.get("conditions") or ():
            if isinstance(c, dict):
                see(c.get("lastTransitionTime"))
        if o.get("kind") == "Pod":
            see(finished_at(o))
    return best


# --- a simulation part-way, as a snapshot ---------------------------------------------------------------------
class RecordingSim(Simulator):
    """The simulator, keeping what a snapshot of it needs: each pod's start time (``status.startTime``, as the
    kubelet writes it) and every finished pod with its container's start and finish (a cluster keeps finished pods
    of a running or completed Job), and when each pod was bound (the ``PodScheduled=True`` condition the API
    server's binding writes; the simulator's own pods get it only once running)."""

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.finished_pods: list[dict[str, Any]] = []
        #: pod uid -> when the scheduler bound it
        self.bound_at: dict[str, float] = {}
        bind = self.writer.bind

        def recorded(task: Any, node: str) -> None:
            bind(task, node)
            pod = self._pod(task.uid)
            if pod is not None and pod["spec"].get("nodeName") == node:
                self.bound_at.setdefault(pod["metadata"]["uid"], self.now)

        self.writer.bind = recorded  # type: ignore[method-assign]

    def _running(self, key: str, uid: str) -> None:
        super()._running(key, uid)
        pod = self._pod(key)
        if pod is not None and pod["metadata"]["uid"] == uid and _phase(pod) == "Running":
            pod["status"]["startTime"] = self.now

    def _finish(self, key: str, uid: str) -> None:
        pod = self._pod(key)
        start = (pod.get("status") or {}).get("startTime") if pod is not None else None
        super()._finish(key, uid)
        if pod is not None and pod["metadata"]["uid"] == uid and start is not None and _phase(pod) == "Succeeded":
            done = copy.deepcopy(pod)
            done["status"] = {"phase": "Succeeded", "startTime": start, "containerStatuses": [
                {"name": "main", "state": {"terminated": {"startedAt": start, "finishedAt": self.now}}}]}
            self.finished_pods.append(done)


def export(sim: RecordingSim, *, durations: bool = False) -> list[dict[str, Any]]:
    """The simulation's objects now, as a snapshot: the cluster, every pod and PodGroup the API holds, the Volcano
    Jobs not finished (with their controller's phase), and the finished pods.  Times are seconds (the simulator's
    clock).  ``durations`` False drops the ``pyvolcano.io/duration`` annotations (a real cluster's pods carry none),
    so a forecast must estimate them."""
    out: list[dict[str, Any]] = []
    live: set[str] = set()
    for (kind, _), obj in sim.api.objects.items():
        if kind in ("Job",):
            continue
        o = copy.deepcopy(obj)
        if kind == "Pod":
            live.add(o["metadata"]["uid"])
            if _phase(o) == "Succeeded":
                continue  # written below, with its container's times
            bound = sim.bound_at.get(o["metadata"]["uid"])
            if _phase(o) in ("", "Pending") and (o.get("spec") or {}).get("nodeName") and bound is not None:
                o.setdefault("status", {})["conditions"] = [
                    {"type": "PodScheduled", "status": "True", "lastTransitionTime": bound}]
        out.append(o)
    out.extend(copy.deepcopy(p) for p in sim.finished_pods)
    for st in sim.controller.jobs.values():
        if st.phase in FINAL:
            continue
        job = copy.deepcopy(st.job)
        job.setdefault("apiVersion", "batch.volcano.sh/v1alpha1")
        job.setdefault("kind", "Job")
        job["status"] = {"state": {"phase": st.phase}, "retryCount": st.retries, "version": st.version}
        out.append(job)
    if not durations:
        for o in out:
            ann = _md(o).get("annotations")
            if isinstance(ann, dict):
                ann.pop(DURATION, None)
            for t in ((o.get("spec") or {}).get("tasks") or []) if o.get("kind") == "Job" else []:
                tann = _md(t.get("template") or {}).get("annotations")
                if isinstance(tann, dict):
                    tann.pop(DURATION, None)
    return out


@dataclass
class Accuracy:
    """A forecast checked against the run it was taken from: per job, (forecast median, 5th and 95th percentile,
    actual start, the job's whole wait), seconds after the snapshot (the wait: from its submission to its start)."""

    pairs: list[tuple[float | None, float | None, float | None, float, float]] = field(default_factory=list)
    #: forecast jobs that never started in the run (left out of the figures)
    never: int = 0
    snapshots: int = 0

    def add(self, fc: Forecast, records: dict[str, JobRecord]) -> None:
        self.snapshots += 1
        for j in fc.jobs:
            rec = records.get(j.podgroup)
            if rec is None or rec.all_started is None:
                self.never += 1
                continue
            self.pairs.append((j.quantile(0.5), j.quantile(0.05), j.quantile(0.95), rec.all_started - fc.now,
                               rec.all_started - rec.submit))

    def as_dict(self) -> dict[str, Any]:
        """``median_abs_error_ratio``: the median over jobs of |forecast median - actual start| / the job's actual
        wait (submission to start, at least one second); ``..._remaining``: the same over the wait still ahead at
        the snapshot (stricter: the part already waited is not counted); ``coverage90``: the share of actual starts
        inside the 90 % range.  A job the forecast did not see start counts as an infinite error outside its
        range."""
        whole, ahead, inside = [], [], 0
        for med, lo, hi, actual, wait in self.pairs:
            err = abs(med - actual) if med is not None else math.inf
            whole.append(err / max(wait, 1.0))
            ahead.append(err / max(actual, 1.0))
            if lo is not None and hi is not None and lo - 1e-6 <= actual <= hi + 1e-6:
                inside += 1
        n = len(self.pairs)

        def median(v: list[float]) -> float | None:
            return round(float(np.quantile(np.array(v), 0.5, method="inverted_cdf")), 4) if v else None

        return {"jobs": n, "median_abs_error_ratio": median(whole), "coverage90": round(inside / n, 4) if n else None,
                "median_abs_error_ratio_remaining": median(ahead), "snapshots": self.snapshots,
                "never_started": self.never}


def measure(nodes: list[dict[str, Any]], queues: list[dict[str, Any]], workload: Workload, conf: SchedulerConf, *,
            at: Iterable[float], runs: int = 20, seed: int = 0, period: float = 1.0, start_latency: float = 1.0,
            grace: float = 5.0, durations: bool = False, arrivals: str = "mixed") -> Accuracy:
    """Run ``workload`` once, stopping at each time of ``at`` to forecast from a snapshot of the run (its duration
    annotations dropped unless ``durations``), then compare each forecast with when its jobs started in the run."""
    acc = Accuracy()
    sim = RecordingSim(copy.deepcopy(nodes), copy.deepcopy(queues),
                       Workload(copy.deepcopy(workload.jobs), workload.priority_classes, list(workload.problems)),
                       conf, period=period, start_latency=start_latency, grace=grace)
    taken: list[Forecast] = []
    for t in sorted(at):
        sim.run(until=t)
        sim.now = max(sim.now, t)
        snap = export(sim, durations=durations)
        taken.append(forecast(snap, conf, sim.now, runs=runs, seed=seed, period=period, start_latency=start_latency,
                              arrivals=arrivals))
    sim.run()
    for fc in taken:
        acc.add(fc, sim.records)
    return acc
