"""Blocked-job memo: sessions whose cost follows what changed (issue 15 item 4).

A busy cluster keeps a backlog of jobs that cannot be admitted (enqueue) or placed (allocate), and a plain session
re-sorts and re-tests every one of them every period.  The memo remembers, per job, that the last session that
examined it found it blocked, under a *fingerprint* of everything that answer depends on; a later session whose
fingerprint for that job is the same skips the job and reuses the recorded reason (``enqueue_reason``, fit
errors), because it would be refused again.

Why a skip changes no decision
------------------------------
Both actions make a refusal a no-op: enqueue's refused job changes no plugin state when every jobEnqueueable voter
that keeps state (proportion counts what it admits in ``inqueue``) is the last voter of its tier, so a rejection
after its permit cannot happen (``Rule.VOTE`` returns at the first reject); allocate's failed gang turn is a
discarded statement, which restores node arrays, job buckets and every event handler's state exactly.  A skipped
no-op leaves every other job's turn, the queue order (a total order, re-chosen from the same state) and the
results unchanged.  What remains is that the skipped job's answer is still "no":

* **cluster room only shrank**.  ``SchedulerCache.free_epoch`` moves on every change that can give room back or
  change a rule's input other than by consuming it: a node added, changed or deleted, a queue, PriorityClass,
  PodDisruptionBudget, ResourceQuota or Namespace changed, a pod deleted, a pod leaving a holding status
  (finished, failed, evicted -> Releasing, back to Pending), a pod of another scheduler changed, a PodGroup
  deleted or changed other than admitted (Pending -> Inqueue) or re-sent unchanged -- Inqueue -> Running gives back
  proportion's and overcommit's reservation for the pods it now holds.  Allocate's key uses
  ``SchedulerCache.alloc_epoch`` instead, which moves on the same changes but a PodGroup's phase alone (same
  queue, minimums and PriorityClass, not back to Pending): a phase gives back enqueue's reservations only, no
  node room and no queue allocation (``allocatable`` sums the tasks' allocations, whatever their PodGroup's
  phase), and the job's own phase is in its version.  What does *not* move it only consumes:
  new pending jobs and pods, admissions, binds (Pending -> Allocated/Binding/Bound/Running).  Under those,
  proportion's ``allocated + inqueue - elastic`` and overcommit's ``used + inqueue`` only grow (a Running group's
  extra pods add as much to elastic as to allocated), node idle only falls, and the built-in predicates
  (resources, pod count, host ports, the proportional GPU check; node labels, taints and ``unschedulable`` are
  node changes) can only refuse more.  Inside the later session, jobs ahead of the skipped one consume at least
  what they did before (what was committed then is bound now).
* **the queue's share did not move**: allocate's ``allocatable`` compares with proportion's *deserved*, which
  moves with every queue's demand (a new job in the same queue can raise it), so the key holds the queue's
  deserved vector as this session computed it (``Session.proportion_deserved``).  capacity's compares with
  ``realCapability``, a function of the queues' specs and the cluster total, whose changes move the epochs.
* **its own spec did not change**: the cache job's ``version`` (PodGroup and every pod of the job).
* **the conf is the same object** (a reload makes a new one) and every plugin in it declares that its rules are
  covered by the above (``Contract.FINGERPRINTED``, ``contracts.py``); any other plugin (sla's time-based
  admission, user plugins that declare nothing) turns the memo off for the session.
* **greedy placement anomalies**: a gang of several pods placed greedily by score could succeed with less room
  (other nodes scored differently), so a job with more than one pod to place is keyed on
  ``SchedulerCache.use_epoch`` too (any change of node usage); a single pod fits somewhere or not, whatever
  the scores.
* **room back on a few nodes only** (``SchedulerCache._room``): a pod of ours leaving a holding status or going
  gives room back on its node alone (and its queue's allocation); a finished pod or a PodGroup going gives none
  back on any node.  These move ``free_epoch`` (enqueue) and are logged (``room_nodes``), not ``alloc_epoch``.
  A job of one pod that every node refused (not its queue, a prePredicate or a failed role: the entry's
  ``nodes_only``) is still refused if its pod fits none of the nodes logged since by resources (its smaller
  request against their future idle): elsewhere room only shrank.  For such a job the queue's deserved is not
  in the key either (it decides ``allocatable`` only).  Any other blocked job is looked at again after any
  logged change.  With ``deltas.CHECK`` (the tests) the job still takes its turn, which must place nothing.
  Such jobs' entries are kept in room classes (``_RoomClass``: one ``alloc_epoch``, pod template and room stamp),
  decided and restamped a class at a time (``SessionMemo.still_blocked``).  A job looked at again because its pod
  fits one of those nodes is asked again at its turn (``SessionMemo.room_taken``): in a session turns only take
  room, so if it fits none of them by then, its turn is skipped as well.
* **a gang the nodes cannot hold** (``_gang_short``): a job whose key differs only by node usage (``use_epoch``),
  its queue's deserved or room logged since, with the same ``alloc_epoch`` and version, is still blocked while its
  ready, pipelined and best-effort pods plus, per pod template, as many pods as all nodes' idle resources can take
  one after another (``actions/allocate.py: pod_slots``) stay below ``minAvailable``: every placement takes at least
  its request from one node's idle whatever the order and the scores, and predicates and ``allocatable`` only refuse
  more, so the turn would end in a discarded statement.  What decides ``jobReady``/``jobPipelined`` must do it as gang
  does (``Contract.GANG_READINESS``; among the memo's plugins nothing else registers them).
  With ``deltas.CHECK`` the turn is taken and must place nothing.
  The fit errors handed back are the last turn's: their node counts may lag until the job takes a turn again.
* **no future idle**: pipelining onto Releasing resources depends on which jobs went first, so allocate neither
  records nor uses the memo in a session where any node has releasing resources; and a job with pod
  (anti-)affinity or topology spread constraints is never memoised (another pod's bind can satisfy them).

A job skipped here is not even looked at by the session's other passes when the conf runs only enqueue, allocate
and backfill: it is left alone as a *blocked* job (``Plan.settled_jobs``), and allocate makes this same check
for it before any turn (``actions/allocate.py``), looking again at those it cannot keep blocked.

``--full-sessions`` (``SchedulerCache(memo=False)``) examines every job every session, as before;
``tests/sim/test_memo.py`` runs random contended workloads with preempt and reclaim both ways and compares every
job's outcome.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Set
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pyvolcano import registry
from pyvolcano.api.fit_errors import FitErrors
from pyvolcano.api.job_info import JobInfo, TaskInfo
from pyvolcano.api.types import TaskStatus
from pyvolcano.errors import ConfigError
from pyvolcano.framework.incremental import deltas
from pyvolcano.framework.incremental.contracts import Contract, Contracts, conf_plugins, memo_off_by


class _Entry:
    """One job's memo entry: the fingerprint (``key``) under which it was last found blocked, and its reason."""

    __slots__ = ("_room", "cls", "enqueue_reason", "failed_roles", "fit_errors", "key", "nodes_only", "uid")

    def __init__(self, uid: str, key: tuple[Any, ...], enqueue_reason: str = "",
                 fit_errors: dict[str, FitErrors] | None = None, failed_roles: frozenset[str] = frozenset(),
                 room: int = -1, nodes_only: bool = False) -> None:
        self.uid = uid
        self.key = key
        self.enqueue_reason = enqueue_reason
        self.fit_errors: dict[str, FitErrors] = {} if fit_errors is None else fit_errors
        self.failed_roles = failed_roles
        self._room = room
        #: allocate: whether the job was one pod that no node could take (not refused by its queue, a prePredicate
        #: or a failed role)
        self.nodes_only = nodes_only
        #: the ``_RoomClass`` holding the entry's room stamp, or None (then ``_room`` holds it)
        self.cls: _RoomClass | None = None

    @property
    def room(self) -> int:
        """Allocate: ``SchedulerCache.room_seq`` when recorded (or last confirmed): its class's, while it has one."""
        cls = self.cls
        return self._room if cls is None else cls.room

    @room.setter
    def room(self, seq: int) -> None:
        if self.cls is not None:  # its own stamp from now on
            self.cls.detach(self)
        self._room = seq


