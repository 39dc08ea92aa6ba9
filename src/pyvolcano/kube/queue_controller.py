"""The queue controller: Queue status counts and the Open / Closing / Closed state machine (Volcano's).

It watches Queues, PodGroups and ``bus.volcano.sh`` Commands.  For each queue it counts the PodGroups in it by
phase (``status.pending/running/inqueue/unknown/completed``) and keeps ``status.state``:

* a new queue is ``Open``;
* ``CloseQueue`` makes it ``Closing`` while PodGroups remain in it and ``Closed`` once none do (the scheduler
  admits no new jobs into a queue that is not Open);
* ``OpenQueue`` makes it ``Open`` again.

Commands are consumed (deleted) once applied, as Volcano's controller does.  Writes are merge patches of the
status subresource, so they never overwrite the ``status.allocated`` the scheduler keeps.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from pyvolcano.kube.client import ApiError
from pyvolcano.kube.objects import key_of
from pyvolcano.kube.reflector import Reflector
from pyvolcano.kube.resources import COMMAND, PODGROUP, QUEUE
from pyvolcano.kube.validation import validate_queue, validate_queue_tree
from pyvolcano.kube.writer import EventRecorder, Writer

log = logging.getLogger(__name__)

OPEN, CLOSED, CLOSING = "Open", "Closed", "Closing"
_COUNTED = {"Pending": "pending", "Running": "running", "Inqueue": "inqueue", "Unknown": "unknown",
            "Completed": "completed"}


def next_state(current: str, action: str | None, podgroups: int) -> str:
    """Volcano's queue state machine (pkg/controllers/queue/state) in one function."""
    if action == "OpenQueue":
        return OPEN
    if action == "CloseQueue" or current in (CLOSED, CLOSING):
        return CLOSED if podgroups == 0 else CLOSING
    if current in ("", OPEN):
        return OPEN
    return "Unknown"


class QueueController:
    def __init__(self, api: Any, recorder: EventRecorder | None = None, resync: float = 30.0) -> None:
        self.api = api
        self.writer = Writer(2, "queue-status")
        self.recorder = recorder or EventRecorder(api, self.writer, "vc-controller-manager")
        self.resync = resync
        self.lock = threading.Condition(threading.RLock())
        self.queues: dict[str, dict[str, Any]] = {}
        self.pg_queue: dict[str, str] = {}
        self.pg_phase: dict[str, str] = {}
        self.actions: dict[str, str] = {}
        self.dirty: set[str] = set()
        self.sent: dict[str, dict[str, Any]] = {}
        self.syncs = 0
        self._stop = threading.Event()
        self.reflectors = [Reflector(api, QUEUE, self.on_queue), Reflector(api, PODGROUP, self.on_podgroup),
                           Reflector(api, COMMAND, self.on_command)]
        self._thread: threading.Thread | None = None

    # --- events ----------------------------------------------------------------------------------------
    def _mark(self, name: str) -> None:
        self.dirty.add(name)
        self.lock.notify_all()

    def on_queue(self, typ: str, obj: dict[str, Any]) -> None:
        name = obj["metadata"]["name"]
        with self.lock:
            if typ == "DELETED":
                self.queues.pop(name, None)
                self.sent.pop(name, None)
                self.actions.pop(name, None)
                return
            self.queues[name] = obj
            self._mark(name)

    def on_podgroup(self, typ: str, obj: dict[str, Any]) -> None:
        key = key_of(obj)
        queue = (obj.get("spec") or {}).get("queue") or "default"
        with self.lock:
            old = self.pg_queue.get(key)
            if typ == "DELETED":
                self.pg_queue.pop(key, None)
                self.pg_phase.pop(key, None)
            else:
                self.pg_queue[key] = queue
                self.pg_phase[key] = (obj.get("status") or {}).get("phase") or "Pending"
            for q in {old, queue} - {None}:
                self._mark(q)  # type: ignore[arg-type]

    def on_command(self, typ: str, obj: dict[str, Any]) -> None:
        target = obj.get("target") or {}
        action = obj.get("action") or ""
        if typ == "DELETED" or target.get("kind") != "Queue" or action not in ("OpenQueue", "CloseQueue"):
            return
        name = target.get("name") or ""
        with self.lock:
            q = self.queues.get(name)
            if q is not None and target.get("uid") and q["metadata"].get("uid") != target["uid"]:
                log.info("command %s targets an older queue %s; dropped", key_of(obj), name)
            else:
                self.actions[name] = action
                self._mark(name)
        try:  # consumed: delete it so it is not applied again after a restart
            self.api.delete(COMMAND, obj["metadata"]["name"], obj["metadata"].get("namespace"))
        except ApiError as exc:
            if not exc.not_found:
                log.warning("cannot delete command %s: %s", key_of(obj), exc)

    # --- sync ------------------------------------------------------------------------------------------
    def sync(self, name: str) -> None:
        with self.lock:
            q = self.queues.get(name)
            if q is None:
                return
            members = [k for k, qn in self.pg_queue.items() if qn == name]
            counts = dict.fromkeys(_COUNTED.values(), 0)
            for k in members:
                field = _COUNTED.get(self.pg_phase.get(k, "Pending"))
                if field:
                    counts[field] += 1
            status = q.get("status") or {}
            action = self.actions.pop(name, None)
            state = next_state(status.get("state") or "", action, len(members))
            want = {"state": state, **counts}
            have = {k: status.get(k) or (0 if k != "state" else "") for k in want}
            errs = validate_queue(q, self.queues) + validate_queue_tree(name, self.queues)
            self.syncs += 1
            if have == want or self.sent.get(name) == want:
                pass
            else:
                self.sent[name] = want
                self.writer.submit(("queue", name), self._writer(name, want))
        for e in errs:
            self.recorder.event(q, "Warning", "InvalidQueue", e)
        if action:
            self.recorder.event(q, "Normal", action, f"queue {name} is {state}")

    def _writer(self, name: str, want: dict[str, Any]) -> Any:
        def write() -> None:
            try:
                self.api.patch(QUEUE, name, {"status": want}, subresource="status")
            except ApiError as exc:
                with self.lock:
                    if self.sent.get(name) is want:
                        del self.sent[name]
                        self._mark(name)
                if not exc.not_found:
                    raise
        return write

    # --- lifecycle -------------------------------------------------------------------------------------
    def start(self, timeout: float | None = None) -> bool:
        for r in self.reflectors:
            r.start()
        for r in self.reflectors:
            if not r.synced.wait(timeout):
                return False
        self._thread = threading.Thread(target=self._loop, name="queue-controller", daemon=True)
        self._thread.start()
        return True

    def _loop(self) -> None:
        while not self._stop.is_set():
            with self.lock:
                if not self.dirty:
                    self.lock.wait(self.resync)
                if not self.dirty:  # periodic resync: recount everything
                    self.dirty.update(self.queues)
                batch, self.dirty = self.dirty, set()
            for name in sorted(batch):
                if self._stop.is_set():
                    return
                try:
                    self.sync(name)
                except Exception:
                    log.exception("sync of queue %s failed", name)

    def stop(self) -> None:
        self._stop.set()
        with self.lock:
            self.lock.notify_all()
        for r in self.reflectors:
            r.stop()
        if self._thread is not None:
            self._thread.join(5)
        self.writer.shutdown(5)
