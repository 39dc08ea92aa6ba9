"""GPU fragmentation as the FGD paper measures it (Weng et al., USENIX ATC '23; their simulator,
hkust-adsl/kubernetes-scheduler-simulator), vectorised over nodes x GPUs.

**The task mix** (``pkg/utils/frag.go: GetTypicalPods``, with the paper's run settings of
``scripts/generate_config_and_run.py``: CPU-only tasks included, popularity threshold 95 %, step 1, no GPU weight).
Every task of the workload is reduced to its *class* ``(cpu milli, GPUs, milli-GPU per GPU, GPU models)``
(``simontype.PodResource``); the classes are sorted by how many tasks they have (most first; equal counts by the
class itself, largest first: ``TargetPodList.Less``), and the most popular are kept, one at a time, until they
cover 95 % of the tasks; their weights are their counts over all tasks, then divided by the share kept, so they
add up to 1.  A task's cpu is Kubernetes' non-zero request (``GetNonzeroRequests``: a container asking no cpu
counts 100 m).

**A node's fragmentation** (``NodeGpuShareFragAmountScore``, which sums ``NodeGpuShareFragAmount`` over every bin
but Q3) is the GPU amount (milli-GPU) left on the node that the mix cannot use, in expectation: for each class,
with its weight,

* a class asking for no GPU (``XL``/``XR``), a class whose GPU models exclude the node's (``NoAccess``,
  ``IsNodeAccessibleToPodByType``), a class the node's GPUs cannot hold (``CanNodeHostPodOnGpuMemory``: fewer than
  ``GPUs`` GPUs with at least ``milli`` left; ``Q1``/``Q2``) or whose cpu the node lacks (``Q4``): every milli-GPU
  left on the node;
* a class the node can take (``Q3``): the milli-GPU left on the GPUs that have less than the class's ``milli``.

The sum is taken in the Go code's floating-point order (per bin, classes in mix order, then the bins in order):
the FGD score truncates ``100 x sigmoid(delta / 1000)`` to an integer, and ``delta = 0`` (50) against a rounding
error of either sign (49 or 50) would change which nodes tie for the top.

A GPU's *milli-GPU left* is ``1000`` for a free GPU; with Volcano's gpushare devices (``api/devices.py``) each GPU
has ``volcano.sh/gpu-memory / gpu-number`` memory, which the simulator sets to 1000 per GPU, so a GPU's memory
left is its milli-GPU left (``milli_left``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pyvolcano.api import devices as dv
from pyvolcano.api.quantity import parse_quantity
from pyvolcano.errors import QuantityError

#: ``gpushareutils.MILLI``: a whole GPU
MILLI = 1000
#: the node label naming its GPU model (the simulator's ``gpu_spec`` mapping; ``openb``'s ``model`` column)
GPU_MODEL_LABEL = "alibaba.com/gpu-model"
#: ``schedutil.DefaultMilliCPURequest``: the cpu Kubernetes' scoring counts for a container that asks none
NONZERO_MILLI_CPU = 100
#: ``DefaultTypicalPodPopularityThreshold`` as the paper's runs set it (``--pod-popularity-threshold 95``)
POPULARITY_THRESHOLD = 95
#: bins of ``FragRatioDataMap``: q1 lack both, q2 lack GPU, (q3 satisfied), q4 lack cpu, xl, xr, no access
Q1, Q2, Q3, Q4, XL, XR, NA = range(7)
_COUNTED = (Q1, Q2, Q4, XL, XR, NA)  # ``FragAmountSumExceptQ3``, in order


@dataclass(frozen=True)
class TaskClass:
    """``simontype.PodResource``: cpu milli, GPUs, milli-GPU on each (1000: whole GPUs) and the GPU models the task
    may run on, ``|``-separated as the trace's ``gpu_spec`` (empty: any)."""

    cpu: int
    gpus: int
    milli: int
    models: str = ""

    def go_key(self) -> tuple[int, int, int, str]:
        """``PodResource.Less``: cpu, then milli, then GPUs, then the model string."""
        return (self.cpu, self.milli, self.gpus, self.models)

    def model_set(self) -> frozenset[str]:
        return frozenset(m for m in self.models.split("|") if m)

    def accessible(self, node_model: str) -> bool:
        """``IsNodeAccessibleToPodByType``: no model named, or the node's among them (a node without GPUs has
        model "" and takes no class that names one)."""
        names = self.model_set()
        return not names or node_model in names


