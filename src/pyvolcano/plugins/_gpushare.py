"""What the GPU placement policies of the FGD paper share (plugins ``fgd``, ``random``, ``dotprod``,
``gpuclustering``, ``gpupacking``, ``bestfit``; pyvolcano's own, not Volcano's): the node state they read, a
score cache carried between sessions, the random choice among the best nodes, and the device choice.

**State.** Each policy reads, per node, the milli-cpu left (``idle``), the milli-GPU left on each gpushare GPU
(``api/gpufrag.py: milli_left``; deviceshare publishes its pool under ``GPUSHARE_POOL``) and the node's GPU model
(label ``alibaba.com/gpu-model``), as their simulator's ``NodeResource``; and a task as its ``PodResource``
(``gpufrag.task_class``).

**Cache.** A policy's score of a task class on a node depends only on the node's state, so scores are kept per
(policy, class) in ``Snapshot.plugin_memory`` with the node state they were computed from, and only the nodes whose
state differs are computed again (one vectorised call over those nodes).

**Ties.** Their simulator runs a kube-scheduler fork whose ``selectHost`` takes, among the best-scored nodes, the
one with the smallest name "for reproducibility" (``vendor/k8s.io/kubernetes/pkg/scheduler/core/generic_scheduler.go``;
upstream kube-scheduler, like Volcano's ``SelectBestNodeAndScore``, draws one at random, and pyvolcano's node
selector takes the lowest node index).  The policies register a ``bestNode`` function: ``<policy>.tieBreak: name``
(the default, their simulator's), ``random`` (upstream's; seeded by ``<policy>.seed`` and the task's uid, so a run is
reproducible) or ``first`` (no ``bestNode``: pyvolcano's lowest index).  ``random`` the policy always draws.

**Device choice.** Each policy registers the ``deviceChoice`` point (``framework/points.py``), which deviceshare's
gpushare allocation consults: the GPUs the policy's ``allocateGpuIdFunc`` would give (``open_gpu_share.go``).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from pyvolcano.api import gpufrag as gf
from pyvolcano.api.devices import DevicePool
from pyvolcano.api.gpufrag import MILLI, TaskClass
from pyvolcano.api.job_info import TaskInfo
from pyvolcano.api.node_info import NodeInfo, NodeStatic
from pyvolcano.errors import ConfigError
from pyvolcano.framework.incremental.contracts import Contract
from pyvolcano.framework.incremental.state import CarryKey
from pyvolcano.framework.node_select import NodeGroup
from pyvolcano.framework.plugin import Plugin
from pyvolcano.framework.session import Session
from pyvolcano.framework.state import StateKey

#: deviceshare's gpushare pool of this session (written when it builds it)
GPUSHARE_POOL: StateKey[DevicePool] = StateKey("gpushare-pool")
#: (policy, what else the score reads, task class) -> cached scores
SCORES: CarryKey[dict[Hashable, _Scores]] = CarryKey("gpu-policy-scores")
#: the classes of the tasks seen (uid -> class), so a task's pod is read once
CLASSES: CarryKey[dict[str, TaskClass]] = CarryKey("gpu-policy-classes")
#: ``gpushareutils.MaxSpecCpu``, ``MaxSpecGpu``: the scores' normalisers; ``framework.MaxNodeScore``
MAX_SPEC_CPU, MAX_SPEC_GPU, MAX_SCORE = 128_000, 8_000, 100
_CACHE_MAX = 4096
NAME, RANDOM, FIRST = "name", "random", "first"
TIE_BREAKS = (NAME, RANDOM, FIRST)


@dataclass
class _Scores:
    static: NodeStatic
    sig: np.ndarray
    score: np.ndarray


@dataclass
class Nodes:
    """Node state at given positions, as FGD's ``NodeResource``."""

    rows: np.ndarray
    cpu_left: np.ndarray  # (K,) milli-cpu
    gpu_left: np.ndarray  # (K, D) milli-GPU per GPU, padded with 0
    gpu_count: np.ndarray  # (K,) GPUs on the node


