"""Shared GPU devices as Volcano master reads them: per-node devices and per-device use in NumPy arrays.

Two kinds, each Volcano's (``pkg/scheduler/api/devices/nvidia``):

* **gpushare** (``gpushare/device_info.go: NewGPUDevices``): a node with ``volcano.sh/gpu-memory`` and
  ``volcano.sh/gpu-number`` in ``status.capacity`` has that many GPUs, each with ``gpu-memory / gpu-number`` of
  memory (integer division); the GPU ids listed in the node annotation ``volcano.sh/gpu-unhealthy-ids`` are left
  out.  A pod asks for ``volcano.sh/gpu-memory`` (memory on one GPU) or ``volcano.sh/gpu-number`` (whole GPUs), in
  its containers' limits (``share.go: getGPUMemoryOfPod``, ``getGPUNumberOfPod``: the containers' sum or the
  largest init container).  A placed pod names its GPUs in the annotation ``volcano.sh/gpu-index`` (``"0,1"``); a
  GPU's use is the gpu-memory of the pods on it and whether any pod is on it (``isIdleGPU``).
* **vGPU, HAMi-core** (``vgpu/device_info.go: NewGPUDevices``, ``utils.go: decodeNodeDevices``): a node with
  non-zero allocatable ``volcano.sh/vgpu-number``, ``vgpu-cores`` and ``vgpu-memory`` and the device plugin's
  annotation ``volcano.sh/node-vgpu-register`` (``uuid,count,memory,type,health,mode:`` per GPU) has those GPUs:
  each may be shared by ``count`` pods, has ``memory`` MiB and 100 cores.  A placed pod names its devices in
  ``volcano.sh/vgpu-ids-new`` (``uuid,type,memory,cores:`` per device, ``;`` between containers).  Volcano reads no
  handshake annotation at ed72c7c8 (``devices.HandshakeAnnos`` is declared and never used), and MIG geometries
  only from its device ConfigMap (``knownMigGeometries``), which pyvolcano does not read: a ``mig`` node falls back
  to HAMi-core, as Volcano does when it knows no geometry for the GPU's type.

``DevicePool`` holds one kind for every node that has it: one row per device, rows of a node contiguous
(``first[i]:first[i+1]``), so a vectorised predicate reduces per-device answers per node with
``np.logical_or.reduceat``.  The static part (ids, memory, share count, type, health) is derived from the Node
objects once per node set (``NodeStatic.derived``); the use (``used_num``, ``used_mem``, ``used_core``) is read
from the pods on the device nodes (``plugins/deviceshare.py``: carried between sessions and re-read only on the nodes
whose pods changed), then changed by ``charge``/``release`` in O(devices touched).
"""

from __future__ import annotations

import copy
import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import numpy as np

from pyvolcano.api.quantity import parse_quantity
from pyvolcano.errors import QuantityError

# --- gpushare (``gpushare/type.go``) ---------------------------------------------------------------------
GPU_MEMORY = "volcano.sh/gpu-memory"
GPU_NUMBER = "volcano.sh/gpu-number"
GPU_INDEX = "volcano.sh/gpu-index"
PREDICATE_TIME = "volcano.sh/predicate-time"
UNHEALTHY_GPU_IDS = "volcano.sh/gpu-unhealthy-ids"
# --- vGPU (``config/vgpu.go``, ``vgpu/type.go``) ------------------------------------------------------------
VGPU_NUMBER = "volcano.sh/vgpu-number"
VGPU_MEMORY = "volcano.sh/vgpu-memory"
VGPU_CORES = "volcano.sh/vgpu-cores"
VGPU_REGISTER = "volcano.sh/node-vgpu-register"
VGPU_IDS = "volcano.sh/vgpu-ids-new"
VGPU_TO_ALLOCATE = "volcano.sh/devices-to-allocate"
VGPU_NODE = "volcano.sh/vgpu-node"
VGPU_TIME = "volcano.sh/vgpu-time"
BIND_TIME = "volcano.sh/bind-time"
BIND_PHASE = "volcano.sh/bind-phase"
GPU_IN_USE = "nvidia.com/use-gputype"
GPU_NO_USE = "nvidia.com/nouse-gputype"
USE_UUID = "volcano.sh/vgpu-use-gpuuuid"
NO_USE_UUID = "volcano.sh/vgpu-nouse-gpuuuid"
VGPU_MODE = "volcano.sh/vgpu-mode"
PODGROUP_POLICY = "volcano.sh/vgpu-podgroup-policy"
HAMI_CORE, MIG = "hami-core", "mig"
NVIDIA = "NVIDIA"
#: ``devices.ExtractResourceRequest``: 101 means "no percentage asked"
NO_PERCENTAGE = 101
#: the pod's PodGroup name annotations (``v1beta1.KubeGroupNameAnnotationKey``, ``VolcanoGroupNameAnnotationKey``)
GROUP_NAME_KEYS = ("scheduling.k8s.io/group-name", "scheduling.volcano.sh/group-name")