class TaskMix:
    """The workload's typical tasks (``TargetPodList``): classes in FGD's order with weights summing to 1."""

    def __init__(self, classes: Sequence[TaskClass], weights: Sequence[float]) -> None:
        if len(classes) != len(weights):
            raise ValueError(f"task mix: {len(classes)} classes but {len(weights)} weights")
        if not classes:
            raise ValueError("task mix: no class")
        w = np.asarray(weights, dtype=np.float64)
        if not np.all(np.isfinite(w)) or np.any(w < 0) or np.any(w > 1):
            raise ValueError("task mix: every weight must be in [0, 1]")
        for c in classes:
            if c.cpu < 0 or c.gpus < 0 or not 0 <= c.milli <= MILLI or (c.gpus > 0) != (c.milli > 0):
                raise ValueError(f"task mix: class {c} is not a task (GPUs and milli-GPU both 0 or both > 0, "
                                 f"milli-GPU at most {MILLI})")
        self.classes = tuple(classes)
        self.weights = w
        self.cpu = np.array([c.cpu for c in classes], dtype=np.int64)
        self.gpus = np.array([c.gpus for c in classes], dtype=np.int64)
        self.milli = np.array([c.milli for c in classes], dtype=np.int64)
        self._access: dict[str, np.ndarray] = {}

    def __len__(self) -> int:
        return len(self.classes)

    def __repr__(self) -> str:
        return f"TaskMix({len(self)} classes)"

    def key(self) -> tuple[tuple[TaskClass, float], ...]:
        """What the mix is (for caches that must not mix two mixes up)."""
        return tuple(zip(self.classes, self.weights.tolist(), strict=True))

    def access(self, node_models: Sequence[str]) -> np.ndarray:
        """nodes x classes: may the class run on the node's GPU model (``IsNodeAccessibleToPod``)."""
        rows = []
        for m in node_models:
            got = self._access.get(m)
            if got is None:
                got = self._access[m] = np.array([c.accessible(m) for c in self.classes], dtype=bool)
            rows.append(got)
        return np.array(rows, dtype=bool).reshape(len(node_models), len(self))

    # --- building a mix -------------------------------------------------------------------------------
    @classmethod
    def from_counts(cls, counts: Mapping[TaskClass, float], threshold: float = POPULARITY_THRESHOLD,
                    step: int = 1) -> TaskMix:
        """``GetTypicalPods`` over the count of tasks of each class: most popular first, kept until they cover
        ``threshold`` % of all tasks (``step`` classes at a time), weights renormalised over those kept."""
        if not counts:
            raise ValueError("task mix: no task to learn it from")
        total = 0.0
        for n in counts.values():
            total += n
        order = sorted(counts.items(), key=lambda kv: (kv[1], kv[0].go_key()), reverse=True)
        classes = [c for c, _ in order]
        pct = [float(n) for _, n in order]
        expected = float(threshold) * total / 100.0
        i = n_kept = 0
        cum = 0.0
        while cum < expected:
            n_kept += step
            while i < n_kept and i < len(classes):
                cum += pct[i]
                pct[i] = pct[i] / total
                i += 1
            if i >= len(classes):
                break
        if i >= len(classes):
            return cls(classes, pct)
        share = cum / total
        return cls(classes[:i], [p / share for p in pct[:i]])

    @classmethod
    def from_classes(cls, tasks: Iterable[TaskClass], threshold: float = POPULARITY_THRESHOLD) -> TaskMix:
        counts: dict[TaskClass, float] = {}
        for t in tasks:
            counts[t] = counts.get(t, 0.0) + 1.0
        return cls.from_counts(counts, threshold)

    @classmethod
    def from_openb_rows(cls, rows: Iterable[Mapping[str, Any]], threshold: float = POPULARITY_THRESHOLD) -> TaskMix:
        """The mix of an ``openb_pod_list_*.csv`` (rows as ``csv.DictReader`` gives them: ``cpu_milli``,
        ``num_gpu``, ``gpu_milli``, ``gpu_spec``), as their simulator builds it from the pod list before tuning."""
        def one(k: int, r: Mapping[str, Any]) -> TaskClass:
            try:
                cpu, n, milli = int(r["cpu_milli"]), int(r["num_gpu"]), int(r["gpu_milli"])
            except (KeyError, TypeError, ValueError) as exc:
                raise ValueError(f"row {k} ({r.get('name', '?')}): cpu_milli, num_gpu and gpu_milli must be whole "
                                 f"numbers ({exc})") from None
            return TaskClass(cpu or NONZERO_MILLI_CPU, n, milli if n else 0, str(r.get("gpu_spec") or ""))
        return cls.from_classes((one(k, r) for k, r in enumerate(rows)), threshold)

    @classmethod
    def from_pods(cls, pods: Iterable[Mapping[str, Any]], threshold: float = POPULARITY_THRESHOLD) -> TaskMix:
        """The mix of pod manifests (``task_class``)."""
        return cls.from_classes((task_class(p) for p in pods), threshold)


