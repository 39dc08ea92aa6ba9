"""What the incremental layer keeps between sessions, and what it hands one session (issue 27).

``IncrementalState`` is the one object the ``SchedulerCache`` keeps for the layer (``SchedulerCache(memo=True)``);
the cache never reads its fields: it asks ``take_handover`` which jobs the last session left alone,
``settled_record`` whether a reused clone carries a settled record, ``refusals_stand`` to keep a changed parked
job's refusal under its epoch, and ``snapshot_carry`` for the snapshot's one carry field (``SnapshotCarry``).  The
session reads that field through its plan (``plan.py``) and tells the layer what to carry with ``hand_over``.

Values plugins carry whole from one session to the next (overcommit's ``JobSums``, proportion's static queue
numbers, the topology's constrained jobs) live in ``CarriedValues`` under typed ``CarryKey[T]`` slots, declared
next to the type they hold, as ``framework/state.py``'s ``StateKey`` does for one session.
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

from pyvolcano.api.job_info import JobInfo
from pyvolcano.framework.incremental.memo import BlockedMemo

if TYPE_CHECKING:
    from pyvolcano.conf.registration import Registration
    from pyvolcano.framework.incremental.plan import SettledSums
    from pyvolcano.framework.incremental.records import Record

T = TypeVar("T")


class CarryKey(Generic[T]):
    """One slot of the values carried between sessions, holding a ``T``; compared by identity, ``name`` is for
    messages only."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"CarryKey({self.name!r})"


class CarriedValues:
    """``CarryKey[T] -> T``, kept from one session to the next (exact whatever the conf: each value checks what
    it was made from)."""

    __slots__ = ("_data",)

    def __init__(self) -> None:
        self._data: dict[CarryKey[Any], Any] = {}

    def get(self, key: CarryKey[T]) -> T | None:
        return cast("T | None", self._data.get(key))

    def put(self, key: CarryKey[T], value: T) -> None:
        self._data[key] = value

    def setdefault(self, key: CarryKey[T], init: Callable[[], T]) -> T:
        if key in self._data:
            return cast(T, self._data[key])
        value = self._data[key] = init()
        return value


@dataclass
class Handover:
    """What one session leaves the next snapshot (``Session.close`` through ``Plan.hand_over``): the jobs it left
    alone, with their settled records, which the next snapshot hands over as the very clones they are."""

    #: ``SnapshotCarry.seq`` of that session's snapshot: only the next snapshot takes it
    seq: int
    #: settled jobs left alone (not parked), uid -> settled record
    left: dict[str, Record]
    #: the jobs of that session's map it did *not* leave alone (a uid may be listed twice): the next snapshot
    #: hands those over again without comparing the whole map with the left-alone maps
    not_left: list[str]
    #: the blocked jobs among ``left`` (admitted, pods pending, memo-blocked): the next session's allocate checks
    #: each against its memo entry before any turn
    blocked: list[str]
    #: parked jobs (Pending, refused by enqueue under ``parked_epoch``), uid -> record; None: not parking
    parked: dict[str, Record] | None = None
    parked_epoch: int = -1


@dataclass
class LeftAlone:
    """``take_handover``'s answer to the snapshot: the last session's left-alone maps (the snapshot's now, moved in
    place), its not-left list (None: compare the maps) and its blocked jobs."""

    settled: dict[str, Record] = field(default_factory=dict)
    parked: dict[str, Record] = field(default_factory=dict)
    parked_epoch: int = -1
    not_left: list[str] | None = None
    blocked: list[str] = field(default_factory=list)


@dataclass
class ParkGroups:
    """The parked jobs by (queue, minResources bytes, enqueue reason), each group's job-order keys sorted (the key
    ends with the uid), kept by close from one session to the next as jobs join and leave (``where``: uid ->
    (group, key)); ``groups`` None: not kept.  ``seq``: the ``SnapshotCarry.seq`` of the session that left them, ``reg``
    the conf registration they were made under (the job-order key is the conf's)."""

    groups: dict[tuple[Any, ...], list[tuple[Any, ...]]] | None = None
    where: dict[str, tuple[tuple[Any, ...], tuple[Any, ...]]] = field(default_factory=dict)
    seq: int = -1
    reg: Registration | None = None


