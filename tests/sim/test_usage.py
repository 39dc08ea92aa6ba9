"""The exact usage ledger (sim/usage.py), against integrals computed by hand."""

from __future__ import annotations

import numpy as np
import pytest

from pyvolcano.sim.usage import Steps, UsageLedger


def v(*x: float) -> np.ndarray:
    return np.array(x, dtype=float)


def test_utilisation_is_the_exact_integral_between_events() -> None:
    # 10 cpu, 2 gpu. a: 4 cpu 0..100; b: 2 cpu + 1 gpu 50..150; nothing after 150 until the window ends at 200.
    led = UsageLedger(2)
    led.hold(0, "a", "q1", v(4, 0))
    led.hold(50, "b", "q2", v(2, 1))
    led.release(100, "a")
    led.release(150, "b")
    # cpu: 4*50 + 6*50 + 2*50 = 600 over 200 s of 10 cpu = 0.3; gpu: 1*100 over 200 s of 2 = 0.25
    assert led.utilisation(v(10, 2), 0, 200).tolist() == pytest.approx([0.3, 0.25])
    # a window that ends at the last event (the old sampler's only view) is larger, as it should be
    assert led.utilisation(v(10, 2), 0, 150).tolist() == pytest.approx([0.4, 1 / 3])
    # a part of the run: 75..125 holds 6 cpu for 25 s and 2 cpu for 25 s
    assert led.utilisation(v(10, 2), 75, 125).tolist() == pytest.approx([0.4, 0.5])


def test_queues_are_kept_apart() -> None:
    led = UsageLedger(1)
    led.hold(0, "a", "q1", v(4))
    led.hold(10, "b", "q2", v(2))
    led.release(20, "a")
    means = led.queue_means(0, 40)
    assert means["q1"].tolist() == [pytest.approx(4 * 20 / 40)]
    assert means["q2"].tolist() == [pytest.approx(2 * 30 / 40)]


def test_changes_at_one_instant_and_repeated_holds() -> None:
    led = UsageLedger(1)
    led.hold(5, "a", "q", v(3))
    led.release(5, "a")  # held for no time at all
    led.hold(5, "b", "q", v(1))
    led.hold(5, "b", "q", v(2))  # a second hold of the same pod replaces the first
    led.release(15, "b")
    led.release(15, "never-held")
    assert led.total.integral(0, 100).tolist() == [pytest.approx(20.0)]
    assert led.total.at(10).tolist() == [2.0] and led.total.at(15).tolist() == [0.0]


def test_steps_refuse_time_going_backwards_and_are_zero_before_the_first_step() -> None:
    s = Steps(1)
    s.set(10, v(1))
    with pytest.raises(ValueError, match="backwards"):
        s.set(5, v(2))
    assert s.at(0).tolist() == [0.0]
    assert s.integral(0, 20).tolist() == [10.0]
    assert s.mean(20, 20).tolist() == [1.0]


def test_deserved_is_a_step_function_of_session_times() -> None:
    led = UsageLedger(1)
    led.set_deserved(0, "q", v(4))
    led.set_deserved(30, "q", v(6))
    assert led.deserved["q"].mean(0, 60).tolist() == [pytest.approx(5.0)]


def test_thrown_away_work_is_what_a_deleted_pod_held_from_its_bind() -> None:
    # a (2 cpu, 1 gpu) held 0..30 then evicted: 60 cpu-s and 30 gpu-s thrown away; b (4 cpu) 10..50 succeeds
    led = UsageLedger(2)
    led.hold(0, "a", "q1", v(2, 1))
    led.hold(10, "b", "q2", v(4, 0))
    assert led.release(30, "a", lost="preempt").tolist() == [60, 30]  # type: ignore[union-attr]
    assert led.release(50, "b").tolist() == [160, 0]  # type: ignore[union-attr]
    assert led.release(60, "a", lost="preempt") is None  # released once
    assert {k: x.tolist() for k, x in led.lost.items()} == {"preempt": [60, 30]}
    assert {k: x.tolist() for k, x in led.lost_queues.items()} == {"q1": [60, 30]}


def test_queue_shares_are_exact_time_averages() -> None:
    # 10 cpu, 4 gpu.  q1 holds 2 cpu over 0..100 and 2 gpu over 50..100; its deserved is (5 cpu, 2 gpu) from 0 and
    # (4, 1) from 60.  q2 holds 5 cpu over 20..40 and no session gave it a deserved amount.
    led = UsageLedger(2)
    led.hold(0, "p1", "q1", v(2, 0))
    led.hold(20, "p2", "q2", v(5, 0))
    led.release(40, "p2")
    led.hold(50, "p3", "q1", v(0, 2))
    led.release(100, "p1")
    led.release(100, "p3")
    led.set_deserved(0, "q1", v(5, 2))
    led.set_deserved(60, "q1", v(4, 1))
    got = led.queue_shares(v(10, 4), 0, 100)
    # allocated dominant share: 0.2 (2/10) for 50 s, then max(0.2, 2/4) = 0.5 for 50 s
    assert got["q1"]["allocated"] == pytest.approx((0.2 * 50 + 0.5 * 50) / 100)
    # deserved dominant share: max(5/10, 2/4) = 0.5 for 60 s, max(4/10, 1/4) = 0.4 for 40 s
    assert got["q1"]["deserved"] == pytest.approx((0.5 * 60 + 0.4 * 40) / 100)
    # proportion's share, max of allocated/deserved: 2/5 = 0.4 on 0..50, max(2/5, 2/2) = 1 on 50..60,
    # max(2/4, 2/1) = 2 on 60..100
    assert got["q1"]["share"] == pytest.approx((0.4 * 50 + 1.0 * 10 + 2.0 * 40) / 100)
    assert got["q2"] == {"allocated": pytest.approx(0.5 * 20 / 100), "deserved": None, "share": None}


def test_proportion_share_follows_volcano_helpers_share() -> None:
    from pyvolcano.sim.usage import proportion_share

    # helpers.Share: 0/0 = 0, x/0 = 1; the share is the largest over the resources
    alloc = np.array([[1.0, 0.0], [0.0, 0.0], [3.0, 1.0]])
    deserved = np.array([[0.0, 0.0], [2.0, 0.0], [2.0, 4.0]])
    assert proportion_share(alloc, deserved).tolist() == [1.0, 0.0, 1.5]


def test_a_deserved_amount_set_again_is_no_change() -> None:
    """``set_deserved`` with the amount the series holds, at a later time, adds no step and counts no change (what
    the simulator's skip of its between-sessions pass reads); a new amount, or one at the same instant, does."""
    led = UsageLedger(2)
    led.set_deserved(0, "q", [1.0, 2.0])
    assert led.changes == 1
    led.set_deserved(10, "q", np.array([1.0, 2.0]))
    led.set_deserved(20, "q", [1.0, 2.0])
    assert led.changes == 1 and led.deserved["q"].times == [0]
    led.set_deserved(20, "q", [3.0, 2.0])
    led.set_deserved(20, "q", [1.0, 2.0])  # back at the same instant: the step goes again
    assert led.changes == 3 and led.deserved["q"].times == [0]
