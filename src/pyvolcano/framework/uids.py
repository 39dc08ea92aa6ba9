"""The session's UID (Volcano's ``framework.OpenSession``: ``UID: uuid.NewUUID()``), which names the session in the
PodGroup conditions' ``transitionID``."""

from __future__ import annotations

import random

#: random bits for the session uids, seeded from the system's entropy once (``random.Random()``): a uid names a
#: session, it guards nothing
_UID_BITS = random.Random()


def session_uid() -> str:
    """A random (version 4) UUID in its text form: the bits of ``uuid.uuid4`` set the same way, drawn from
    ``_UID_BITS`` rather than from the system's entropy for each session (a fifth of the cost, at every session)."""
    n = _UID_BITS.getrandbits(128) & ~(0xF000 << 64) | (0x4000 << 64)  # version 4
    h = "%032x" % (n & ~(0xC000 << 48) | (0x8000 << 48))  # RFC 4122 variant
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
