"""Exact resource usage over simulated time: every change recorded when it happens, integrated exactly.

Sampling the cluster after scheduling cycles misses everything that happens between cycles (pods finishing while
nothing is pending), so a run's utilisation was held at its last sampled value to the end. Here the simulator tells
the ledger when a pod starts holding resources (bound to a node) and when it stops (deleted, finished or released
after eviction); usage is a step function with a step at every such event, and a mean over any window is its exact
integral divided by the window's length. Queues' allocated amounts are kept the same way, and their deserved shares
(which change only when a session recomputes them) as a step function of session times.
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
        if self.times and t < self.times[-1]:
            raise ValueError(f"time went backwards: {t} < {self.times[-1]}")
        if self.times and t == self.times[-1]:
            self.values[-1] = value.copy()  # several changes at one instant: the last one holds
            if len(self.values) > 1 and np.array_equal(self.values[-1], self.values[-2]):
                self.times.pop()
                self.values.pop()
        elif not self.values or not np.array_equal(self.values[-1], value):
            self.times.append(t)
            self.values.append(value.copy())

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
    _held: dict[str, tuple[str, np.ndarray]] = field(default_factory=dict)
    _now: np.ndarray = field(init=False)
    _q_now: dict[str, np.ndarray] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.total = Steps(self.width)
        self._now = np.zeros(self.width)

    def hold(self, t: float, key: str, queue: str, amount: np.ndarray) -> None:
        """Pod ``key`` of ``queue`` holds ``amount`` from ``t`` (a second hold of the same pod replaces the first)."""
        if key in self._held:
            self.release(t, key)
        amount = np.asarray(amount, dtype=float)
        self._held[key] = (queue, amount)
        self._change(t, queue, amount)

    def release(self, t: float, key: str) -> None:
        """Pod ``key`` holds nothing from ``t`` (a pod that held nothing is ignored)."""
        held = self._held.pop(key, None)
        if held is not None:
            self._change(t, held[0], -held[1])

    def _change(self, t: float, queue: str, delta: np.ndarray) -> None:
        self._now = np.maximum(self._now + delta, 0.0)  # float noise never makes usage negative
        self.total.set(t, self._now)
        q = self._q_now.get(queue)
        q = delta.copy() if q is None else np.maximum(q + delta, 0.0)
        self._q_now[queue] = q
        self.queues.setdefault(queue, Steps(self.width)).set(t, q)

    def set_deserved(self, t: float, queue: str, amount: np.ndarray) -> None:
        """A queue's deserved amount as a session computed it at ``t``."""
        self.deserved.setdefault(queue, Steps(self.width)).set(t, np.asarray(amount, dtype=float))

    def utilisation(self, capacity: np.ndarray, t0: float, t1: float) -> np.ndarray:
        """Time-averaged held / capacity per resource over [t0, t1] (0 for a resource the cluster lacks)."""
        cap = np.asarray(capacity, dtype=float)
        mean = self.total.mean(t0, t1)
        return np.divide(mean, cap, out=np.zeros(self.width), where=cap > 0)

    def queue_means(self, t0: float, t1: float) -> dict[str, np.ndarray]:
        return {q: s.mean(t0, t1) for q, s in sorted(self.queues.items())}
