"""deviceshare (``pkg/scheduler/plugins/deviceshare/deviceshare.go``): place pods on shared GPUs, choose the GPUs
inside the node, and hand the binder the annotations naming them.

Arguments (Volcano's, ``enablePredicate``):

* ``deviceshare.GPUSharingEnable`` (gpushare by memory, ``volcano.sh/gpu-memory``), ``deviceshare.GPUNumberEnable``
  (gpushare by whole GPUs, ``volcano.sh/gpu-number``), ``deviceshare.VGPUEnable`` (HAMi-core vGPU,
  ``volcano.sh/vgpu-number``/``vgpu-memory``/``vgpu-cores``); the first two together, or either with VGPUEnable,
  are a conf error (Volcano's ``klog.Fatal``).  ``deviceshare.GPUShareWholeGPUs`` (pyvolcano's, Volcano ignores it):
  with GPUSharingEnable, also place ``volcano.sh/gpu-number`` pods on idle GPUs and count those GPUs as full, so
  shares and whole GPUs share a node's GPUs exactly (the simulator's openb mapping).
* ``deviceshare.SchedulePolicy`` (``binpack``, ``spread``, anything else: none) orders a node's vGPUs
  (``utils.go: sortedDeviceIndicesByPolicy``) and scores them (``GPUScore``); ``deviceshare.ScheduleWeight`` (int,
  default 0: no score) multiplies the node score.
* ``deviceshare.NodeLockEnable`` (the device plugin's node lock: an API write with no effect on decisions),
  ``deviceshare.KnownGeometriesCMName``/``KnownGeometriesCMNamespace`` (the device ConfigMap, not read: Volcano's
  default device config), ``deviceshare.AscendMindClusterVNPUEnable``/``AscendHAMiVNPUEnable`` and
  ``deviceshare.GPUExclusiveRules`` are accepted; the Ascend devices and the exclusivity rules are not modelled
  (docs/gpu-sharing.md).

**Predicate** (``AddPredicateFn``): a node without devices of an enabled kind passes; a pod asking for none passes.
gpushare by memory needs one GPU with that much memory left ("GpuShare no enough gpu memory on node N"), by number
that many GPUs with no pod ("GpuNumber no enough gpu number on node N") (``share.go``).  vGPU
(``utils.go: checkNodeGPUSharingPredicateAndScore``): each container's GPUs are taken in the policy's device order,
a GPU qualifying when the pod's UUID lists allow it, it has a share left, no pod of the same PodGroup under the
``volcano.sh/vgpu-podgroup-policy: spread`` annotation, the memory (or the percentage of the GPU's), cores up to
100 (100 asks for the GPU alone; a full GPU takes no 0-core pod), and the type (``NVIDIA`` and the pod's
``nvidia.com/use-gputype``/``nouse-gputype``); the pod's ``volcano.sh/vgpu-mode`` must be the node's.  A node
failing any is rejected "hami-vgpuDeviceSharing error" (resolvable, ``Unschedulable``).

**Score** (``AddNodeOrderFn``, when the weight is > 0): the sum over the GPUs the filter chose of
``GPUScore`` after taking them (binpack: 100 x used memory / memory; spread: 100 for a GPU no pod used, which after
taking it is never the case, so spread scores 0, as in Volcano), rounded, times the weight.

**Allocate** (Volcano does it in the predicates plugin's event handler, ``predicates.go: AllocateFunc``, so only
with ``predicates`` in the conf): the devices are chosen again on the node as it is then and taken
(``DevicePool.charge``); the pod gets Volcano's annotations (``volcano.sh/vgpu-ids-new`` and the others, or
``volcano.sh/gpu-index``), carried in ``TaskInfo.pod_annotations`` to the binder and ``SessionResult``.  Undoing a
placement (a statement discarded, ``DeallocateFunc``) drops the annotations and gives gpushare's GPUs back, but not
the vGPUs of a pod whose own annotations name none (a pending pod): Volcano's vGPU release reads the pod's own
annotations, so the share stays taken for the rest of the session (docs/volcano-differences.md, "deviceshare").  An
eviction gives a running pod's devices back and its undo takes the same ones again.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pyvolcano.api import devices as dv
from pyvolcano.api.devices import DevicePool
from pyvolcano.api.job_info import TaskInfo
from pyvolcano.api.node_info import NodeArrays, NodeInfo
from pyvolcano.api.status import Code, Status
from pyvolcano.api.types import TaskStatus
from pyvolcano.errors import ConfigError
from pyvolcano.framework.incremental import deltas
from pyvolcano.framework.incremental.state import CarryKey
from pyvolcano.framework.plugin import Plugin
from pyvolcano.framework.registry import register_plugin
from pyvolcano.framework.session import EventHandler, Session
from pyvolcano.framework.state import warn
from pyvolcano.plugins._gpushare import GPUSHARE_POOL

NAME = "deviceshare"
GPU_SHARING = "deviceshare.GPUSharingEnable"
GPU_NUMBER = "deviceshare.GPUNumberEnable"
VGPU_ENABLE = "deviceshare.VGPUEnable"
#: pyvolcano's own (Volcano ignores it): with GPUSharingEnable, also place ``volcano.sh/gpu-number`` pods on idle
#: GPUs, which then count as full (docs/gpu-sharing.md, "The simulator's openb mapping")
WHOLE_GPUS = "deviceshare.GPUShareWholeGPUs"
SCHEDULE_POLICY = "deviceshare.SchedulePolicy"
SCHEDULE_WEIGHT = "deviceshare.ScheduleWeight"
NODE_LOCK = "deviceshare.NodeLockEnable"
BINPACK, SPREAD = "binpack", "spread"
#: ``binpackMultiplier``, ``spreadMultiplier``
MULTIPLIER = 100.0
VGPU_REASON = "hami-vgpuDeviceSharing error"
#: statuses whose pods hold their devices (``NodeInfo.AddTask``/``setNode``: all but Releasing and Pipelined)
_NOT_HOLDING = (TaskStatus.Releasing, TaskStatus.Pipelined)

#: (row, memory, cores) per device a container takes
Parts = list[tuple[int, int, int]]


@dataclass(frozen=True)
class VRequest:
    """What the vGPU rules read of a pod, once per pod and session."""

    containers: tuple[dv.ContainerRequest, ...]
    mode: str | None
    in_use: str | None
    no_use: str | None
    allow: tuple[str, ...]
    deny: tuple[str, ...]
    group: str  # the PodGroup key under the spread annotation, else ""

    @property
    def simple(self) -> bool:
        """One container and no per-device list or group rule: the vectorised path applies."""
        return len(self.containers) == 1 and not self.allow and not self.deny and not self.group


def _uuid_list(v: Any) -> tuple[str, ...]:
    return tuple(u.strip() for u in str(v or "").split(",") if u.strip())


def vrequest(pod: Mapping[str, Any]) -> VRequest:
    ann = (pod.get("metadata") or {}).get("annotations") or {}
    group = dv.podgroup_key(pod) if ann.get(dv.PODGROUP_POLICY) == SPREAD else ""
    return VRequest(tuple(dv.vgpu_requests(pod)), ann.get(dv.VGPU_MODE), ann.get(dv.GPU_IN_USE),
                    ann.get(dv.GPU_NO_USE), _uuid_list(ann.get(dv.USE_UUID)), _uuid_list(ann.get(dv.NO_USE_UUID)),
                    group)


def type_allowed(dev_type: str, in_use: str | None, no_use: str | None) -> bool:
    """``utils.go: checkType`` for an NVIDIA request: the device type contains ``NVIDIA``, then
    ``checkGPUtype``: with ``use-gputype``, one of its comma-separated names is in the type (case-insensitive);
    else with ``nouse-gputype``, none is."""
    if dv.NVIDIA not in dev_type:
        return False
    up = dev_type.upper()
    if in_use is not None:
        return any(v.upper() in up for v in in_use.split(","))
    if no_use is not None:
        return not any(v.upper() in up for v in no_use.split(","))
    return True


def _mem_for(memory: np.ndarray | int, c: dv.ContainerRequest) -> Any:
    """``memreqForCard``: the percentage of the GPU's memory (truncated), or the memory asked."""
    if c.mem_percentage != dv.NO_PERCENTAGE:
        return (np.asarray(memory, dtype=np.float64) * c.mem_percentage / 100.0).astype(np.int64)
    return c.memreq


