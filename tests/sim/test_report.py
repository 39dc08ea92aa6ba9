"""The report's figures on tiny runs worked out by hand (per-queue integrals, who displaced whom, what evictions threw
away, admission vs placement wait) and what the pages say (the comparison page and the single-run page)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from pyvolcano.conf.loader import load_conf, load_conf_file
from pyvolcano.sim import metrics
from pyvolcano.sim.cluster import parse_cluster_spec
from pyvolcano.sim.engine import SimResult, Simulator
from pyvolcano.sim.run import Inputs, Run, common_window, compare_page, run_one
from pyvolcano.sim.workload import JobSpec, from_specs

#: proportion without overcommit, so that a job of an under-served queue is admitted and then reclaims
RECLAIM = """actions: "enqueue, allocate, reclaim"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
"""
NO_RECLAIM = RECLAIM.replace("enqueue, allocate, reclaim", "enqueue, allocate")
QUEUES = [{"kind": "Queue", "metadata": {"name": n}, "spec": {"weight": 1, "reclaimable": True}} for n in ("a", "b")]
JOBS = [JobSpec("x", 0, queue="a", tasks=4, min_available=1, cpu="1", memory="1Gi", duration=1000),
        JobSpec("y", 100, queue="b", tasks=2, min_available=2, cpu="1", memory="1Gi", duration=100)]
CLUSTER = "1x{cpu: 4, memory: 16Gi}"


def reclaim_run() -> SimResult:
    return Simulator(parse_cluster_spec(CLUSTER), QUEUES, from_specs(JOBS), load_conf(RECLAIM)).run()


def test_reclaim_names_the_job_it_made_room_for_and_what_was_thrown_away() -> None:
    # 4 cpu.  x (queue a, 4 pods of 1 cpu, minAvailable 1) binds at t=1 and runs from 2.  y (queue b, a gang of two
    # 1-cpu pods) arrives at 100 and is admitted; at 101 reclaim evicts two of x's pods for it (b is below its
    # deserved 2 cpu, a above) and pipelines y onto the node.  The victims keep the node for the 5 s grace and are
    # deleted at 106: each threw away what it held from its bind at 1, 1 cpu and 1 GiB for 105 s.
    res = reclaim_run()
    assert [(e.t, e.job, e.queue, e.cause, e.by) for e in res.eviction_log] == \
        [(101.0, "default/x", "a", "reclaim", ["default/y"])] * 2
    assert [e.lost.tolist() for e in res.eviction_log] == [[105.0, 105.0, 0.0]] * 2  # type: ignore[union-attr]
    s = metrics.summary(res, metrics.job_rows(res))
    assert s["cost"]["evictions"] == 2 and s["cost"]["evictions_by_cause"] == {"reclaim": 2}
    assert s["cost"]["cpu_hours_lost"] == round(210 / 3600, 3) and s["cost"]["gpu_hours_lost"] == 0
    assert s["cost"]["restarts"] == 0 and s["cost"]["failed"] == 0
    # y: submitted and admitted at 100 (admission 0), bound at 106 when the victims are gone, running at 107
    # (placement 7); x: admitted at 0, running at 2
    assert s["wait_stages_s"]["b"]["admission"]["mean"] == 0 and s["wait_stages_s"]["b"]["placement"]["mean"] == 7
    assert s["wait_stages_s"]["a"]["placement"]["mean"] == 2


def test_queue_shares_over_every_event() -> None:
    # Same run; window [0, 1208] (x's recreated pods run 208..1208).  Queue a holds 4 cpu over 1..106, 2 over
    # 106..207, 4 over 207..1002 (the two recreated pods bind at 207) and 2 over 1002..1208: its dominant share of
    # the cluster (cpu, of 4) averages (105 + 0.5*101 + 795 + 0.5*206) / 1208.  Queue b holds 2 cpu over 106..207.
    res = reclaim_run()
    assert res.end_time == 1208
    shares = metrics.summary(res, metrics.job_rows(res))["queue_shares"]
    assert shares["a"]["allocated"] == round((105 + 0.5 * 101 + 795 + 0.5 * 206) / 1208, 4)
    assert shares["b"]["allocated"] == round(0.5 * 101 / 1208, 4)
    # Deserved (cpu, memory GiB) as proportion computed it in each session: a (4, 4) from 1, (2, 4) from 101,
    # (2, 2) from 102, (2, 4) from 106, (4, 4) from 207.  From then on nothing is pending and no session runs:
    # a's request is what it holds, so its deserved follows that, (2, 2) from 1002 when x's first two pods end
    # and nothing at 1208 (engine.py: _deserved_between_sessions).  Proportion's share, max over cpu and memory
    # of allocated/deserved: 0 on 0..1, 1 on 1..101, 2 on 101..106 (4 cpu held, 2 deserved), 1 on 106..207 (2
    # held, 2 deserved), 1 on 207..1002 and on 1002..1208.
    led = res.usage
    assert led.deserved["a"].times == [0.0, 1.0, 101.0, 102.0, 106.0, 207.0, 1002.0, 1208.0]
    assert [x.tolist()[:2] for x in led.deserved["a"].values] == [[0, 0], [4, 4], [2, 4], [2, 2], [2, 4], [4, 4],
                                                                  [2, 2], [0, 0]]
    assert shares["a"]["share"] == round((100 + 2 * 5 + 101 + 795 + 206) / 1208, 4)
    # a's deserved dominant share: 0 on 0..1, then 1 (4 of 4 cpu) except 0.5 on 101..207 and on 1002..1208 (it
    # stayed at 1 there while only two of its pods still ran)
    assert shares["a"]["deserved"] == round((100 + 0.5 * 106 + 795 + 0.5 * 206) / 1208, 4)
    # b deserves (2 cpu, 2 GiB) from the session at 101 until the one at 207, where y has completed and b has no job
    # left: proportion gives a queue without jobs nothing (it leaves it out of its queue attributes)
    assert led.deserved["b"].times == [100.0, 101.0, 207.0]
    assert [x.tolist() for x in led.deserved["b"].values] == [[0, 0, 0], [2, 2, 0], [0, 0, 0]]
    assert shares["b"]["deserved"] == round(0.5 * 106 / 1208, 4)


def compared(tmp_path: Path) -> tuple[Path, list[Run]]:
    inputs = Inputs(parse_cluster_spec(CLUSTER), QUEUES, from_specs(JOBS), settings={"workload": "two jobs"})
    runs: list[Run] = []
    run_one(inputs, load_conf(NO_RECLAIM), "no-reclaim", tmp_path / "r0", progress=False, keep=runs)
    run_one(inputs, load_conf(RECLAIM), "reclaim", tmp_path / "r1", progress=False, keep=runs)
    summaries = common_window(runs)
    return compare_page(runs, summaries, tmp_path / "compare.html", "two confs"), runs


def test_comparison_page_answers_what_reclaim_changes(tmp_path: Path) -> None:
    page, _ = compared(tmp_path)
    text = page.read_text()
    # without reclaim y waits for x's pods to finish at 1002: bound then, running at 1003, wait 903; with it, 7
    # the headline leads with all jobs (x waits 2 s in both; mean (2 + 903) / 2 and p95 2 + 0.95 * 901 before),
    # then the queue that moved most, with a warning: one job is too few to read a p95
    assert "all 2 jobs: wait mean 452 s &rarr; 4 s" in text and "p95 858 s &rarr; 7 s" in text
    assert "failed or aborted jobs 0 &rarr; 0" in text
    assert text.index("all 2 jobs") < text.index("Queue that moved most: <b>b</b>, p95 wait 903 s &rarr; 7 s")
    assert "(only 1 job: too few to read a p95" in text and "queues a (1), b (1)" in text
    assert "mean wait, job by job: no clear difference (only 2 jobs;" in text
    assert "2 evictions, 0 restarts, 0 failed jobs" in text
    for section in ("At a glance", "Settings", "Conf diff: no-reclaim &rarr; reclaim", "Per queue", "Utilisation",
                    "allocated vs deserved", "Wait-time CDFs per queue", "Throughput", "Admission vs placement",
                    "Evictions: who displaced whom"):
        assert section in text, section
    assert '<span class="add">+actions: enqueue, allocate, reclaim</span>' in text
    assert "<td>workload</td><td>two jobs</td>" in text and "1 nodes; cpu 4, memory 16 Gi, gpu 0" in text
    assert "<td>default/x (a)</td><td>Completed</td><td>default/y (b)</td>" in text
    assert text.count('src="data:image/png;base64,') == 6  # five plots and the eviction timeline
    assert "http" not in text.replace("http-equiv", "")  # nothing to fetch
    # each run's own page has the same plots, and evictions.csv names who displaced whom
    assert (tmp_path / "r1" / "report.html").read_text().count("data:image/png;base64,") == 6
    with (tmp_path / "r1" / "evictions.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [(r["job"], r["cause"], r["displaced_by"], r["cpu_seconds_lost"]) for r in rows] == \
        [("default/x", "reclaim", "default/y", "105.0")] * 2


def test_failed_jobs_are_in_every_table(tmp_path: Path) -> None:
    # maxRetry 3: the node fails four times under the gang, which fails at the third restart (test_simulator's
    # test_max_retry_fails_the_job); the page counts it failed, lists it, and shows each node-failure eviction
    fails = [(10.0 + 20 * i, "node-0000", 1.0) for i in range(4)]
    inputs = Inputs(parse_cluster_spec("1x{cpu: 4, memory: 16Gi}"),
                    [{"kind": "Queue", "metadata": {"name": "default"}, "spec": {"weight": 1}}],
                    from_specs([JobSpec("g", 0, tasks=2, min_available=2, cpu="1", memory="1Gi", duration=1000),
                                JobSpec("ok", 200, cpu="1", memory="1Gi", duration=10)]),
                    node_failures=fails)
    s = run_one(inputs, load_conf_file(None), "default", tmp_path, progress=False)
    assert s["cost"]["failed"] == 1 and s["cost"]["restarts"] == 3
    assert s["cost"]["evictions_by_cause"] == {"node failure": 6}  # two pods, three times
    text = (tmp_path / "report.html").read_text()
    assert "<td>jobs: completed / failed or aborted / unfinished / total</td><td>1 / 1 / 0 / 2</td>" in text
    assert "<td>default/g</td><td>default</td><td>Failed</td>" in text  # the list of jobs that did not complete
    assert "<td>default</td><td>default</td><td>2</td><td>1</td><td>1</td>" in text  # per-queue table
    assert "<td>jobs failed</td><td>1</td>" in text  # the cost table
    assert text.count("<td>node failure</td>") == 6  # the eviction table


@pytest.mark.parametrize("n", [1, 3])
def test_pages_for_one_and_several_runs(tmp_path: Path, n: int) -> None:
    from pyvolcano.sim import report

    res = reclaim_run()
    rows = metrics.job_rows(res)
    data = [report.RunData(f"r{i}", res, rows, metrics.summary(res, rows), report.conf_text(load_conf(RECLAIM)))
            for i in range(n)]
    text = report.page(data, "t")
    assert text.count("<h3>Conf diff") == n - 1 and ("(the same conf)" in text) == (n > 1)
    assert text.count("GPU-h thrown away") == n
