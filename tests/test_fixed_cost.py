"""What the session's fixed-cost cuts remember must equal what they replaced (docs/performance.md, "A session's
fixed cost"): the remembered used total, the resource lists of queue statuses, the per-conf arguments."""

from __future__ import annotations

import random

import numpy as np

from pyvolcano.api.job_info import TaskInfo
from pyvolcano.api.node_info import NodeArrays, NodeSpec
from pyvolcano.api.resource import CPU, MEMORY, PODS, ResourceIndex, quantity, resource_list
from pyvolcano.api.types import TaskStatus
from pyvolcano.conf.loader import ActionConfiguration, load_conf_file


def _task(uid: str, req: list[float], status: TaskStatus) -> TaskInfo:
    v = np.array(req, dtype=float)
    return TaskInfo(uid=uid, name=uid, namespace="ns", job="ns/j", resreq=v, init_resreq=v, status=status)


def test_used_total_follows_every_change() -> None:
    res = ResourceIndex.of(["nvidia.com/gpu"])
    specs = [NodeSpec(f"n{i}", np.array([4000.0, 8e9, 110, 1000.0 * i]), np.array([4000.0, 8e9, 110, 1000.0 * i]))
             for i in range(5)]
    nodes = NodeArrays(res, specs)
    assert np.array_equal(nodes.used_total(), np.zeros(4))
    a, b = _task("a", [500.3, 1e9, 1, 0], TaskStatus.Running), _task("b", [250.1, 3e8, 1, 1000], TaskStatus.Pipelined)
    nodes.add_task(1, a)
    nodes.add_task(3, b)
    assert np.array_equal(nodes.used_total(), nodes.used.sum(axis=0))
    copy = nodes.copy_amounts()
    assert np.array_equal(copy.used_total(), nodes.used.sum(axis=0))
    copy.tasks = [{} for _ in specs]
    copy.add_task(2, _task("c", [100.0, 5e8, 1, 0], TaskStatus.Binding))  # used grows on the copy only
    assert np.array_equal(copy.used_total(), copy.used.sum(axis=0))
    assert not np.array_equal(copy.used_total(), nodes.used_total())
    nodes.remove_task(1, a)
    assert np.array_equal(nodes.used_total(), nodes.used.sum(axis=0))
    total = nodes.used_total()
    total += 1.0  # a copy: the remembered sum is not changed through it
    assert np.array_equal(nodes.used_total(), nodes.used.sum(axis=0))


def test_used_total_kept_change_by_change_is_the_sum_bit_for_bit() -> None:
    """With whole amounts the total is kept change by change (never re-summed) and is ``used.sum(axis=0)`` to the
    last bit; a fractional or huge amount makes it re-summed, and it is still the sum; snapshots' copies share
    nothing that a change to one of them could alter in another."""
    rng = random.Random(5)
    res = ResourceIndex.of(["nvidia.com/gpu"])
    alloc = np.array([64000.0, 2.0**40, 110, 8000.0])
    specs = [NodeSpec(f"n{i}", alloc.copy(), alloc.copy()) for i in range(7)]
    nodes = NodeArrays(res, specs)
    placed: list[tuple[int, TaskInfo]] = []
    statuses = [TaskStatus.Running, TaskStatus.Bound, TaskStatus.Binding, TaskStatus.Releasing, TaskStatus.Pipelined]
    for step in range(400):
        if placed and rng.random() < 0.4:
            i, t = placed.pop(rng.randrange(len(placed)))
            nodes.remove_task(i, t)
        else:
            req = [float(rng.randrange(0, 8000)), float(rng.randrange(0, 2**34)), 1.0, float(rng.choice([0, 1000]))]
            if rng.random() < 0.05:
                req[0] += 0.25  # not whole: re-summed from then on while it is there
            if rng.random() < 0.02:
                req[1] = 2.0**53  # past the exact bound
            t = _task(f"t{step}", req, rng.choice(statuses))
            i = rng.randrange(len(specs))
            nodes.add_task(i, t)
            placed.append((i, t))
        if rng.random() < 0.7:  # not after every change: several changes between two reads
            assert nodes.used_total().tobytes() == nodes.used.sum(axis=0).tobytes()
        if rng.random() < 0.1:
            copy = nodes.copy_amounts()
            copy.tasks = [dict(m) for m in nodes.tasks]
            copy.add_task(0, _task(f"c{step}", [1.0, 2.0, 1.0, 0.0], TaskStatus.Running))
            assert copy.used_total().tobytes() == copy.used.sum(axis=0).tobytes()
    assert nodes.used_total().tobytes() == nodes.used.sum(axis=0).tobytes()


