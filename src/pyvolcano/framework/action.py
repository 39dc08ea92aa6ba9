"""Action base class: one step of a scheduling cycle (enqueue, allocate, preempt, reclaim, backfill)."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from pyvolcano.framework.arguments import Arguments
from pyvolcano.framework.incremental.contracts import NONE, Contracts

if TYPE_CHECKING:
    from pyvolcano.framework.session import Session


class Action:
    """Subclasses set ``name`` and implement ``execute``; ``arguments`` come from the conf's
    ``configurations`` entry of the same name."""

    name: ClassVar[str] = ""
    #: what the incremental layer may rely on (``framework/incremental/contracts.py``, docs/extending.md): an action
    #: that declares nothing gets the exact, slower path
    contracts: ClassVar[Contracts] = NONE

    def __init__(self, arguments: Arguments | None = None) -> None:
        # ``is None``, not ``or``: an empty ``Arguments`` is falsy, and the conf's own object keeps what is derived
        # from it once per conf (``Arguments.derived``)
        self.arguments = arguments if arguments is not None else Arguments({}, self.name)

    def execute(self, ssn: Session) -> None:
        raise NotImplementedError
