"""Typed per-session plugin state (kube-scheduler's ``framework.CycleState``: ``StateKey`` and ``Read``/``Write``).

Plugins that share data within one session (the label index the node filters and scores both use, pod-affinity
counts, PDB budgets) or hand it to the framework (the fairness plugin's queue numbers for the queue status) do so
through ``ssn.state``.  Each slot is a ``StateKey[T]`` object declared once, next to the type it holds; ``read``
returns a ``T`` and ``write`` accepts only a ``T``, so the type checker follows every value.  Keys compare by
identity, never by name: two keys with one name are two slots.  Only the framework and the plugins read the
state; ``Session.close`` turns what a front-end needs into the ``SessionResult``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Generic, Protocol, TypeVar

import numpy as np

from pyvolcano.api.queue_validate import Problem

T = TypeVar("T")


class StateKey(Generic[T]):
    """One slot of the session state, holding a ``T``; ``name`` is for messages only."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"StateKey({self.name!r})"


class SessionState:
    """The state of one session: ``StateKey[T] -> T``."""

    __slots__ = ("_data",)

    def __init__(self) -> None:
        self._data: dict[StateKey[Any], Any] = {}

    def read(self, key: StateKey[T]) -> T:
        """The value written under ``key``; a ``KeyError`` naming the key when nothing was."""
        try:
            return self._data[key]
        except KeyError:
            raise KeyError(f"session state has no {key.name!r}") from None

    def get(self, key: StateKey[T]) -> T | None:
        return self._data.get(key)

    def write(self, key: StateKey[T], value: T) -> None:
        self._data[key] = value

    def read_or_init(self, key: StateKey[T], init: Callable[[], T]) -> T:
        """The value under ``key``, written first from ``init()`` when there is none (shared lazily built data)."""
        if key in self._data:
            return self._data[key]
        value = self._data[key] = init()
        return value

    def __contains__(self, key: object) -> bool:
        return key in self._data


class QueueShare(Protocol):
    """A queue's numbers as a fairness plugin (proportion, capacity) keeps them: what ``Session.close`` copies
    into ``QueueStatus.fair`` (Volcano's ``queueAttr``)."""

    @property
    def weight(self) -> int: ...
    @property
    def deserved(self) -> np.ndarray: ...
    @property
    def allocated(self) -> np.ndarray: ...
    @property
    def request(self) -> np.ndarray: ...
    @property
    def guarantee(self) -> np.ndarray: ...
    @property
    def capability(self) -> np.ndarray: ...
    @property
    def real_capability(self) -> np.ndarray: ...
    @property
    def share(self) -> float: ...


# --- the keys the framework reads (the plugins write them) -----------------------------------------------------
#: proportion's queue attributes by queue name
PROPORTION_QUEUES: StateKey[Mapping[str, QueueShare]] = StateKey("proportion-queues")
#: capacity's queue attributes by queue name
CAPACITY_QUEUES: StateKey[Mapping[str, QueueShare]] = StateKey("capacity-queues")
#: the queue shares ``Session.close`` copies into ``QueueStatus.fair``, first found first: a plugin names the one it
#: keeps in ``Plugin.queue_share`` (capacity's before proportion's when a conf has both)
QUEUE_SHARES: tuple[StateKey[Mapping[str, QueueShare]], ...] = (CAPACITY_QUEUES, PROPORTION_QUEUES)
#: what the capacity plugin found wrong with the queue tree, fatal problems first
QUEUE_PROBLEMS: StateKey[list[Problem]] = StateKey("capacity-problems")
#: input a plugin could not use and left out, each naming the object and field (``SessionResult.warnings``); the
#: rest is scheduled, as Volcano does after logging such input
PLUGIN_WARNINGS: StateKey[list[str]] = StateKey("plugin-warnings")


def warn(state: SessionState, message: str) -> None:
    """Record ``message`` among the session's ``PLUGIN_WARNINGS`` (once)."""
    got = state.read_or_init(PLUGIN_WARNINGS, list)
    if message not in got:
        got.append(message)