class _RoomClass:
    """The allocate entries of one-pod jobs that no node could take (``nodes_only``), of one pod template, recorded
    or confirmed under one ``alloc_epoch`` and sharing one room stamp (``BlockedMemo.classes``).

    Whether such a job is still blocked reads, besides its own version (unchanged for a blocked job: its clone is
    the one left alone), only ``alloc_epoch``, the room stamp and whether its pod template fits one of the nodes
    given room back since (``SessionMemo.allocate_blocked``): one answer for the whole class.  So
    ``SessionMemo.still_blocked`` decides a class at once, and moves the stamp of all its members by moving the
    class's: a session's check of the blocked backlog costs a few steps per class, not a loop over thousands of
    jobs."""

    __slots__ = ("alloc_epoch", "members", "owner", "room", "template")

    def __init__(self, owner: BlockedMemo, alloc_epoch: int, template: object, room: int) -> None:
        self.owner = owner
        self.alloc_epoch = alloc_epoch
        self.template = template
        self.room = room
        self.members: dict[str, _Entry] = {}

    @property
    def ckey(self) -> tuple[int, object, int]:
        return (self.alloc_epoch, self.template, self.room)

    def detach(self, e: _Entry) -> None:
        """The entry out of the class, keeping the class's room stamp as its own."""
        e._room = self.room
        e.cls = None
        del self.members[e.uid]
        if not self.members:
            self.owner.classes.pop(self.ckey, None)


