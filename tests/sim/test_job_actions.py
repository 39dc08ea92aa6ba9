"""The job lifecycle actions in the simulator, worked out by hand: a gang of two tasks on one 4-cpu node,
``short`` (1 pod, 10 s) and ``long`` (1 pod, 100 s), minAvailable 2; the node fails at t=20 for 5 s, which evicts
the running ``long`` pod (``short`` has already succeeded) and raises PodEvicted.

Before the failure: both pods bind at t=1 (held from the bind), run at 2; ``short`` succeeds at 12.  CPU-seconds
held up to the failure: short 11 (1..12) + long 19 (1..20) = 30.
"""

from __future__ import annotations

import copy

import pytest

from pyvolcano.conf.loader import load_conf_file
from pyvolcano.sim import metrics
from pyvolcano.sim.cluster import parse_cluster_spec
from pyvolcano.sim.engine import SimResult, Simulator
from pyvolcano.sim.workload import JobSpec, Workload, from_specs

QUEUE = [{"kind": "Queue", "metadata": {"name": "default"}, "spec": {"weight": 1}}]


def gang(action: str) -> Workload:
    wl = from_specs([JobSpec("g", 0, tasks=1, min_available=1, cpu="1", memory="1Gi", duration=100)])
    job = wl.jobs[0][1]
    long = job["spec"]["tasks"][0]
    long["name"] = "long"
    short = copy.deepcopy(long)
    short["name"] = "short"
    short["template"]["metadata"]["annotations"]["pyvolcano.io/duration"] = "10"
    job["spec"]["tasks"] = [short, long]
    job["spec"]["minAvailable"] = 2
    job["spec"]["policies"] = [{"event": "PodEvicted", "action": action}]
    return wl


def simulate(action: str) -> tuple[dict[str, object], SimResult, Simulator]:
    sim = Simulator(parse_cluster_spec("1x{cpu: 4, memory: 16Gi}"), QUEUE, gang(action), load_conf_file(None),
                    node_failures=[(20.0, "node-0000", 5.0)])
    res = sim.run()
    return metrics.job_rows(res)[0], res, sim


def cpu_seconds(res: SimResult) -> float:
    return float(res.usage.utilisation(res.capacity, 0.0, res.end_time)[0] * res.capacity[0] * res.end_time)


def test_restart_job_reruns_every_pod_of_the_gang_including_the_succeeded_one() -> None:
    # RestartJob kills every pod (PodRetainPhaseNone: the Succeeded ``short`` too) and deletes the PodGroup; the
    # re-created group is enqueued again while the node is down (tainted not-ready, but its resources still count
    # for enqueue, as in Volcano master), the controller then creates both pods, allocate binds them when the node
    # is back at 25, they run at 26: short succeeds at 36, long at 126.
    # CPU-seconds: 30 before + short 11 (25..36) + long 101 (25..126) = 142 (only the evicted pod again: 131).
    row, res, sim = simulate("RestartJob")
    assert (row["phase"], row["restarts"], row["finished"]) == ("Completed", 1, 126.0)
    assert cpu_seconds(res) == pytest.approx(142.0)
    st = sim.controller.jobs["default/g"]
    assert (st.retries, st.version) == (1, 2)  # one retry; the restart and the completion each killed the job


def test_restart_pod_reruns_only_the_evicted_pod() -> None:
    # RestartPod (killTarget): only the target; the PodGroup stays Running, so the new pod is bound as soon as the
    # node is back (25), runs at 26 and succeeds at 126.  CPU-seconds: 30 + long 101 (25..126) = 131.
    row, res, sim = simulate("RestartPod")
    assert (row["phase"], row["restarts"], row["finished"]) == ("Completed", 1, 126.0)
    assert cpu_seconds(res) == pytest.approx(131.0)
    assert sim.controller.jobs["default/g"].version == 1  # a target kill does not bump the version


def test_restart_task_reruns_the_evicted_pods_task_only() -> None:
    # RestartTask kills the pods of ``long`` only (the evicted one is already gone): same as RestartPod here.
    row, res, _ = simulate("RestartTask")
    assert (row["phase"], row["restarts"], row["finished"]) == ("Completed", 1, 126.0)
    assert cpu_seconds(res) == pytest.approx(131.0)


@pytest.mark.parametrize(("action", "phase", "jct"), [("AbortJob", "Aborted", None),
                                                      ("TerminateJob", "Terminated", None),
                                                      ("CompleteJob", "Completed", 20.0)])
def test_ending_actions_end_the_job_at_the_eviction(action: str, phase: str, jct: float | None) -> None:
    # Nothing runs again: the job ends at t=20; CPU-seconds 30.
    row, res, _ = simulate(action)
    assert (row["phase"], row["finished"], row["jct"], row["restarts"]) == (phase, 20.0, jct, 0)
    assert cpu_seconds(res) == pytest.approx(30.0)


def test_failed_gang_keeps_its_first_start_as_wait() -> None:
    # maxRetry 3 with node failures at 10, 30, 50: the third restart fails the job; the gang started at t=2, so
    # its wait is 2 (until the gang started), not undefined and not the first pod's start of a later run.
    fails = [(10.0 + 20 * i, "node-0000", 1.0) for i in range(3)]
    sim = Simulator(parse_cluster_spec("1x{cpu: 4, memory: 16Gi}"), QUEUE,
                    from_specs([JobSpec("g", 0, tasks=2, min_available=2, cpu="1", memory="1Gi", duration=1000)]),
                    load_conf_file(None), node_failures=fails)
    row = metrics.job_rows(sim.run())[0]
    assert (row["phase"], row["restarts"], row["finished"], row["all_started"], row["wait"]) == \
        ("Failed", 3, 50.0, 2.0, 2.0)
