"""CronJobs and JobFlows in the simulator's --workload (sim/flows.py): a CronJob fires on simulated time, a
JobFlow runs its Jobs in dependency order; bad ones are reported and skipped."""

from __future__ import annotations

from typing import Any

from pyvolcano.conf.loader import load_conf_file
from pyvolcano.sim import metrics
from pyvolcano.sim.cluster import parse_cluster_spec
from pyvolcano.sim.engine import Simulator
from pyvolcano.sim.workload import DURATION, from_manifests

QUEUE = [{"kind": "Queue", "metadata": {"name": "default"}, "spec": {"weight": 1}}]
SPEC = {"queue": "default", "minAvailable": 1,
        "tasks": [{"name": "w", "replicas": 1, "template": {
            "metadata": {"annotations": {DURATION: "100"}},
            "spec": {"containers": [{"name": "m", "image": "x", "resources": {"requests": {"cpu": "1"}}}]}}}]}


def run(objs: list[dict[str, Any]], until: float | None = None) -> tuple[dict[str, dict[str, Any]], list[str]]:
    res = Simulator(parse_cluster_spec("1x{cpu: 4, memory: 16Gi}"), QUEUE, from_manifests(objs),
                    load_conf_file(None)).run(until)
    return {r["job"]: r for r in metrics.job_rows(res)}, res.problems


def cronjob(name: str = "cj", until: str | None = "1500", **spec: Any) -> dict[str, Any]:
    ann = {"pyvolcano.io/until": until} if until is not None else {}
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "CronJob",
            "metadata": {"name": name, "annotations": ann},
            "spec": {"schedule": "*/5 * * * *", "jobTemplate": {"spec": SPEC}, **spec}}


def test_a_cronjob_fires_every_five_simulated_minutes_until_its_end() -> None:
    rows, problems = run([cronjob()])
    assert problems == []
    # t=0 is 00:00 (no tick: nothing before the creation), then 300, 600, ..., 1500
    assert sorted(rows, key=lambda k: int(k.rsplit("-", 1)[1])) == [f"default/cj-{m}" for m in (5, 10, 15, 20, 25)]
    assert all(r["phase"] == "Completed" for r in rows.values())


def test_forbid_skips_ticks_while_a_job_runs() -> None:
    spec = {**SPEC, "tasks": [{**SPEC["tasks"][0], "template": {**SPEC["tasks"][0]["template"], "metadata": {
        "annotations": {DURATION: "400"}}}}]}
    cj = cronjob(concurrencyPolicy="Forbid")
    cj["spec"]["jobTemplate"] = {"spec": spec}
    rows, _ = run([cj])
    # each Job runs 400 s: the ticks at 600 and 1200 s find one active and are skipped
    assert sorted(rows) == ["default/cj-15", "default/cj-25", "default/cj-5"]


def test_a_cronjob_without_an_end_is_reported_and_until_bounds_it() -> None:
    rows, problems = run([cronjob(until=None)])
    assert rows == {} and problems == ["CronJob default/cj: no end: give it a pyvolcano.io/until annotation "
                                       "(simulated seconds) or run with --until; it does not fire"]
    rows, problems = run([cronjob(until=None)], until=700)
    assert sorted(rows) == ["default/cj-10", "default/cj-5"] and problems == []


def test_a_jobflow_runs_its_jobs_in_dependency_order() -> None:
    objs: list[dict[str, Any]] = [
        {"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlow", "metadata": {"name": "flow"},
         "spec": {"flows": [{"name": "b", "dependsOn": {"targets": ["a"]}}, {"name": "a"}]}},
        *({"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobTemplate", "metadata": {"name": n}, "spec": SPEC}
          for n in ("a", "b"))]
    rows, problems = run(objs)
    assert problems == []
    a, b = rows["default/flow-a"], rows["default/flow-b"]
    assert a["phase"] == b["phase"] == "Completed"
    assert float(b["submit"]) >= 100 > float(a["submit"])  # b arrives when a (100 s) completed


def test_bad_cron_and_cyclic_flows_are_skipped_with_volcanos_message() -> None:
    cyc = {"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlow", "metadata": {"name": "loop"},
           "spec": {"flows": [{"name": "a", "dependsOn": {"targets": ["b"]}},
                              {"name": "b", "dependsOn": {"targets": ["a"]}}]}}
    rows, problems = run([cronjob(schedule="every day"), cyc])
    assert rows == {}
    assert problems == ["CronJob default/cj: schedule is not a valid cron expression; skipped",
                        "JobFlow default/loop: jobflow Flow is not DAG; skipped"]


def test_replace_deletes_the_running_job_and_starts_the_next() -> None:
    spec = {**SPEC, "tasks": [{**SPEC["tasks"][0], "template": {**SPEC["tasks"][0]["template"], "metadata": {
        "annotations": {DURATION: "400"}}}}]}
    cj = cronjob(concurrencyPolicy="Replace", until="600")
    cj["spec"]["jobTemplate"] = {"spec": spec}
    rows, problems = run([cj])
    assert problems == []
    assert rows["default/cj-5"]["phase"] == "Terminated" and float(rows["default/cj-5"]["finished"]) == 600.1
    assert rows["default/cj-10"]["phase"] == "Completed"
