"""Leader election on a Lease: one holder at a time, takeover only after a full lease duration of silence."""

from __future__ import annotations

import pytest

from pyvolcano.kube.client import ApiError
from pyvolcano.kube.leader import LeaderElector
from pyvolcano.kube.resources import LEASE
from tests.kube.fakeapi import FakeApi


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def pair(api: FakeApi, clock: Clock) -> tuple[LeaderElector, LeaderElector]:
    kw = {"lease_duration": 15, "renew_deadline": 10, "retry_period": 2, "clock": clock}
    return (LeaderElector(api, "volcano-system", "vc-scheduler", "a", **kw),
            LeaderElector(api, "volcano-system", "vc-scheduler", "b", **kw))


def test_only_one_holder_and_takeover_after_expiry() -> None:
    api, clock = FakeApi(), Clock()
    a, b = pair(api, clock)
    assert a.try_acquire_or_renew() and a.is_leader
    assert not b.try_acquire_or_renew() and not b.is_leader
    clock.t += 10
    assert a.try_acquire_or_renew()  # renewed
    clock.t += 14
    assert not b.try_acquire_or_renew()  # b saw the renewal 14s ago: not expired yet
    # a stops renewing (crashed); b must wait a whole lease duration from when it last saw a change
    clock.t += 15.5
    assert not a.is_leader  # a itself stopped believing after renew_deadline
    assert b.try_acquire_or_renew() and b.is_leader
    lease = api.obj(LEASE, "vc-scheduler", "volcano-system")
    assert lease["spec"]["holderIdentity"] == "b" and lease["spec"]["leaseTransitions"] == 1
    assert not a.try_acquire_or_renew()


def test_concurrent_update_loses_on_conflict() -> None:
    api, clock = FakeApi(), Clock()
    a, b = pair(api, clock)
    assert a.try_acquire_or_renew()
    clock.t += 16
    api.fail("replace", ApiError(409, "Conflict", "the object has been modified"))
    assert not b.try_acquire_or_renew()  # someone else wrote first: b is not leader
    assert not b.is_leader


def test_api_errors_are_not_leadership() -> None:
    api, clock = FakeApi(), Clock()
    a, _ = pair(api, clock)
    api.set_down(True)
    assert not a.try_acquire_or_renew()
    api.set_down(False)
    assert a.try_acquire_or_renew()
    api.set_down(True)
    clock.t += 9
    assert not a.try_acquire_or_renew() and a.is_leader  # still within the renew deadline
    clock.t += 2
    assert not a.is_leader


def test_release_hands_over_immediately() -> None:
    api, clock = FakeApi(), Clock()
    a, b = pair(api, clock)
    assert a.try_acquire_or_renew()
    assert not b.try_acquire_or_renew()
    a.release()
    assert not a.is_leader
    assert b.try_acquire_or_renew()


def test_bad_timings_are_rejected() -> None:
    with pytest.raises(ValueError):
        LeaderElector(FakeApi(), "ns", "l", "me", lease_duration=5, renew_deadline=10, retry_period=2)
