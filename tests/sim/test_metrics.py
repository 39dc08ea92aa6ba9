"""Every figure of summary.json and jobs.csv on a run made by hand, each worked out in the comments
(``sim/metrics.py``; the definitions are in docs/simulator.md, "Metrics")."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pyvolcano.sim import metrics
from pyvolcano.sim.engine import JobRecord, Sample, SimResult
from pyvolcano.sim.usage import UsageLedger

#: (name, queue, submit, all_started, finished, phase, restarts)
JOBS = [
    ("a", "q1", 0, 10, 110, "Completed", 0),   # wait 10, JCT 110
    ("b", "q1", 5, 25, 65, "Completed", 0),    # wait 20, JCT 60
    ("c", "q2", 10, 40, 50, "Failed", 3),      # wait 30 (the gang did start), no JCT
    ("d", "q2", 20, None, 30, "Aborted", 0),   # never started: no wait
    ("e", "q2", 30, None, None, "Pending", 0),  # unfinished and never started
    ("f", "q1", 40, 80, None, "Running", 0),   # unfinished, wait 40
    ("g", "q1", 50, 60, 70, "Terminated", 0),  # aborted (terminated), wait 10
]


def result() -> SimResult:
    records = {}
    for name, q, submit, started, finished, phase, restarts in JOBS:
        key = f"default/{name}"
        records[key] = JobRecord(key, q, 1, 1, float(submit), first_start=started, all_started=started,
                                 finished=finished, phase=phase, restarts=restarts)
    # capacity 10 cpu, 100 GiB, no GPU.  Pod p1 holds (4 cpu, 40 GiB) over [10, 60], p2 (2 cpu, 10 GiB) over [30, 110]
    usage = UsageLedger(3)
    usage.hold(10, "p1", "q1", np.array([4.0, 40.0, 0.0]))
    usage.hold(30, "p2", "q1", np.array([2.0, 10.0, 0.0]))
    usage.release(60, "p1")
    usage.release(110, "p2")
    # sessions at 0 and 30: queue (allocated, deserved) shares; the last sample closes the run at 120
    samples = [Sample(0, np.zeros(3), {"q1": (0.2, 0.4), "q2": (0.2, 0.2)}),
               Sample(30, np.zeros(3), {"q1": (0.3, 0.3), "q2": (0.3, 0.3)}),
               Sample(120, np.zeros(3), {})]
    return SimResult(records, samples, np.array([10.0, 100.0, 0.0]), cycles=4, cycle_seconds=[0.1, 0.3, 0.2, 0.2],
                     events=40, rollbacks=2, evictions=5, wall_seconds=2.0, end_time=120.0, usage=usage)


@pytest.fixture
def summary() -> dict[str, object]:
    res = result()
    return metrics.summary(res, metrics.job_rows(res), "hand")


def test_outcomes_add_up_to_the_jobs(summary: dict) -> None:
    assert (summary["jobs"], summary["completed"], summary["failed"], summary["aborted"], summary["unfinished"]) == \
        (7, 2, 1, 2, 2)
    assert summary["never_started"] == 2 and summary["failed_or_aborted"] == 3


def test_wait_until_the_gang_started_and_never_started_apart(summary: dict) -> None:
    rows = {r["job"]: r for r in metrics.job_rows(result())}
    assert rows["default/d"]["wait"] is None and rows["default/e"]["wait"] is None
    assert rows["default/c"]["wait"] == 30  # a failed gang that had started: its wait is defined
    # waits 10, 20, 30, 40, 10 -> sorted 10 10 20 30 40: mean 22, median 20, p95 at rank 0.95 * 4 = 3.8: 30 + 0.8 * 10
    assert summary["wait_s"] == {"mean": 22.0, "p50": 20.0, "p95": 38.0, "p99": 39.6}


def test_jct_of_completed_jobs_only(summary: dict) -> None:
    # JCTs 110 and 60: mean 85; p95 = 60 + 0.95 * 50
    assert summary["jct_s"] == {"mean": 85.0, "p50": 85.0, "p95": 107.5, "p99": 109.5}
    rows = {r["job"]: r for r in metrics.job_rows(result())}
    assert [rows[f"default/{n}"]["jct"] for n in "abcdefg"] == [110, 60, None, None, None, None, None]


def test_makespan_is_first_submission_to_last_finish(summary: dict) -> None:
    assert summary["makespan_s"] == 110.0
    assert metrics.makespan([{"submit": 3.0, "finished": None}]) == 0.0  # nothing finished


def test_per_queue(summary: dict) -> None:
    q1, q2 = summary["per_queue"]["q1"], summary["per_queue"]["q2"]
    assert {k: q1[k] for k in ("jobs", "completed", "failed", "aborted", "unfinished", "never_started")} == \
        {"jobs": 4, "completed": 2, "failed": 0, "aborted": 1, "unfinished": 1, "never_started": 0}
    assert {k: q2[k] for k in ("jobs", "completed", "failed", "aborted", "unfinished", "never_started")} == \
        {"jobs": 3, "completed": 0, "failed": 1, "aborted": 1, "unfinished": 1, "never_started": 2}
    assert (q1["wait"]["mean"], q1["wait"]["p50"]) == (20.0, 15.0)  # 10, 20, 40, 10
    assert q2["wait"]["mean"] == 30.0 and q2["jct"]["mean"] is None


def test_utilisation_is_the_exact_time_average_over_the_window(summary: dict) -> None:
    # cpu held: 4 * 50 + 2 * 80 = 360 cpu-s over 10 cpu * 120 s = 0.3; memory 40 * 50 + 10 * 80 = 2800 / 12000;
    # a resource the cluster lacks is 0
    assert summary["window_s"] == 120.0
    assert summary["utilisation"] == {"cpu": 0.3, "memory": round(2800 / 12000, 4), "gpu": 0.0}


@pytest.mark.parametrize(("horizon", "cpu"), [(200.0, 360 / 2000), (60.0, (4 * 50 + 2 * 30) / 600)])
def test_a_horizon_moves_the_window(horizon: float, cpu: float) -> None:
    # a longer window counts idle time; a shorter one stops counting at its end (p1 10..60, p2 30..60)
    res = result()
    s = metrics.summary(res, metrics.job_rows(res), "hand", horizon)
    assert (s["window_s"], s["utilisation"]["cpu"]) == (horizon, round(cpu, 4))


def test_jain_index_of_queue_shares_is_time_weighted(summary: dict) -> None:
    # t 0..30: shares 0.2/0.4 = 0.5 and 1.0: (1.5)^2 / (2 * 1.25) = 0.9; t 30..120: equal shares, 1.0
    # -> (0.9 * 30 + 1.0 * 90) / 120 = 0.975
    assert summary["jain_fairness_queue_shares"] == 0.975
    assert metrics.jain([1.0, 0.0]) == 0.5 and metrics.jain([]) == 1.0


def test_counters_and_cost(summary: dict) -> None:
    assert (summary["restarts"], summary["evictions"], summary["gangs_rolled_back"], summary["cycles"]) == (3, 5, 2, 4)
    assert summary["scheduler_seconds_per_cycle"] == {"mean": 0.2, "max": 0.3, "total": 0.8}
    assert (summary["events"], summary["simulated_seconds"], summary["events_per_second"]) == (40, 120.0, 20.0)


def test_jobs_csv_writes_every_row(tmp_path: Path) -> None:
    metrics.write(tmp_path, result(), "hand")
    lines = (tmp_path / "jobs.csv").read_text().splitlines()
    assert lines[0].split(",") == [*metrics.JOB_COLUMNS, metrics.WHY_COLUMN] and len(lines) == 8
    assert lines[4] == "default/d,q2,1,1,Aborted,20.0,,,,30,,,0,0,"  # never started: empty wait (and why: it ended)


#: every metric of ``sim/metric_registry.py`` on the hand-made run, worked out above or here
HAND = {
    "wait_p50": 20.0, "wait_p95": 38.0, "jct_mean": 85.0, "jct_p95": 107.5,   # test_wait_..., test_jct_...
    "util_cpu": 0.3, "util_gpu": 0.0,                                          # test_utilisation_...
    "evictions": 5.0, "restarts": 3.0, "completed": 2.0, "unfinished": 2.0, "never_started": 2.0,
    "failed": 3.0,                    # the sweep's "failed" is failed or aborted: c (Failed), d and g (Aborted, Terminated)
    "fairness": 0.975, "makespan": 110.0,
    "jobs": 7.0,                      # a to g
    "jobs_failed": 1.0,               # c only: Volcano's Failed phase
    "aborted": 2.0,                   # d (Aborted) and g (Terminated)
    "wait_mean": 22.0,                # waits 10, 20, 30, 40, 10: 110 / 5
    "wait_p99": 39.6,                 # rank 0.99 * 4 = 3.96 of 10 10 20 30 40: 30 + 0.96 * 10
    "jct_p50": 85.0,                  # JCTs 60 and 110: halfway
    "jct_p99": 109.5,                 # 60 + 0.99 * 50
    "util_memory": 0.2333,            # 40 GiB * 50 s + 10 GiB * 80 s = 2800 over 100 GiB * 120 s, rounded to 4 places
    "gangs_rolled_back": 2.0, "cycles": 4.0,
    "scheduler_s_per_cycle": 0.2,     # (0.1 + 0.3 + 0.2 + 0.2) / 4
    "wall_seconds": 2.0,
    # no topology in this run: the four topology metrics have no value (sim/topology.py's tests compute them)
    "lca_tier_mean": None, "within_tier1": None, "sub_within_tier1": None, "sub_lca_tier_max_mean": None,
    # no GPU in this cluster and not a fill run: the GPU metrics have no value (tests/sim/test_gpu_fill.py computes
    # them by hand: test_gpu_summary_by_hand, test_fill_curve_by_hand)
    "gpu_unallocated": None, "gpu_frag": None, "fill_alloc_100": None, "fill_alloc_130": None,
    "gpu_alloc_final": None, "gpu_unallocated_mean": None, "gpu_frag_mean": None,
}


@pytest.mark.parametrize("name", sorted(HAND))
def test_every_registry_metric_by_hand(summary: dict, name: str) -> None:
    from pyvolcano.sim.metric_registry import METRICS

    m = METRICS[name]
    v = m.value(summary)
    assert v == pytest.approx(HAND[name]) if HAND[name] is not None else v is None
    if v is not None:  # within the range the registry gives it
        assert m.low <= v <= m.high and m.clip(v) == v


def test_the_registry_names_every_metric_once_and_the_hand_table_covers_it() -> None:
    from pyvolcano.sim.metric_registry import METRICS, SWEPT, metric

    assert set(HAND) == set(METRICS) and set(SWEPT) <= set(METRICS)
    assert metric("wait_p95[q1]") is METRICS["wait_p95"]
    assert all(METRICS[n].high == 1.0 for n in ("util_cpu", "util_memory", "util_gpu", "fairness", "within_tier1"))


def test_clip_and_direction() -> None:
    from pyvolcano.sim.metric_registry import METRICS

    util, wait, jobs = METRICS["util_gpu"], METRICS["wait_p95"], METRICS["jobs"]
    assert (util.clip(1.3), util.clip(-0.2), wait.clip(-5.0), wait.clip(7.0)) == (1.0, 0.0, 0.0, 7.0)
    assert wait.improved(9.0, 10.0) is True and wait.improved(11.0, 10.0) is False
    assert util.improved(0.6, 0.5) is True and util.improved(0.5, 0.6) is False
    assert wait.improved(10.4, 10.0, tolerance=0.5) is None and jobs.improved(3.0, 2.0) is None


def test_sweep_reads_the_registry(summary: dict) -> None:
    """A sweep point's metrics are the registry's swept ones, then per queue the wait percentiles: q1 waits 10, 10,
    20, 40 (p50 15, p95 at rank 2.85: 20 + 0.85 * 20 = 37); q2 only c's 30."""
    from pyvolcano.sim.metric_registry import SWEPT
    from pyvolcano.sim.sweep import point_metrics

    pm = point_metrics(summary)
    assert list(pm)[:len(SWEPT)] == list(SWEPT)
    assert {k: pm[k] for k in list(pm)[len(SWEPT):]} == {"wait_p50[q1]": 15.0, "wait_p95[q1]": 37.0,
                                                          "wait_p50[q2]": 30.0, "wait_p95[q2]": 30.0}
    assert all(pm[n] == pytest.approx(HAND[n]) if HAND[n] is not None else pm[n] is None for n in SWEPT)


