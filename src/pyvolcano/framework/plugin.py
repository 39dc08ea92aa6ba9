"""Plugin and Action base classes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, ClassVar

from pyvolcano.framework.arguments import Arguments
from pyvolcano.framework.incremental.contracts import NONE, Contracts
from pyvolcano.framework.state import QueueShare, StateKey

if TYPE_CHECKING:
    from pyvolcano.framework.session import Session


class Plugin:
    """A scheduling policy: registers callbacks on extension points when a session opens.

    Subclasses set ``name`` and implement ``on_session_open`` (register with the typed ``ssn.add_*_fn``
    methods, one per extension point of ``framework/points.py``);
    ``on_session_close`` may write status.  A new instance is built for every session, as in Volcano.
    """

    name: ClassVar[str] = ""
    #: what the incremental layer may rely on (``framework/incremental/contracts.py``, docs/extending.md): a plugin
    #: that declares nothing gets the exact, slower path
    contracts: ClassVar[Contracts] = NONE
    #: the state key under which it keeps each queue's fair share (``framework/state.py: QUEUE_SHARES``), which
    #: ``Session.close`` copies into the queue statuses; None: it keeps none
    queue_share: ClassVar[StateKey[Mapping[str, QueueShare]] | None] = None

    def __init__(self, arguments: Arguments) -> None:
        self.arguments = arguments

    @classmethod
    def contracts_for(cls, arguments: Arguments) -> Contracts:
        """The contracts this plugin keeps under these arguments: ``contracts`` unless a rule that only some
        arguments turn on breaks one (resource-strategy-fit's ``proportional`` filter).  An argument the plugin
        would refuse may give fewer (the session reports the error when the plugin reads it)."""
        return cls.contracts

    def on_session_open(self, ssn: Session) -> None:
        raise NotImplementedError

    def on_session_close(self, ssn: Session) -> None:
        return None