@dataclass
class BlockedMemo:
    """Per job uid: the fingerprint under which it was last found blocked, and the reason.  Kept between sessions
    in the layer's ``IncrementalState`` (``state.py``); sessions reach it through their snapshot's carry."""

    enqueue: dict[str, _Entry] = field(default_factory=dict)
    allocate: dict[str, _Entry] = field(default_factory=dict)
    #: jobs skipped (tests and benchmarks read it)
    skipped: int = 0
    #: the conf the entries were recorded under (a reload makes a new object and forgets them all)
    conf: Any = None
    #: whether that conf allows skipping in enqueue and in allocate (``_conf_ok``, worked out once per conf)
    conf_ok: tuple[bool, bool] = (False, False)
    #: the allocate entries of ``_RoomClass`` members, by (alloc_epoch, pod template, room stamp)
    classes: dict[tuple[int, object, int], _RoomClass] = field(default_factory=dict)

    def prune(self, alive: dict[str, Any]) -> None:
        for d in (self.enqueue, self.allocate):
            for uid in [u for u in d if u not in alive]:
                e = d.pop(uid)
                if e.cls is not None:
                    e.cls.detach(e)

    def join(self, e: _Entry, template: object) -> None:
        """Put an entry without a class in the class of its alloc_epoch, pod template and room stamp."""
        assert e.cls is None
        ck = (e.key[0], template, e._room)
        cls = self.classes.get(ck)
        if cls is None:
            cls = self.classes[ck] = _RoomClass(self, e.key[0], template, e._room)
        cls.members[e.uid] = e
        e.cls = cls

    def restamp(self, cls: _RoomClass, room: int) -> _RoomClass:
        """Move a class's room stamp (all its members'), merged with the class already under the new stamp if
        there is one (the smaller into the larger, which is returned; the other is left empty)."""
        del self.classes[cls.ckey]
        cls.room = room
        other = self.classes.get(cls.ckey)
        if other is None:
            self.classes[cls.ckey] = cls
            return cls
        big, small = (other, cls) if len(other.members) >= len(cls.members) else (cls, other)
        for e in small.members.values():
            e.cls = big
        big.members.update(small.members)
        small.members = {}
        self.classes[cls.ckey] = big
        return big


def option_contracts(opt: Any) -> Contracts:
    """The contracts one plugin entry of a conf keeps: its class's, under the entry's arguments
    (``Plugin.contracts_for``)."""
    args = opt.args()
    try:
        return registry.plugin_class(opt.name).contracts_for(args)
    except ConfigError as exc:
        raise args.located(exc) from None


