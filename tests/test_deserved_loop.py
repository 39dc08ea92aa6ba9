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