GPUSHARE, VGPU = "gpushare", "vgpu"
_UINT = re.compile(r"[0-9]+")


@dataclass(frozen=True)
class VDevice:
    """One GPU of a ``volcano.sh/node-vgpu-register`` annotation."""

    uuid: str
    count: int
    memory: int
    type: str
    health: bool
    mode: str


def _go_atoi(s: str) -> int | None:
    """Go's ``strconv.Atoi`` on a decimal integer: None when it does not parse."""
    t = s.strip()
    if t != s or not re.fullmatch(r"[+-]?[0-9]+", s):
        return None
    return int(s)


def parse_vgpu_register(value: str) -> list[VDevice]:
    """The GPUs of a node's ``volcano.sh/node-vgpu-register`` (``utils.go: decodeNodeDevices``): entries separated
    by ``:``, each ``uuid,count,memory,type,health[,mode]...``.  Raises ValueError saying what does not parse
    (Volcano drops the node's whole device list then, and reads a count or memory that is not a number as 0)."""
    if ":" not in value:
        raise ValueError(f"{value[:80]!r} has no device entry (expected uuid,count,memory,type,health,mode: per GPU)")
    out = []
    for k, entry in enumerate(value.split(":")):
        if "," not in entry:
            continue
        items = entry.split(",")
        if len(items) < 6:
            raise ValueError(f"device {k} {entry[:80]!r} has {len(items)} fields, expected 6 "
                             "(uuid,count,memory,type,health,mode)")
        count, memory = _go_atoi(items[1]), _go_atoi(items[2])
        if count is None or count < 0:
            raise ValueError(f"device {k} count {items[1]!r} is not a whole number")
        if memory is None or memory < 0:
            raise ValueError(f"device {k} memory {items[2]!r} is not a whole number of MiB")
        health = items[4].strip().lower() in ("1", "t", "true")
        out.append(VDevice(items[0], count, memory, items[3], health, MIG if items[5] == MIG else HAMI_CORE))
    if not out:
        raise ValueError(f"{value[:80]!r} has no device entry")
    return out


#: one device a container uses: (uuid, type, memory, cores)
UsedDevice = tuple[str, str, int, int]


def decode_pod_devices(value: str) -> list[list[UsedDevice]]:
    """A pod's ``volcano.sh/vgpu-ids-new`` (``utils.go: DecodePodDevices``): containers separated by ``;``, their
    devices by ``:``, each ``uuid,type,memory,cores``.  Raises ValueError for an entry Volcano would skip (fewer
    than 4 fields, a memory or cores that is not an unsigned integer): its use would go uncounted."""
    out: list[list[UsedDevice]] = []
    if not value:
        return out
    for c, part in enumerate(value.split(";")):
        devs: list[UsedDevice] = []
        for entry in part.split(":"):
            if "," not in entry:
                continue
            f = entry.split(",")
            if len(f) < 4:
                raise ValueError(f"container {c} device {entry[:80]!r} has {len(f)} fields, expected 4 "
                                 "(uuid,type,memory,cores)")
            if not _UINT.fullmatch(f[2]) or not _UINT.fullmatch(f[3]):
                raise ValueError(f"container {c} device {entry[:80]!r}: memory and cores must be whole numbers")
            devs.append((f[0], f[1], int(f[2]), int(f[3])))
        out.append(devs)
    return out