def _milli_cpu(q: Any) -> int:
    try:
        d = parse_quantity(q)
    except QuantityError:
        return 0
    return int((d * 1000).to_integral_value(rounding="ROUND_CEILING")) if d.is_finite() else 0


def _allowed_models(pod: Mapping[str, Any]) -> str:
    """The GPU models a pod may run on: the values of its required node affinity (``In``) or node selector on
    ``alibaba.com/gpu-model`` ("" when it names none)."""
    spec = pod.get("spec") or {}
    sel = (spec.get("nodeSelector") or {}).get(GPU_MODEL_LABEL)
    if sel:
        return str(sel)
    na = ((spec.get("affinity") or {}).get("nodeAffinity") or {})
    req = na.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    names: list[str] = []
    for term in req.get("nodeSelectorTerms") or []:
        for e in (term or {}).get("matchExpressions") or []:
            if e.get("key") == GPU_MODEL_LABEL and e.get("operator") == "In":
                names.extend(str(v) for v in e.get("values") or [] if str(v) not in names)
    return "|".join(names)


def task_class(pod: Mapping[str, Any]) -> TaskClass:
    """A pod's class as FGD reads it (``GetPodResource``): cpu the containers' non-zero requests; GPUs from
    Volcano's gpushare limits (``volcano.sh/gpu-memory``: that many milli-GPU of one GPU; ``volcano.sh/gpu-number``:
    whole GPUs); GPU models from its node affinity on ``alibaba.com/gpu-model``."""
    spec = pod.get("spec") or {}
    cpu = 0
    for c in spec.get("containers") or []:
        req = ((c or {}).get("resources") or {}).get("requests") or {}
        got = _milli_cpu(req["cpu"]) if "cpu" in req else 0
        cpu += got or NONZERO_MILLI_CPU
    mem, num = dv.gpushare_request(pod)
    if mem > 0:
        gpus, milli = 1, min(mem, MILLI)
    elif num > 0:
        gpus, milli = num, MILLI
    else:
        gpus, milli = 0, 0
    return TaskClass(cpu, gpus, milli, _allowed_models(pod))


# --- fragmentation ----------------------------------------------------------------------------------------
def _sum_in_go_order(mix: TaskMix, cpu_left: np.ndarray, total: np.ndarray, cnt: np.ndarray, partial: np.ndarray,
                     access: np.ndarray) -> np.ndarray:
    """``NodeGpuShareFragAmount`` then ``FragAmountSumExceptQ3`` for K node states: ``cpu_left`` (K,), ``total``
    milli-GPU left (K,), per class (K, T) the GPUs with at least its milli left (``cnt``), the milli left on
    those with less (``partial``), and ``access``.  Floating point as the Go code adds: per bin, classes in order."""
    gpu_class = mix.milli > 0
    cpu_ok = cpu_left[:, None] >= mix.cpu[None, :]
    host = access & (cnt >= mix.gpus[None, :])
    q3 = gpu_class[None, :] & host & cpu_ok
    # the bin each class's amount goes to (Q3's counted part goes to Q2)
    b = np.where(gpu_class[None, :],
                 np.where(~access, NA, np.where(host, np.where(cpu_ok, Q2, Q4), np.where(cpu_ok, Q2, Q1))),
                 np.where(cpu_ok, XL, XR))
    amount = np.where(q3, partial, total[:, None]).astype(np.float64)
    term = mix.weights[None, :] * amount
    out = np.zeros(len(total), dtype=np.float64)
    for k in _COUNTED:
        out = out + np.cumsum(np.where(b == k, term, 0.0), axis=1)[:, -1]
    return out


