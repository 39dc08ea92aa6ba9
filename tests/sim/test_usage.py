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