class GpuView:
    """One session's view of the nodes' GPU state for the policies."""

    def __init__(self, ssn: Session) -> None:
        self.ssn = ssn
        self.nodes = nodes = ssn.nodes
        self.cpu = ssn.res.pos["cpu"]
        self.pods = ssn.res.pos.get("pods")
        got = nodes.static.derived.get("gpu-models")
        if got is None:
            names = [s.labels.get(gf.GPU_MODEL_LABEL, "") for s in nodes.specs]
            uniq = sorted(set(names))
            code = {m: k for k, m in enumerate(uniq)}
            got = nodes.static.derived["gpu-models"] = (uniq, np.array([code[m] for m in names], dtype=np.int64))
        #: the GPU models of the cluster, and each node's (index into them)
        self.models: list[str] = got[0]
        self.model_of: np.ndarray = got[1]
        self._access: dict[TaskClass, np.ndarray] = {}
        self.memory = ssn.snapshot.plugin_memory
        self.classes = self.memory.setdefault(CLASSES, dict)
        if len(self.classes) > 1_000_000:
            self.classes.clear()

    def name_rank(self) -> np.ndarray:
        """Per node, its place in the nodes sorted by name."""
        got = self.nodes.static.derived.get("name-rank")
        if got is None:
            got = self.nodes.static.derived["name-rank"] = np.argsort(np.argsort(np.array(self.nodes.names)))
        return got

    def pool(self) -> DevicePool | None:
        return self.ssn.state.get(GPUSHARE_POOL)

    def task_class(self, task: TaskInfo) -> TaskClass:
        got = self.classes.get(task.uid)
        if got is None:
            got = self.classes[task.uid] = gf.task_class(task.pod)
        return got

    def accessible(self, cls: TaskClass) -> np.ndarray:
        """Per node: may the class run on its GPU model (``IsNodeAccessibleToPod``)."""
        got = self._access.get(cls)
        if got is None:
            got = self._access[cls] = np.array([cls.accessible(m) for m in self.models], dtype=bool)[self.model_of]
        return got

    def mix_access(self, mix: gf.TaskMix) -> np.ndarray:
        """(nodes, classes): ``mix.access`` of every node."""
        return mix.access(self.models)[self.model_of]

    def state(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(cpu left (N,), GPUs left (N, D), signature (N, k): everything a score reads of a node)."""
        nodes = self.nodes
        cpu = np.rint(nodes.idle[:, self.cpu]).astype(np.int64)
        pool = self.pool()
        gpu = gf.per_node(pool, gf.milli_left(pool)) if pool is not None else np.zeros((len(nodes), 1), np.int64)
        pods = np.rint(nodes.used[:, self.pods]).astype(np.int64) if self.pods is not None else np.zeros_like(cpu)
        return cpu, gpu, np.column_stack([cpu, pods, gpu])

    def at(self, rows: np.ndarray, cpu: np.ndarray, gpu: np.ndarray) -> Nodes:
        pool = self.pool()
        count = pool.count[rows] if pool is not None else np.zeros(len(rows), np.int64)
        return Nodes(rows, cpu[rows], gpu[rows], count)

    def cached(self, key: Hashable, idx: np.ndarray, compute: Callable[[Nodes], np.ndarray]) -> np.ndarray:
        """The scores at ``idx``, computing again only those nodes whose state changed since they were cached."""
        cpu, gpu, sig = self.state()
        memo = self.memory.setdefault(SCORES, dict)
        e = memo.get(key)
        if e is None or e.static is not self.nodes.static or e.sig.shape != sig.shape:
            if len(memo) >= _CACHE_MAX:
                memo.clear()
            e = memo[key] = _Scores(self.nodes.static, np.full(sig.shape, -1, dtype=np.int64), np.zeros(len(sig)))
        rows = idx[(e.sig[idx] != sig[idx]).any(axis=1)]
        if len(rows):
            e.score[rows] = compute(self.at(rows, cpu, gpu))
            e.sig[rows] = sig[rows]
        return e.score[idx]

    def one(self, i: int) -> Nodes:
        """Node ``i`` alone, as ``at`` gives it from ``state``, without laying out every node (the device choice
        reads one node per placed task)."""
        cpu = np.rint(self.nodes.idle[[i], self.cpu]).astype(np.int64)
        pool = self.pool()
        if pool is None:
            return Nodes(np.array([i]), cpu, np.zeros((1, 1), np.int64), np.zeros(1, np.int64))
        rows = pool.rows(i)
        gpu = np.zeros((1, max(int(pool.count.max()), 1)), np.int64)
        gpu[0, :len(rows)] = gf.milli_left(pool, rows)
        return Nodes(np.array([i]), cpu, gpu, pool.count[[i]])


def rng_for(seed: int, uid: str, what: str) -> np.random.Generator:
    """A generator for one decision about one task: reproducible, independent between tasks."""
    return np.random.default_rng([seed & 0xFFFFFFFF, zlib.crc32(f"{what}/{uid}".encode())])


def exclusive(gpu_left: np.ndarray, gpus: int) -> list[int]:
    """``AllocateExclusiveGpuId``: the first ``gpus`` free GPUs by id ([] when too few)."""
    free = np.flatnonzero(gpu_left == MILLI)
    return free[:gpus].tolist() if len(free) >= gpus else []


def best_fit_gpu(gpu_left: np.ndarray, cls: TaskClass) -> list[int]:
    """``allocateGpuIdBasedOnBestFit``: a share of one GPU goes to the GPU with the least left that holds it (the
    lowest id among equals); whole GPUs are ``exclusive``."""
    if cls.milli < MILLI:
        ok = np.flatnonzero(gpu_left >= cls.milli)
        return [int(ok[np.argmin(gpu_left[ok])])] if len(ok) else []
    return exclusive(gpu_left, cls.gpus)


class GpuPolicy(Plugin):
    """A node score and GPU choice of the FGD paper's simulator.  Subclasses give ``score`` (whole numbers, 0-100,
    as the Go plugin's ``Score``) and may give ``choose`` (positions of the GPUs on the node)."""

    #: scores, a choice among the best nodes and the GPUs on the chosen node: no refusal and no order, so none
    #: that the memo's fingerprint could miss (as binpack's and nodeorder's scores)
    contracts = frozenset({Contract.FINGERPRINTED})
    #: computed afresh over the candidates each time (normalised over them, or random)
    fresh = False
    #: normalised over the nodes scored together: always asked about all candidates at once, whatever the engine
    batch = False

    def on_session_open(self, ssn: Session) -> None:
        args = self.arguments
        self.weight = args.get_float(f"{self.name}.weight", 1.0)
        self.seed = args.get_int(f"{self.name}.seed", 0)
        tie = self.tie = args.get_str(f"{self.name}.tieBreak", NAME)
        if tie not in TIE_BREAKS:
            raise ConfigError(f"{self.name}: {self.name}.tieBreak must be one of {', '.join(TIE_BREAKS)}, not {tie!r}")
        self.view = GpuView(ssn)
        self.open(ssn)
        one = None if self.batch else (lambda task, node: float(self.scores(task, np.array([node.index]))[0]))
        ssn.add_node_order(self.name, vector=self.scores, scalar=one, template_safe=False, batch=self.batch)
        if tie != FIRST or self.always_random():
            ssn.add_best_node_fn(self.name, self.best_node)
        ssn.add_device_choice_fn(self.name, self.device_choice)

    def open(self, ssn: Session) -> None:
        """More per-session setup (the task mix of FGD)."""

    def always_random(self) -> bool:
        return False

    def key(self, cls: TaskClass) -> Hashable:
        return (self.name, cls)

    def score(self, cls: TaskClass, at: Nodes) -> np.ndarray:
        raise NotImplementedError

    def scores(self, task: TaskInfo, idx: np.ndarray) -> np.ndarray:
        cls = self.view.task_class(task)
        if self.fresh:
            cpu, gpu, _ = self.view.state()
            got = self.score(cls, self.view.at(np.asarray(idx), cpu, gpu))
        else:
            got = self.view.cached(self.key(cls), np.asarray(idx), lambda at: self.score(cls, at))
        return got * self.weight

    def best_node(self, task: TaskInfo, scores: Mapping[float, Sequence[NodeInfo]]) -> NodeInfo | None:
        """Among the best-scored nodes: the smallest name (their ``selectHost``), or one at random (upstream's)."""
        if not scores:
            return None
        group = scores[max(scores)]
        if self.tie == RANDOM or self.always_random():
            return group[int(rng_for(self.seed, task.uid, "node").integers(len(group)))]
        if isinstance(group, NodeGroup):  # positions without making a view per node
            return group[int(np.argmin(self.view.name_rank()[group.positions]))]
        return min(group, key=lambda v: v.name)

    def choose(self, task: TaskInfo, cls: TaskClass, at: Nodes) -> list[int]:
        return best_fit_gpu(at.gpu_left[0], cls)

    def device_choice(self, task: TaskInfo, node: int, pool: DevicePool) -> list[int] | None:
        cls = self.view.task_class(task)
        if cls.gpus == 0 or pool.count[node] == 0:
            return None
        at = self.view.one(node)
        got = self.choose(task, cls, at)
        return [int(pool.first[node]) + k for k in got] if got else None
