"""Leader election on a ``coordination.k8s.io/v1`` Lease, the same protocol as client-go's leaderelection.

Why: two scheduler replicas must never both schedule (they would bind the same free resources twice).
The holder renews the Lease every ``retry_period``; a candidate takes it over only when it has seen the
record unchanged for a whole ``lease_duration`` by its *own* clock (so clock skew between machines does
not matter), and every write is a compare-and-swap on ``resourceVersion`` (409 Conflict loses the race).
A leader that cannot renew for ``renew_deadline`` (< ``lease_duration``) considers itself deposed, so by
the time anyone else may acquire the Lease the old leader has already stopped.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from pyvolcano.kube.client import ApiError
from pyvolcano.kube.resources import LEASE

log = logging.getLogger(__name__)


def _micro_time(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    def __init__(self, api: Any, namespace: str, name: str, identity: str, *, lease_duration: float = 15.0,
                 renew_deadline: float = 10.0, retry_period: float = 2.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if not retry_period < renew_deadline < lease_duration:
            raise ValueError("leader election needs retry-period < renew-deadline < lease-duration")
        self.api = api
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self.clock = clock
        self._observed: dict[str, Any] | None = None
        self._observed_at = 0.0
        self._last_renew: float | None = None
        self.transitions = 0
        self._thread: threading.Thread | None = None

    # --- state ---------------------------------------------------------------------------------------
    @property
    def is_leader(self) -> bool:
        """True only while the last successful renewal is younger than ``renew_deadline``."""
        return self._last_renew is not None and self.clock() - self._last_renew < self.renew_deadline

    @property
    def holder(self) -> str:
        return str((self._observed or {}).get("holderIdentity") or "")

    # --- one attempt ---------------------------------------------------------------------------------
    def try_acquire_or_renew(self) -> bool:
        now = self.clock()
        wall = time.time()
        try:
            lease = self.api.get(LEASE, self.name, self.namespace)
        except ApiError as exc:
            if not exc.not_found:
                log.warning("leader election: cannot read lease %s/%s: %s", self.namespace, self.name, exc)
                return False
            spec = self._spec(wall, acquire=True, transitions=0)
            body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                    "metadata": {"name": self.name, "namespace": self.namespace}, "spec": spec}
            try:
                self.api.create(LEASE, body, self.namespace)
            except ApiError as exc2:
                log.info("leader election: lost the race to create lease: %s", exc2)
                return False
            return self._won(spec, now)
        spec = lease.get("spec") or {}
        record = {k: spec.get(k) for k in ("holderIdentity", "renewTime", "leaseDurationSeconds",
                                           "leaseTransitions")}
        if record != self._observed:
            self._observed = record
            self._observed_at = now
        holder = spec.get("holderIdentity") or ""
        duration = float(spec.get("leaseDurationSeconds") or self.lease_duration)
        if holder and holder != self.identity and self._observed_at + duration > now:
            self._last_renew = None
            return False
        mine = holder == self.identity
        new_spec = self._spec(wall, acquire=not mine, transitions=int(spec.get("leaseTransitions") or 0)
                              + (0 if mine or not holder else 1))
        if mine:
            new_spec["acquireTime"] = spec.get("acquireTime") or new_spec["acquireTime"]
        lease["spec"] = {**spec, **new_spec}
        try:
            self.api.replace(LEASE, lease, self.namespace)
        except ApiError as exc:
            log.info("leader election: lease update failed: %s", exc)
            return False
        return self._won(new_spec, now)

    def _spec(self, wall: float, acquire: bool, transitions: int) -> dict[str, Any]:
        spec: dict[str, Any] = {"holderIdentity": self.identity, "leaseDurationSeconds": int(self.lease_duration),
                                "renewTime": _micro_time(wall), "leaseTransitions": transitions}
        if acquire:
            spec["acquireTime"] = _micro_time(wall)
        return spec

    def _won(self, spec: dict[str, Any], now: float) -> bool:
        self._observed = {k: spec.get(k) for k in ("holderIdentity", "renewTime", "leaseDurationSeconds",
                                                   "leaseTransitions")}
        self._observed_at = now
        self._last_renew = now
        return True

    def release(self) -> None:
        """Give the lease up (on a clean shutdown) so a standby takes over at once."""
        if not self.is_leader:
            return
        self._last_renew = None
        try:
            lease = self.api.get(LEASE, self.name, self.namespace)
            if (lease.get("spec") or {}).get("holderIdentity") == self.identity:
                lease["spec"] = {**lease["spec"], "holderIdentity": "", "leaseDurationSeconds": 1,
                                 "renewTime": _micro_time(time.time())}
                self.api.replace(LEASE, lease, self.namespace)
        except ApiError as exc:
            log.info("leader election: release failed: %s", exc)

    # --- loop ----------------------------------------------------------------------------------------
    def start(self, stop: threading.Event, on_started: Callable[[], None] | None = None,
              on_stopped: Callable[[], None] | None = None) -> threading.Thread:
        """``run`` in a daemon thread; ``join`` waits for it to finish (and so for the Lease to be released)."""
        self._thread = threading.Thread(target=self.run, args=(stop, on_started, on_stopped),
                                        name="leader-election", daemon=True)
        self._thread.start()
        return self._thread

    def join(self, timeout: float) -> bool:
        """Wait until the ``start``-ed loop has ended, released the Lease included; True if it has.

        Why: ``run`` releases the Lease only when its loop sees ``stop``, which may be up to ``retry_period``
        later, and a renewal already in flight when ``stop`` is set may even re-take a Lease that was just
        released elsewhere.  A process that exits without waiting for this leaves the Lease held, so a standby
        waits a whole ``lease_duration`` instead of taking over at once (client-go's ``ReleaseOnCancel``
        releases in the same goroutine that renews, after its renew loop has ended, for the same reason).
        """
        t = self._thread
        if t is None:
            return True
        t.join(timeout)
        return not t.is_alive()

    def run(self, stop: threading.Event, on_started: Callable[[], None] | None = None,
            on_stopped: Callable[[], None] | None = None) -> None:
        """Campaign until leader, then renew until deposed (calls ``on_stopped`` and campaigns again)."""
        leading = False
        while not stop.is_set():
            ok = self.try_acquire_or_renew()
            if ok and not leading:
                leading = True
                self.transitions += 1
                log.info("leader election: %s became the leader of %s/%s", self.identity, self.namespace,
                         self.name)
                if on_started:
                    on_started()
            elif leading and not self.is_leader:
                leading = False
                log.warning("leader election: %s lost the lease %s/%s", self.identity, self.namespace, self.name)
                if on_stopped:
                    on_stopped()
            stop.wait(self.retry_period)
        if leading:
            self.release()
