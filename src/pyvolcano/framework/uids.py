"""The session's UID (Volcano's ``framework.OpenSession``: ``UID: uuid.NewUUID()``), which names the session in the
PodGroup conditions' ``transitionID``."""

from __future__ import annotations

import random

#: random bits for the session uids, seeded from the system's entropy once (``random.Random()``): a uid names a
#: session, it guards nothing
_UID_BITS = random.Random()


#: the bits ``uuid.UUID(version=4)`` sets: the version nibble and the RFC 4122 variant's two bits
_CLEAR = ~((0xF000 << 64) | (0xC000 << 48))
_SET = (4 << 76) | (0x8000 << 48)


def session_uid() -> str:
    """A random (version 4) UUID in its text form, as ``uuid.uuid4`` makes, with its bits drawn from ``_UID_BITS``
    rather than from the system's entropy at every session (``uuid.uuid4`` costs about twice as much), and the
    version and variant bits set and the text written as ``uuid.UUID(int=..., version=4)`` does, without its
    object (``tests/test_fixed_cost.py`` compares the two)."""
    return _text((_UID_BITS.getrandbits(128) & _CLEAR) | _SET)


def _text(bits: int) -> str:
    h = f"{bits:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