class IncrementalState:
    """Everything carried between sessions, kept by the cache without looking inside."""

    def __init__(self) -> None:
        #: the blocked-job memo (``memo.py``)
        self.memo = BlockedMemo()
        #: values plugins carry whole (``CarryKey``)
        self.values = CarriedValues()
        #: the conf registration under which the last session recorded jobs as settled (``Plan.open``)
        self.settled_reg: Registration | None = None
        self.handover: Handover | None = None
        #: what close adds for the settled jobs the last session left alone (``plan.SettledSums``)
        self.sums: SettledSums | None = None
        #: the last session's parked jobs by group (``Plan.keep_park_groups``)
        self.park = ParkGroups()

    # --- the cache's side --------------------------------------------------------------------------------
    def take_handover(self, seq: int, reuse: bool) -> LeftAlone:
        """What the session of snapshot ``seq`` (the last one) left alone; consumed.  Nothing when the cache does
        not reuse clones or no settled record is kept."""
        got = LeftAlone()
        if not reuse or self.settled_reg is None:
            return got
        h, self.handover = self.handover, None
        if h is not None and h.seq == seq:
            got.settled, got.blocked, got.not_left = h.left, h.blocked, h.not_left
            if h.parked:  # under another epoch too: the session checks them again
                got.parked, got.parked_epoch = h.parked, h.parked_epoch
        return got

    def settled_record(self, job: JobInfo, clone: JobInfo, reuse: bool) -> Record | None:
        """The settled record a reused clone carries (``job.derived``, written by the last close it was in), when
        it was made under the registration the last session settled under at this version and phase."""
        reg = self.settled_reg
        if reg is None or not reuse:
            return None
        rec = job.derived.get("settled")
        if rec is None:
            return None
        key = rec[0]
        if key[0] == job.version and key[2] is reg and clone.podgroup is not None and clone.podgroup.phase == key[1]:
            return cast("Record", rec[1])
        return None

    def refusals_stand(self, changed: set[str], parked: dict[str, Record], epoch: int) -> None:
        """A parked job that changed is looked at again: its refusal stands under the epoch it was parked under
        (checked again then, or left refused by enqueue's group checks, ``actions/enqueue.py``), as the memo would
        have recorded it had enqueue looked at every job."""
        refusals = self.memo.enqueue
        for uid in changed:
            if uid in parked:
                e = refusals.get(uid)
                if e is not None:
                    e.key = (epoch, e.key[1])

    def prune(self, jobs: dict[str, JobInfo]) -> None:
        memo = self.memo
        if len(memo.enqueue) + len(memo.allocate) > 2 * len(jobs) + 64:
            memo.prune(jobs)

    # --- the session's side ------------------------------------------------------------------------------
    def hand_over(self, handover: Handover) -> None:
        self.handover = handover


@dataclass
class SnapshotCarry:
    """The snapshot's one carry field: the layer's state and what this snapshot found carried (None on the
    snapshot: ``--full-sessions``, every job examined every session)."""

    state: IncrementalState
    #: the cache's epochs when the snapshot was taken (``memo.py``)
    free_epoch: int = 0
    use_epoch: int = 0
    alloc_epoch: int = 0
    #: (``SchedulerCache.room_base``, ``room_nodes``, ``room_seq``) when the snapshot was taken
    room: tuple[int, list[str], int] = (0, [], 0)
    #: the cache's count of snapshots when this one was taken (``Handover.seq`` names it)
    seq: int = 0
    #: jobs the last session recorded as settled and that are still the same (same version, clone reused, same
    #: PodGroup phase), with the record, under the conf registration ``settled_reg`` it was made with; the session
    #: uses them only under that same registration (``Plan.open``); a ``SettledView`` over ``settled_only`` and
    #: ``parked`` when there are parked jobs
    settled: MutableMapping[str, Record] = field(default_factory=dict)
    settled_reg: Registration | None = None
    #: the jobs of ``settled`` that are parked (Pending, refused by enqueue under ``parked_epoch``)
    parked: dict[str, Record] = field(default_factory=dict)
    #: ``settled`` without the parked jobs
    settled_only: dict[str, Record] = field(default_factory=dict)
    #: the jobs of ``settled_only`` that are blocked (admitted, pods pending, memo-blocked)
    blocked: list[str] = field(default_factory=list)
    #: the ``free_epoch`` the parked jobs were parked under: when it is not ``free_epoch``, room came back since
    parked_epoch: int = -1
    #: the jobs not in ``settled``, in the snapshot's job order
    unsettled: list[JobInfo] = field(default_factory=list)
    #: each job's position in the snapshot's job order (increasing; None: not kept)
    pos: dict[str, int] | None = None
    #: the jobs this snapshot handed over again when it carried the last job map (None: it walked every job)
    redone: set[str] | None = None
    #: with ``redone``, the jobs that changed in the cache since the last snapshot; None with ``redone``
    changed: set[str] | None = None