def parse_gpu_index(value: str) -> list[int]:
    """A pod's ``volcano.sh/gpu-index`` (``share.go: GetGPUIndex``): GPU ids separated by commas.  Raises ValueError
    when an id is not an integer (Volcano then counts the pod on no GPU).  Each distinct value is parsed once (a
    placed pod's is read at every session's open that reads its node, and at its bind): a new list each call."""
    return list(_gpu_index(value))


@functools.lru_cache(maxsize=4096)
def _gpu_index(value: str) -> tuple[int, ...]:
    out = []
    for s in value.split(","):
        n = _go_atoi(s)
        if n is None:
            raise ValueError(f"{value[:80]!r}: {s!r} is not a GPU id (expected e.g. 0,1)")
        out.append(n)
    return tuple(out)


def parse_unhealthy_ids(value: str) -> list[int]:
    """A node's ``volcano.sh/gpu-unhealthy-ids`` (``share.go: getUnhealthyGPUs``): ids that do not parse are
    skipped there with a warning; here they are refused (``api/models.py``)."""
    return parse_gpu_index(value)


# --- what a pod asks for ---------------------------------------------------------------------------------
def _value(q: Any) -> int:
    """apimachinery's ``Quantity.Value()``: rounded up to a whole number (0 when it does not parse).  A pod's GPU
    amounts are read at every session's open and every bind, and a trace uses a handful of distinct quantities:
    each string or number is parsed once (``_value_of``; by type too, so ``1`` and ``True`` stay apart)."""
    if isinstance(q, str | int | float):
        return _value_of(q)
    return _parsed_value(q)


def _parsed_value(q: Any) -> int:
    try:
        d = parse_quantity(q)
    except QuantityError:
        return 0
    return int(d.to_integral_value(rounding="ROUND_CEILING")) if d.is_finite() else 0


_value_of = functools.lru_cache(maxsize=4096, typed=True)(_parsed_value)


def _limits(c: Any) -> Mapping[str, Any]:
    res = (c or {}).get("resources") or {}
    return res.get("limits") or {}


def _requests(c: Any) -> Mapping[str, Any]:
    res = (c or {}).get("resources") or {}
    return res.get("requests") or {}


def _pod_max(pod: Mapping[str, Any], name: str) -> int:
    """``getGPUMemoryOfPod``/``getGPUNumberOfPod``: the containers' limits summed, or the largest init
    container's when larger."""
    spec = pod.get("spec") or {}
    total = sum(_value(_limits(c)[name]) for c in spec.get("containers") or [] if name in _limits(c))
    init = max((_value(_limits(c)[name]) for c in spec.get("initContainers") or [] if name in _limits(c)), default=0)
    return max(total, init)


def gpu_memory_of(pod: Mapping[str, Any]) -> int:
    return _pod_max(pod, GPU_MEMORY)


def gpu_number_of(pod: Mapping[str, Any]) -> int:
    return _pod_max(pod, GPU_NUMBER)


def gpushare_request(pod: Mapping[str, Any]) -> tuple[int, int]:
    """(``gpu_memory_of``, ``gpu_number_of``) in one walk over the containers: what every reader of a placed pod's
    gpushare use asks (a session's open reads it of every pod on a changed GPU node)."""
    spec = pod.get("spec") or {}
    mem = num = 0
    for c in spec.get("containers") or ():
        lim = _limits(c)
        if GPU_MEMORY in lim:
            mem += _value(lim[GPU_MEMORY])
        if GPU_NUMBER in lim:
            num += _value(lim[GPU_NUMBER])
    inits = spec.get("initContainers")
    if inits:
        mem, num = max(mem, _pod_max_init(inits, GPU_MEMORY)), max(num, _pod_max_init(inits, GPU_NUMBER))
    return mem, num


