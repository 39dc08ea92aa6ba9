"""Fuzzing the input boundary: mutated scenario files and confs through ``cycle``, ``queues`` and ``simulate``
must give exit 0 or 2, never an exception, within a time and memory bound.  The issue's known cases are
regression tests; a bounded number of random examples runs in ``make test``, many more in ``make bench``."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyvolcano.api.job_validate import JobProblem, job_problems, job_update_problems
from tests.fuzzing import BAD_TEXTS, CONFS, SCENARIOS, check, invoke, mutated, run_guarded

FAST = settings(max_examples=12, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])
SLOW = settings(max_examples=600, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])

CLUSTER = b"""\
{apiVersion: v1, kind: Node, metadata: {name: n1}, status: {allocatable: {cpu: '8', memory: 16Gi, pods: '110'}}}
---
{apiVersion: v1, kind: Node, metadata: {name: n2}, status: {allocatable: {cpu: '8', memory: 16Gi, pods: '110'}}}
"""
WORKLOAD = b"""\
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: a, namespace: default, annotations: {pyvolcano.io/arrival: '0'}}
spec:
  minAvailable: 2
  schedulerName: volcano
  queue: default
  tasks:
  - name: w
    replicas: 2
    template:
      metadata: {annotations: {pyvolcano.io/duration: '30'}}
      spec: {containers: [{name: c, image: x, resources: {requests: {cpu: '2', memory: 1Gi}}}]}
"""
CSV = (b"id,submit,queue,priority,tasks,min_available,cpu,memory,gpu,duration\n"
       b"j1,0,default,0,2,2,1,1Gi,0,30\nj2,5,default,10,1,1,2,2Gi,0,60\n")
#: a vcjob with every field the typed boundary reads (api/job_model.py): policies of the job and of a task, plugins
#: and their arguments, volumes, maxRetry, ttlSecondsAfterFinished, networkTopology, a partition policy, dependsOn
VCJOB = b"""\
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: rich, namespace: default, annotations: {pyvolcano.io/arrival: '1'}}
spec:
  minAvailable: 4
  schedulerName: volcano
  queue: default
  maxRetry: 2
  ttlSecondsAfterFinished: 60
  policies: [{event: PodEvicted, action: RestartJob}, {exitCode: 3, action: AbortJob}]
  plugins: {svc: ['--publish-not-ready-addresses=true'], env: [], ssh: []}
  volumes: [{mountPath: /data, volumeClaimName: data}]
  networkTopology: {mode: soft}
  tasks:
  - name: ps
    replicas: 1
    policies: [{events: [TaskCompleted], action: CompleteJob}]
    template:
      metadata: {annotations: {pyvolcano.io/duration: '20'}}
      spec: {containers: [{name: c, image: x, resources: {requests: {cpu: '1', memory: 1Gi}}}]}
  - name: worker
    replicas: 4
    minAvailable: 3
    dependsOn: {name: [ps], iteration: any}
    partitionPolicy: {totalPartitions: 2, partitionSize: 2, networkTopology: {mode: hard, highestTierAllowed: 1}}
    template:
      metadata: {annotations: {pyvolcano.io/duration: '30'}}
      spec: {containers: [{name: c, image: x, resources: {requests: {cpu: '1', memory: 1Gi}}}]}