class DeviceState:
    """This session's device pools (one per enabled kind) over the session's nodes."""

    def __init__(self, nodes: NodeArrays, gpushare: bool, vgpu: bool,
                 pools: Mapping[str, DevicePool] | None = None) -> None:
        self.nodes = nodes
        self.gpushare = (pools[dv.GPUSHARE] if pools else _pool(nodes, dv.GPUSHARE)) if gpushare else None
        self.vgpu = (pools[dv.VGPU] if pools else _pool(nodes, dv.VGPU)) if vgpu else None
        self._types: dict[tuple[str | None, str | None], np.ndarray] = {}

    def type_ok(self, in_use: str | None, no_use: str | None) -> np.ndarray:
        """Per vGPU row: does its type pass ``checkType`` for these annotations (kept per pair of annotations)."""
        got = self._types.get((in_use, no_use))
        if got is None:
            pool = self.vgpu
            assert pool is not None
            got = self._types[(in_use, no_use)] = np.array([type_allowed(t, in_use, no_use) for t in pool.type],
                                                           dtype=bool)
        return got


def _pool(nodes: NodeArrays, kind: str) -> DevicePool:
    """The static devices of every node, read once per node set (``NodeStatic.derived``), then a pool with no use."""
    key = f"devices-{kind}"
    per = nodes.static.derived.get(key)
    if per is None:
        per = {}
        for i, spec in enumerate(nodes.specs):
            try:
                got = dv.gpushare_devices(spec.manifest) if kind == dv.GPUSHARE else dv.vgpu_devices(spec.manifest)
            except ValueError:  # refused where the Node entered the cache (``api/models.py``)
                got = []
            if got:
                per[i] = got
        nodes.static.derived[key] = per
    return DevicePool(kind, len(nodes), per)