def _pod_max_init(inits: Any, name: str) -> int:
    return max((_value(_limits(c)[name]) for c in inits if name in _limits(c)), default=0)


@dataclass(frozen=True)
class ContainerRequest:
    """``devices.ContainerDeviceRequest``: how many GPUs, how much memory on each (or a percentage), and cores."""

    nums: int
    memreq: int
    mem_percentage: int
    coresreq: int


def has_vgpu_request(pod: Mapping[str, Any]) -> bool:
    """``utils.go: checkVGPUResourcesInPod``: a container limits ``vgpu-memory`` or ``vgpu-number``."""
    for c in (pod.get("spec") or {}).get("containers") or []:
        lim = _limits(c)
        if VGPU_MEMORY in lim or VGPU_NUMBER in lim:
            return True
    return False


def vgpu_requests(pod: Mapping[str, Any]) -> list[ContainerRequest]:
    """``devices.ExtractResourceRequest`` with Volcano's default device config (no percentage resource): per
    container limiting ``vgpu-number`` (or only ``vgpu-memory``: one GPU), the memory from limits or requests (none:
    the whole GPU, 100 %) and the cores from limits or requests."""
    out = []
    for c in (pod.get("spec") or {}).get("containers") or []:
        lim, req = _limits(c), _requests(c)
        if VGPU_NUMBER in lim:
            n = _value(lim[VGPU_NUMBER])
        elif VGPU_MEMORY in lim:
            n = 1
        else:
            continue
        mem_q = lim.get(VGPU_MEMORY, req.get(VGPU_MEMORY))
        mem = _value(mem_q) if mem_q is not None else 0
        pct = 100 if mem == 0 else NO_PERCENTAGE
        core_q = lim.get(VGPU_CORES, req.get(VGPU_CORES))
        cores = _value(core_q) if core_q is not None else 0
        out.append(ContainerRequest(n, mem, pct, cores))
    return out


def podgroup_key(pod: Mapping[str, Any]) -> str:
    """``utils.go: getPodGroupKey``: ``namespace/group`` from the pod's group annotations, "" without one."""
    md = pod.get("metadata") or {}
    ann = md.get("annotations") or {}
    name = ann.get(GROUP_NAME_KEYS[0]) or ann.get(GROUP_NAME_KEYS[1]) or ""
    return f"{md.get('namespace') or 'default'}/{name}" if name else ""


# --- the static part: devices per node -------------------------------------------------------------------
def _capacity(node: Mapping[str, Any], field: str, name: str) -> Decimal | None:
    rl = ((node.get("status") or {}).get(field) or {})
    if name not in rl:
        return None
    try:
        return parse_quantity(rl[name])
    except QuantityError:
        return None


def gpushare_devices(node: Mapping[str, Any]) -> list[tuple[int, int]]:
    """(id, memory) of a node's healthy gpushare GPUs (``gpushare/device_info.go: NewGPUDevices``)."""
    mem, num = _capacity(node, "capacity", GPU_MEMORY), _capacity(node, "capacity", GPU_NUMBER)
    if mem is None or num is None:
        return []
    total, count = int(mem.to_integral_value("ROUND_CEILING")), int(num.to_integral_value("ROUND_CEILING"))
    if count <= 0:
        return []
    per = total // count
    ann = (node.get("metadata") or {}).get("annotations") or {}
    bad = set(parse_unhealthy_ids(str(ann[UNHEALTHY_GPU_IDS]))) if ann.get(UNHEALTHY_GPU_IDS) else set()
    return [(i, per) for i in range(count) if i not in bad]


def vgpu_devices(node: Mapping[str, Any]) -> list[VDevice]:
    """A node's vGPUs (``vgpu/device_info.go: NewGPUDevices``): none unless allocatable ``vgpu-number``,
    ``vgpu-cores`` and ``vgpu-memory`` are all there and non-zero and the register annotation lists devices."""
    ann = (node.get("metadata") or {}).get("annotations") or {}
    reg = ann.get(VGPU_REGISTER)
    if reg is None:
        return []
    for name in (VGPU_NUMBER, VGPU_CORES, VGPU_MEMORY):
        q = _capacity(node, "allocatable", name)
        if q is None or q == 0:
            return []
    return parse_vgpu_register(str(reg))