"""
#: a sweep of one tiny point: every knob of the grid is a simulate option (sim/options.py)
SWEEP = b"""\
name: fuzz
workload: {synthetic: {jobs: 4, rate: 1, gang_sizes: [1, 2], mean_duration: 20, gpu_fraction: 0}}
cluster: "2x{cpu: 8, memory: 16Gi}"
confs: [{name: binpack, set: {plugins.binpack.binpack.weight: 5}}]
grid: {period: [1], mean_duration: [20], jobs: [4], node_failures: [0], cluster_size: [2]}
seeds: [0]
simulate: {period: 1, start_latency: 1, grace: 5, until: 400}
objective: {metric: wait_p95, goal: min}
"""
#: CSV cells the row model must refuse or take: non-finite, negative, huge, non-ASCII digits, bad names
CSV_CELLS = [b"nan", b"inf", b"-1", b"1e30", b"", b"abc", b"\xff", b"9" * 5000, b"100000000", "\u0663".encode(),
             b"1_0", b"1e12", b"J!x", b"Bad Queue", b"0x10", b"+5", b" 7 ", b"1.5", b"-0"]


def _snapshot_case(tmp_path: Path, data: bytes, command: str) -> None:
    f = tmp_path / "in.yaml"
    f.write_bytes(data)
    check(invoke([command, str(f), "-o", "json"]), f"{command} on {data[:300]!r}")


def _conf_case(tmp_path: Path, data: bytes) -> None:
    f = tmp_path / "c.conf"
    f.write_bytes(data)
    check(invoke(["cycle", str(SCENARIOS[0]), "-o", "json", "--config", str(f)]), f"conf {data[:300]!r}")


def _sim_case(tmp_path: Path, cluster: bytes, workload: bytes, csv: bool = False) -> None:
    (tmp_path / "cluster.yaml").write_bytes(cluster)
    (tmp_path / ("w.csv" if csv else "w.yaml")).write_bytes(workload)
    src = ["--csv", str(tmp_path / "w.csv")] if csv else ["--workload", str(tmp_path / "w.yaml")]
    out = invoke(["simulate", "--cluster", str(tmp_path / "cluster.yaml"), *src, "--no-progress",
                  "--until", "2000", "--out", str(tmp_path / "out")], seconds=40)
    check(out, f"simulate cluster={cluster[:200]!r} workload={workload[:300]!r}")


# --- the known cases ----------------------------------------------------------------------------
@pytest.mark.parametrize("text", BAD_TEXTS, ids=lambda b: repr(b[:24]))
@pytest.mark.parametrize("command", ["cycle", "queues"])
def test_bad_yaml_is_one_clear_error(tmp_path: Path, command: str, text: bytes) -> None:
    f = tmp_path / "in.yaml"
    f.write_bytes(text)
    out = invoke([command, str(f), "-o", "json"])
    check(out, command)
    assert out.exit_code == 2
    assert "pyvolcano: error:" in out.output and str(f) in out.output, out.output


@pytest.mark.parametrize("text", BAD_TEXTS, ids=lambda b: repr(b[:24]))
def test_bad_yaml_conf_is_one_clear_error(tmp_path: Path, text: bytes) -> None:
    f = tmp_path / "c.conf"
    f.write_bytes(text)
    out = invoke(["cycle", str(SCENARIOS[0]), "-o", "json", "--config", str(f)])
    check(out, "conf")
    assert out.exit_code == 2 and str(f) in out.output, out.output


def test_conf_nested_1000_deep(tmp_path: Path) -> None:
    f = tmp_path / "c.conf"
    f.write_text("actions: allocate\ntiers:\n- plugins:\n  - name: gang\n    arguments: {a: " + "[" * 1000
                 + "]" * 1000 + "}\n")
    out = invoke(["cycle", str(SCENARIOS[0]), "-o", "json", "--config", str(f)])
    check(out, "deep conf")
    assert out.exit_code == 2 and "nested more than" in out.output


POD = ("{apiVersion: v1, kind: Pod, metadata: {name: p, namespace: ns, annotations: "
       "{scheduling.k8s.io/group-name: g}}, spec: {schedulerName: volcano, containers: [{name: c, resources: "
       "{requests: {cpu: '%s'}}}]%s}, status: {phase: %s}}")
NODE = "{apiVersion: v1, kind: Node, metadata: {name: %s}, status: {allocatable: {cpu: '%s', memory: 8Gi}}}"
PG = ("{apiVersion: scheduling.volcano.sh/v1beta1, kind: PodGroup, metadata: {name: g, namespace: ns}, "
      "spec: {minMember: %s}, status: {phase: Inqueue}}")
QUEUE = ("{apiVersion: scheduling.volcano.sh/v1beta1, kind: Queue, metadata: {name: default}, "
         "spec: {weight: %s, guarantee: {resource: {cpu: %s}}}, status: {state: Open}}")

QUEUE_AFF = ("{apiVersion: scheduling.volcano.sh/v1beta1, kind: Queue, metadata: {name: q2}, "
             "spec: {affinity: {nodeGroupAffinity: {requiredDuringSchedulingIgnoredDuringExecution: %s}}}}")

#: (a snapshot, the field the error must name): each object is skipped with exit 2, never a traceback
KNOWN_BAD_OBJECTS = [
    ("{kind: 5, metadata: {name: x}}", None),
    ("{apiVersion: v1, kind: Node, metadata: {name: n9}, status: {allocatable: {cpu: .inf}}}", "status.allocatable.cpu"),
    ("{apiVersion: v1, kind: Node, metadata: {name: n9}, status: {allocatable: {cpu: .nan}}}", "status.allocatable.cpu"),
    ("{apiVersion: v1, kind: Node, metadata: {name: n9}, status: {allocatable: {cpu: '-4'}}}", "status.allocatable.cpu"),
    ("{apiVersion: v1, kind: Node, metadata: {name: n9}, status: {allocatable: {cpu: 4}, conditions: 5}}",
     "status.conditions"),
    ("{apiVersion: v1, kind: Node, metadata: {name: n9}, status: {allocatable: {cpu: 4}, conditions: [null]}}",
     "status.conditions[0]"),
    (PG % ".inf", "spec.minMember"),
    (PG % "1e30", "spec.minMember"),
    (QUEUE % (".inf", "1"), "spec.weight"),
    (QUEUE % ("1", ".nan"), "spec.guarantee.resource.cpu"),
    ("{apiVersion: scheduling.k8s.io/v1, kind: PriorityClass, metadata: {name: pc}, value: .inf}", "value"),
    ("{apiVersion: policy/v1, kind: PodDisruptionBudget, metadata: {name: b, namespace: ns}, "
     "status: {disruptionsAllowed: abc}}", "status.disruptionsAllowed"),
    ("{apiVersion: v1, kind: ResourceQuota, metadata: {name: q, namespace: ns}, status: 'null'}", "status"),
    (POD % ("-8", "", "Running"), "spec.containers[0].resources.requests.cpu"),
    (POD % ("1", ", priority: .inf", "Pending"), "spec.priority"),
    (POD % ("1", ", affinity: {nodeAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [{weight: .inf, "
            "preference: {matchExpressions: [{key: a, operator: Exists}]}}]}}", "Pending"), "weight"),
    (POD % ("1", ", affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms:"
            " [null]}}}", "Pending"), "nodeSelectorTerms[0]"),
    (POD % ("1", ", containers: [{name: c, ports: [{hostPort: '²'}]}]", "Pending"), "hostPort"),
    (POD % ("1", ", tolerations: [null]", "Pending"), "spec.tolerations[0]"),
    ("{apiVersion: v1, kind: Pod, metadata: {name: p2, namespace: ns, annotations: {volcano.sh/task-spec: [1]}}, "
     "spec: {schedulerName: volcano, containers: [{name: c}]}}", "metadata.annotations"),
    # a Queue's node-group affinity lists group names: an integer, a null or a list of strings is refused (a
    # traceback, or pods bound to a node group named "None")
    (QUEUE_AFF % "[5]", "spec.affinity.nodeGroupAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]"),
    (QUEUE_AFF % "[null]", "spec.affinity.nodeGroupAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]"),
    (QUEUE_AFF % "abc", "spec.affinity.nodeGroupAffinity.requiredDuringSchedulingIgnoredDuringExecution"),
    ("{apiVersion: scheduling.volcano.sh/v1beta1, kind: Queue, metadata: {name: q2}, spec: {affinity: 5}}",
     "spec.affinity"),
    # strict types where the field is a bool or an integer: "yes" is no bool, true no integer
    ("{apiVersion: scheduling.volcano.sh/v1beta1, kind: Queue, metadata: {name: q2}, spec: {reclaimable: 'yes'}}",
     "spec.reclaimable"),
    ("{apiVersion: scheduling.volcano.sh/v1beta1, kind: Queue, metadata: {name: q2}, spec: {weight: true}}",
     "spec.weight"),
    ("{apiVersion: v1, kind: Node, metadata: {name: n9}, spec: {unschedulable: 1}, status: {allocatable: {cpu: 4}}}",
     "spec.unschedulable"),
    ("{apiVersion: v1, kind: Pod, metadata: {name: p3, namespace: Bad_NS}, spec: {containers: [{name: c}]}}",
     "metadata.namespace"),
    # ASCII digits only, as Kubernetes reads numbers: int("٣") and Decimal("٣") are 3 in Python
    (POD % ("\u0663", "", "Pending"), "spec.containers[0].resources.requests.cpu"),
    (PG % "'\u0663'", "spec.minMember"),
    (PG % "'1_0'", "spec.minMember"),
    # a time beyond what datetime formats (MAX_TIME, 1e11 s)
    ("{apiVersion: v1, kind: Node, metadata: {name: n9, creationTimestamp: 1e12}, status: {allocatable: {cpu: 4}}}",
     "metadata.creationTimestamp"),
]


@pytest.mark.parametrize(("obj", "field"), KNOWN_BAD_OBJECTS, ids=[f"{i}" for i in range(len(KNOWN_BAD_OBJECTS))])
@pytest.mark.parametrize("command", ["cycle", "queues"])
def test_known_bad_objects_are_skipped_with_exit_2(tmp_path: Path, command: str, obj: str,
                                                   field: str | None) -> None:
    good = [NODE % ("n1", "4"), PG % "1", POD.replace("name: p,", "name: ok,") % ("1", "", "Pending")]
    f = tmp_path / "s.yaml"
    f.write_text("\n---\n".join([*good, obj]) + "\n")
    out = invoke([command, str(f), "-o", "json"])
    check(out, obj)
    if field is not None:
        assert out.exit_code == 2, out.output
        assert field in out.output, out.output


def test_negative_request_of_a_running_pod_cannot_make_room(tmp_path: Path) -> None:
    """The issue's case: a running pod requesting -8 cpu let a 10-cpu pod bind onto a 4-cpu node."""
    objs = [NODE % ("n1", "4"), PG % "1", POD % ("10", "", "Pending"),
            POD.replace("name: p,", "name: r,").replace("group-name: g", "group-name: g2") % (
                "-8", ", nodeName: n1", "Running")]
    f = tmp_path / "s.yaml"
    f.write_text("\n---\n".join(objs) + "\n")
    out = invoke(["cycle", str(f), "-o", "json"])
    check(out, "negative request")
    assert out.exit_code == 2
    assert '"binds": {}' in out.output.replace(" ", "").replace('"binds":{}', '"binds": {}'), out.output


