"""Informer events into the scheduler cache (Volcano's ``pkg/scheduler/cache/event_handlers.go``: AddPod /
UpdatePod / DeletePod, the PodGroup, Queue and PriorityClass handlers, and ``resyncTask``).

What the scheduler decided and the API server has not shown yet is kept over the informers' view: a pod being
bound stays ``Binding`` (``binder.assumed``), a pod being evicted stays ``Releasing`` (``binder.evicting``) and a
PodGroup keeps the phase we wrote (``status.pg_sent``) until an event shows it.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Any

from pyvolcano.api.types import PodGroupPhase, TaskStatus
from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.framework.result import same_status

if TYPE_CHECKING:
    from pyvolcano.kube.binder import Binder
    from pyvolcano.kube.status import StatusUpdater

log = logging.getLogger(__name__)

#: what the API server changes in a pod's metadata on every write (its bookkeeping, nothing the cache reads)
_BOOKKEEPING = frozenset({"resourceVersion", "managedFields"})
_CONDITIONS = frozenset({"conditions"})
_PARTS = frozenset({"metadata", "spec", "status"})


def _same_but(new: dict[str, Any], old: dict[str, Any], but: frozenset[str]) -> bool:
    """``new`` and ``old`` hold the same keys and values, the keys in ``but`` aside (copies without them, compared
    in C: a few dict operations instead of a Python step per key, on every bind echo)."""
    a, b = dict(new), dict(old)
    for k in but:
        a.pop(k, None)
        b.pop(k, None)
    return a == b


class EventHandlers:
    def __init__(self, cache: SchedulerCache, lock: threading.RLock, binder: Binder, status: StatusUpdater) -> None:
        self.cache = cache
        self.lock = lock
        self.binder = binder
        self.status = status
        self._problems_seen: set[str] = set()

    def on_event(self, typ: str, obj: dict[str, Any]) -> None:
        """One informer event (ADDED, MODIFIED, DELETED)."""
        kind = obj.get("kind", "")
        with self.lock:
            if typ == "DELETED":
                if kind == "Pod" and self._newer_pod_cached(obj):
                    return
                self.cache.delete(obj)
                key = self.cache._key(obj)[1]
                if kind == "Pod":
                    self.binder.assumed.pop(key, None)
                    self.binder.evicting.pop(key, None)
                    self.status.cond_sent.pop(key, None)
                    self.status.nom_sent.pop(key, None)
                elif kind == "PodGroup":
                    self.status.pg_sent.pop(key, None)
                    self.status.unquiet(key)
                elif kind == "Queue":
                    self.status.queue_sent.pop(key, None)
            elif kind == "Pod":
                self.upsert_pod(obj)
            else:
                self.cache.upsert(obj)
                if kind == "PodGroup":
                    self._reapply_pg(obj)
                elif kind == "PriorityClass":  # a PodGroup's priority is resolved from its class on upsert
                    for (k, _), raw in list(self.cache.raw.items()):
                        if k == "PodGroup" and (raw.get("spec") or {}).get("priorityClassName") == \
                                obj["metadata"]["name"]:
                            self.cache.upsert(raw)
            self._report_problems()

    def _newer_pod_cached(self, pod: dict[str, Any]) -> bool:
        """The cache holds another pod of this name than the deleted one (another uid): the informer's late
        ``DELETED`` of a pod deleted and re-created under the same name, after the re-created one was read
        directly (a bind's 409 re-reads the pod at once, ahead of the watch stream).  Volcano keys tasks by the
        pod's uid, so that deletion never touches the new pod; here tasks are keyed by name, and deleting would
        drop the new pod, and its assumed bind, until the informer's ``ADDED`` of it arrives."""
        uid = (pod.get("metadata") or {}).get("uid")
        raw = self.cache.raw.get(self.cache._key(pod))
        cached = ((raw or {}).get("metadata") or {}).get("uid")
        return bool(uid and cached and uid != cached)

    def upsert_pod(self, pod: dict[str, Any]) -> None:
        """Volcano's UpdatePod: the pod object, with our own decisions kept until the object reflects them."""
        md = pod.get("metadata") or {}
        key = f"{md.get('namespace') or 'default'}/{md.get('name')}"
        echo = self._bind_echo(key, pod)
        if echo is not None:
            self.cache.upsert(echo, trusted=True)
        else:
            self.cache.upsert(pod)
        uid = md.get("uid") or ""
        gone = bool(md.get("deletionTimestamp"))
        assumed = self.binder.assumed
        a = assumed.get(key)
        if a is not None:
            if a.uid != uid or (pod.get("spec") or {}).get("nodeName") or gone:
                del assumed[key]  # confirmed bound, or the pod we decided about no longer exists
            else:
                t = self.cache.tasks.get(key)
                if t is not None and t.status == TaskStatus.Pending:
                    self.cache.set_task_status(t, TaskStatus.Binding, a.node)
        evicting = self.binder.evicting
        e = evicting.get(key)
        if e is not None:
            if e != uid or gone:
                del evicting[key]
            else:
                t = self.cache.tasks.get(key)
                if t is not None and t.status & (TaskStatus.Running | TaskStatus.Bound):
                    self.cache.set_task_status(t, TaskStatus.Releasing)

    def _bind_echo(self, key: str, pod: dict[str, Any]) -> dict[str, Any] | None:
        """The cached pod object updated with ``pod``, when ``pod`` is the echo of our own bind and nothing else:
        the pod we assumed bound (same uid), now on that node, and otherwise the same object but for its status
        conditions (the binding adds ``PodScheduled``) and the API server's bookkeeping (resourceVersion,
        managedFields).  The cached object's top-level fields are replaced (never changed inside, so a session
        reading a clone's pod sees either the old or the new dict), and the cache takes it as *trusted*: the same
        object, of which only the node and status changed (``SchedulerCache.upsert``), so it is neither validated
        nor converted again.  The fields the cache reads from it are checked here: the node and the phase are
        strings, the conditions a list.  Anything else (None) goes through the full, validated path.

        In a drain every bind comes back as one such pod update; converting and validating each again was a
        tenth of pyvolcano's CPU between its first and last bind (docs/performance.md, "On a cluster: the drain")."""
        a = self.binder.assumed.get(key)
        old = self.cache.raw.get(("Pod", key))
        if a is None or old is None:
            return None
        md, spec, status = pod.get("metadata"), pod.get("spec"), pod.get("status")
        if not (isinstance(md, dict) and isinstance(spec, dict) and isinstance(status, dict)):
            return None
        if md.get("uid") != a.uid or spec.get("nodeName") != a.node or not isinstance(status.get("phase"), str):
            return None
        omd, ospec, ostatus = old.get("metadata"), old.get("spec"), old.get("status")
        if not (isinstance(omd, dict) and isinstance(ospec, dict) and isinstance(ostatus, dict)):
            return None
        if ospec.get("nodeName") or not isinstance(status.get("conditions", []), list):
            return None
        # the cache's normalised spec with the node: the new spec must be exactly that (``_same_but(spec, ospec,
        # {"nodeName"})``, as one C-level comparison: the spec is the largest part, compared on every echo)
        nspec = {**ospec, "nodeName": spec["nodeName"]}
        if (spec != nspec or not _same_but(pod, old, _PARTS) or not _same_but(md, omd, _BOOKKEEPING)
                or not _same_but(status, ostatus, _CONDITIONS)):
            return None
        old["metadata"] = md
        old["spec"] = nspec
        old["status"] = status
        return old

    def _reapply_pg(self, obj: dict[str, Any]) -> None:
        """Keep the phase we wrote until the informer shows it (a stale event must not undo Inqueue)."""
        key = self.cache._key(obj)[1]
        sent = self.status.pg_sent.get(key)
        if sent is None:
            return
        if same_status(obj.get("status") or {}, sent):
            del self.status.pg_sent[key]
            return
        pg = self.cache.podgroups.get(key)
        if pg is not None:
            self.cache.set_podgroup_phase(pg, PodGroupPhase(sent["phase"]))

    def _report_problems(self) -> None:
        if not self.cache.problems:
            return
        for p in self.cache.problems:
            if p not in self._problems_seen:
                self._problems_seen.add(p)
                log.warning("skipped object: %s", p)
        self.cache.problems.clear()
        if len(self._problems_seen) > 10_000:
            self._problems_seen.clear()

    def resync_pod(self, key: str) -> None:
        """Rebuild one task from its pod object (Volcano's resyncTask), dropping our in-memory decision."""
        raw = self.cache.raw.get(("Pod", key))
        if raw is not None:
            self.upsert_pod(raw)

    def forget_pod(self, key: str, uid: str) -> None:
        raw = self.cache.raw.get(("Pod", key))
        if raw is not None and (raw.get("metadata") or {}).get("uid") == uid:
            self.cache.delete(raw)
