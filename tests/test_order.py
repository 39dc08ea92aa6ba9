"""Job order by key (``framework/order.py``) and enqueue's refusals within a pass (``actions/enqueue.py:
_Refusals``) give exactly what the comparison and the plugins give."""

from __future__ import annotations

import itertools
import random

import pytest

from pyvolcano.actions.enqueue import Enqueue
from pyvolcano.api.job_info import JobInfo
from pyvolcano.api.types import PodGroupPhase
from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.conf.loader import load_conf, load_conf_file
from pyvolcano.framework.order import job_order_key, ordered
from pyvolcano.framework.session import Session
from pyvolcano.framework.util import PriorityQueue
from tests.kube.helpers import node, pod, podgroup, priority_class, queue

CONFS = [None, "examples/confs/reclaim-preempt.conf"]


def _cache(rng: random.Random, groups: int, phase_running: float, queues: str = "ab") -> SchedulerCache:
    cache = SchedulerCache(reuse_clones=True, memo=True)
    for i in range(3):
        cache.upsert(node(f"n{i}", cpu="8", memory="16Gi"))
    cache.upsert(queue("a", weight=1))
    cache.upsert(queue("b", weight=2))
    cache.upsert(priority_class("hi", 100))
    for g in range(groups):
        size = rng.choice([1, 1, 2, 3])
        cpu = rng.choice(["1", "2", "4"])
        mins = {"cpu": str(size * int(cpu)), "memory": f"{size}Gi"} if rng.random() < 0.9 else None
        cache.upsert(podgroup(f"g{g:03d}", queue=rng.choice(queues), min_member=rng.choice([1, size]),
                              min_resources=mins, priority_class=rng.choice(["", "hi"])))
        for k in range(size):
            placed = rng.random() < phase_running
            cache.upsert(pod(f"g{g:03d}-{k}", f"g{g:03d}", cpu=cpu, node_name=f"n{rng.randrange(3)}" if placed else "",
                             phase="Running" if placed else "Pending"))
    return cache


@pytest.mark.parametrize("conf_path", CONFS)
@pytest.mark.parametrize("seed", range(6))
def test_job_order_by_key_pops_as_the_comparison(conf_path: str | None, seed: int) -> None:
    rng = random.Random(seed)
    cache = _cache(rng, 40, 0.5)
    ssn = Session(cache.snapshot(), load_conf_file(conf_path)).open()
    key = job_order_key(ssn)
    assert key is not None  # priority, gang and drf all say what they compare
    jobs: list[JobInfo] = list(ssn.jobs.values())
    rng.shuffle(jobs)
    heap = PriorityQueue(ssn.job_cmp, jobs)
    want = [heap.pop().uid for _ in jobs]
    got = [j.uid for j in reversed(ordered(jobs, key))]
    assert got == want
    # the comparison is decided by the plugins for some pairs, not only by the fallback
    assert any(ssn.call("jobOrder", a, b) for a, b in itertools.pairwise(jobs))


def test_a_job_order_without_a_key_keeps_the_comparison() -> None:
    conf = load_conf('actions: "enqueue, allocate"\ntiers:\n- plugins:\n  - name: priority\n  - name: sla\n'
                     '    arguments:\n      sla-waiting-time: 1h\n  - name: gang\n', "test conf")
    ssn = Session(_cache(random.Random(1), 5, 0.0).snapshot(), conf).open()
    assert job_order_key(ssn) is None


@pytest.mark.parametrize("conf_path", CONFS)
@pytest.mark.parametrize(("seed", "queues"), [(0, "ab"), (1, "ab"), (2, "a"), (3, "b")])
def test_refusals_in_a_pass_are_the_plugins_refusals(conf_path: str | None, seed: int, queues: str) -> None:
    """Many Pending jobs of a few shapes: enqueue with the memo (refusals reused within the pass) admits the same
    jobs with the same reasons as enqueue without it, asking the plugins fewer times; with one queue (enqueue's
    path without the queue heap) and with two."""
    conf = load_conf_file(conf_path)
    outcomes = []
    votes = []
    for use_memo in (False, True):
        ssn = Session(_cache(random.Random(seed), 80, 0.0, queues).snapshot(), conf).open()
        if not use_memo:
            ssn.memo = None
        else:
            assert ssn.memo is not None and ssn.memo.enqueue_ok
        asked = [0]
        plain = ssn.job_enqueueable

        def counted(job: JobInfo, plain=plain, asked=asked) -> bool:  # type: ignore[no-untyped-def]
            asked[0] += 1
            return plain(job)
        ssn.job_enqueueable = counted  # type: ignore[method-assign]
        Enqueue().execute(ssn)
        assert ssn.jobs
        outcomes.append({uid: (j.podgroup.phase if j.podgroup else None, j.enqueue_reason)
                         for uid, j in ssn.jobs.items()})
        votes.append(asked[0])
        ssn.close()
    assert outcomes[0] == outcomes[1]
    admitted = sum(1 for p, _ in outcomes[0].values() if p == PodGroupPhase.Inqueue)
    refused = sum(1 for _, r in outcomes[0].values() if r)
    assert admitted and refused
    assert votes[1] < votes[0]