def plugin_contracts(conf: Any) -> list[tuple[str, Contracts]]:
    """Each plugin of the conf, in tier order, with the contracts it keeps under its arguments (``contracts.py``)."""
    return conf_plugins(([(opt.name, opt) for opt in tier.plugins] for tier in conf.tiers), option_contracts)


def _conf_ok(conf: Any, enqueue: bool) -> bool:
    """Whether the conf allows skipping blocked jobs in enqueue (``enqueue``) or allocate: every plugin declares
    ``Contract.FINGERPRINTED``, and for enqueue, in each tier, a voter that keeps state on a permit
    (``Contract.STATEFUL_PERMIT``) is the last of the tier's enqueue voters."""
    if memo_off_by(plugin_contracts(conf)) is not None:
        return False
    if enqueue:
        for tier in conf.tiers:
            voters = [c for c in (option_contracts(opt) for opt in tier.plugins if opt.enabled("enableJobEnqueued"))
                      if Contract.ENQUEUE_VOTER in c]
            for i, c in enumerate(voters):
                if Contract.STATEFUL_PERMIT in c and i != len(voters) - 1:
                    return False
    return True


def _affinity(job: JobInfo) -> bool:
    """Some pending pod of the job has pod (anti-)affinity or topology spread constraints."""
    return any(t.uses_pod_constraints for t in job.index.get(TaskStatus.Pending, {}).values())