def counts_of(mix: TaskMix, gpu_left: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per node and class (K, T): GPUs with at least the class's milli left, and the milli left on the others."""
    left = gpu_left[:, :, None]
    ge = left >= mix.milli[None, None, :]
    return ge.sum(axis=1), np.where(ge, 0, left).sum(axis=1)


def node_frag(mix: TaskMix, cpu_left: np.ndarray, gpu_left: np.ndarray, access: np.ndarray) -> np.ndarray:
    """FGD's fragmentation of each node (``NodeGpuShareFragAmountScore``), in milli-GPU.

    ``cpu_left``: (N,) milli-cpu left; ``gpu_left``: (N, D) milli-GPU left per GPU, a node with fewer GPUs padded
    with 0; ``access``: (N, T) ``mix.access(node models)``."""
    cpu_left = np.asarray(cpu_left, dtype=np.int64)
    gpu_left = np.asarray(gpu_left, dtype=np.int64).reshape(len(cpu_left), -1)
    cnt, partial = counts_of(mix, gpu_left)
    return _sum_in_go_order(mix, cpu_left, gpu_left.sum(axis=1), cnt, partial, access)


def frag_after_share(mix: TaskMix, cpu_left: np.ndarray, gpu_left: np.ndarray, access: np.ndarray,
                     cpu: int, milli: int) -> np.ndarray:
    """(N, D): each node's fragmentation after a task of ``cpu`` milli-cpu and ``milli`` of one GPU goes to GPU d
    (``calculateGpuShareFragExtendScore``'s ``newNodeRes``), NaN where GPU d has less than ``milli`` left.

    Only GPU d changes, so the per-class counts move by what it was and what it becomes (exact integers); a GPU
    with as much left as an earlier GPU of its node gives the same node, so it is worked out once."""
    cpu_left = np.asarray(cpu_left, dtype=np.int64)
    n, d = gpu_left.shape
    fits = gpu_left >= milli
    eq = gpu_left[:, :, None] == gpu_left[:, None, :]
    first_eq = np.argmax(eq, axis=2)  # per GPU, the first GPU of its node with as much left
    own = first_eq == np.arange(d)[None, :]
    r, g = np.nonzero(fits & own)
    out = np.full((n, d), np.nan)
    if len(r):
        cnt, partial = counts_of(mix, gpu_left)
        m = mix.milli[None, :]
        old = gpu_left[r, g][:, None]
        new = old - milli
        cnt2 = cnt[r] - (old >= m) + (new >= m)
        part2 = partial[r] - np.where(old >= m, 0, old) + np.where(new >= m, 0, new)
        total = gpu_left.sum(axis=1)[r] - milli
        out[r, g] = _sum_in_go_order(mix, cpu_left[r] - cpu, total, cnt2, part2, access[r])
        rr, gg = np.nonzero(fits & ~own)
        out[rr, gg] = out[rr, first_eq[rr, gg]]
    return out


def take_whole(gpu_left: np.ndarray, gpus: int, milli: int) -> np.ndarray:
    """``NodeResource.Sub`` for a task of ``gpus`` GPUs of ``milli`` each: the GPUs taken in order of milli left,
    least first (ties by id), among those with at least ``milli`` left; (N, D) after.  For a whole-GPU task these
    are the free GPUs with the lowest ids, ``AllocateExclusiveGpuId``'s choice."""
    out = np.array(gpu_left, dtype=np.int64, copy=True)
    if gpus <= 0:
        return out
    order = np.argsort(out, axis=1, kind="stable")
    ok = np.take_along_axis(out, order, axis=1) >= milli
    rank = np.cumsum(ok, axis=1)
    take = ok & (rank <= gpus)
    rows = np.nonzero(take)
    out[rows[0], order[rows]] -= milli
    return out


def sigmoid_score(before: np.ndarray, after: np.ndarray) -> np.ndarray:
    """``int64(sigmoid((before - after) / 1000) * MaxNodeScore)`` (``fgd_score.go``), truncated toward zero."""
    x = (np.asarray(before, dtype=np.float64) - np.asarray(after, dtype=np.float64)) / 1000.0
    with np.errstate(over="ignore"):
        s = 1.0 / (1.0 + np.exp(-x)) * 100.0
    return np.trunc(s)


def milli_left(pool: dv.DevicePool, rows: slice | range | None = None) -> np.ndarray:
    """Per device row of a gpushare pool (or of ``rows`` only): the milli-GPU (memory) left; a GPU held by a
    whole-GPU pod (charged with no memory, ``volcano.sh/gpu-number``) has none left."""
    at = slice(None) if rows is None else (slice(rows.start, rows.stop) if isinstance(rows, range) else rows)
    used_mem = pool.used_mem[at]
    left = np.maximum(pool.memory[at] - used_mem, 0)
    return np.where((pool.used_num[at] > 0) & (used_mem == 0), 0, left)


def per_node(pool: dv.DevicePool, rows_value: np.ndarray, width: int | None = None) -> np.ndarray:
    """(nodes, D): a per-device-row value laid out per node (``first``/``local``), padded with 0."""
    d = int(pool.count.max()) if width is None and len(pool.count) else (width or 0)
    out = np.zeros((len(pool.count), max(d, 1)), dtype=np.int64)
    if len(pool):
        out[pool.node, pool.local] = rows_value
    return out


def cluster_frag(mix: TaskMix, cpu_left: np.ndarray, gpu_left: np.ndarray, node_models: Sequence[str]) -> float:
    """The cluster's fragmentation: the nodes' sum (milli-GPU)."""
    return float(math.fsum(node_frag(mix, cpu_left, gpu_left, mix.access(node_models)).tolist()))


__all__ = ["GPU_MODEL_LABEL", "MILLI", "TaskClass", "TaskMix", "cluster_frag", "counts_of", "frag_after_share",
           "milli_left", "node_frag", "per_node", "sigmoid_score", "take_whole", "task_class"]
