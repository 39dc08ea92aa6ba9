"""``--synthetic-services``: the oversubscribed month of single-pod services (issue 15's speed target)."""

from __future__ import annotations

from click.testing import CliRunner

from pyvolcano.cli import main
from pyvolcano.sim.workload import MONTH, SERVICE_CPUS, services


def test_services_are_single_pods_with_lifetimes_from_minutes_to_the_span() -> None:
    wl = services(seed=4, jobs=400)
    assert wl.jobs == services(seed=4, jobs=400).jobs  # same seed, same workload
    arrivals = [t for t, _ in wl.jobs]
    assert arrivals == sorted(arrivals) and arrivals[-1] < 1.5 * MONTH
    lives, gpus = [], 0
    for _, job in wl.jobs:
        (task,) = job["spec"]["tasks"]
        assert task["replicas"] == 1 and job["spec"]["minAvailable"] == 1
        pod = task["template"]
        req = pod["spec"]["containers"][0]["resources"]["requests"]
        assert int(req["cpu"]) in SERVICE_CPUS
        gpus += int(req.get("nvidia.com/gpu", "0")) > 0
        lives.append(float(pod["metadata"]["annotations"]["pyvolcano.io/duration"]))
    assert 300 <= min(lives) < 3600 and 0.3 * MONTH < max(lives) <= MONTH
    assert 10 <= gpus <= 80  # about 10 % of 400


def test_simulate_runs_services_and_refuses_two_workloads(tmp_path: object) -> None:
    r = CliRunner().invoke(main, ["simulate", "--synthetic-services", "30", "--span", "3600", "--cluster",
                                  "2x{cpu: 256, memory: 1Ti, nvidia.com/gpu: 8}", "--out", str(tmp_path),
                                  "--no-progress", "-o", "json"])
    assert r.exit_code == 0, r.output
    assert '"jobs": 30' in r.output
    r = CliRunner().invoke(main, ["simulate", "--synthetic-services", "30", "--synthetic", "5", "--cluster",
                                  "2x{cpu: 8, memory: 8Gi}", "--out", str(tmp_path)])
    assert r.exit_code == 2 and "exactly one workload" in r.output