def _vcjob(name: str, queue: str, cpu: str, duration: str) -> dict[str, object]:
    tmpl = {"metadata": {"annotations": {"pyvolcano.io/duration": duration}},
            "spec": {"containers": [{"name": "m", "image": "b", "resources": {"requests": {"cpu": cpu}}}]}}
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
            "metadata": {"name": name, "annotations": {"pyvolcano.io/arrival": "0"}},
            "spec": {"queue": queue, "minAvailable": 1, "tasks": [{"name": "w", "replicas": 1, "template": tmpl}]}}


def test_deserved_follows_the_queues_while_no_session_runs() -> None:
    """Queue a's job (3 cpu, 100 s) and queue b's (1 cpu, 300 s) both fit the 4-cpu node: the session at t = 1
    binds both and gives each its request (a: 3 cpu, 75 % of the cluster; b: 1 cpu).  Nothing is pending
    afterwards, so no session runs again; a's job ends at 102 (started at 2), b's at 302, the end of the window.
    A session at 102 would find no job of queue a and give it nothing: its deserved is 75 % over [1, 102] and
    0 after, a mean of 0.75 * 101 / 302 = 0.2508 (it used to stay at 75 % to the end: 0.75 * 301 / 302)."""
    from pyvolcano.conf.loader import load_conf_file
    from pyvolcano.sim.cluster import parse_cluster_spec
    from pyvolcano.sim.engine import Simulator
    from pyvolcano.sim.workload import from_manifests

    queues = [{"kind": "Queue", "metadata": {"name": n}, "spec": {"weight": 1}} for n in ("a", "b")]
    wl = from_manifests([_vcjob("x", "a", "3", "100"), _vcjob("y", "b", "1", "300")])
    res = Simulator(parse_cluster_spec("1x{cpu: 4, memory: 16Gi}"), queues, wl, load_conf_file(None)).run()
    rows = {r["job"]: r for r in metrics.job_rows(res)}
    assert (rows["default/x"]["finished"], rows["default/y"]["finished"], res.end_time) == (102.0, 302.0, 302.0)
    a = res.usage.deserved["a"]
    assert a.times == [0.0, 1.0, 102.0] and [v.tolist() for v in a.values] == [[0, 0, 0], [3, 0, 0], [0, 0, 0]]
    shares = metrics.summary(res, metrics.job_rows(res))["queue_shares"]
    assert shares["a"]["deserved"] == round(0.75 * 101 / 302, 4) == shares["a"]["allocated"]
    # b: 1 cpu (25 %) over [1, 302], dropping to nothing when its job ends with the window
    assert shares["b"]["deserved"] == round(0.25 * 301 / 302, 4)