@pytest.mark.parametrize("spec", ["math:pi", "json:dumps", ":x", "os:path"])
def test_module_attr_that_is_not_a_plugin(tmp_path: Path, spec: str) -> None:
    f = tmp_path / "c.conf"
    f.write_text(f"actions: allocate\ntiers:\n- plugins:\n  - name: '{spec}'\n")
    out = invoke(["cycle", str(SCENARIOS[0]), "-o", "json", "--config", str(f)])
    check(out, spec)
    assert out.exit_code == 2 and "line 4" in out.output, out.output


@pytest.mark.parametrize("text", ["a: 1\n", "", "{apiVersion: v1, kind: ConfigMap, metadata: {name: x}}\n"])
def test_every_snapshot_command_refuses_what_is_no_snapshot(tmp_path: Path, text: str) -> None:
    """``queues`` printed an empty report and exited 0 where ``cycle`` refused: one rule for both
    (``SnapshotFile.require_cluster``)."""
    f = tmp_path / "s.yaml"
    f.write_text(text)
    for command in ("cycle", "queues"):
        out = invoke([command, str(f), "-o", "json"])
        check(out, command)
        assert out.exit_code == 2 and "not a cluster snapshot" in out.output, (command, out.output)


def test_queues_exits_2_after_skipping_like_cycle(tmp_path: Path) -> None:
    f = tmp_path / "s.yaml"
    f.write_text(f"{NODE % ('n1', '4')}\n---\n{{apiVersion: v1, kind: Node, metadata: {{name: bad}}}}\n")
    for command in ("cycle", "queues"):
        out = invoke([command, str(f), "-o", "json"])
        assert out.exit_code == 2, (command, out.output)
        strict = invoke([command, str(f), "-o", "json", "--strict"])
        assert strict.exit_code == 2 and "malformed" in strict.output, (command, strict.output)


