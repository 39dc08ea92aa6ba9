"""What carries the settled and parked jobs from one session to the next without walking them (issue 15).

A session leaves most of a large backlog alone (``Plan.settled_jobs``): settled jobs (nothing to do) and
parked jobs (refused by enqueue while no room came back).  The maps that hold them, their sums and their statuses
are moved from one session to the next by the few jobs that join or leave them, in place, never copied or
compared whole: at 7,000 live jobs a dozen such C-level passes cost 2-3 ms a session, more than the session's
own work (docs/architecture.md, "Between sessions, in place").

Two tools for that:

* ``SettledView``: the settled jobs as one mapping over the two maps the snapshot keeps apart (settled-only and
  parked), so that nothing merges them into a third map every session.
* ``stale_and_gone``: which entries of a per-job ledger carried between sessions (``plugins/_shared.py:
  JobSums``, ``framework/victim_ledger.py: VictimLedger``) are to be recounted and which jobs left, looking only at
  the jobs the snapshot did not carry as settled when the ledger was synced to the snapshot before.
* ``Lender``: a map a ``SessionResult`` hands out (the carried statuses, the parked jobs' reasons) is handed out
  as it is, not copied; the next session copies it only if that result is still alive when the map is about to
  change (copy on write, decided by a weak reference: a simulation drops each result after applying it, so it
  never copies; a caller that keeps results gets the copies it would have had).

``CHECK``: when true (the test suite sets it, ``tests/conftest.py``), every map moved by deltas is compared with
the one computed afresh, and a difference raises ``AssertionError``.
"""

from __future__ import annotations

import contextlib
import os
import weakref
from collections.abc import Callable, Iterator, Mapping, MutableMapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    from pyvolcano.api.job_info import JobInfo

V = TypeVar("V")
E = TypeVar("E")

#: compare every delta-moved map with its fresh computation (tests; ``PYVOLCANO_CHECK_DELTAS=1``)
CHECK = os.environ.get("PYVOLCANO_CHECK_DELTAS", "") == "1"


@contextlib.contextmanager
def checking(on: bool) -> Iterator[None]:
    """``CHECK`` set to ``on`` for the block, then put back: the tests run one case with the checks (proved skips
    still take their turn and must change nothing) and again without (the skips are taken)."""
    global CHECK
    was, CHECK = CHECK, on
    try:
        yield
    finally:
        CHECK = was


def stale_and_gone(entries: Mapping[str, E], jobs: Mapping[str, JobInfo],
                   carried: tuple[Sequence[JobInfo], int, set[str] | None] | None, fresh: Callable[[E, JobInfo], bool],
                   who: str) -> tuple[list[JobInfo], list[str]]:
    """A per-job ledger's work for this session: the jobs whose entry is missing or no longer ``fresh``, and the
    uids of entries whose job is gone.  ``carried``: (the snapshot's unsettled jobs, how many settled jobs it
    carried, the jobs changed in the cache since: ``SnapshotCarry.unsettled``, ``settled``, ``changed``) when the
    ledger was synced to the last snapshot, so that each settled job (the very clone it counted, unchanged) has
    its entry and only the unsettled ones are looked at, and only changed jobs can have gone; None: every job is
    looked at."""
    if carried is None:
        look: Sequence[JobInfo] = list(jobs.values())
        known, changed = 0, None
    else:
        look, known, changed = carried
    get = entries.get
    stale: list[JobInfo] = []
    for job in look:
        e = get(job.uid)
        if e is None:
            stale.append(job)
            continue
        known += 1
        if not fresh(e, job):
            stale.append(job)
    if known == len(entries):
        gone: list[str] = []
    elif changed is not None:
        gone = [uid for uid in changed if uid in entries and uid not in jobs]
        if CHECK:
            assert set(gone) == {uid for uid in entries if uid not in jobs}, f"{who} gone by deltas"
    else:
        gone = [uid for uid in entries if uid not in jobs]
    return stale, gone


class SettledView(MutableMapping[str, V], Generic[V]):
    """The union of two disjoint maps, ``only`` first: the snapshot's settled-only jobs and its parked jobs.
    Reads look in both; ``pop``/``del`` take a key out of whichever holds it; setting a key sets it in ``only``
    (the snapshot's own settled finds).  Length is the sum (the maps never share a key)."""

    __slots__ = ("only", "parked")

    def __init__(self, only: dict[str, V], parked: dict[str, V]) -> None:
        self.only = only
        self.parked = parked

    def __getitem__(self, key: str) -> V:
        only = self.only
        if key in only:
            return only[key]
        return self.parked[key]

    def get(self, key: str, default: Any = None) -> Any:
        hit = self.only.get(key)
        if hit is None:
            return self.parked.get(key, default)
        return hit

    def __contains__(self, key: object) -> bool:
        return key in self.only or key in self.parked

    def __setitem__(self, key: str, value: V) -> None:
        self.only[key] = value

    def __delitem__(self, key: str) -> None:
        if self.only.pop(key, None) is None:
            del self.parked[key]

    def pop(self, key: str, *default: Any) -> Any:
        hit = self.only.pop(key, None)
        if hit is not None:
            return hit
        return self.parked.pop(key, *default)

    def __len__(self) -> int:
        return len(self.only) + len(self.parked)

    def __iter__(self) -> Iterator[str]:
        yield from self.only
        yield from self.parked

    def __bool__(self) -> bool:
        return bool(self.only) or bool(self.parked)

    def __repr__(self) -> str:
        return f"SettledView({len(self.only)} settled, {len(self.parked)} parked)"


class Lender:
    """Whether a map handed to a result may still be read through it: ``lend(result)`` after handing it,
    ``borrowed()`` before changing it in place (true: copy it first, the result still holds it)."""

    __slots__ = ("_to",)

    def __init__(self) -> None:
        self._to: weakref.ref[Any] | None = None

    def lend(self, to: Any) -> None:
        self._to = weakref.ref(to)

    def borrowed(self) -> bool:
        to = self._to
        if to is None:
            return False
        if to() is None:
            self._to = None
            return False
        return True

    def returned(self) -> None:
        """The maps were copied (or replaced): nothing lent is changed from now on."""
        self._to = None
