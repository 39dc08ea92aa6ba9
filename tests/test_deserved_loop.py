"""proportion's water-filling: the plain-Python rounds (``_loop_lists``) make bit for bit the numbers of the
NumPy rounds (``_loop_arrays``) on random inputs -- ties, zeros, guarantees, unlimited and zero capabilities,
masks and queues of weight 0 included -- and fall back to them on a non-finite input."""

from __future__ import annotations

import numpy as np
import pytest

from pyvolcano.plugins._shared import QueueAttr, _loop_arrays, _loop_lists, deserved_loop


def _queues(rng: np.random.Generator, n: int, dims: int) -> list[QueueAttr]:
    out = []
    grid = np.array([0.0, 1.0, 2.0, 500.0, 1000.0, 4096.0, 1e9])  # repeated values make ties
    for k in range(n):
        def vec(scale: float) -> np.ndarray:
            v = rng.choice(grid, dims) if rng.random() < 0.5 else np.round(rng.random(dims) * scale, 3)
            return np.asarray(v, dtype=float)
        request = vec(3000.0)
        guarantee = vec(800.0) * (rng.random(dims) < 0.3)
        real = vec(5000.0)
        real[rng.random(dims) < 0.4] = np.inf
        deserved = np.zeros(dims) if rng.random() < 0.8 else vec(100.0)
        out.append(QueueAttr(f"q{k}", int(rng.integers(0, 4)), deserved, np.zeros(dims), request, np.zeros(dims),
                             np.zeros(dims), guarantee, real.copy(), real))
    return out


@pytest.mark.parametrize("seed", range(40))
def test_lists_and_arrays_agree_bit_for_bit(seed: int) -> None:
    rng = np.random.default_rng(seed)
    dims = int(rng.integers(3, 7))
    queues = _queues(rng, int(rng.integers(1, 7)), dims)
    total = np.round(rng.random(dims) * float(rng.choice([10.0, 5000.0, 1e10])), 2)
    full = rng.random(dims) < 0.8 if seed % 3 == 0 else np.ones(dims, dtype=bool)
    done, rows = _loop_lists(queues, total, full)
    expected = _loop_arrays(queues, total, full)
    assert done
    if expected is None:
        assert rows is None
        return
    assert rows is not None
    for got, want in zip(rows, expected, strict=True):
        assert got.tobytes() == want.tobytes()  # the very same floats, signs of zeros included


def test_non_finite_input_takes_the_array_rounds() -> None:
    rng = np.random.default_rng(7)
    queues = _queues(rng, 3, 4)
    queues[1].request[0] = np.inf
    assert _loop_lists(queues, np.full(4, 1000.0), np.ones(4, dtype=bool)) == (False, None)
    attrs = {q.name: q for q in queues}
    expected = _loop_arrays(queues, np.full(4, 1000.0), np.ones(4, dtype=bool))
    deserved_loop(attrs, np.full(4, 1000.0))
    assert expected is not None
    for q, want in zip(queues, expected, strict=True):
        assert q.deserved.tobytes() == want.tobytes()


def _copies(queues: list[QueueAttr]) -> dict[str, QueueAttr]:
    return {q.name: QueueAttr(q.name, q.weight, q.deserved.copy(), q.allocated.copy(), q.request.copy(),
                              q.inqueue.copy(), q.elastic.copy(), q.guarantee.copy(), q.capability.copy(),
                              q.real_capability.copy()) for q in queues}