@pytest.mark.parametrize("opt", [["--period", "nan"], ["--until", "nan"], ["--grace", "inf"],
                                 ["--start-latency", "-1"], ["--compress", "nan"], ["--period", "0"]])
def test_simulate_refuses_non_finite_times(tmp_path: Path, opt: list[str]) -> None:
    (tmp_path / "w.csv").write_bytes(CSV)
    out = invoke(["simulate", "--cluster", "2x{cpu: 8, memory: 16Gi}", "--csv", str(tmp_path / "w.csv"),
                  "--no-progress", "--out", str(tmp_path / "o"), *opt])
    check(out, str(opt))
    assert out.exit_code == 2 and opt[0] in out.output, out.output


@pytest.mark.parametrize("bad", ["replicas: 1e30", "replicas: .inf", "replicas: -1", "replicas: abc",
                                 "replicas: 100000000"])
def test_simulate_refuses_absurd_replicas(tmp_path: Path, bad: str) -> None:
    (tmp_path / "cluster.yaml").write_bytes(CLUSTER)
    (tmp_path / "w.yaml").write_bytes(WORKLOAD.replace(b"replicas: 2", bad.encode()))
    out = invoke(["simulate", "--cluster", str(tmp_path / "cluster.yaml"), "--workload", str(tmp_path / "w.yaml"),
                  "--no-progress", "--out", str(tmp_path / "o")])
    assert out.exit_code == 2 and "replicas" in out.output, out.output


