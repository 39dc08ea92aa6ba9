"""Why a PodGroup stays unschedulable, and the best verified fix, on a real cluster (issue 30 item 1): the same
short text ``cycle -o wide`` and the simulator's jobs.csv give (``analysis/whatif.py: Explanation.short``), sent
as an Event on the PodGroup with reason ``WhyPending``.

Volcano's own words are left as Volcano writes them: the ``Unschedulable`` condition's message
(``x/y tasks in gang unschedulable: ...``, written by ``plugins/gang.py`` as Volcano's gang plugin does in
``pkg/scheduler/plugins/gang/gang.go``: OnSessionClose) and the ``Unschedulable`` Warning Event
(``cache.RecordJobStatusEvent`` in ``pkg/scheduler/cache/cache.go``).  Users, tests and cluster autoscalers
match that text and reason; the ``WhyPending`` Event (type ``Normal``: advice next to Volcano's Warning, not a
second failure) adds to it without changing it, and never touches the PodGroup object (a status write would
wake every watcher of PodGroups and move the job's version, which would start the search again).

What it costs.  The search re-runs sessions (``whatif.explain``: the job's path, a dry run, up to ``max_runs``
changed sessions), so it is never done for every pending job every cycle:

* **only when the answer can have changed**: per PodGroup the answer is kept under the key it depends on:
  Volcano's message for the job (its fit errors or enqueue refusal, which the session has anyway), the cache's
  job version (its PodGroup and pods), the session's node count and total allocatable, and the conf (a reload
  clears every answer).  Each session looks only at the jobs it examined itself (with the blocked-job memo,
  parked jobs keep their carried reason, hence their key: ``framework/incremental/memo.py``); a job whose key
  is the answered one costs a dict look-up;
* **only once the key has held ``settle`` seconds**: a gang whose pods are still arriving, or whose first
  Unschedulable status the scheduler is still writing (each write moves the job's version), is not searched
  for each of those states;
* **off the session's path, within a CPU share**: one background thread searches one batch at a time (at most
  ``jobs`` PodGroups, one shared base session), started after a session and only when no bind is in flight
  (binds first, as ``kube/writer.py``); after a batch that took *d* seconds the next starts no sooner than
  *d* x (1 - ``cpu``) / ``cpu`` later, so the search uses at most ``cpu`` of one core over time.  Each
  PodGroup's search is bounded by ``max_runs`` sessions and ``budget`` seconds at the pace of the base session
  (a cluster whose one session takes longer than ``budget`` is not searched).  The PodGroups left over wait for
  later batches, the longest-settled first;
* **one Event per change**: an Event is sent when a PodGroup's text differs from the last one sent for it; the
  same text again (a new key, the same answer) sends nothing.  A PodGroup that is scheduled, deleted or no
  longer unschedulable is forgotten, so it is told again if it gets stuck again.

The objects searched are the cache's raw objects as the informers last saw them, with the binds this scheduler
has made and the API server not yet shown (``Binder.assumed``) put in (as copies), so that pods being bound are
not placed a second time by the search.  The other objects are shared with the cache, not copied: the search only
reads them (each change it tries is made on a deep copy, ``whatif._changed``), and the informers replace an
object, or an object's top-level parts, rather than change them inside (``kube/event_handlers.py:
_bind_echo``), so a batch reads each object as it was or as it is.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import ChainMap
from collections.abc import Callable, Container, Mapping
from dataclasses import dataclass
from typing import Any

from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.conf.loader import SchedulerConf
from pyvolcano.errors import UserError
from pyvolcano.framework.cycle import run_session
from pyvolcano.framework.result import SessionResult

__all__ = ["WHY_PENDING", "KubeWhy", "WhyLedger", "WhyOptions", "search"]

log = logging.getLogger(__name__)

#: the reason of the Event
WHY_PENDING = "WhyPending"

#: what an answer depends on: Volcano's message, the job's version, the node count and total allocatable
Key = tuple[str, int, int, bytes]


@dataclass
class WhyOptions:
    #: at most this share of one CPU, over time, for the search (0: no search, no Event)
    cpu: float = 0.1
    #: PodGroups searched per batch (one batch at a time)
    jobs: int = 2
    #: per PodGroup: sessions re-run at most (``pyvolcano explain --max-runs``) ...
    max_runs: int = 8
    #: ... and no more than this many seconds' worth at the pace of one session (``--budget``)
    budget: float = 10.0
    #: a PodGroup is searched once its key has held this long
    settle: float = 3.0


class WhyLedger:
    """The bookkeeping, without threads or API calls: which PodGroups want a search, which are answered under
    which key, what was told, and when the next batch may start (see the module docstring).  Thread-safe: the
    loop calls ``observe``/``due`` after a session, the search thread ``done``."""

    def __init__(self, opts: WhyOptions, clock: Callable[[], float] = time.monotonic) -> None:
        self.opts = opts
        self.clock = clock
        self._lock = threading.Lock()
        #: PodGroups to search: their key and since when it holds, oldest first (a changed key moves to the end)
        self.want: dict[str, tuple[Key, float]] = {}
        #: PodGroups searched: the key searched under and the text ("" : nothing to tell)
        self.answers: dict[str, tuple[Key, str]] = {}
        #: the text of the last Event per PodGroup
        self.told: dict[str, str] = {}
        self.running = False
        self.next_start = 0.0
        self._conf: object = None

    def observe(self, examined: Mapping[str, str], waiting: Container[str], version: Callable[[str], int | None],
                shape: tuple[int, bytes], conf: object) -> None:
        """After a session: ``examined`` maps the unschedulable jobs the session looked at to Volcano's message
        for each; ``waiting`` holds every unschedulable job (the others are forgotten); ``version`` gives a
        job's cache version (None: not a job); ``shape`` the node count and total allocatable."""
        now = self.clock()
        with self._lock:
            if conf is not self._conf:  # a reloaded conf: every answer may differ
                self._conf = conf
                self.want.clear()
                self.answers.clear()
            for uid, message in examined.items():
                v = version(uid)
                if v is None:
                    continue
                key: Key = (message, v, *shape)
                got = self.answers.get(uid)
                if got is not None and got[0] == key:
                    continue
                w = self.want.get(uid)
                if w is not None and w[0] == key:
                    continue
                self.want.pop(uid, None)
                self.want[uid] = (key, now)
            for d in (self.want, self.answers, self.told):
                gone = [uid for uid in d if uid not in waiting]
                for uid in gone:
                    del d[uid]

    def due(self) -> list[tuple[str, Key]]:
        """The next batch (marked running), or nothing: a batch is running, the CPU share is spent, or no key has
        held ``settle`` seconds."""
        now = self.clock()
        with self._lock:
            if self.running or self.opts.cpu <= 0 or now < self.next_start:
                return []
            batch: list[tuple[str, Key]] = []
            for uid, (key, since) in self.want.items():
                if now - since < self.opts.settle or len(batch) >= self.opts.jobs:
                    break  # in order of ``since``: the rest settled later
                batch.append((uid, key))
            self.running = bool(batch)
            return batch

    def done(self, batch: list[tuple[str, Key]], texts: Mapping[str, str], seconds: float) -> list[tuple[str, str]]:
        """A batch took ``seconds``; ``texts`` has the answer of each PodGroup searched (those not reached wait for
        a later batch).  Returns the (PodGroup, text) Events to send: the texts that changed.  An answer whose
        PodGroup changed meanwhile (a new key: searched again later) or stopped waiting (scheduled, deleted) is
        dropped: it describes a state that is gone."""
        cpu = max(self.opts.cpu, 1e-6)
        tell = []
        with self._lock:
            self.running = False
            self.next_start = self.clock() + seconds * (1 - cpu) / cpu
            for uid, key in batch:
                w = self.want.get(uid)
                if uid not in texts or w is None or w[0] != key:
                    continue
                del self.want[uid]
                self.answers[uid] = (key, texts[uid])
                if texts[uid] and self.told.get(uid) != texts[uid]:
                    self.told[uid] = texts[uid]
                    tell.append((uid, texts[uid]))
        return tell