def _reference_list(res: ResourceIndex, v: np.ndarray) -> dict[str, str]:
    """``resource_list`` as it was written before (NumPy scalars read one by one)."""
    out: dict[str, str] = {}
    for i, n in enumerate(res.names):
        if n == PODS or (v[i] == 0 and n not in (CPU, MEMORY)) or not np.isfinite(v[i]):
            continue
        out[n] = quantity(n, float(v[i]))
    return out


def test_resource_list_as_before() -> None:
    res = ResourceIndex.of(["nvidia.com/gpu", "hugepages-2Mi"])
    rng = np.random.default_rng(3)
    cases = [np.zeros(5), -np.zeros(5), np.array([np.inf, 1.5, 3, np.nan, 0]), np.array([1000, 2**40, 7, 500, 2**21])]
    cases += [np.round(rng.random(5) * 10 ** rng.integers(0, 12, 5), rng.integers(0, 3)) for _ in range(200)]
    for v in cases:
        assert resource_list(res, v) == _reference_list(res, v), v


def test_fair_mask_is_shared_and_read_only() -> None:
    res = ResourceIndex.of(["nvidia.com/gpu"])
    assert res.fair_mask is res.fair_mask
    assert res.fair_mask.tolist() == [True, True, False, True]
    assert not res.fair_mask.flags.writeable


def test_arguments_once_per_conf() -> None:
    conf = load_conf_file(None)
    reg = conf.registration
    assert [(ti, opt.name) for ti, opt, _ in reg.plugins] == [
        (ti, opt.name) for ti, tier in enumerate(conf.tiers) for opt in tier.plugins]
    for _, opt, args in reg.plugins:
        assert dict(args) == dict(opt.args())
    assert conf.action_args("allocate") is conf.action_args("allocate")
    other = conf.model_copy(update={"configurations": [ActionConfiguration(name="allocate",
                                                                           arguments={"x": 1})]})
    assert other.action_args("allocate")["x"] == 1
    assert "x" not in conf.action_args("allocate")


def test_session_uid_is_a_random_version_4_uuid() -> None:
    """A session's UID (the conditions' ``transitionID``) is a version 4 UUID in its text form, as Volcano's
    ``uuid.NewUUID``, and no two sessions share one."""
    import uuid

    from pyvolcano.framework.uids import session_uid

    got = [session_uid() for _ in range(500)]
    assert len(set(got)) == len(got)
    for u in got:
        parsed = uuid.UUID(u)
        assert parsed.version == 4 and parsed.variant == uuid.RFC_4122 and str(parsed) == u


def test_session_uid_text_is_uuids_own() -> None:
    """``session_uid`` sets the version and variant bits and writes the text itself: for any 128 bits, what
    ``uuid.UUID(int=bits, version=4)`` writes."""
    import random
    import uuid

    from pyvolcano.framework import uids

    rnd = random.Random(5)
    for bits in [0, 2**128 - 1, *(rnd.getrandbits(128) for _ in range(2000))]:
        assert uids._text((bits & uids._CLEAR) | uids._SET) == str(uuid.UUID(int=bits, version=4))
