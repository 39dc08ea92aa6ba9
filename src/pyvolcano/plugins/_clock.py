"""The time a session's plugins read (tdm's windows, rescheduling's interval): the cluster's clock when it has one
(``Snapshot.has_clock``: the simulated time in ``pyvolcano simulate``, 0 at its start included), else the wall
clock (``pyvolcano cycle``, the Kubernetes scheduler), as Volcano's ``time.Now()``."""

from __future__ import annotations

import time

from pyvolcano.framework.session import Session


def session_clock(ssn: Session) -> float:
    snap = ssn.snapshot
    return snap.now if snap.has_clock else (snap.now or time.time())