def test_deserved_between_sessions_is_set_again_only_after_a_change(monkeypatch: pytest.MonkeyPatch) -> None:
    """``_deserved_between_sessions`` skips a call when no holding or deserved amount has changed and no session
    has sampled since its last one (every queue would be set as it stands); a holding that changes, or a session's
    sample (which may bring a new guarantee), makes it set the queues again.  Under ``deltas.CHECK`` the skipped
    call is worked out and compared, so a guarantee changed without a sample is caught."""
    from pyvolcano.conf.loader import load_conf_file
    from pyvolcano.framework.incremental import deltas
    from pyvolcano.sim.cluster import parse_cluster_spec
    from pyvolcano.sim.engine import Simulator
    from pyvolcano.sim.workload import from_manifests

    queues = [{"kind": "Queue", "metadata": {"name": "a"}, "spec": {"weight": 1}}]
    sim = Simulator(parse_cluster_spec("1x{cpu: 4, memory: 16Gi}"), queues, from_manifests([]), load_conf_file(None))
    monkeypatch.setattr(deltas, "CHECK", False)  # (the suite runs with the checks on)
    usage = sim.usage
    usage.set_deserved(0.0, "a", np.zeros(3))
    usage.hold(5.0, "default/p", "a", np.array([2.0, 0.0, 0.0]))
    sim.now = 5.0
    sim._deserved_between_sessions()
    a = usage.deserved["a"]
    assert (a.times, [v.tolist() for v in a.values]) == ([0.0, 5.0], [[0, 0, 0], [2, 0, 0]])
    # nothing changed: skipped (the same series; a hidden change of the guarantee is not seen)
    sim._guarantee["a"] = np.array([3.0, 0.0, 0.0])
    sim.now = 6.0
    changes = usage.changes
    sim._deserved_between_sessions()
    assert usage.changes == changes and a.times == [0.0, 5.0]
    # ... but check mode works the skipped call out and finds the guarantee no session sampled
    monkeypatch.setattr(deltas, "CHECK", True)
    with pytest.raises(AssertionError, match="queue a"):
        sim._deserved_between_sessions()
    monkeypatch.setattr(deltas, "CHECK", False)
    # a session's sample: the queues are set again, the guarantee raising a's deserved to 3 cpu
    sim.samples.append(Sample(6.0, np.zeros(3), {}))
    sim._deserved_between_sessions()
    assert (a.times, a.values[-1].tolist()) == ([0.0, 5.0, 6.0], [3, 0, 0])
    # a holding that changes: set again (4 cpu held is above the guarantee)
    usage.hold(7.0, "default/q", "a", np.array([2.0, 0.0, 0.0]))
    sim.now = 7.0
    sim._deserved_between_sessions()
    assert (a.times, a.values[-1].tolist()) == ([0.0, 5.0, 6.0, 7.0], [4, 0, 0])
