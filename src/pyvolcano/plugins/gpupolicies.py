"""The FGD paper's baseline GPU placement policies (hkust-adsl/kubernetes-scheduler-simulator,
``pkg/simulator/plugin``), as node scores with the GPU choice their runs use (``-gpusel``,
``experiments/run_scripts/generate_run_scripts.py``).  pyvolcano's own plugins, not Volcano's; shared machinery in
``_gpushare.py``, FGD itself in ``fgd.py``.  Arguments of each: ``<name>.weight`` (score multiplier, default 1),
``<name>.tieBreak`` (``name``: the best node with the smallest name, as their simulator; ``random``; ``first``),
``<name>.seed`` (``_gpushare.py``).

* ``random`` (``random_score.go``): one node at random among those that pass (``PreScore`` picks it); a share of
  one GPU on a GPU at random among those that hold it (``allocateGpuIdBasedOnRandomFit``).
* ``dotprod`` (``dot_product_score.go``, ``-dimext merge -norm max``): ``100 x (1 - (cpu_left x cpu / 128000^2 +
  gpu_left x gpu / 8000^2) / 2)``, truncated, where ``gpu_left`` is the node's milli-GPU left and ``gpu`` the
  task's; 0 on a node short of cpu.
* ``gpuclustering`` (``gpu_clustering_score.go``): nodes already running only the task's kind of GPU task (a share,
  or ``n`` whole GPUs) score 75-100, nodes running it among others 50-75, nodes running no GPU task 25-50, other
  nodes 0-25; within each band, ``25 x (8000 - gpu_left) / 8000``; a task without GPUs scores 0.
* ``gpupacking`` (``gpu_packing_score.go``): a task that fits on GPUs already in use scores ``100 - sum(left% of
  the GPUs it takes) / 10`` (at least 50); one that needs free GPUs of a node in use ``50 - free GPUs taken`` (at
  least 33); on a node with every GPU free ``33 - free GPUs``; a task without GPUs 0.
* ``bestfit`` (``best_fit_score.go``): ``100 x (1 - ((cpu_left - cpu) / 128000 + (gpu_left - gpu) / 8000) / 2)``,
  truncated, then min-max normalised over the candidate nodes (``NormalizeScore``, whole numbers).

Every baseline but ``random`` gives a share of one GPU to the GPU with the least left that holds it, and whole
GPUs to the free GPUs with the lowest ids (``allocateGpuIdBasedOnBestFit``, ``-gpusel best``).
"""

from __future__ import annotations

import numpy as np

from pyvolcano.api.gpufrag import MILLI, TaskClass
from pyvolcano.api.job_info import TaskInfo
from pyvolcano.framework.registry import register_plugin
from pyvolcano.plugins._gpushare import (
    MAX_SCORE,
    MAX_SPEC_CPU,
    MAX_SPEC_GPU,
    GpuPolicy,
    Nodes,
    exclusive,
    rng_for,
)


@register_plugin
class RandomScore(GpuPolicy):
    """``RandomScore``: every candidate scores the same and the best-node choice is random."""

    name = "random"
    fresh = True

    def always_random(self) -> bool:
        return True

    def score(self, cls: TaskClass, at: Nodes) -> np.ndarray:
        return np.zeros(len(at.rows))

    def choose(self, task: TaskInfo, cls: TaskClass, at: Nodes) -> list[int]:
        """``allocateGpuIdBasedOnRandomFit``: uniform among the GPUs that hold the share (its reservoir sampling);
        whole GPUs: the first free ones."""
        left = at.gpu_left[0]
        if cls.milli < MILLI:
            ok = np.flatnonzero(left >= cls.milli)
            return [int(ok[rng_for(self.seed, task.uid, "gpu").integers(len(ok))])] if len(ok) else []
        return exclusive(left, cls.gpus)