def search(objects: list[dict[str, Any]], conf: SchedulerConf, uids: list[str], scheduler_name: str,
           opts: WhyOptions, stop: threading.Event | None = None) -> dict[str, str]:
    """Per PodGroup of ``uids``, the short reason and best verified fixes (``Explanation.short``), or "" when the
    session on ``objects`` places it after all or it cannot be searched (gone, nothing pending, a session longer
    than ``opts.budget``).  One base session is shared by the batch, as ``sim/engine.py: why_waiting`` does."""
    from pyvolcano.analysis.whatif import explain

    t0 = time.perf_counter()
    base = run_session(SchedulerCache.from_objects(objects, scheduler_name), conf)
    pace = time.perf_counter() - t0
    out: dict[str, str] = {}
    for uid in uids:
        if stop is not None and stop.is_set():
            break
        try:
            e = explain(objects, conf, uid, scheduler_name=scheduler_name, max_runs=opts.max_runs,
                        budget=opts.budget, base=base, pace=pace)
        except UserError as exc:
            log.debug("why pending: %s not searched: %s", uid, exc)
            out[uid] = ""
            continue
        out[uid] = "" if e.schedulable else e.short()
    return out


class KubeWhy:
    """The ledger on a real cluster: ``after_session`` (under the scheduler's lock) updates it from the session's
    result and starts a batch on a thread of its own when one is due; the batch's Events go through the
    scheduler's ``EventRecorder``."""

    def __init__(self, opts: WhyOptions, cache: SchedulerCache, lock: threading.RLock, assumed: Mapping[str, Any],
                 busy: Callable[[], bool], event: Callable[[dict[str, Any], str, str, str], object],
                 conf: Callable[[], SchedulerConf]) -> None:
        self.opts = opts
        self.ledger = WhyLedger(opts)
        self.cache, self.lock, self.assumed, self.busy, self.event, self.conf = cache, lock, assumed, busy, event, conf
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        #: batches run, PodGroups searched, Events sent, seconds spent (tests, logs)
        self.stats = {"batches": 0, "searched": 0, "events": 0, "seconds": 0.0}

    def after_session(self, result: SessionResult) -> None:
        """Called under the scheduler's lock while a session's result is applied; never raises (a bug here must
        not keep the session's evictions from being sent)."""
        if self.opts.cpu <= 0 or self._stop.is_set():
            return
        try:
            self._after_session(result)
        except Exception:
            log.exception("why pending: bookkeeping after the session failed")

    def _after_session(self, result: SessionResult) -> None:
        un = result.unschedulable
        examined = un.maps[0] if isinstance(un, ChainMap) else un  # the parked jobs' keys are unchanged
        jobs = self.cache.jobs

        def version(uid: str) -> int | None:
            job = jobs.get(uid)
            pg = self.cache.podgroups.get(uid)
            return job.version if job is not None and pg is not None and not pg.synthetic else None

        shape = (result.nodes, result.total.tobytes() if result.total is not None else b"")
        conf = self.conf()
        self.ledger.observe(examined, un, version, shape, conf)
        if self.busy():  # binds first
            return
        batch = self.ledger.due()
        if batch:
            objects = self._objects()
            self._thread = threading.Thread(target=self._run, args=(batch, objects, conf), name="why-pending",
                                            daemon=True)
            self._thread.start()

    def _objects(self) -> list[dict[str, Any]]:
        """The raw objects with the binds in flight put in (called under the lock)."""
        raw = self.cache.raw
        if not self.assumed:
            return list(raw.values())
        objs = dict(raw)
        for key, a in self.assumed.items():
            pod = raw.get(("Pod", key))
            if pod is not None and not (pod.get("spec") or {}).get("nodeName"):
                objs[("Pod", key)] = {**pod, "spec": {**pod["spec"], "nodeName": a.node}}
        return list(objs.values())

    def _run(self, batch: list[tuple[str, Key]], objects: list[dict[str, Any]], conf: SchedulerConf) -> None:
        t0 = time.monotonic()
        texts: dict[str, str] = {}
        try:
            texts = search(objects, conf, [uid for uid, _ in batch], self.cache.scheduler_name, self.opts,
                           self._stop)
        except Exception:  # a bug in the search must not stop the next batches
            log.exception("why pending: the search for %s failed", ", ".join(uid for uid, _ in batch))
            texts = {uid: "" for uid, _ in batch}  # not again under the same key
        seconds = time.monotonic() - t0
        tell = self.ledger.done(batch, texts, seconds)
        self.stats["batches"] += 1
        self.stats["searched"] += len(texts)
        self.stats["seconds"] += seconds
        log.debug("why pending: %d PodGroup(s) searched in %.2f s, %d Event(s)", len(texts), seconds, len(tell))
        for uid, text in tell:
            with self.lock:
                pg = self.cache.raw.get(("PodGroup", uid))
            if pg is not None:
                self.event(pg, "Normal", WHY_PENDING, text)
                self.stats["events"] += 1

    def stop(self, timeout: float = 5.0) -> None:
        """No batch after this; wait for the one running to reach the end of its PodGroup."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