class DevicePool:
    """One kind of device on every node that has it.  Rows of node ``i``: ``first[i]:first[i + 1]``, in the order
    Volcano indexes them (gpushare: GPU id; vGPU: position in the register annotation).

    Use: ``used_num`` (pods on the device; gpushare: pods holding it), ``used_mem``, ``used_core``; ``holders[row]``
    maps each pod on it to its (memory, cores, PodGroup key), kept for vGPU only (the PodGroup spread rule of
    ``plugins/deviceshare.py`` reads it; a gpushare pool's list is empty, nothing reads it); ``held[pod]`` lists
    what ``charge`` gave the pod, so ``release`` takes back exactly that."""

    def __init__(self, kind: str, n_nodes: int, per_node: Mapping[int, list[Any]]) -> None:
        self.kind = kind
        counts = np.zeros(n_nodes, dtype=np.int64)
        for i, devs in per_node.items():
            counts[i] = len(devs)
        self.first = np.zeros(n_nodes + 1, dtype=np.int64)
        np.cumsum(counts, out=self.first[1:])
        self.count = counts
        n = int(self.first[-1])
        self.node = np.repeat(np.arange(n_nodes, dtype=np.int64), counts)
        #: each row's position within its node
        self.local = np.arange(int(self.first[-1]), dtype=np.int64) - self.first[self.node]
        self.dev_id = np.zeros(n, dtype=np.int64)
        self.memory = np.zeros(n, dtype=np.int64)
        self.number = np.zeros(n, dtype=np.int64)
        self.health = np.ones(n, dtype=bool)
        self.uuid: list[str] = [""] * n
        self.type: list[str] = [""] * n
        #: per node with devices: the sharing mode (vGPU: the last device's, as ``decodeNodeDevices`` keeps it)
        self.mode: dict[int, str] = {}
        for i, devs in per_node.items():
            r = int(self.first[i])
            for k, d in enumerate(devs):
                if kind == GPUSHARE:
                    self.dev_id[r + k], self.memory[r + k] = d
                else:
                    self.dev_id[r + k], self.memory[r + k], self.number[r + k] = k, d.memory, d.count
                    self.health[r + k], self.uuid[r + k], self.type[r + k] = d.health, d.uuid, d.type
                    self.mode[i] = HAMI_CORE  # ``mig`` without a known geometry falls back (see the module doc)
        #: positions of the nodes that have devices
        self.nodes_with = np.flatnonzero(counts)
        self.used_num = np.zeros(n, dtype=np.int64)
        self.used_mem = np.zeros(n, dtype=np.int64)
        self.used_core = np.zeros(n, dtype=np.int64)
        self._keeps_holders = kind == VGPU
        self.holders: list[dict[str, tuple[int, int, str]]] = [{} for _ in range(n)] if kind == VGPU else []
        self.held: dict[str, list[tuple[int, int, int]]] = {}
        #: a fork's rows whose ``holders`` dict it has copied (None: it owns them all)
        self._own: set[int] | None = None
        #: a fork whose ``holders`` list is still the one it was made from (copied at its first change)
        self._shared_list = False
        #: a fork whose use arrays are still the ones it was made from (copied at its first change)
        self._shared_use = False
        #: gpushare: GPU id -> row, per node (``index_of``; static, shared by the forks)
        self._index: dict[int, dict[int, int]] = {}
        #: a fork: the pool's ``held`` it was made from (read, never changed) and the pods released from it
        self._base_held: dict[str, list[tuple[int, int, int]]] | None = None
        self._gone: set[str] = set()
        #: bumped by every change of the use (callers key what they derive from it by it)
        self.version = 0

    def fork(self) -> DevicePool:
        """A pool with this one's devices and use, to change without changing this one: the static arrays are shared,
        the use arrays and the ``holders`` list copied when the fork first changes them (``_own_use``; a row's
        ``holders`` dict when it changes that row), ``held`` read through to this pool's.  So a fork costs no copy
        until it is changed, then O(devices) array copies once, never a walk over the pods.  The fork reads this
        pool as it is: it is valid until this pool changes.  The carried pool of ``plugins/deviceshare.py`` hands
        each session a fork and changes only at the next session's open."""
        out = copy.copy(self)
        out._shared_use = True
        if self._base_held is None:
            out.held, out._base_held = {}, self.held
        else:  # a fork of a fork: flatten
            out.held = {**{u: p for u, p in self._base_held.items() if u not in self._gone}, **self.held}
            out._base_held = None
        out._gone = set()
        out._shared_list = True
        out._own = set()
        if self._own is not None:  # a fork forked: it too copies what it changes from now on
            self._own, self._shared_list, self._shared_use = set(), True, True
        return out

    def parts_of(self, uid: str) -> list[tuple[int, int, int]]:
        """What ``charge`` gave the pod ``uid`` (empty: nothing)."""
        got = self.held.get(uid)
        if got is None and self._base_held is not None and uid not in self._gone:
            got = self._base_held.get(uid)
        return got or []

    def _own_use(self) -> None:
        """A fork about to change its use: its own copies of the use arrays first."""
        if self._shared_use:
            self.used_num, self.used_mem, self.used_core = (
                self.used_num.copy(), self.used_mem.copy(), self.used_core.copy())
            self._shared_use = False

    def _holders(self, row: int) -> dict[str, tuple[int, int, str]]:
        """Row ``row``'s pods, to change (a fork copies the dict first)."""
        if self._own is not None and row not in self._own:
            if self._shared_list:
                self.holders = list(self.holders)
                self._shared_list = False
            self.holders[row] = dict(self.holders[row])
            self._own.add(row)
        return self.holders[row]

    def __len__(self) -> int:
        return int(self.first[-1])

    def rows(self, i: int) -> range:
        return range(int(self.first[i]), int(self.first[i + 1]))

    def charge(self, uid: str, parts: list[tuple[int, int, int]], group: str = "") -> None:
        """The pod ``uid`` takes ``(row, memory, cores)`` on each listed device (a device listed twice, two
        containers on one GPU, is counted twice, as ``TryAddPod`` does)."""
        if not parts:
            return
        self._own_use()
        self.version += 1
        got = self.held[uid] = [*self.parts_of(uid), *parts]  # a new list: a fork shares the old one
        for row, mem, core in got[len(got) - len(parts):]:
            self.used_num[row] += 1
            self.used_mem[row] += mem
            self.used_core[row] += core
            if self._keeps_holders:
                h = self._holders(row)
                old = h.get(uid)
                h[uid] = (mem + (old[0] if old else 0), core + (old[1] if old else 0), group)

    def release(self, uid: str) -> list[tuple[int, int, int]]:
        """Take back everything ``uid`` holds; returns it (to charge again on an undo)."""
        parts = self.held.pop(uid, None)
        base = self._base_held
        if base is not None and uid in base and uid not in self._gone:
            self._gone.add(uid)
            if parts is None:
                parts = base[uid]
        if not parts:
            return []
        self._own_use()
        self.version += 1
        for row, mem, core in parts:
            self.used_num[row] -= 1
            self.used_mem[row] -= mem
            self.used_core[row] -= core
            if self._keeps_holders:
                self._holders(row).pop(uid, None)
        return parts

    def holds(self, uid: str) -> bool:
        return bool(self.parts_of(uid))

    def index_of(self, i: int) -> dict[int, int]:
        """gpushare: GPU id -> row on node ``i`` (made once per node: the ids are static; not to be changed)."""
        got = self._index.get(i)
        if got is None:
            got = self._index[i] = {int(self.dev_id[r]): r for r in self.rows(i)}
        return got

    def row_of_uuid(self, i: int, uuid: str) -> int | None:
        """vGPU: the row of the device on node ``i`` whose uuid the used device's names (``strings.Contains``, the
        first in device order)."""
        for r in self.rows(i):
            if self.uuid[r] and self.uuid[r] in uuid:
                return r
        return None
