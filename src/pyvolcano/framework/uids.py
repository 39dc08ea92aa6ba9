"""The session's UID (Volcano's ``framework.OpenSession``: ``UID: uuid.NewUUID()``), which names the session in the
PodGroup conditions' ``transitionID``."""

from __future__ import annotations

import random
import uuid

#: random bits for the session uids, seeded from the system's entropy once (``random.Random()``): a uid names a
#: session, it guards nothing
_UID_BITS = random.Random()


def session_uid() -> str:
    """A random (version 4) UUID in its text form, as ``uuid.uuid4`` makes, with its bits drawn from ``_UID_BITS``
    rather than from the system's entropy at every session (``uuid.uuid4`` costs about twice as much)."""
    return str(uuid.UUID(int=_UID_BITS.getrandbits(128), version=4))
