"""One answer type for "may this task go here?" questions (Volcano's ``api.Status``, ``pkg/scheduler/api/types.go``,
itself kube-scheduler's ``framework.Status``).

Node filters (``predicate``), ``prePredicate`` and ``jobValid`` answer with a ``Status`` or ``None``; ``None`` is
Go's nil ``*Status``: a success.  The codes are Volcano's, in its order (``Success``, ``Error``, ``Unschedulable``,
``UnschedulableAndUnresolvable``, ``Wait``, ``Skip``).  A status's ``reasons`` are what the fit-error summary counts
("0/3 nodes are available: 2 <reason>, ..."), one entry per reason, as Kubernetes' ``FitError.Error`` does.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum


class Code(IntEnum):
    """Volcano's status codes (``api/types.go``: ``Success``, ``Error``, ...), with Go's iota values."""

    SUCCESS = 0
    #: an internal plugin error or unexpected input
    ERROR = 1
    #: the task does not fit now; evicting pods could change that (preemption may help)
    UNSCHEDULABLE = 2
    #: the task does not fit and evicting pods would not change it (labels, taints, affinity to node fields)
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3
    WAIT = 4
    SKIP = 5


@dataclass(frozen=True, slots=True)
class Status:
    """A plugin's answer: ``code``, the human ``reasons`` and the ``plugin`` that gave it."""

    code: Code = Code.SUCCESS
    reasons: tuple[str, ...] = ()
    plugin: str = ""

    def is_success(self) -> bool:
        """Volcano's ``Status.IsSuccess`` (a nil status, i.e. ``None`` here, is a success too: see ``ok``)."""
        return self.code == Code.SUCCESS

    @property
    def message(self) -> str:
        """The reasons joined, Kubernetes' ``Status.Message``."""
        return ", ".join(self.reasons)

    def __str__(self) -> str:
        return self.message


#: the success answer, for code that prefers a Status to ``None``
SUCCESS = Status()


def ok(status: Status | None) -> bool:
    """``None`` or a success: Volcano's ``status.IsSuccess()`` on a possibly nil ``*Status``."""
    return status is None or status.code == Code.SUCCESS


def unschedulable(reason: str, plugin: str = "", code: Code = Code.UNSCHEDULABLE) -> Status:
    """A rejection with one reason (``Unschedulable`` unless told ``UNSCHEDULABLE_AND_UNRESOLVABLE``)."""
    return Status(code, (reason,), plugin)


def reject_if(reason: str | None, plugin: str = "", code: Code = Code.UNSCHEDULABLE) -> Status | None:
    """``None`` (a success) when ``reason`` is None, else a rejection with that reason: adapts a check that
    returns its objection as text."""
    return None if reason is None else Status(code, (reason,), plugin)