# --- random mutations -----------------------------------------------------------------------------------
def _seed_scenario(i: int) -> bytes:
    return SCENARIOS[i % len(SCENARIOS)].read_bytes()


@st.composite
def scenario_case(draw: st.DrawFn) -> tuple[str, bytes]:
    seed = _seed_scenario(draw(st.integers(0, len(SCENARIOS) - 1)))
    return draw(st.sampled_from(("cycle", "queues"))), draw(mutated(seed))


@st.composite
def conf_case(draw: st.DrawFn) -> bytes:
    return draw(mutated(draw(st.sampled_from(CONFS)).read_bytes()))


@st.composite
def sim_case(draw: st.DrawFn) -> tuple[bytes, bytes, bool]:
    which = draw(st.sampled_from(("cluster", "workload", "csv")))
    if which == "cluster":
        return draw(mutated(CLUSTER)), WORKLOAD, False
    if which == "workload":
        return CLUSTER, draw(mutated(WORKLOAD)), False
    lines = CSV.split(b"\n")
    row = draw(st.integers(1, 2))
    cells = lines[row].split(b",")
    col = draw(st.integers(0, len(cells) - 1))
    cells[col] = draw(st.sampled_from(CSV_CELLS) | st.text(max_size=6).map(lambda t: t.encode()))
    lines[row] = b",".join(cells)
    return CLUSTER, b"\n".join(lines), True


def _vcjob_case(tmp_path: Path, data: bytes) -> None:
    """A mutated vcjob through the simulator (``simulate --workload``) and through the admission rules the job
    controller, the webhook and ``job run`` apply (``job_problems``; ``job_update_problems`` from the seed):
    exit 0 or 2, and problems returned, never raised."""
    _sim_case(tmp_path, CLUSTER, data)
    try:
        docs = list(yaml.safe_load_all(data))
    except Exception:  # PyYAML's own errors too (a KeyError for "!!bool maybe")
        return  # the simulator's run above reported the file it cannot read
    seed = yaml.safe_load(VCJOB)
    for doc in docs:
        if isinstance(doc, dict):
            problems = job_problems(doc, {"default"})
            assert all(isinstance(p, JobProblem) and p.field for p in problems), problems
            job_update_problems(seed, doc)


def _sweep_case(tmp_path: Path, data: bytes) -> None:
    """A sweep file is read and planned in-process (``--list``: every value checked, nothing run); when that
    accepts it, the sweep runs in a child process with an address-space and a time bound (its worker processes
    die with it)."""
    f = tmp_path / "s.yaml"
    f.write_bytes(data)
    listed = invoke(["sweep", str(f), "--list", "--out", str(tmp_path / "o")])
    check(listed, f"sweep --list on {data[:400]!r}")
    if listed.exit_code == 0:
        ran = run_guarded(["sweep", str(f), "--out", str(tmp_path / "o"), "--no-progress", "-j", "1", "-o", "json"])
        check(ran, f"sweep on {data[:400]!r}")


