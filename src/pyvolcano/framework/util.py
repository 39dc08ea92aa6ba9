"""A priority queue ordered by a session comparator (Volcano's util.PriorityQueue)."""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

T = TypeVar("T")


class PriorityQueue(Generic[T]):
    """Pops the item that ``cmp`` orders first; ``cmp(a, b) < 0`` means a goes before b.

    Ties are broken by insertion order, so the result never depends on hash order.
    """

    __slots__ = ("_heap", "_seq", "_wrap")

    def __init__(self, cmp: Callable[[T, T], int], items: Iterable[T] = ()) -> None:
        class _W:
            __slots__ = ("item", "seq")

            def __init__(self, item: T, seq: int) -> None:
                self.item = item
                self.seq = seq

            def __lt__(self, other: _W) -> bool:
                c = cmp(self.item, other.item)
                return c < 0 if c else self.seq < other.seq

        self._wrap = _W
        self._seq = itertools.count()
        self._heap = [_W(i, next(self._seq)) for i in items]
        heapq.heapify(self._heap)

    def push(self, item: T) -> None:
        heapq.heappush(self._heap, self._wrap(item, next(self._seq)))

    def pop(self) -> T:
        return heapq.heappop(self._heap).item

    def empty(self) -> bool:
        return not self._heap

    def __len__(self) -> int:
        return len(self._heap)
