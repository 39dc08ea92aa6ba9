"""The race at a small size, as a check that it still runs end to end (``make bench``; the real grid is
``scripts/race``, figures in docs/performance.md): every scheduler drains the whole backlog, with no pod bound
twice, and each result is complete."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.kube import kubeserver

from benchmarks import race

pytestmark = [pytest.mark.slow, pytest.mark.kube]


def test_each_scheduler_drains_the_same_backlog(tmp_path: Path) -> None:
    if not kubeserver.tools_available():
        pytest.skip(kubeserver.HOW_TO_RUN)
    results = list(race.run_row(100, 500, "", race.SCHEDULERS, tmp_path, timeout=300))
    assert [r.scheduler for r in results] == list(race.SCHEDULERS)
    for r in results:
        assert r.bound == 500, r
        assert r.double_binds == 0, r
        assert r.requests.get("POST pods/binding", 0) >= 500, r.requests
        assert r.seconds > 0 and r.scheduler_cpu_s > 0 and r.apiserver_cpu_s > 0
        assert r.writes_s is not None and r.writes_s >= r.seconds
        writes = race.per_pod(r.requests_total, r.bound)
        assert writes["POST pods/binding"] >= 1.0, writes
        if r.scheduler == "pyvolcano":  # one status write per one-pod group (Pending -> Running), no more
            assert writes.get("PATCH podgroups", 0) <= 1.1, writes
    print("\n" + race.table([r.__dict__ for r in results]))
