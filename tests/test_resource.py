"""Resource vectors: layout, units, and Volcano's comparison helpers (LessEqual with its 0.1 tolerance,
LessEqualWithDimension, IsEmpty, Share)."""

from __future__ import annotations

import numpy as np
import pytest

from pyvolcano.api.resource import (
    EPS,
    ResourceIndex,
    amount,
    clip_sub,
    fit_floor,
    insufficient,
    is_empty,
    less_equal,
    less_equal_with_dimension,
    share,
)


def test_layout_cpu_memory_pods_then_sorted_scalars() -> None:
    res = ResourceIndex.of(["nvidia.com/gpu", "cpu", "example.com/foo", "ephemeral-storage-limit"])
    assert res.names == ("cpu", "memory", "pods", "example.com/foo", "nvidia.com/gpu")
    assert res.size == 5
    assert res.pos["nvidia.com/gpu"] == 4
    assert res.covers(["cpu", "nvidia.com/gpu", "ephemeral-storage-limit"])
    assert not res.covers(["hugepages-2Mi"])
    assert ResourceIndex.of() == ResourceIndex()


@pytest.mark.parametrize(("name", "qty", "value"), [
    ("cpu", "2", 2000), ("cpu", "250m", 250), ("memory", "1Gi", 2**30), ("memory", "1G", 1e9),
    ("pods", "110", 110), ("nvidia.com/gpu", "1", 1000), ("hugepages-2Mi", "4Mi", 4 * 2**20),
    ("ephemeral-storage", "1Gi", 2**30),
])
def test_units(name: str, qty: str, value: float) -> None:
    assert amount(name, qty) == value


def test_vectors_and_formatting() -> None:
    res = ResourceIndex.of(["nvidia.com/gpu"])
    v = res.from_list({"cpu": "1500m", "memory": "2Gi", "nvidia.com/gpu": 2, "unknown.io/x": "1"})
    assert list(v) == [1500, 2 * 2**30, 0, 2000]
    assert res.to_dict(v) == {"cpu": 1500, "memory": 2 * 2**30, "nvidia.com/gpu": 2000}
    assert res.to_dict(res.zeros(), skip_zero=False) == {"cpu": 0, "memory": 0, "pods": 0, "nvidia.com/gpu": 0}
    assert res.format(v) == "{cpu: 1.5, memory: 2Gi, nvidia.com/gpu: 2}"
    assert res.format(res.vector({"cpu": 1000}, default=np.inf), skip_zero=False) == (
        "{cpu: 1, memory: inf, nvidia.com/gpu: inf}")
    assert list(res.fair_mask) == [True, True, False, True]


def test_less_equal_tolerates_eps() -> None:
    a = np.array([1000.0, 100.0, 1.0])
    assert less_equal(a, a)
    assert less_equal(a, a - EPS / 2)
    assert not less_equal(a, a - np.array([0, 0.2, 0]))
    assert less_equal(np.zeros(3), np.zeros(3))


def test_less_equal_with_dimension_compares_only_requested_dimensions() -> None:
    req = np.array([1000.0, 0.0, 0.0])
    left = np.array([1000.0, 5e9, 3.0])
    assert less_equal_with_dimension(left, np.array([1000.0, 0.0, 0.0]), req)
    assert not less_equal_with_dimension(left, np.array([999.0, 1e12, 9.0]), req)


def test_insufficient_lists_failing_dimensions() -> None:
    assert list(insufficient(np.array([2.0, 1.0, 5.0]), np.array([1.0, 1.0, 4.0]))) == [0, 2]


def test_is_empty_ignores_the_pod_count() -> None:
    assert is_empty(np.array([0.0, 0.0, 1.0]))
    assert is_empty(np.array([0.05, 0.0, 1.0, 0.0]))
    assert not is_empty(np.array([0.0, 0.0, 1.0, 1000.0]))
    assert not is_empty(np.array([1.0, 0.0, 0.0]))


def test_share() -> None:
    total = np.array([4000.0, 8.0, 110.0])
    assert share(np.array([1000.0, 6.0, 100.0]), total) == pytest.approx(100 / 110)
    mask = np.array([True, True, False])
    assert share(np.array([1000.0, 6.0, 100.0]), total, mask) == 0.75
    assert share(np.zeros(3), np.zeros(3)) == 0.0  # 0/0
    assert share(np.array([1.0, 0.0, 0.0]), np.zeros(3)) == 1.0  # x/0
    assert share(np.zeros(0), np.zeros(0)) == 0.0


def test_clip_sub() -> None:
    assert list(clip_sub(np.array([3.0, 1.0]), np.array([1.0, 2.0]))) == [2.0, 0.0]


def test_less_equal_skips_scalars_the_left_side_does_not_name() -> None:
    """Volcano's LessEqual compares cpu and memory always, the pod count and extended resources only when the left
    side names them: a CPU-only request fits a node whose idle GPU is negative, a GPU request does not."""
    idle = np.array([4000.0, 1e9, 5.0, -1.0])  # cpu, memory, pods, nvidia.com/gpu
    cpu_only = np.array([1000.0, 0.0, 1.0, 0.0])
    gpu = np.array([1000.0, 0.0, 1.0, 1.0])
    assert less_equal(cpu_only, idle)
    assert not less_equal(gpu, idle)
    assert not less_equal(np.array([0.0, 0.0, 1.0, 0.0]), np.array([-1.0, 1e9, 5.0, 0.0]))  # cpu always counts
    floor = fit_floor(cpu_only)
    assert bool((idle > floor).all()) and not bool((idle > fit_floor(gpu)).all())
    assert floor[3] == -np.inf and floor[0] == 1000.0 - EPS
