"""A priority queue ordered by a session comparator (Volcano's util.PriorityQueue)."""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterable
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class _Entry(Generic[T]):
    """A heap entry ordered by the queue's comparator, ties by insertion order."""

    __slots__ = ("cmp", "item", "seq")

    def __init__(self, item: T, seq: int, cmp: Callable[[T, T], int]) -> None:
        self.item = item
        self.seq = seq
        self.cmp = cmp

    def __lt__(self, other: _Entry[T]) -> bool:
        c = self.cmp(self.item, other.item)
        return c < 0 if c else self.seq < other.seq


class PriorityQueue(Generic[T]):
    """Pops the item that ``cmp`` orders first; ``cmp(a, b) < 0`` means a goes before b.

    Ties are broken by insertion order, so the result never depends on hash order.
    """

    __slots__ = ("_cmp", "_heap", "_seq")

    def __init__(self, cmp: Callable[[T, T], int], items: Iterable[T] = ()) -> None:
        self._cmp = cmp
        self._seq = itertools.count()
        self._heap: list[_Entry[T]] = [_Entry(i, next(self._seq), cmp) for i in items]
        heapq.heapify(self._heap)

    def push(self, item: T) -> None:
        heapq.heappush(self._heap, _Entry(item, next(self._seq), self._cmp))

    def pop(self) -> T:
        return heapq.heappop(self._heap).item

    def empty(self) -> bool:
        return not self._heap

    def clone(self) -> PriorityQueue[T]:
        """An independent queue with the same items and order (Volcano's ``PriorityQueue.Clone``: a dry run of a
        job in each candidate hypernode pops its own copy of the job's pending tasks)."""
        q: PriorityQueue[T] = PriorityQueue(self._cmp)
        q._heap = list(self._heap)
        q._seq = itertools.count(next(self._seq))
        return q

    def assign(self, other: PriorityQueue[T]) -> None:
        """Take ``other``'s items (Volcano's worksheet ``ShallowCopyFrom``: the tasks a chosen dry run left)."""
        self._heap = list(other._heap)
        self._seq = itertools.count(next(other._seq))

    def __len__(self) -> int:
        return len(self._heap)


class KeyedQueue(PriorityQueue[T]):
    """A ``PriorityQueue`` whose order is a sort key taken as each item is pushed (``framework/order.py``): heap
    entries are plain tuples, compared in C, instead of comparator calls through the plugins at every sift.  The
    same pop order as ``PriorityQueue(cmp)`` when ``key`` orders as ``cmp`` does with no ties (the job keys end
    with the uid) and no waiting item's key changes while it waits (allocate: only the job whose turn it is
    changes, and it is pushed again after its turn)."""

    __slots__ = ("_key",)

    def __init__(self, key: Callable[[T], Any], items: Iterable[T] = ()) -> None:
        self._key = key
        self._seq = itertools.count()
        self._heap = [(key(i), next(self._seq), i) for i in items]  # type: ignore[misc]
        heapq.heapify(self._heap)

    def push(self, item: T) -> None:
        heapq.heappush(self._heap, (self._key(item), next(self._seq), item))  # type: ignore[misc]

    def pop(self) -> T:
        return heapq.heappop(self._heap)[2]  # type: ignore[index]

    def clone(self) -> PriorityQueue[T]:
        q: KeyedQueue[T] = KeyedQueue(self._key)
        q._heap = list(self._heap)
        q._seq = itertools.count(next(self._seq))
        return q
