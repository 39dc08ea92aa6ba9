"""What plugins and actions declare about themselves, so that the incremental layer can leave work undone.

The blocked-job memo, the settled, parked and blocked jobs and the ordered hypernode trials all skip work whose
answer is known without doing it.  Each of those shortcuts holds only for rules it knows; rather than a list of
plugin and action names, every ``Plugin`` and ``Action`` class states in ``contracts`` which promises it keeps
(``framework/plugin.py``, ``framework/action.py``; a plugin whose rules depend on its arguments answers
``Plugin.contracts_for(arguments)`` instead).  A class that declares nothing keeps none: the session takes the
exact, slower path (the memo off, every job looked at), and ``memo_off_by`` names the plugin that turned the memo
off so that ``cycle -v`` and ``simulate`` can say so once.  docs/extending.md has the table of contracts, who relies
on each and which built-in plugins declare it.

Nothing here knows a plugin or an action by name (``tests/test_contracts.py`` checks that no registered name
appears in cache/, framework/ or this package).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from pyvolcano.api.job_info import JobInfo, TaskInfo

T = TypeVar("T")


class Contract(enum.Enum):
    """One promise a plugin or an action makes (values are for messages and docs only)."""

    #: plugin: every refusal it gives (jobEnqueueable vote, predicate, allocatable) holds again while the cluster
    #: room only shrank, the job's queue deserved and the job's own spec are the same and the conf is the same
    #: object -- the blocked-job memo's fingerprint (``memo.py``) covers its rules.  Its votes and predicates
    #: read only the job's own fields, the requested dimensions against node usage and queue state, and cluster
    #: objects whose changes move the cache's epochs; its job order depends only on the jobs' own fields.  Its
    #: callbacks have no effect besides their answers, so a turn that yields nothing can be left untaken (the
    #: memo's allocate skips; preempt's and reclaim's idle turns, ``actions/_victims.py: turns_idle``).
    FINGERPRINTED = "fingerprinted"
    #: plugin: votes in jobEnqueueable (under ``enableJobEnqueued``); with ``STATEFUL_PERMIT`` the memo checks
    #: its place among the tier's voters
    ENQUEUE_VOTER = "enqueue-voter"
    #: plugin: keeps state on an enqueue permit (it counts what it admits): for the memo's enqueue skips its
    #: permit must be the last vote of its tier, so that a refusal after it cannot leave its state changed
    STATEFUL_PERMIT = "stateful-permit"
    #: plugin: decides jobReady / jobPipelined as gang does (enough ready, resp. pipelined, pods for
    #: ``minAvailable``): the memo's gang bound and allocate's ordered hypernode trials rely on it
    GANG_READINESS = "gang-readiness"
    #: plugin: its jobValid answer is a function of the job's version alone (settled jobs skip jobValid)
    VALID_BY_VERSION = "valid-by-version"
    #: plugin: its jobStarving answer is a function of the job's version alone (preempt and reclaim carry the answer
    #: for an unchanged job)
    STARVING_BY_VERSION = "starving-by-version"
    #: plugin: its close gives a ready job the Scheduled condition that a settled job's carried status holds
    #: (without such a plugin in the conf no job is settled)
    READY_CONDITION = "ready-condition"
    #: action: admits Pending jobs and records its refusals in the memo (parked jobs need it; when it is the
    #: first action it checks stale parked jobs group by group)
    ADMITS = "admits"
    #: action: checks the blocked jobs against the memo before any turn and looks again at those it cannot keep
    CHECKS_BLOCKED = "checks-blocked"
    #: action: looks at a blocked job (admitted, pods pending, memo-blocked) only through the memo check of a
    #: ``CHECKS_BLOCKED`` action, or not at all (it reads Pending jobs only, or best-effort pods only), or reads it
    #: as it stands and changes nothing it or its answers read unless it first looks at it as at any other job
    #: (``Plan.release``: preempt and reclaim, whose turns are skipped only when every one is proved idle)
    LEAVES_BLOCKED = "leaves-blocked"


Contracts = frozenset[Contract]
NONE: Contracts = frozenset()


def memo_off_by(plugins: Iterable[tuple[str, Contracts]]) -> str | None:
    """The first plugin (conf name, its class's contracts) that turns the blocked-job memo off: one that does not
    declare ``FINGERPRINTED``; None when every plugin does."""
    for name, contracts in plugins:
        if Contract.FINGERPRINTED not in contracts:
            return name
    return None


def memo_note(plugins: Iterable[tuple[str, Contracts]]) -> str | None:
    """The line ``cycle -v`` and ``simulate`` print once when a plugin turns the memo off, or None."""
    off = memo_off_by(plugins)
    if off is None:
        return None
    return (f"plugin {off!r} declares no memo contract ({Contract.FINGERPRINTED.value}): the blocked-job memo is off, "
            "every pending job is examined every session (same decisions, slower; docs/extending.md, 'Contracts')")


def conf_plugins(tiers: Iterable[Iterable[tuple[str, T]]], contracts_of: Callable[[T], Contracts]
                 ) -> list[tuple[str, Contracts]]:
    """Each plugin of a conf's tiers, in order: (its name, the contracts ``contracts_of`` gives for its entry)."""
    return [(name, contracts_of(entry)) for tier in tiers for name, entry in tier]


#: a candidate victim's class for a ``VictimCondition``: a function of its job (at the job's ``version``) and the task
#: alone, the same function in every session (a module-level function: the classes are counted in a ledger carried
#: between sessions, ``framework/victim_ledger.py``)
VictimClass = Callable[["JobInfo", "TaskInfo"], Hashable]
#: (the preemptor or reclaimer, a candidate's class, whether the candidate is of the preemptor's own job) -> may a
#: candidate of that class be in the plugin's answer; made in the session (it may read the plugin's session state)
VictimAdmits = Callable[["TaskInfo", Hashable, bool], bool]
#: the preemptor -> everything ``admits`` reads besides the class and the own flag (the preemptor's fields, its job's,
#: the plugin's session state), as a value: two preemptors with equal keys, in this session or a later one, get the
#: same answer for every class (``framework/victim_ledger.py`` proves idleness once per key)
VictimActor = Callable[["TaskInfo"], Hashable]


def anyone(_: TaskInfo) -> Hashable:
    """The ``VictimActor`` of an ``admits`` that reads nothing of the preemptor or the session (the class alone)."""
    return ()


def nothing() -> Hashable:
    """The ``VictimCondition.actor_session`` of an ``actor`` that reads nothing of the session besides the
    preemptor's job (``anyone``; priority's, which reads the job's priority)."""
    return ()


@dataclass(frozen=True)
class VictimCondition:
    """A plugin's *necessary* condition on its preemptable / reclaimable victims, declared with the callback
    (``Session.add_preemptable_fn(name, fn, condition=...)``): the plugin never offers a candidate ``t`` of job ``j``
    to ``preemptor`` unless ``admits(preemptor, classify(j, t), t.job == preemptor.job)``.  Declaring also promises
    that the callback never abstains and has no effect besides its answer (no warning, no state a later answer or
    the session reads), so that not calling it changes nothing.

    With Volcano's tier rule (a plugin answering empty ends its tier with no victims) preempt and reclaim use the
    conditions to prove that no candidate of a scope (a queue, the reclaimable queues, one job) can be a victim
    without asking the plugins node by node; the candidates' classes are counted per queue in a ledger kept
    between sessions by the jobs that changed (``framework/victim_ledger.py``).  A plugin that declares nothing
    gives no proof: a tier in which such a plugin comes before any that proves it empty keeps the search as it
    was.  ``actor`` (optional) names what ``admits`` reads of the preemptor and the session, so that a proof is
    made once per value and carried between sessions (``VictimProof.verdict``)."""

    classify: VictimClass
    admits: VictimAdmits
    #: what ``admits`` reads of the preemptor and the session (``VictimActor``); None: nothing is declared, and each
    #: preemptor is proved on its own
    actor: VictimActor | None = None
    #: what ``actor`` reads of the session besides the preemptor's job: for a task of a job the session has not
    #: changed (``incremental/carry.py: unchanged``), ``actor(task)`` is a function of the job at its version, the
    #: task and this value (asked once per session), so that a waiting job's proof is carried with the job
    #: (``actions/preempt.py: IdleJobs``); None: not declared, each task's ``actor`` is asked
    actor_session: Callable[[], Hashable] | None = None