@register_plugin
class DotProductScore(GpuPolicy):
    name = "dotprod"

    def score(self, cls: TaskClass, at: Nodes) -> np.ndarray:
        """``calculateDotProductScore`` with ``MergeGpuDim`` and ``NormByMax``, in the Go code's float order."""
        node_cpu = at.cpu_left.astype(np.float64) / MAX_SPEC_CPU
        node_gpu = at.gpu_left.sum(axis=1).astype(np.float64) / MAX_SPEC_GPU
        pod_cpu, pod_gpu = float(cls.cpu) / MAX_SPEC_CPU, float(cls.milli * cls.gpus) / MAX_SPEC_GPU
        dot = (0.0 + node_cpu * pod_cpu) + node_gpu * pod_gpu
        s = 1.0 - dot / 2.0
        return np.where(at.cpu_left >= cls.cpu, np.trunc(float(MAX_SCORE) * s), 0.0)


def _tag(cls: TaskClass) -> str | None:
    """``GetGpuAffinityFromPodAnnotation``: no GPU, a share of one, or ``n`` whole GPUs."""
    if cls.gpus == 0:
        return None
    return "share" if cls.gpus == 1 and cls.milli < MILLI else f"{cls.gpus}-gpu"


@register_plugin
class GpuClusteringScore(GpuPolicy):
    name = "gpuclustering"

    def score(self, cls: TaskClass, at: Nodes) -> np.ndarray:
        """``GpuClusteringScore.Score``: bands by the kinds of GPU task on the node (``NodeResource.GpuAffinity``),
        within a band by milli-GPU used (whole-number arithmetic as the Go code)."""
        tag = _tag(cls)
        out = np.zeros(len(at.rows))
        if tag is None:
            return out
        nodes = self.view.nodes
        fill = (MAX_SCORE // 4 * (MAX_SPEC_GPU - at.gpu_left.sum(axis=1))) // MAX_SPEC_GPU
        for k, i in enumerate(at.rows.tolist()):
            kinds = {t for t in (_tag(self.view.task_class(x)) for x in nodes.tasks[i].values()) if t is not None}
            if tag in kinds:
                band = 3 if len(kinds) == 1 else 2
            else:
                band = 1 if not kinds else 0
            out[k] = fill[k] + MAX_SCORE * band // 4
        return out


@register_plugin
class GpuPackingScore(GpuPolicy):
    name = "gpupacking"

    def score(self, cls: TaskClass, at: Nodes) -> np.ndarray:
        """``getPackingScore`` node by node (a few lines of whole-number arithmetic per node)."""
        out = np.zeros(len(at.rows))
        if cls.gpus == 0:
            return out
        for k in range(len(at.rows)):
            n = int(at.gpu_count[k])
            left = at.gpu_left[k, :n]
            free = int(np.count_nonzero(left == MILLI))
            if free == n:
                out[k] = max(MAX_SCORE // 3 - free, free)
                continue
            want, free_used, used = cls.gpus, 0, []
            for g in np.argsort(left, kind="stable").tolist():
                if want == 0:
                    break
                if cls.milli <= left[g]:
                    want -= 1
                    used.append(g)
                    free_used += int(left[g] == MILLI)
            if want:
                continue  # the Go plugin errs; the predicate keeps such a node out
            if free_used:
                out[k] = max(MAX_SCORE // 2 - free_used, MAX_SCORE // 3)
            else:
                pct = sum(int(left[g]) * 100 // MILLI for g in used)
                out[k] = max(MAX_SCORE - pct // 10, MAX_SCORE // 2)
        return out


@register_plugin
class BestFitScore(GpuPolicy):
    name = "bestfit"
    fresh = True
    batch = True

    def score(self, cls: TaskClass, at: Nodes) -> np.ndarray:
        """``getBestFitScore``, then ``NormalizeScore`` over the nodes scored together (the candidates)."""
        free_cpu = at.cpu_left.astype(np.float64)
        free_gpu = at.gpu_left.sum(axis=1).astype(np.float64)
        s = (0.0 + (free_cpu - float(cls.cpu)) / MAX_SPEC_CPU * 0.5) + (
            free_gpu - float(cls.milli * cls.gpus)) / MAX_SPEC_GPU * 0.5
        raw = np.trunc((1.0 - s) * float(MAX_SCORE)).astype(np.int64)
        if not len(raw):
            return raw.astype(np.float64)
        low, high = int(raw.min()), int(raw.max())
        if high == low:
            return np.zeros(len(raw))
        return ((raw - low) * MAX_SCORE // (high - low)).astype(np.float64)