class SessionMemo:
    """The memo as one session sees it: the snapshot's epochs and whether this conf allows skipping."""

    def __init__(self, memo: BlockedMemo, conf: Any, free_epoch: int, use_epoch: int, alloc_epoch: int,
                 room: tuple[int, list[str], int]) -> None:
        if memo.conf is not conf:
            memo.enqueue.clear()
            memo.allocate.clear()
            memo.classes.clear()
            memo.conf = conf
            memo.conf_ok = (_conf_ok(conf, True), _conf_ok(conf, False))
        self.memo = memo
        self.free_epoch = free_epoch
        self.use_epoch = use_epoch
        self.alloc_epoch = alloc_epoch
        self.room_base, self.room_nodes, self.room_seq = room
        #: with ``deltas.CHECK``: the jobs the one-node rule found still blocked, given their turn to prove it
        self.must_fail: set[str] = set()
        #: the jobs the one-node rule looked at again because their pod fits a node given room back, with those
        #: nodes (``allocate_blocked``, ``room_taken``)
        self.roomed: dict[str, frozenset[str]] = {}
        #: the nodes logged from a ``room_seq`` to this session's, by that start (``allocate_blocked``)
        self._since: dict[int, frozenset[str]] = {}
        self.enqueue_ok, self.allocate_ok = memo.conf_ok

    # --- enqueue -------------------------------------------------------------------------------------------
    def _enqueue_key(self, job: JobInfo) -> tuple[Any, ...]:
        return (self.free_epoch, job.cloned_from)

    def enqueue_blocked(self, job: JobInfo) -> bool:
        """True (and the job's reason restored) when the job was refused admission under the same fingerprint."""
        if not self.enqueue_ok:
            return False
        e = self.memo.enqueue.get(job.uid)
        if e is None:
            return False
        k = e.key  # ``_enqueue_key`` compared in place: asked for every waiting job of every session
        if k[0] != self.free_epoch or k[1] != job.cloned_from:
            return False
        job.enqueue_reason = e.enqueue_reason
        self.memo.skipped += 1
        return True

    def record_enqueue(self, job: JobInfo) -> None:
        if self.enqueue_ok and job.cloned_from >= 0:
            e = self.memo.enqueue.get(job.uid)
            if e is None:
                self.memo.enqueue[job.uid] = _Entry(job.uid, self._enqueue_key(job), job.enqueue_reason)
            else:  # refused again after room came back: the entry updated in place
                e.key = self._enqueue_key(job)
                e.enqueue_reason = job.enqueue_reason

    def admitted(self, job: JobInfo) -> None:
        self.memo.enqueue.pop(job.uid, None)

    # --- allocate ------------------------------------------------------------------------------------------
    def _allocate_key(self, job: JobInfo, deserved: np.ndarray | None) -> tuple[Any, ...]:
        pending = job.index.get(TaskStatus.Pending)
        many = pending is not None and len(pending) > 1
        return (self.alloc_epoch, self.use_epoch if many else -1, job.cloned_from,
                None if deserved is None else deserved.tobytes())

    def allocate_blocked(self, job: JobInfo, deserved: np.ndarray | None,
                         fits: Callable[[TaskInfo, frozenset[str]], bool], short: Callable[[JobInfo], bool]) -> bool:
        """True (and the job's fit errors restored) when its last turn placed nothing under the same
        fingerprint.  Room that came back on some nodes only (``SchedulerCache._room``) since: a job of one pod
        that no node could take is still blocked if ``fits(task, nodes)`` says its pod fits none of those nodes
        (everywhere else room only shrank).  Node usage moved, nothing else: still blocked if ``short(job)`` says
        the nodes' idle resources cannot hold enough of its pods for its gang, however they are placed (the gang
        bound, ``_gang_short``)."""
        if not self.allocate_ok:
            return False
        e = self.memo.allocate.get(job.uid)
        if e is None:
            return False
        # ``_allocate_key`` compared in place, part by part (asked for every blocked job of every session): the
        # tuple is built only when a part differs.  The queue's deserved decides ``allocatable`` only: not whether
        # a node can take a pod that every node refused (``nodes_only`` entries do not compare it)
        k = e.key
        pending = job.index.get(TaskStatus.Pending)
        if (k[0] != self.alloc_epoch or k[2] != job.cloned_from
                or k[1] != (self.use_epoch if pending is not None and len(pending) > 1 else -1)
                or (not e.nodes_only and k[3] != (None if deserved is None else deserved.tobytes()))):
            return self._gang_short(job, e, self._allocate_key(job, deserved), short)
        if e.room != self.room_seq:
            if not e.nodes_only or e.room < self.room_base or pending is None or len(pending) != 1:
                return self._gang_short(job, e, self._allocate_key(job, deserved), short)
            (task,) = pending.values()
            since = self._room_since(e.room)
            if since and fits(task, since):
                self.roomed[job.uid] = since  # its turn may still be skipped (``room_taken``)
                return False
            if not self._proved(job):
                return False
            e.room = self.room_seq
            self.memo.join(e, task.template_key)  # its own stamp now: in the class of the current one
        return self._hand_back(job, e)

    def still_blocked(self, uids: Mapping[str, None], jobs: Mapping[str, JobInfo],
                      deserved: Mapping[str, np.ndarray], fits: Callable[[TaskInfo, frozenset[str]], bool],
                      short: Callable[[JobInfo], bool], blocked: set[str],
                      made_again: Set[str] | None = None) -> list[str]:
        """``allocate_blocked`` for each of the jobs the last sessions left blocked (``Plan.blocked``, an ordered
        set): those still blocked go into ``blocked``, the others are returned, to be looked at.  Asked of the whole
        backlog in every session, so the members of a ``_RoomClass`` are decided class by class
        (``_class_blocked``), and the usual answer for the others (the same fingerprint, no room back since: the
        last turn's fit errors handed back) is taken here in one loop, with each queue's deserved row turned into
        bytes once; every other case goes through ``allocate_blocked``, with the same result.  ``made_again``: the
        jobs whose clone the snapshot made again (``SnapshotCarry.redone``; None: unknown), the only ones whose
        clone may lack the fit errors to hand back: the others' clones are the ones the last session left."""
        if not uids:
            return []
        entries = self.memo.allocate if self.allocate_ok else {}
        done: set[str] = set()
        if entries and self.memo.classes:
            for cls in list(self.memo.classes.values()):
                if cls.alloc_epoch == self.alloc_epoch:
                    self._class_blocked(cls, uids, jobs, fits, blocked, done, made_again)
        if len(done) == len(uids):
            return []
        alloc_epoch, use_epoch, room_seq = self.alloc_epoch, self.use_epoch, self.room_seq
        row_bytes: dict[str, bytes | None] = {}
        pending_key = TaskStatus.Pending
        memo = self.memo
        out: list[str] = []
        for uid in uids if not done else [u for u in uids if u not in done]:
            job = jobs[uid]
            e = entries.get(uid)
            if e is not None and e.room == room_seq:
                k = e.key
                pending = job.index.get(pending_key)
                if k[0] == alloc_epoch and k[2] == job.cloned_from \
                        and k[1] == (use_epoch if pending is not None and len(pending) > 1 else -1):
                    same = e.nodes_only  # its key's deserved part is not compared (``allocate_blocked``)
                    if not same:
                        q = job.queue
                        if q not in row_bytes:
                            row = deserved.get(q)
                            row_bytes[q] = None if row is None else row.tobytes()
                        same = k[3] == row_bytes[q]
                    if same:
                        job.nodes_fit_errors.update(e.fit_errors)  # ``_hand_back``
                        job.fit_failed_roles.update(e.failed_roles)
                        memo.skipped += 1
                        blocked.add(uid)
                        continue
            if self.allocate_blocked(job, deserved.get(job.queue), fits, short):
                blocked.add(uid)
            else:
                out.append(uid)
        return out

    def _class_blocked(self, cls: _RoomClass, uids: Mapping[str, None], jobs: Mapping[str, JobInfo],
                       fits: Callable[[TaskInfo, frozenset[str]], bool], blocked: set[str], done: set[str],
                       made_again: Set[str] | None = None) -> None:
        """``allocate_blocked`` for the members of one class (of this session's ``alloc_epoch``) among ``uids``, at
        once: still blocked if no room came back since the class's stamp, or if the class's pod template fits
        none of the nodes given room back since (the one-node rule); those go into ``blocked`` and ``done``, the
        class's stamp moves to this session's and the members not asked about leave the class first (their own
        check, later, starts from the old stamp).  Otherwise (room back where the template fits, the room log cut
        since, ``deltas.CHECK`` proving the rule by a turn) the members are left to the job-by-job path, which
        answers each the same.  A member's job is the version its key names, with one pod pending: a job is
        blocked only if the last session found it blocked under its key (or recorded it), and its clone is reused
        only while its version is the same (``JobInfo.reuse``); ``deltas.CHECK`` asserts it member by member.
        The fit errors are handed back to the clones made again (``made_again``: a reused clone has none); the
        others hold them already (asserted under ``deltas.CHECK``)."""
        present = cls.members.keys() & uids.keys()
        if done and present:  # (a class merged into one decided before)
            present -= done
        if not present:
            return
        room_seq = self.room_seq
        members = cls.members
        if cls.room != room_seq:
            if cls.room < self.room_base or deltas.CHECK:  # (CHECK: ``_proved`` takes the turns)
                return
            since = self._room_since(cls.room)
            if since:
                uid = next(iter(present))
                pending = jobs[uid].index.get(TaskStatus.Pending)
                if pending is None or len(pending) != 1:
                    return
                (task,) = pending.values()
                if task.template_key != cls.template or fits(task, since):
                    return
        if deltas.CHECK:
            for uid in present:
                job, e = jobs[uid], members[uid]
                pending = job.index.get(TaskStatus.Pending)
                assert job.cloned_from == e.key[2], f"memo: {uid} blocked at another version"
                assert pending is not None and len(pending) == 1 and e.nodes_only, f"memo: {uid} in a room class"
                assert next(iter(pending.values())).template_key == cls.template, f"memo: {uid}'s template"
                if made_again is not None and uid not in made_again:
                    assert all(job.nodes_fit_errors.get(k) is v for k, v in e.fit_errors.items()) \
                        and e.failed_roles <= job.fit_failed_roles, f"memo: {uid}'s fit errors"
        if cls.room != room_seq:
            for uid in members.keys() - present:  # not asked about here: their own stamp stays
                cls.detach(members[uid])
            self.memo.restamp(cls, room_seq)
        for uid in present if made_again is None else present & made_again:  # ``_hand_back``
            job = jobs[uid]
            if not job.nodes_fit_errors:
                e = members[uid]
                job.nodes_fit_errors.update(e.fit_errors)
                job.fit_failed_roles.update(e.failed_roles)
        self.memo.skipped += len(present)
        blocked.update(present)
        done.update(present)

    def room_taken(self, job: JobInfo, fits: Callable[[TaskInfo, frozenset[str]], bool]) -> bool:
        """The one-node rule again at a job's turn, for a job it looked at again before the first turn because its
        pod fitted one of the nodes given room back (``roomed``): if the pod now fits none of them (the turns
        before took that room), the job is still blocked and its turn is skipped as at the start (``fits``
        answers for the nodes as they are now).  Elsewhere room only shrank since its last turn, and in this
        session turns only take room (a failed one gives back what it took), so this turn would place nothing.
        The job is then blocked as by ``allocate_blocked``: its stamp moved to this session's, its fit errors
        handed back.  With ``deltas.CHECK`` the turn is taken (``must_fail``)."""
        since = self.roomed.pop(job.uid, None)
        if since is None:
            return False
        e = self.memo.allocate.get(job.uid)
        pending = job.index.get(TaskStatus.Pending)
        if e is None or pending is None or len(pending) != 1:
            return False
        (task,) = pending.values()
        if fits(task, since) or not self._proved(job):
            return False
        e.room = self.room_seq
        self.memo.join(e, task.template_key)
        return self._hand_back(job, e)

    def _room_since(self, start: int) -> frozenset[str]:
        """The nodes given room back from ``room_seq`` ``start`` to this session's; many entries share a start
        (recorded in one session): one set for them all."""
        since = self._since.get(start)
        if since is None:
            names = set(self.room_nodes[start - self.room_base:self.room_seq - self.room_base])
            names.discard("")
            since = self._since[start] = frozenset(names)
        return since

    def _gang_short(self, job: JobInfo, e: _Entry, key: tuple[Any, ...], short: Callable[[JobInfo], bool]) -> bool:
        """The gang bound: the job's last turn placed nothing, and since then the same ``alloc_epoch`` and job
        version (key parts 0 and 2); node usage, its queue's deserved and room on some nodes may have moved.  If
        the idle resources of all nodes now cannot hold enough of its pods to reach ``minAvailable`` (``short``:
        every placement takes at least its request from one node's idle, whatever the order and the scores), this
        turn would fail as well and its discarded statement would change nothing.  The fit errors handed back
        are the last turn's, as for every skip."""
        if e.key[0] != key[0] or e.key[2] != key[2] or not short(job) or not self._proved(job):
            return False
        e.key, e.room = key, self.room_seq
        return self._hand_back(job, e)

    def _proved(self, job: JobInfo) -> bool:
        """A rule beyond the fingerprint (one-node, gang bound) found the job still blocked.  With ``deltas.CHECK``
        the turn is taken anyway (False) and allocate asserts it places nothing (``must_fail``)."""
        if deltas.CHECK:
            self.must_fail.add(job.uid)
            return False
        return True

    def _hand_back(self, job: JobInfo, e: _Entry) -> bool:
        """Skip the job's turn: its last turn's fit errors and failed roles restored."""
        job.nodes_fit_errors.update(e.fit_errors)
        job.fit_failed_roles.update(e.failed_roles)
        self.memo.skipped += 1
        return True

    def record_allocate(self, job: JobInfo, deserved: np.ndarray | None, nodes_only: bool = False) -> bool:
        """``nodes_only``: the turn was one pod's, refused by every node (``allocate_blocked``'s one-node rule).
        Whether the job was recorded."""
        if self.allocate_ok and job.cloned_from >= 0 and not _affinity(job):
            memo = self.memo
            old = memo.allocate.get(job.uid)
            if old is not None and old.cls is not None:
                old.cls.detach(old)
            e = memo.allocate[job.uid] = _Entry(job.uid, self._allocate_key(job, deserved), "",
                                                dict(job.nodes_fit_errors), frozenset(job.fit_failed_roles),
                                                self.room_seq, nodes_only)
            pending = job.index.get(TaskStatus.Pending)
            if nodes_only and pending is not None and len(pending) == 1:
                (task,) = pending.values()
                memo.join(e, task.template_key)
            return True
        return False

    def forget_allocate(self, job: JobInfo) -> None:
        e = self.memo.allocate.pop(job.uid, None)
        if e is not None and e.cls is not None:
            e.cls.detach(e)