@st.composite
def sweep_case(draw: st.DrawFn) -> bytes:
    return draw(mutated(SWEEP))


@FAST
@given(case=scenario_case())
def test_fuzz_snapshots(tmp_path_factory: pytest.TempPathFactory, case: tuple[str, bytes]) -> None:
    _snapshot_case(tmp_path_factory.mktemp("f"), case[1], case[0])


@FAST
@given(data=conf_case())
def test_fuzz_confs(tmp_path_factory: pytest.TempPathFactory, data: bytes) -> None:
    _conf_case(tmp_path_factory.mktemp("f"), data)


@settings(FAST, max_examples=6)
@given(case=sim_case())
def test_fuzz_simulate(tmp_path_factory: pytest.TempPathFactory, case: tuple[bytes, bytes, bool]) -> None:
    _sim_case(tmp_path_factory.mktemp("f"), *case)


@settings(FAST, max_examples=8)
@given(data=sweep_case())
def test_fuzz_sweeps(tmp_path_factory: pytest.TempPathFactory, data: bytes) -> None:
    _sweep_case(tmp_path_factory.mktemp("f"), data)


@settings(FAST, max_examples=5)
@given(data=mutated(VCJOB))
def test_fuzz_vcjobs(tmp_path_factory: pytest.TempPathFactory, data: bytes) -> None:
    _vcjob_case(tmp_path_factory.mktemp("f"), data)


def test_the_seed_vcjob_runs(tmp_path: Path) -> None:
    """The vcjob fuzzer's seed is a good Job: admitted and run to the end (so mutations start from a working
    file)."""
    assert job_problems(yaml.safe_load(VCJOB), {"default"}) == []
    (tmp_path / "cluster.yaml").write_bytes(CLUSTER)
    (tmp_path / "w.yaml").write_bytes(VCJOB)
    out = invoke(["simulate", "--cluster", str(tmp_path / "cluster.yaml"), "--workload", str(tmp_path / "w.yaml"),
                  "--no-progress", "--until", "2000", "--out", str(tmp_path / "out")], seconds=40)
    assert out.exit_code == 0, out.output


def test_the_seed_sweep_runs(tmp_path: Path) -> None:
    """The fuzzer's seed is a good sweep: its point runs (so mutations start from a working file)."""
    f = tmp_path / "s.yaml"
    f.write_bytes(SWEEP)
    out = run_guarded(["sweep", str(f), "--out", str(tmp_path / "o"), "--no-progress", "-j", "1", "-o", "json"])
    check(out, "seed sweep")
    assert out.exit_code == 0 and '"ran": 1' in out.output, out.output


@pytest.mark.slow
@settings(SLOW, max_examples=150)
@given(data=sweep_case())
def test_fuzz_sweeps_many(tmp_path_factory: pytest.TempPathFactory, data: bytes) -> None:
    _sweep_case(tmp_path_factory.mktemp("f"), data)


@pytest.mark.slow
@SLOW
@given(case=scenario_case())
def test_fuzz_snapshots_many(tmp_path_factory: pytest.TempPathFactory, case: tuple[str, bytes]) -> None:
    _snapshot_case(tmp_path_factory.mktemp("f"), case[1], case[0])


@pytest.mark.slow
@SLOW
@given(data=conf_case())
def test_fuzz_confs_many(tmp_path_factory: pytest.TempPathFactory, data: bytes) -> None:
    _conf_case(tmp_path_factory.mktemp("f"), data)


@pytest.mark.slow
@settings(SLOW, max_examples=200)
@given(case=sim_case())
def test_fuzz_simulate_many(tmp_path_factory: pytest.TempPathFactory, case: tuple[bytes, bytes, bool]) -> None:
    _sim_case(tmp_path_factory.mktemp("f"), *case)


@pytest.mark.slow
@settings(SLOW, max_examples=200)
@given(data=mutated(VCJOB))
def test_fuzz_vcjobs_many(tmp_path_factory: pytest.TempPathFactory, data: bytes) -> None:
    _vcjob_case(tmp_path_factory.mktemp("f"), data)