@dataclass
class _CarriedPools:
    """The device pools as the last session opened them, carried to the next (``Snapshot.plugin_memory``, only
    with the incremental layer): per kind the pool, per node the task map its use was read from and the pods it
    charged.  Made again when the node set (``NodeStatic``) or the plugin's switches change."""

    static: object
    flags: tuple[Any, ...]
    pools: dict[str, DevicePool]
    maps: dict[str, dict[int, Any]] = field(default_factory=dict)
    held: dict[str, dict[int, list[str]]] = field(default_factory=dict)
    #: the snapshot's ``NodeArrays.tasks`` list ``maps`` were last brought up to date with (then only the positions
    #: the next snapshot rebuilt from it, ``NodeArrays.rebuilt``, can hold another map)
    seen: list[Any] | None = None


_POOLS: CarryKey[_CarriedPools] = CarryKey("deviceshare pools")


@register_plugin
class DeviceShare(Plugin):
    name = NAME

    def on_session_open(self, ssn: Session) -> None:
        args = self.arguments
        self.sharing = args.get_bool(GPU_SHARING, False)
        self.number = args.get_bool(GPU_NUMBER, False)
        self.vgpu_on = args.get_bool(VGPU_ENABLE, False)
        #: whole-GPU pods beside shares (``WHOLE_GPUS``); gpu-number pods are placed with either switch
        self.whole = self.sharing and args.get_bool(WHOLE_GPUS, False)
        self.by_number = self.number or self.whole
        args.get_bool(NODE_LOCK, False)
        self.policy = args.get_str(SCHEDULE_POLICY, "")
        self.weight = args.get_int(SCHEDULE_WEIGHT, 0)
        if self.sharing and self.number:
            raise ConfigError(f"{NAME}: can not define true in both gpu sharing and gpu number "
                              f"({GPU_SHARING} and {GPU_NUMBER})")
        if (self.sharing or self.number) and self.vgpu_on:
            raise ConfigError(f"{NAME}: gpu-share and vgpu can't be used together ({VGPU_ENABLE})")
        nodes = ssn.nodes
        self.nodes = nodes
        self.now = int(ssn.now)
        if not (self.sharing or self.number or self.vgpu_on):
            self.state = DeviceState(nodes, False, False)
            return
        self._choice = ssn.device_choice
        self._vreq: dict[str, VRequest | None] = {}
        self._gs: dict[str, tuple[int, int]] = {}
        #: ``_gpushare_ok``'s answers per (gpu-memory, gpu-number) and the per-node use they are read from, for
        #: the gpushare pool's ``version`` they were made at
        self._ok_version = -1
        self._ok: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}
        self._most: np.ndarray | None = None
        self._idle: np.ndarray | None = None
        self._stash: dict[str, tuple[str, Parts]] = {}
        st = self.state = self._open_pools(ssn)
        if st.gpushare is not None:
            ssn.state.write(GPUSHARE_POOL, st.gpushare)

        def predicate(task: TaskInfo, node: NodeInfo) -> Status | None:
            why = self.fit_error(task, node.index)
            return None if why is None else Status(Code.UNSCHEDULABLE, (why,), NAME)

        ssn.add_predicate(NAME, vector=self.fits, scalar=predicate, template_safe=False, resolvable=True)
        if self.weight > 0:
            ssn.add_node_order(NAME, vector=self.scores,
                               scalar=lambda task, node: float(self.scores(task, np.array([node.index]))[0]),
                               template_safe=False)
        if "predicates" in ssn.options:  # Volcano takes the devices in the predicates plugin's event handler
            ssn.add_event_handler(EventHandler(allocate=self.allocated, deallocate=self.deallocated))

    # --- the pods' requests ------------------------------------------------------------------------------
    def wants_gpushare(self, pod: Mapping[str, Any]) -> bool:
        """``gpushare.HasDeviceRequest``."""
        return (self.sharing and dv.gpu_memory_of(pod) > 0) or (self.by_number and dv.gpu_number_of(pod) > 0)

    def vreq(self, task: TaskInfo) -> VRequest | None:
        """The pod's vGPU request when ``vgpu.HasDeviceRequest`` (None otherwise)."""
        if self.state.vgpu is None:
            return None
        uid = task.uid
        if uid in self._vreq:
            return self._vreq[uid]
        got = self._vreq[uid] = vrequest(task.pod) if dv.has_vgpu_request(task.pod) else None
        return got

    # --- use from the pods already on the nodes ----------------------------------------------------------
    def _open_pools(self, ssn: Session) -> DeviceState:
        """The session's pools with the use of the pods on their nodes.  With the incremental layer
        (``Snapshot.carry``) the pools of the last session's open are carried (``_CarriedPools``) and only the
        nodes whose task map the snapshot rebuilt (a pod on it changed, or the last session placed or removed one
        there: a map carried unchanged is the very same object) are read again; the session works on a fork.
        Without it (``--full-sessions``) every node's pods are read, as Volcano's snapshot does."""
        nodes = self.nodes
        kinds = [k for k, on in ((dv.GPUSHARE, self.sharing or self.number), (dv.VGPU, self.vgpu_on)) if on]
        if ssn.snapshot.carry is None:
            pools = {k: _pool(nodes, k) for k in kinds}
            for pool in pools.values():
                for i in pool.nodes_with.tolist():
                    self._read_node(ssn, pool, i)
            return DeviceState(nodes, dv.GPUSHARE in kinds, dv.VGPU in kinds, pools)
        mem = ssn.snapshot.plugin_memory
        flags = (tuple(kinds), self.whole, self.by_number)
        c = mem.get(_POOLS)
        if c is None or c.static is not nodes.static or c.flags != flags:
            c = _CarriedPools(nodes.static, flags, {k: _pool(nodes, k) for k in kinds})
            mem.put(_POOLS, c)
        tasks = nodes.tasks
        rebuilt = nodes.rebuilt
        since = sorted(rebuilt[1]) if rebuilt is not None and rebuilt[0] is c.seen else None
        for kind, pool in c.pools.items():
            maps, held = c.maps.setdefault(kind, {}), c.held.setdefault(kind, {})
            if since is None:  # every node with devices is looked at (first session, or maps not carried)
                changed = [i for i in pool.nodes_with.tolist() if maps.get(i) is not tasks[i]]
            else:  # only the maps the snapshot rebuilt can differ: work in proportion to what changed
                changed = [i for i in since if pool.count[i] > 0 and maps.get(i) is not tasks[i]]
            for i in changed:  # every changed node's pods out first: a pod of the same name may be on another now
                for uid in held.pop(i, ()):
                    pool.release(uid)
            for i in changed:
                maps[i] = tasks[i]
                got = self._read_node(ssn, pool, i)
                if got:
                    held[i] = got
        c.seen = tasks
        if deltas.CHECK:
            self._check_carried(ssn, c)
        return DeviceState(nodes, dv.GPUSHARE in kinds, dv.VGPU in kinds, {k: p.fork() for k, p in c.pools.items()})

    def _check_carried(self, ssn: Session, c: _CarriedPools) -> None:
        """``deltas.CHECK``: the carried pools, brought up to date, hold what reading every node's pods afresh gives
        (the use per device, the parts per pod, and vGPU's holders)."""
        for kind, pool in c.pools.items():
            fresh = _pool(self.nodes, kind)
            for i in fresh.nodes_with.tolist():
                self._read_node(ssn, fresh, i, quiet=True)
            for name in ("used_num", "used_mem", "used_core"):
                assert np.array_equal(getattr(pool, name), getattr(fresh, name)), f"deviceshare: carried {name}"
            assert pool.held == fresh.held, "deviceshare: carried pods' devices"
            assert pool.holders == fresh.holders, "deviceshare: carried holders"

    def _read_node(self, ssn: Session, pool: DevicePool, i: int, quiet: bool = False) -> list[str]:
        """Charge ``pool`` with the devices of the pods on node ``i`` that hold its resources
        (``NodeInfo.addResource``): gpushare from ``volcano.sh/gpu-index``, vGPU from ``volcano.sh/vgpu-ids-new``;
        the pods charged (``quiet``: without warning of a bad annotation, for ``_check_carried``'s second read)."""
        got = []
        for t in self.nodes.tasks[i].values():
            if t.status in _NOT_HOLDING:
                continue
            ann = (t.pod.get("metadata") or {}).get("annotations") or {}
            try:
                if pool.kind == dv.GPUSHARE:
                    self._add_gpushare(pool, i, t, ann)
                else:
                    self._add_vgpu(pool, i, t, ann)
            except ValueError as exc:  # refused at the boundary; a pod built in code may still carry one
                if not quiet:
                    warn(ssn.state, f"Pod {t.uid}: field metadata.annotations: {exc}; its devices are not counted")
            if pool.holds(t.uid):
                got.append(t.uid)
        return got

    def _add_gpushare(self, pool: DevicePool, i: int, t: TaskInfo, ann: Mapping[str, Any]) -> None:
        mem, num = dv.gpushare_request(t.pod)
        if (mem <= 0 and num <= 0) or not ann.get(dv.GPU_INDEX):
            return
        rows = pool.index_of(i)
        pool.charge(t.uid, [(rows[g], self._held_memory(pool, rows[g], mem), 0)
                            for g in dv.parse_gpu_index(str(ann[dv.GPU_INDEX])) if g in rows])

    def _held_memory(self, pool: DevicePool, row: int, mem: int) -> int:
        """The memory a gpushare pod holds on a GPU: its ``gpu-memory``; with ``WHOLE_GPUS`` a whole-GPU pod (no
        gpu-memory) holds all of it, so that no share lands beside it."""
        return int(pool.memory[row]) if self.whole and mem <= 0 else mem

    def _add_vgpu(self, pool: DevicePool, i: int, t: TaskInfo, ann: Mapping[str, Any]) -> None:
        ids = ann.get(dv.VGPU_IDS)
        if not ids:
            return
        parts: Parts = []
        for ctr in dv.decode_pod_devices(str(ids)):
            for uuid, _typ, mem, core in ctr:
                r = pool.row_of_uuid(i, uuid)
                if r is not None:
                    parts.append((r, mem, core))
        pool.charge(t.uid, parts, dv.podgroup_key(t.pod))

    # --- predicate -------------------------------------------------------------------------------------
    def fits(self, task: TaskInfo, idx: np.ndarray) -> np.ndarray:
        """The predicate for the nodes ``idx``: vectorised over every device of the pool for one-container vGPU
        requests and for gpushare, node by node otherwise."""
        out = np.ones(len(idx), dtype=bool)
        st = self.state
        if st.gpushare is not None and self._wants(task):
            out &= self._gpushare_fits(st.gpushare, task, idx)
        req = self.vreq(task)
        if req is not None and st.vgpu is not None:
            pool = st.vgpu
            has = pool.count[idx] > 0
            if req.simple:
                ok = self._vgpu_counts(pool, req, req.containers[0]) >= req.containers[0].nums
                if req.mode is not None and req.mode != dv.HAMI_CORE:
                    ok = np.zeros(len(pool.count), dtype=bool)
                out &= ~has | ok[idx]
            else:
                for k in np.flatnonzero(has).tolist():
                    out[k] &= self._vgpu_take(pool, int(idx[k]), req)[0]
        return out

    def fit_error(self, task: TaskInfo, i: int) -> str | None:
        """The predicate's reason on node ``i``, or None when it passes (the scalar form: explanations)."""
        st = self.state
        if st.gpushare is not None and self._wants(task) and st.gpushare.count[i] > 0:
            name = self.nodes.names[i]
            mem_ok, num_ok = self._gpushare_ok(st.gpushare, *self._gsreq(task))
            if not mem_ok[i]:
                return f"GpuShare no enough gpu memory on node {name}"
            if not num_ok[i]:
                return f"GpuNumber no enough gpu number on node {name}"
        req = self.vreq(task)
        if req is not None and st.vgpu is not None and st.vgpu.count[i] > 0 and not self._vgpu_take(st.vgpu, i, req)[0]:
            return VGPU_REASON
        return None

    def _gsreq(self, task: TaskInfo) -> tuple[int, int]:
        """The pod's gpushare (``gpu-memory``, ``gpu-number``), read once per pod and session."""
        got = self._gs.get(task.uid)
        if got is None:
            got = self._gs[task.uid] = dv.gpushare_request(task.pod)
        return got

    def _wants(self, task: TaskInfo) -> bool:
        """``gpushare.HasDeviceRequest`` of the task's pod."""
        mem, num = self._gsreq(task)
        return (self.sharing and mem > 0) or (self.by_number and num > 0)

    def _gpushare_ok(self, pool: DevicePool, mem: int, num: int) -> tuple[np.ndarray, np.ndarray]:
        """Per node: ``checkNodeGPUSharingPredicate`` (some GPU has ``mem`` left: the most memory left on one GPU is
        at least ``mem``) and ``checkNodeGPUNumberPredicate`` (at least ``num`` GPUs no pod holds), True where the
        check does not apply.  The per-node most-left and idle counts are reduced from the devices once per use of
        the pool (``version``), each when first asked, and the answers kept per request for that use."""
        if self._ok_version != pool.version:
            self._ok_version, self._ok, self._most, self._idle = pool.version, {}, None, None
        got = self._ok.get((mem, num))
        if got is not None:
            return got
        n = len(self.nodes)
        mem_ok, num_ok = np.ones(n, dtype=bool), np.ones(n, dtype=bool)
        if len(pool):
            if self.sharing and mem > 0:
                if self._most is None:  # (memory left below 0 counts as 0 in Volcano: the same answer for mem > 0)
                    self._most = np.maximum.reduceat(pool.memory - pool.used_mem, pool.first[pool.nodes_with])
                mem_ok[pool.nodes_with] = self._most >= mem
            if self.by_number and num > 0:
                if self._idle is None:
                    self._idle = np.add.reduceat((pool.used_num == 0).astype(np.int64), pool.first[pool.nodes_with])
                num_ok[pool.nodes_with] = self._idle >= num
        got = self._ok[(mem, num)] = (mem_ok, num_ok)
        return got

    def _gpushare_fits(self, pool: DevicePool, task: TaskInfo, idx: np.ndarray) -> np.ndarray:
        """``checkNodeGPUSharingPredicate``/``checkNodeGPUNumberPredicate`` for the nodes ``idx``."""
        mem_ok, num_ok = self._gpushare_ok(pool, *self._gsreq(task))
        return (mem_ok & num_ok)[idx]

    @staticmethod
    def _gpushare_memory_rows(pool: DevicePool, i: int, task: TaskInfo) -> list[int]:
        """``predicateGPUbyMemory``: the node's GPUs with enough memory left, by id."""
        mem = dv.gpu_memory_of(task.pod)
        return [r for r in pool.rows(i) if max(int(pool.memory[r]) - int(pool.used_mem[r]), 0) >= mem]

    @staticmethod
    def _gpushare_number_rows(pool: DevicePool, i: int, task: TaskInfo) -> list[int] | None:
        """``predicateGPUbyNumber``: the first GPUs no pod holds (by id; Volcano walks a Go map, in no set order),
        None when too few."""
        num = dv.gpu_number_of(task.pod)
        idle = [r for r in pool.rows(i) if pool.used_num[r] == 0]
        return idle[:num] if len(idle) >= num else None

    def _vgpu_ok_rows(self, pool: DevicePool, req: VRequest, c: dv.ContainerRequest) -> np.ndarray:
        """Per vGPU row, does it qualify for container request ``c`` as the pool stands (``simple`` requests)."""
        mem = _mem_for(pool.memory, c)
        ok = pool.number > pool.used_num
        ok &= pool.memory - pool.used_mem >= mem
        ok &= pool.used_core + c.coresreq <= 100
        if c.coresreq == 100:
            ok &= pool.used_num == 0
        if c.coresreq == 0:
            ok &= pool.used_core != 100
        ok &= self.state.type_ok(req.in_use, req.no_use)
        return ok

    def _vgpu_counts(self, pool: DevicePool, req: VRequest, c: dv.ContainerRequest) -> np.ndarray:
        """Per node, how many of its vGPUs qualify (0 on nodes without)."""
        counts = np.zeros(len(pool.count), dtype=np.int64)
        if len(pool):
            ok = self._vgpu_ok_rows(pool, req, c).astype(np.int64)
            counts[pool.nodes_with] = np.add.reduceat(ok, pool.first[pool.nodes_with])
        return counts

    def _order(self, pool: DevicePool, rows: range, used_num: np.ndarray, used_mem: np.ndarray) -> list[int]:
        """``sortedDeviceIndicesByPolicy`` (positions within the node)."""
        n = len(rows)
        if self.policy == BINPACK:
            return sorted(range(n), key=lambda k: (-int(used_mem[k]), k))
        if self.policy == SPREAD:
            return sorted(range(n), key=lambda k: (int(used_num[k]), k))
        return list(range(n - 1, -1, -1))

    def _vgpu_take(self, pool: DevicePool, i: int, req: VRequest) -> tuple[bool, list[Parts], float]:
        """``checkNodeGPUSharingPredicateAndScore`` on node ``i``: (fits, per container the (row, memory, cores)
        it takes, score), on a copy of the node's use (the pool is not changed)."""
        if req.mode is not None and req.mode != pool.mode.get(i, dv.HAMI_CORE):
            return False, [], 0.0
        rows = pool.rows(i)
        sl = slice(rows.start, rows.stop)
        used_num, used_mem, used_core = pool.used_num[sl].copy(), pool.used_mem[sl].copy(), pool.used_core[sl].copy()
        memory, number = pool.memory[sl], pool.number[sl]
        type_ok = self.state.type_ok(req.in_use, req.no_use)[sl]
        score = 0.0
        taken: list[Parts] = []
        for c in req.containers:
            if c.nums > len(rows):
                return False, [], 0.0
            left = c.nums
            parts: Parts = []
            for k in self._order(pool, rows, used_num, used_mem):
                r = rows.start + k
                uuid = pool.uuid[r]
                if (req.allow or req.deny) and (not uuid or (req.allow and uuid not in req.allow)
                                                 or uuid in req.deny):
                    continue
                if number[k] <= used_num[k]:
                    continue
                if req.group and any(g == req.group and (m > 0 or co > 0)
                                     for m, co, g in pool.holders[r].values()):
                    continue
                mem = int(_mem_for(int(memory[k]), c))
                if int(memory[k]) - int(used_mem[k]) < mem:
                    continue
                if used_core[k] + c.coresreq > 100:
                    continue
                if c.coresreq == 100 and used_num[k] > 0:
                    continue
                if used_core[k] == 100 and c.coresreq == 0:
                    continue
                if not type_ok[k]:
                    continue
                used_num[k] += 1  # HAMICoreFactory.TryAddPod
                used_mem[k] += mem
                used_core[k] += c.coresreq
                if left > 0:
                    left -= 1
                    parts.append((r, mem, c.coresreq))
                    score += self._gpu_score(int(used_num[k]), int(used_mem[k]), int(memory[k]))
                if left == 0:
                    break
            if left > 0:
                return False, [], 0.0
            taken.append(parts)
        return True, taken, score

    def _gpu_score(self, used_num: int, used_mem: int, memory: int) -> float:
        """``GPUScore``, on the device after the pod was added."""
        if self.policy == BINPACK:
            return MULTIPLIER * (used_mem / memory) if memory else math.inf
        if self.policy == SPREAD:
            return MULTIPLIER if used_num == 0 else 0.0
        return 0.0

    # --- score -----------------------------------------------------------------------------------------
    def scores(self, task: TaskInfo, idx: np.ndarray) -> np.ndarray:
        """``getDeviceScore``: the vGPU filter's score of each node (gpushare scores 0), rounded (``math.Floor(s +
        0.5)``), times the weight."""
        out = np.zeros(len(idx))
        req = self.vreq(task)
        pool = self.state.vgpu
        if req is None or pool is None or self.policy != BINPACK:  # only binpack gives a non-zero score
            return out
        has = np.flatnonzero(pool.count[idx] > 0)
        if not len(has):
            return out
        c = req.containers[0] if req.containers else None
        if req.simple and c is not None and c.nums == 1:
            # the first qualifying GPU in binpack order: most memory used, then the lowest index
            ok = self._vgpu_ok_rows(pool, req, c)
            mem = np.broadcast_to(_mem_for(pool.memory, c), pool.memory.shape)
            after = pool.used_mem + mem
            big = np.int64(len(pool) + 1)
            key = np.where(ok, pool.used_mem * big + (big - 1 - pool.local), -1)
            best = np.full(len(pool.count), -1, dtype=np.int64)
            best[pool.nodes_with] = np.maximum.reduceat(key, pool.first[pool.nodes_with])
            at = idx[has]
            found = best[at] >= 0
            at, k = at[found], has[found]
            r = pool.first[at] + (big - 1 - best[at] % big)
            with np.errstate(divide="ignore"):
                s = MULTIPLIER * (after[r] / pool.memory[r])
            out[k] = np.floor(s + 0.5) * self.weight
            return out
        for k in has.tolist():
            fit, _, s = self._vgpu_take(pool, int(idx[k]), req)
            if fit:
                out[k] = math.floor(s + 0.5) * self.weight
        return out

    # --- allocate and undo -----------------------------------------------------------------------------
    def allocated(self, task: TaskInfo) -> None:
        """``predicates.go: AllocateFunc`` -> ``Devices.Allocate``: take the devices and annotate the pod; an undone
        eviction takes back the very devices the pod had."""
        i = self.nodes.pos.get(task.node_name)
        if i is None:
            return
        back = self._stash.pop(task.uid, None)
        st = self.state
        if back is not None:
            kind, parts = back
            pool = st.gpushare if kind == dv.GPUSHARE else st.vgpu
            if pool is not None:
                pool.charge(task.uid, parts, dv.podgroup_key(task.pod))
            return
        if st.gpushare is not None and st.gpushare.count[i] > 0 and self._wants(task):
            self._allocate_gpushare(st.gpushare, i, task)
        req = self.vreq(task)
        if req is not None and st.vgpu is not None and st.vgpu.count[i] > 0:
            fit, taken, _ = self._vgpu_take(st.vgpu, i, req)
            if fit:
                st.vgpu.charge(task.uid, [p for parts in taken for p in parts], dv.podgroup_key(task.pod))
                ids = ";".join("".join(f"{st.vgpu.uuid[r]},{dv.NVIDIA},{m},{c}:" for r, m, c in parts)
                               for parts in taken)
                now = str(self.now)
                self._annotate(task, {dv.VGPU_NODE: task.node_name, dv.VGPU_TIME: now, dv.VGPU_IDS: ids,
                                      dv.VGPU_TO_ALLOCATE: ids, dv.BIND_PHASE: "allocating", dv.BIND_TIME: now})

    def _allocate_gpushare(self, pool: DevicePool, i: int, task: TaskInfo) -> None:
        """``gpushare.Allocate``: by memory the lowest GPU id with room; else by number the first idle GPUs.  A
        plugin on pyvolcano's ``deviceChoice`` point (not Volcano's) may name the GPUs instead; a choice these
        rules would not allow (another node's GPU, too little memory left, a GPU in use for whole GPUs, the wrong
        count) is ignored."""
        mem = dv.gpu_memory_of(task.pod)
        rows: list[int] | None
        if mem > 0:
            fitting = self._gpushare_memory_rows(pool, i, task)
            rows = fitting[:1] or None
        else:
            rows = self._gpushare_number_rows(pool, i, task)
        chosen = self._choice(task, i, pool)
        if chosen is not None and rows is not None and self._allowed(pool, i, chosen, mem, len(rows)):
            rows = chosen
        if not rows:
            return
        pool.charge(task.uid, [(r, self._held_memory(pool, r, mem), 0) for r in rows])
        self._annotate(task, {dv.PREDICATE_TIME: str(self.now * 10**9),
                              dv.GPU_INDEX: ",".join(str(int(pool.dev_id[r])) for r in rows)})

    @staticmethod
    def _allowed(pool: DevicePool, i: int, rows: list[int], mem: int, count: int) -> bool:
        """May a task asking ``mem`` of one GPU (or, with ``mem`` 0, ``count`` whole GPUs) take ``rows`` on node
        ``i``, by the predicate's rules."""
        own = pool.rows(i)
        if len(rows) != count or len(set(rows)) != count or any(r not in own for r in rows):
            return False
        if mem > 0:
            return all(int(pool.memory[r]) - int(pool.used_mem[r]) >= mem for r in rows)
        return all(pool.used_num[r] == 0 for r in rows)

    @staticmethod
    def _annotate(task: TaskInfo, ann: dict[str, str]) -> None:
        """``TaskInfo.MergePodAnnotations`` (a new dict: a task's clone may share the old one)."""
        task.pod_annotations = {**(task.pod_annotations or {}), **ann}

    def deallocated(self, task: TaskInfo) -> None:
        """``predicates.go: DeallocateFunc`` -> ``Devices.Release``: drop the annotations the allocation added and
        give the devices back; an evicted pod's devices are kept aside for the undo.

        Followed where it looks wrong: the vGPU ``Release`` (``vgpu/device_info.go: SubResource``) finds the GPUs
        in the pod's own ``volcano.sh/vgpu-ids-new`` annotation, which ``Allocate`` never writes (it hands its
        annotations to ``TaskInfo.MergePodAnnotations`` for the Binding), so a pod whose own annotations name no
        vGPUs (a pending pod placed in this session, then discarded or un-pipelined) keeps its shares, memory and
        cores taken for the rest of the session (the session's devices are a copy: the next one rebuilds them
        from the pods).  gpushare's ``Release`` forgets the pod on every GPU when the pod names none, so it gives
        back exactly."""
        st = self.state
        for pool in (st.gpushare, st.vgpu):
            if pool is None or not pool.holds(task.uid):
                continue
            if pool.kind == dv.VGPU and not ((task.pod.get("metadata") or {}).get("annotations") or {}).get(
                    dv.VGPU_IDS):
                continue  # Volcano's vGPU leak (see above)
            parts = pool.release(task.uid)
            if task.status == TaskStatus.Releasing:
                self._stash[task.uid] = (pool.kind, parts)
        if task.pod_annotations:
            keep = {k: v for k, v in task.pod_annotations.items() if k not in _DEVICE_KEYS}
            task.pod_annotations = keep or None


_DEVICE_KEYS = frozenset((dv.PREDICATE_TIME, dv.GPU_INDEX, dv.VGPU_NODE, dv.VGPU_IDS, dv.VGPU_TO_ALLOCATE,
                          dv.VGPU_TIME, dv.BIND_TIME, dv.BIND_PHASE))
