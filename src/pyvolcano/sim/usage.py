"""Exact resource usage over simulated time: every change recorded when it happens, integrated exactly.

Sampling the cluster after scheduling cycles misses everything that happens between cycles (pods finishing while
nothing is pending), so a run's utilisation was held at its last sampled value to the end. Here the simulator tells
the ledger when a pod starts holding resources (bound to a node) and when it stops (deleted, finished or released
after eviction); usage is a step function with a step at every such event, and a mean over any window is its exact
integral divided by the window's length. Queues' allocated amounts are kept the same way, and their deserved shares
(which change only when a session recomputes them) as a step function of session times.

A pod deleted before it succeeded (evicted by preempt or reclaim, lost with its node, deleted by a job restart)
threw away what it held from its bind to its deletion: ``lost`` adds that up (resource-seconds) by cause and queue.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class Steps:
    """A right-continuous step function of time: ``values[i]`` holds from ``times[i]`` until ``times[i+1]``."""

    width: int
    times: list[float] = field(default_factory=list)
    values: list[np.ndarray] = field(default_factory=list)

    def set(self, t: float, value: np.ndarray) -> None:
        # equal values compared as lists of floats (as ``np.array_equal``, NaN unequal; a handful of entries, set
        # at every pod start and finish and every session: a NumPy call costs more than the comparison)
        if self.times and t < self.times[-1]:
            raise ValueError(f"time went backwards: {t} < {self.times[-1]}")
        if self.times and t == self.times[-1]:
            self.values[-1] = value.copy()  # several changes at one instant: the last one holds
            if len(self.values) > 1 and value.tolist() == self.values[-2].tolist():
                self.times.pop()
                self.values.pop()
        elif not self.values or self.values[-1].tolist() != value.tolist():
            self.times.append(t)
            self.values.append(value.copy())

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """(times, values as a len(times) x width array)."""
        return np.asarray(self.times, dtype=float), np.asarray(self.values, dtype=float).reshape(len(self.times),
                                                                                                  self.width)

    def at(self, t: float) -> np.ndarray:
        i = np.searchsorted(self.times, t, side="right") - 1
        return self.values[i].copy() if i >= 0 else np.zeros(self.width)

    def integral(self, t0: float, t1: float) -> np.ndarray:
        """The exact integral over [t0, t1] (zero before the first step)."""
        if t1 <= t0 or not self.times:
            return np.zeros(self.width)
        ts = np.asarray(self.times)
        vs = np.asarray(self.values).reshape(len(ts), self.width)
        ends = np.append(ts[1:], np.inf)
        lo, hi = np.maximum(ts, t0), np.minimum(ends, t1)
        dt = np.clip(hi - lo, 0.0, None)
        return (vs * dt[:, None]).sum(axis=0)

    def mean(self, t0: float, t1: float) -> np.ndarray:
        return self.integral(t0, t1) / (t1 - t0) if t1 > t0 else self.at(t0)


@dataclass
class UsageLedger:
    """What pods hold, cluster-wide and per queue, as step functions (``width`` resources, e.g. cpu/memory/gpu)."""

    width: int
    total: Steps = field(init=False)
    queues: dict[str, Steps] = field(default_factory=dict)
    deserved: dict[str, Steps] = field(default_factory=dict)
    #: resource-seconds held by pods deleted before they succeeded, by cause and by queue
    lost: dict[str, np.ndarray] = field(default_factory=dict)
    lost_queues: dict[str, np.ndarray] = field(default_factory=dict)
    _held: dict[str, tuple[str, np.ndarray, float]] = field(default_factory=dict)
    _now: np.ndarray = field(init=False)
    _q_now: dict[str, np.ndarray] = field(default_factory=dict)
    #: goes up with every change of a holding or a deserved amount: a reader that saw the same count saw the same
    #: ledger (``Simulator._deserved_between_sessions`` skips a call that would set every queue as it stands)
    changes: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        self.total = Steps(self.width)
        self._now = np.zeros(self.width)

    def hold(self, t: float, key: str, queue: str, amount: np.ndarray) -> None:
        """Pod ``key`` of ``queue`` holds ``amount`` from ``t`` (a second hold of the same pod replaces the first)."""
        if key in self._held:
            self.release(t, key)
        amount = np.asarray(amount, dtype=float)
        self._held[key] = (queue, amount, t)
        self._change(t, queue, amount)

    def release(self, t: float, key: str, lost: str | None = None) -> np.ndarray | None:
        """Pod ``key`` holds nothing from ``t`` (a pod that held nothing is ignored: None).  With ``lost`` (a
        cause: the pod's work is thrown away), what it held times how long it held it is added to ``lost``; the
        resource-seconds held are returned either way."""
        held = self._held.pop(key, None)
        if held is None:
            return None
        queue, amount, since = held
        spent = amount * (t - since)
        if lost is not None:
            self.lost[lost] = self.lost.get(lost, np.zeros(self.width)) + spent
            self.lost_queues[queue] = self.lost_queues.get(queue, np.zeros(self.width)) + spent
        self._change(t, queue, -amount)
        return spent

    def _change(self, t: float, queue: str, delta: np.ndarray) -> None:
        self.changes += 1
        self._now = np.maximum(self._now + delta, 0.0)  # float noise never makes usage negative
        self.total.set(t, self._now)
        q = self._q_now.get(queue)
        q = delta.copy() if q is None else np.maximum(q + delta, 0.0)
        self._q_now[queue] = q
        self.queues.setdefault(queue, Steps(self.width)).set(t, q)

    def held(self, queue: str) -> np.ndarray:
        """What ``queue``'s pods hold now."""
        q = self._q_now.get(queue)
        return np.zeros(self.width) if q is None else q.copy()

    def set_deserved(self, t: float, queue: str, amount: np.ndarray | list[float]) -> None:
        """A queue's deserved amount as a session computed it at ``t``.  The amount the series already holds, set at
        a later time (most sessions), is a step ``Steps.set`` would not add: it costs no array and is not counted
        in ``changes``."""
        steps = self.deserved.get(queue)
        if steps is None:
            steps = self.deserved[queue] = Steps(self.width)
        elif steps.times and t > steps.times[-1] and steps.values[-1].tolist() == (
                amount.tolist() if isinstance(amount, np.ndarray) else amount):
            return
        self.changes += 1
        steps.set(t, np.asarray(amount, dtype=float))

    def utilisation(self, capacity: np.ndarray, t0: float, t1: float) -> np.ndarray:
        """Time-averaged held / capacity per resource over [t0, t1] (0 for a resource the cluster lacks)."""
        cap = np.asarray(capacity, dtype=float)
        mean = self.total.mean(t0, t1)
        return np.divide(mean, cap, out=np.zeros(self.width), where=cap > 0)

    def queue_means(self, t0: float, t1: float) -> dict[str, np.ndarray]:
        return {q: s.mean(t0, t1) for q, s in sorted(self.queues.items())}

    def queue_shares(self, capacity: np.ndarray, t0: float, t1: float) -> dict[str, dict[str, float | None]]:
        """Each queue's exact time averages over [t0, t1]: ``allocated`` and ``deserved``, the dominant share of
        the cluster (the largest of held / capacity over the resources the cluster has), and ``share``, the
        proportion plugin's share (``updateShare``, ``pkg/scheduler/plugins/proportion/proportion.go``: the
        largest allocated / deserved over the resources, with ``helpers.Share``'s 0/0 = 0 and x/0 = 1); None
        for a queue no session gave a deserved amount (no proportion or capacity plugin)."""
        cap = np.asarray(capacity, dtype=float)
        has = cap > 0
        out: dict[str, dict[str, float | None]] = {}
        for q in sorted(set(self.queues) | set(self.deserved)):
            times, alloc, des = self.queue_series(q)
            row: dict[str, float | None] = {"allocated": _mean_of(times, dominant(alloc, cap), t0, t1),
                                            "deserved": None, "share": None}
            if q in self.deserved:
                row["deserved"] = _mean_of(times, dominant(des, cap), t0, t1)
                row["share"] = _mean_of(times, proportion_share(alloc[:, has], des[:, has]), t0, t1)
            out[q] = row
        return out

    def queue_series(self, queue: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(times, allocated, deserved) of ``queue`` on the union of both step functions' steps: each row holds
        from its time until the next."""
        empty = Steps(self.width)
        a, d = self.queues.get(queue, empty), self.deserved.get(queue, empty)
        times = np.union1d(np.asarray(a.times, dtype=float), np.asarray(d.times, dtype=float))
        return times, _values_at(a, times), _values_at(d, times)


def _values_at(s: Steps, times: np.ndarray) -> np.ndarray:
    """``s`` at each of ``times`` (zero before its first step), vectorised."""
    if not s.times:
        return np.zeros((len(times), s.width))
    ts, vs = s.arrays()
    i = np.searchsorted(ts, times, side="right") - 1
    out = vs[np.maximum(i, 0)]
    out[i < 0] = 0.0
    return out


def dominant(values: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """Per row, the largest fraction of ``capacity`` over the resources the cluster has."""
    cap = np.asarray(capacity, dtype=float)
    has = cap > 0
    if not has.any() or not len(values):
        return np.zeros(len(values))
    return np.asarray((values[:, has] / cap[has]).max(axis=1))


def proportion_share(alloc: np.ndarray, deserved: np.ndarray) -> np.ndarray:
    """Per row, Volcano's proportion share: max over resources of ``helpers.Share(allocated, deserved)``
    (``pkg/scheduler/api/helpers/helpers.go``: 0 when both are 0, 1 when only deserved is)."""
    if not alloc.size:
        return np.zeros(len(alloc))
    safe = np.where(deserved > 0, deserved, 1.0)
    share = np.where(deserved > 0, alloc / safe, np.where(alloc > 0, 1.0, 0.0))
    return np.asarray(share.max(axis=1))


def _mean_of(times: np.ndarray, values: np.ndarray, t0: float, t1: float) -> float:
    """The time average over [t0, t1] of the step function ``values[i]`` from ``times[i]`` (zero before)."""
    if not len(times):
        return 0.0
    if t1 <= t0:
        i = int(np.searchsorted(times, t0, side="right")) - 1
        return float(values[i]) if i >= 0 else 0.0
    ends = np.append(times[1:], np.inf)
    dt = np.clip(np.minimum(ends, t1) - np.maximum(times, t0), 0.0, None)
    return float((values * dt).sum() / (t1 - t0))