@pytest.mark.parametrize("seed", range(12))
def test_carried_rows_are_the_loops_and_any_changed_input_runs_it_again(seed: int) -> None:
    """With carried values the second session of the same inputs takes the last session's rows (no round runs);
    each input the loop reads, changed, gives the loop's own new rows, never the carried ones; inputs met again
    after others take the rows kept for them."""
    from pyvolcano.framework.incremental import deltas
    from pyvolcano.framework.incremental.state import CarriedValues
    from pyvolcano.plugins import _shared

    rng = np.random.default_rng(100 + seed)
    dims = int(rng.integers(3, 6))
    base = _queues(rng, int(rng.integers(1, 5)), dims)
    total = np.round(rng.random(dims) * 5000.0, 2)
    values = CarriedValues()
    runs = []
    real_run = _shared._run_loop

    def counting(*a: object) -> object:
        runs.append(1)
        return real_run(*a)  # type: ignore[arg-type]

    def check(attrs: dict[str, QueueAttr], tot: np.ndarray, expect_run: bool) -> None:
        fresh = _copies(list(attrs.values()))
        deserved_loop(fresh, tot)
        before = len(runs)
        with deltas.checking(False):  # the carried path as production takes it
            deserved_loop(attrs, tot, values=values)
        assert (len(runs) > before) == expect_run
        for name, a in attrs.items():
            assert a.deserved.tobytes() == fresh[name].deserved.tobytes()
            assert a.share == fresh[name].share

    _shared._run_loop = counting  # type: ignore[assignment]
    try:
        check(_copies(base), total, True)
        check(_copies(base), total, False)  # the same inputs: carried
        q = base[int(rng.integers(len(base)))]
        for vec in (q.request, q.real_capability, q.guarantee, q.deserved):
            k = int(rng.integers(dims))
            old = vec[k]
            vec[k] = old + 7.0 if np.isfinite(old) else 3.0
            check(_copies(base), total, True)
            check(_copies(base), total, False)
            vec[k] = old
            check(_copies(base), total, False)  # back to inputs met before: their rows are still kept
        q.weight += 1
        check(_copies(base), total, True)
        bigger = total.copy()
        bigger[0] += 1.0
        check(_copies(base), bigger, True)
        check(_copies(base), bigger, False)
        zero = base[0].request.copy()  # a zero's sign is an input too (the memo keys deserved by its bytes)
        base[0].request[:] = np.where(zero == 0.0, -0.0, zero)
        if (zero == 0.0).any():
            check(_copies(base), bigger, True)
        # the rows of the last ``_DESERVED_KEPT`` distinct inputs are kept, the least recently met leaves first
        values.put(_shared._CARRIED_DESERVED, {})
        others = [total + np.eye(dims)[0] * (1.0 + step) for step in range(2 * _shared._DESERVED_KEPT)]
        check(_copies(base), total, True)
        for other in others[:_shared._DESERVED_KEPT - 1]:
            check(_copies(base), other, True)
        check(_copies(base), total, False)  # met again: now the most recent
        check(_copies(base), others[0], False)
        for other in others[_shared._DESERVED_KEPT - 1:2 * _shared._DESERVED_KEPT - 2]:
            check(_copies(base), other, True)
        check(_copies(base), total, True)  # pushed out by as many newer inputs as are kept
    finally:
        _shared._run_loop = real_run  # type: ignore[assignment]


def test_carried_rows_under_check_mode_are_checked() -> None:
    """Under ``deltas.CHECK`` a carried answer is computed again and must be the same bytes: a carried value that is
    not the loop's raises."""
    from pyvolcano.framework.incremental import deltas
    from pyvolcano.framework.incremental.state import CarriedValues
    from pyvolcano.plugins import _shared

    rng = np.random.default_rng(5)
    base = _queues(rng, 2, 4)
    base[0].weight = base[1].weight = 1
    total = np.full(4, 1000.0)
    values = CarriedValues()
    deserved_loop(_copies(base), total, values=values)
    kept = values.get(_shared._CARRIED_DESERVED)
    assert kept is not None and len(kept) == 1
    carried = next(iter(kept.values()))
    assert carried is not None
    carried[0] = carried[0] + 1.0  # spoil the carried rows
    with deltas.checking(True), pytest.raises(AssertionError, match="carried rows"):
        deserved_loop(_copies(base), total, values=values)
    with deltas.checking(False):  # without the checks the (spoiled) carried rows are taken: the key matched
        attrs = _copies(base)
        deserved_loop(attrs, total, values=values)
        assert attrs["q0"].deserved.tobytes() == carried[0].tobytes()
