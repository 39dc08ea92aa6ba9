"""Plugin and Action base classes."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from pyvolcano.framework.arguments import Arguments

if TYPE_CHECKING:
    from pyvolcano.framework.session import Session


class Plugin:
    """A scheduling policy: registers callbacks on extension points when a session opens.

    Subclasses set ``name`` and implement ``on_session_open`` (register with the typed ``ssn.add_*_fn``
    methods, one per extension point of ``framework/points.py``);
    ``on_session_close`` may write status.  A new instance is built for every session, as in Volcano.
    """

    name: ClassVar[str] = ""

    def __init__(self, arguments: Arguments) -> None:
        self.arguments = arguments

    def on_session_open(self, ssn: Session) -> None:
        raise NotImplementedError

    def on_session_close(self, ssn: Session) -> None:
        return None
