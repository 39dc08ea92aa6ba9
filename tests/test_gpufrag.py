"""FGD's fragmentation (api/gpufrag.py): hand-computed cases from the Go rules (pkg/utils/frag.go), the task mix
as GetTypicalPods builds it, and the vectorised forms against a node-by-node reference written from the Go code."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pyvolcano.api.gpufrag import (
    GPU_MODEL_LABEL,
    TaskClass,
    TaskMix,
    cluster_frag,
    frag_after_share,
    node_frag,
    sigmoid_score,
    take_whole,
    task_class,
)

MIX = TaskMix([TaskClass(1000, 1, 500), TaskClass(2000, 1, 1000), TaskClass(500, 0, 0)], [0.5, 0.3, 0.2])


def frag(mix: TaskMix, cpu: list[int], gpus: list[list[int]], models: list[str] | None = None) -> list[float]:
    models = models or ["A"] * len(cpu)
    return node_frag(mix, np.array(cpu), np.array(gpus), mix.access(models)).tolist()


def test_q3_counts_only_the_gpus_too_small_and_cpu_only_classes_count_everything() -> None:
    # node: 4 cpu, GPUs with 1000 and 300 left (1300).  Class 1 (500 of a GPU) fits GPU 0: the 300 is fragment
    # (x0.5); class 2 (a whole GPU) fits GPU 0: the 300 again (x0.3); the cpu-only class: all 1300 (x0.2)
    assert frag(MIX, [4000], [[1000, 300]]) == [0.5 * 300 + 0.3 * 300 + 0.2 * 1300]


def test_lack_of_gpu_and_of_cpu() -> None:
    # 1.5 cpu, GPUs 600 and 0: class 1 fits (Q3, nothing too small holds any), class 2 has no whole GPU and too
    # little cpu (Q1: all 600), the cpu-only class fits its cpu (XL: all 600)
    assert frag(MIX, [1500], [[600, 0]]) == [0.3 * 600 + 0.2 * 600]
    # Q4: the GPUs could hold class 1 but the cpu is short: all of it counts
    assert frag(MIX, [800], [[1000, 300]]) == [0.5 * 1300 + 0.3 * 1300 + 0.2 * 1300]


def test_gpu_model_constraint_no_access() -> None:
    mix = TaskMix([TaskClass(1000, 1, 500, "V100|T4"), TaskClass(1000, 1, 500)], [0.4, 0.6])
    # on a T4 both fit (Q3, nothing too small); on a P100 the first class cannot go: all 1000 left counts (x0.4)
    assert frag(mix, [4000, 4000], [[1000], [1000]], ["T4", "P100"]) == [0.0, 0.4 * 1000]
    # a node without GPUs has model "": a class naming models never goes there; it has nothing left anyway
    assert TaskClass(1, 1, 500, "T4").accessible("") is False
    assert TaskClass(1, 1, 500).accessible("") is True


def test_multi_gpu_class_needs_that_many_gpus() -> None:
    mix = TaskMix([TaskClass(1000, 2, 1000)], [1.0])
    # two free GPUs: Q3, nothing too small; one free and one at 700: Q2, all 1700 counts
    assert frag(mix, [8000, 8000], [[1000, 1000, 0], [1000, 700, 0]]) == [0.0, 1700.0]


def test_after_a_shared_task_each_gpu() -> None:
    got = frag_after_share(MIX, np.array([4000]), np.array([[1000, 300]]), MIX.access(["A"]), 1000, 500)
    # on GPU 0: cpu 3000, GPUs 500/300 (800): class 1 Q3 (300 too small), class 2 lacks a GPU (Q2 800), cpu-only
    # 800; GPU 1 cannot take 500
    assert got[0, 0] == 0.5 * 300 + 0.3 * 800 + 0.2 * 800
    assert math.isnan(got[0, 1])


def test_take_whole_is_sub_and_exclusive_ids() -> None:
    g = np.array([[300, 1000, 1000, 1000], [1000, 200, 0, 1000]])
    assert take_whole(g, 2, 1000).tolist() == [[300, 0, 0, 1000], [0, 200, 0, 0]]
    assert take_whole(g, 0, 0).tolist() == g.tolist()
    # a share of one GPU goes to the least-left GPU that holds it
    assert take_whole(g, 1, 250).tolist() == [[50, 1000, 1000, 1000], [750, 200, 0, 1000]]


def test_sigmoid_score_truncates() -> None:
    # no change: sigmoid(0) = 0.5 -> 50; frag down by 1000: 73.1 -> 73; up by 1000: 26.9 -> 26
    assert sigmoid_score(np.array([500.0, 1500.0, 0.0]), np.array([500.0, 500.0, 1000.0])).tolist() == [50, 73, 26]


def test_from_counts_keeps_the_popular_classes_until_95_percent() -> None:
    a, b, c, d = TaskClass(1000, 1, 500), TaskClass(2000, 0, 0), TaskClass(1000, 1, 1000), TaskClass(8000, 8, 1000)
    mix = TaskMix.from_counts({a: 60, b: 30, c: 6, d: 4})
    # 60 + 30 = 90 < 95, + 6 = 96 >= 95: three kept, weights over the 96 kept
    assert mix.classes == (a, b, c)
    assert mix.weights.tolist() == pytest.approx([60 / 96, 30 / 96, 6 / 96])
    # equal counts: the larger class first (PodResource.Less reversed: cpu, then milli, then GPUs, then models)
    tie = TaskMix.from_counts({a: 1, c: 1, b: 1}, threshold=100)
    assert tie.classes == (b, c, a)
    assert tie.weights.sum() == pytest.approx(1.0)


def test_from_openb_rows_and_pods_agree() -> None:
    rows = [{"name": "p0", "cpu_milli": "6000", "num_gpu": "1", "gpu_milli": "460", "gpu_spec": ""},
            {"name": "p1", "cpu_milli": "0", "num_gpu": "2", "gpu_milli": "1000", "gpu_spec": "V100M16|V100M32"},
            {"name": "p2", "cpu_milli": "4000", "num_gpu": "0", "gpu_milli": "0", "gpu_spec": ""}]
    mix = TaskMix.from_openb_rows(rows, threshold=100)
    assert set(mix.classes) == {TaskClass(6000, 1, 460), TaskClass(100, 2, 1000, "V100M16|V100M32"),
                                TaskClass(4000, 0, 0)}
    pods = [
        {"spec": {"containers": [{"resources": {"requests": {"cpu": "6"}, "limits": {"volcano.sh/gpu-memory": 460}}}]}},
        {"spec": {"containers": [{"resources": {"limits": {"volcano.sh/gpu-number": "2"}}}],
                  "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                      "nodeSelectorTerms": [{"matchExpressions": [
                          {"key": GPU_MODEL_LABEL, "operator": "In", "values": ["V100M16", "V100M32"]}]}]}}}}},
        {"spec": {"containers": [{"resources": {"requests": {"cpu": "4000m"}}}]}},
    ]
    assert [task_class(p) for p in pods] == [TaskClass(6000, 1, 460), TaskClass(100, 2, 1000, "V100M16|V100M32"),
                                             TaskClass(4000, 0, 0)]
    assert TaskMix.from_pods(pods, threshold=100).key() == mix.key()


def test_bad_rows_and_mixes_are_refused() -> None:
    with pytest.raises(ValueError, match=r"row 0 \(p0\)"):
        TaskMix.from_openb_rows([{"name": "p0", "cpu_milli": "x", "num_gpu": "1", "gpu_milli": "1"}])
    with pytest.raises(ValueError, match="milli-GPU at most 1000"):
        TaskMix([TaskClass(1, 1, 1200)], [1.0])
    with pytest.raises(ValueError, match="no task"):
        TaskMix.from_counts({})


# --- against a node-by-node reference written from the Go code ---------------------------------------------
def reference(mix: TaskMix, cpu: int, left: list[int], model: str) -> float:
    """NodeGpuShareFragAmount + FragAmountSumExceptQ3, class by class, bin by bin, as frag.go adds."""
    data = [0.0] * 7
    total = sum(left)
    for c, f in zip(mix.classes, mix.weights.tolist(), strict=True):
        if c.milli == 0:
            kind = 4 if cpu >= c.cpu else 5
        elif not c.accessible(model):
            kind = 6
        else:
            need, host = c.gpus, False
            for x in left:
                if x >= c.milli:
                    need -= 1
                    if need <= 0:
                        host = True
                        break
            kind = (2 if cpu >= c.cpu else 3) if host else (1 if cpu >= c.cpu else 0)
        if kind == 2:
            small = sum(x for x in left if x < c.milli)
            data[1] += f * float(small)
            data[2] += f * float(total - small)
        else:
            data[kind] += f * float(total)
    out = 0.0
    for k in range(7):
        if k != 2:
            out += data[k]
    return out


def test_vectorised_equals_the_reference_bit_for_bit() -> None:
    rng = np.random.default_rng(7)
    models = ["T4", "P100", "G2"]
    classes = {TaskClass(int(rng.integers(1, 40)) * 500, 1, int(rng.integers(1, 1000)),
                         str(rng.choice(["", "T4", "G2|P100"]))) for _ in range(25)}
    classes |= {TaskClass(4000, 2, 1000), TaskClass(8000, 8, 1000, "G2"), TaskClass(3000, 0, 0)}
    mix = TaskMix.from_counts({c: float(rng.integers(1, 50)) for c in classes}, threshold=95)
    n, d = 200, 8
    cpu = rng.integers(0, 64, n) * 1000
    left = np.where(rng.random((n, d)) < 0.4, 1000, rng.integers(0, 1001, (n, d)))
    left[:, 6:] = np.where(rng.random((n, 2)) < 0.5, 0, left[:, 6:])
    node_models = [models[i % 3] for i in range(n)]
    acc = mix.access(node_models)
    got = node_frag(mix, cpu, left, acc)
    want = [reference(mix, int(cpu[i]), left[i].tolist(), node_models[i]) for i in range(n)]
    assert got.tolist() == want  # exact: the same float additions in the same order
    after = frag_after_share(mix, cpu, left, acc, 2500, 370)
    for i in range(0, n, 7):
        for g in range(d):
            if left[i, g] >= 370:
                new = left[i].tolist()
                new[g] -= 370
                assert after[i, g] == reference(mix, int(cpu[i]) - 2500, new, node_models[i])
            else:
                assert math.isnan(after[i, g])
    assert cluster_frag(mix, cpu, left, node_models) == pytest.approx(sum(want))


# --- the Go code's own test vectors (pkg/utils/frag_test.go) --------------------------------------------------
#: ``TestingGenerateGetTypicalPods``: (cpu, GPUs, milli, models, percentage)
GO_TYPICAL = [
    (6000, 1, 465, "", 9.33), (8000, 1, 440, "2080", 9.15), (8000, 1, 475, "T4", 8.76), (8000, 1, 440, "P100", 8.72),
    (2000, 1, 465, "", 8.68), (12000, 1, 900, "", 8.65), (4000, 1, 900, "", 8.43), (16000, 1, 678, "T4", 8.36),
    (8000, 1, 500, "", 8.29), (6000, 1, 511, "", 8.11), (14000, 2, 1000, "2080", 0.54),
    (4000, 1, 1000, "2080", 0.43), (32000, 2, 1000, "T4", 0.43), (16000, 1, 1000, "V100M16", 0.40),
    (64000, 2, 1000, "", 0.40), (10000, 2, 1000, "", 0.40), (11400, 1, 1000, "T4", 0.36),
    (16000, 1, 1000, "T4", 0.36), (4000, 2, 1000, "", 0.36), (14000, 2, 1000, "V100M16", 0.36),
    (8000, 4, 1000, "", 0.36), (16000, 2, 1000, "", 0.32), (2000, 1, 1000, "T4", 0.32), (6000, 1, 1000, "", 0.32),
    (4000, 1, 1000, "", 0.32), (5000, 1, 1000, "", 0.32), (32000, 4, 1000, "V100M16", 0.32),
    (32000, 2, 1000, "", 0.32), (24000, 8, 1000, "2080", 0.32), (40000, 4, 1000, "", 0.29),
    (32000, 8, 1000, "", 0.29), (32000, 1, 1000, "T4", 0.29), (16000, 1, 1000, "", 0.25),
    (7000, 1, 1000, "V100M16", 0.25), (24000, 1, 1000, "T4", 0.25),
]
#: ``TestingGenerateGetTypicalPodsWithNonGpu``
GO_TYPICAL_NON_GPU = [
    (15700, 1, 1000, "", 28.69), (11900, 1, 1000, "", 18.93), (11400, 1, 1000, "", 12.27), (1000, 0, 0, "", 7.36),
    (18710, 1, 1000, "", 4.85), (8200, 1, 1000, "", 3.79), (16400, 1, 1000, "", 3.31), (9810, 1, 1000, "", 1.97),
    (15200, 1, 1000, "", 1.87), (11200, 1, 1000, "", 1.81), (14200, 1, 1000, "", 1.76), (12000, 0, 0, "", 1.65),
    (14900, 1, 1000, "", 1.39), (60200, 4, 1000, "", 1.23), (64200, 8, 1000, "", 1.07), (32200, 4, 1000, "", 1.01),
    (17400, 2, 1000, "", 0.91), (30200, 2, 1000, "", 0.69), (16000, 1, 1000, "", 0.64), (15000, 1, 1000, "", 0.59),
    (64000, 8, 1000, "", 0.53), (15000, 0, 0, "", 0.53), (11910, 1, 1000, "", 0.53), (120200, 8, 1000, "", 0.48),
    (11300, 1, 1000, "", 0.37), (30000, 2, 1000, "", 0.32), (9800, 1, 1000, "", 0.32), (8000, 1, 1000, "", 0.32),
    (2000, 1, 1000, "", 0.27), (2000, 1, 80, "", 0.27), (1000, 1, 1000, "", 0.27),
]


def go_mix(rows: list[tuple[int, int, int, str, float]]) -> TaskMix:
    return TaskMix([TaskClass(c, n, m, t) for c, n, m, t, _ in rows], [p / 100 for *_, p in rows])


@pytest.mark.parametrize(("rows", "cpu", "left", "model", "want"), [
    (GO_TYPICAL, 1000, [200, 1000, 1000, 500], "1080", 2566.62),  # TestNodeGpuShareFragAmountScore
    (GO_TYPICAL, 1000, [1000] * 4, "1080", 3802.40),
    (GO_TYPICAL, 1000, [1000] * 8, "1080", 7604.80),
    (GO_TYPICAL[:1], 1000, [200, 1000, 1000, 500], "1080", 251.91),
    (GO_TYPICAL_NON_GPU, 64000, [1000] * 8, "P100", 887.20),  # TestNodeGpuShareFragAmountWithNonGpu
    (GO_TYPICAL_NON_GPU, 32000, [1000] * 4 + [0] * 4, "P100", 554.4),
    (GO_TYPICAL_NON_GPU, 0, [1000] * 4 + [0] * 4, "P100", 4000),
])
def test_the_go_test_vectors(rows: list[tuple[int, int, int, str, float]], cpu: int, left: list[int], model: str,
                             want: float) -> None:
    assert frag(go_mix(rows), [cpu], [left], [model])[0] == pytest.approx(want, abs=0.01)
