"""deviceshare: the device model (``api/devices.py``), the plugin's state through statements, and bad input.

The rules themselves are scenarios (``tests/scenarios/deviceshare/``, confirmed against vc-scheduler by
``tests/kube/test_deviceshare_vs_volcano.py``); here: what scenarios cannot show."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest

from pyvolcano.api import devices as dv
from pyvolcano.api.types import TaskStatus
from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.conf.loader import load_conf
from pyvolcano.errors import ConfigError
from pyvolcano.framework.cycle import cycle_objects, result_json
from pyvolcano.framework.session import Session
from pyvolcano.framework.statement import Statement
from pyvolcano.plugins.deviceshare import DeviceShare

CONF = """\
actions: allocate
tiers:
- plugins:
  - name: gang
- plugins:
  - name: predicates
  - name: deviceshare
    arguments:
      deviceshare.VGPUEnable: true
      deviceshare.SchedulePolicy: binpack
      deviceshare.ScheduleWeight: 10
"""


def vnode(name: str, gpus: list[tuple[str, int, int]], register: str | None = None) -> dict[str, Any]:
    reg = register if register is not None else "".join(f"{u},{c},{m},NVIDIA-A100,true,hami-core:"
                                                        for u, c, m in gpus)
    alloc = {"cpu": "16", "memory": "64Gi", "pods": "110", dv.VGPU_NUMBER: "100", dv.VGPU_MEMORY: "100000",
             dv.VGPU_CORES: "1000"}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "annotations": {dv.VGPU_REGISTER: reg}},
            "status": {"allocatable": alloc, "capacity": dict(alloc)}}


def pod(name: str, group: str, mem: Any = 1000, node: str = "", ann: dict[str, str] | None = None,
        res: dict[str, Any] | None = None) -> dict[str, Any]:
    r: dict[str, Any] = {"cpu": "1", "memory": "1Gi", **({dv.VGPU_MEMORY: str(mem)} if mem is not None else {}),
                         **(res or {})}
    p: dict[str, Any] = {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "ns",
                     "annotations": {"scheduling.k8s.io/group-name": group, **(ann or {})}},
        "spec": {"schedulerName": "volcano",
                 "containers": [{"name": "c", "resources": {"requests": dict(r), "limits": dict(r)}}]},
        "status": {"phase": "Running" if node else "Pending"}}
    if node:
        p["spec"]["nodeName"] = node
    return p


def pg(name: str, members: int = 1) -> dict[str, Any]:
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup", "metadata": {"name": name, "namespace": "ns"},
            "spec": {"minMember": members}, "status": {"phase": "Inqueue"}}


def session(objects: list[dict[str, Any]], conf: str = CONF) -> tuple[Session, DeviceShare]:
    cache = SchedulerCache.from_objects(objects)
    ssn = Session(cache.snapshot(), load_conf(conf)).open()
    plugin = ssn.plugins["deviceshare"]
    assert isinstance(plugin, DeviceShare)
    return ssn, plugin


def use(plugin: DeviceShare) -> tuple[Any, ...]:
    pool = plugin.state.vgpu
    assert pool is not None
    return (pool.used_num.copy(), pool.used_mem.copy(), pool.used_core.copy(), copy.deepcopy(pool.holders),
            copy.deepcopy(pool.held))


def same(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    return all(np.array_equal(x, y) for x, y in zip(a[:3], b[:3], strict=True)) and a[3:] == b[3:]


def test_parsers() -> None:
    devs = dv.parse_vgpu_register("GPU-0,10,16384,NVIDIA-A100,true,hami-core:GPU-1,4,8192,NVIDIA-T4,false,mig:")
    assert [(d.uuid, d.count, d.memory, d.type, d.health, d.mode) for d in devs] == [
        ("GPU-0", 10, 16384, "NVIDIA-A100", True, "hami-core"), ("GPU-1", 4, 8192, "NVIDIA-T4", False, "mig")]
    assert dv.decode_pod_devices("GPU-0,NVIDIA,100,10:GPU-1,NVIDIA,200,0:;GPU-1,NVIDIA,5,5:") == [
        [("GPU-0", "NVIDIA", 100, 10), ("GPU-1", "NVIDIA", 200, 0)], [("GPU-1", "NVIDIA", 5, 5)]]
    assert dv.parse_gpu_index("0,3") == [0, 3]
    got = dv.parse_gpu_index("0,3")
    got.append(9)  # each call a new list: a caller's change does not reach the parsed values kept
    assert dv.parse_gpu_index("0,3") == [0, 3]
    for bad in ("GPU-0,10,16384:", "GPU-0,x,16384,T,true,hami-core:", "nothing"):
        with pytest.raises(ValueError):
            dv.parse_vgpu_register(bad)
    with pytest.raises(ValueError):
        dv.decode_pod_devices("GPU-0,NVIDIA,-1,0:")
    with pytest.raises(ValueError):
        dv.parse_gpu_index("0,a")


def test_requests_as_volcano_reads_them() -> None:
    p = pod("p", "g", mem=None, res={dv.VGPU_NUMBER: "2", dv.VGPU_CORES: "30"})
    assert dv.has_vgpu_request(p)
    (c,) = dv.vgpu_requests(p)
    assert (c.nums, c.memreq, c.mem_percentage, c.coresreq) == (2, 0, 100, 30)  # no memory: the whole GPU
    p = pod("p", "g", mem=3000)
    (c,) = dv.vgpu_requests(p)
    assert (c.nums, c.memreq, c.mem_percentage) == (1, 3000, dv.NO_PERCENTAGE)
    assert not dv.has_vgpu_request(pod("p", "g", mem=None))


def test_a_quantity_is_read_once_per_value_and_type() -> None:
    """``_value`` keeps each string or number it parsed (``_value_of``): the same answers as parsing afresh, a bool
    (not a quantity) still 0 after the equal int was read, a mapping (unhashable) parsed each time."""
    for q in (1, True, 1.0, "1", "1.5", 1.5, "2Ki", "x", "", float("nan"), {"a": 1}, None):
        assert dv._value(q) == dv._value(q) == dv._parsed_value(q), q
    assert (dv._value(1), dv._value(True), dv._value("999m"), dv._value(-0.5)) == (1, 0, 1, 0)


def test_gpushare_request_is_memory_and_number_in_one_walk() -> None:
    """``gpushare_request`` is (``gpu_memory_of``, ``gpu_number_of``): containers summed, the largest init
    container's when larger, a quantity that does not parse read as 0, no spec or no limits as nothing."""
    def ctr(**lim: Any) -> dict[str, Any]:
        return {"name": "c", "resources": {"limits": {dv.GPU_MEMORY if k == "mem" else dv.GPU_NUMBER: v
                                                      for k, v in lim.items()}}}

    pods: list[dict[str, Any]] = [
        {}, {"spec": None}, {"spec": {"containers": [None, {"resources": None}]}},
        {"spec": {"containers": [ctr(mem="300"), ctr(mem=200, num="1")]}},
        {"spec": {"containers": [ctr(mem="300")], "initContainers": [ctr(mem="500"), ctr(num=2), {}]}},
        {"spec": {"containers": [ctr(num="3")], "initContainers": [ctr(num="2", mem="bad")]}},
        {"spec": {"containers": [ctr(mem="1.5k", num=True)], "initContainers": []}}]
    for p in pods:
        assert dv.gpushare_request(p) == (dv.gpu_memory_of(p), dv.gpu_number_of(p)), p
    assert [dv.gpushare_request(p) for p in pods[3:]] == [(500, 1), (500, 2), (0, 3), (1500, 0)]


def test_a_fork_copies_what_it_changes_and_nothing_else() -> None:
    """``DevicePool.fork`` shares the use arrays and the holders list until the fork changes them; then the
    fork's changes never reach the pool it came from, nor a fork of the fork, and the other way round.  gpushare
    pools keep no holders; ``index_of`` is the node's ids, made once."""
    devs = {0: [dv.VDevice("GPU-0", 4, 8000, "NVIDIA", True, dv.HAMI_CORE),
                dv.VDevice("GPU-1", 4, 8000, "NVIDIA", True, dv.HAMI_CORE)],
            2: [dv.VDevice("GPU-2", 4, 8000, "NVIDIA", True, dv.HAMI_CORE)]}
    base = dv.DevicePool(dv.VGPU, 3, devs)
    base.charge("p0", [(0, 1000, 10)], "ns/g")

    def state(p: dv.DevicePool) -> tuple[Any, ...]:
        return (p.used_num.tolist(), p.used_mem.tolist(), p.used_core.tolist(), copy.deepcopy(p.holders),
                {u: p.parts_of(u) for u in ("p0", "p1", "p2")})

    was = state(base)
    f = base.fork()
    assert f.used_mem is base.used_mem and f.holders is base.holders and state(f) == was  # nothing copied yet
    f.charge("p1", [(1, 2000, 0), (2, 500, 5)])
    f.release("p0")
    assert state(base) == was and f.used_mem is not base.used_mem
    assert state(f)[:3] == ([0, 1, 1], [0, 2000, 500], [0, 0, 5]) and f.holders[0] == {} and "p1" in f.holders[2]
    g = f.fork()
    g.charge("p2", [(1, 100, 0)])
    f.charge("p2", [(2, 300, 0)])
    assert g.used_mem.tolist() == [0, 2100, 500] and f.used_mem.tolist() == [0, 2000, 800]
    assert set(g.holders[1]) == {"p1", "p2"} and set(f.holders[1]) == {"p1"} and set(f.holders[2]) == {"p1", "p2"}
    assert state(base) == was
    gs = dv.DevicePool(dv.GPUSHARE, 2, {1: [(0, 500), (3, 500)]})
    gs.charge("q", [(1, 200, 0)])
    assert gs.holders == [] and gs.index_of(1) == {0: 0, 3: 1} and gs.index_of(1) is gs.index_of(1)
    gf = gs.fork()
    gf.release("q")
    assert gs.used_mem.tolist() == [0, 200] and gf.used_mem.tolist() == [0, 0] and gs.holds("q")


def test_running_pods_use_is_rebuilt_from_their_annotations() -> None:
    _, plugin = session([vnode("n1", [("GPU-a0", 10, 16384), ("GPU-a1", 10, 16384)]), pg("run"),
                           pod("r0", "run", 4000, "n1", {dv.VGPU_IDS: "GPU-a1,NVIDIA,4000,30:"})])
    pool = plugin.state.vgpu
    assert pool is not None
    assert pool.used_num.tolist() == [0, 1] and pool.used_mem.tolist() == [0, 4000]
    assert pool.used_core.tolist() == [0, 30]


def test_statement_discard_keeps_pending_pods_vgpus_as_volcano_does() -> None:
    """Volcano's vGPU release reads the pod's own annotations: a discarded placement of a pending pod (allocated or
    pipelined) leaves its vGPUs taken for the rest of the session; an evicted running pod, whose own annotations
    name its GPUs, gets them back on the undo exactly."""
    objs = [vnode("n1", [("GPU-a0", 2, 16384), ("GPU-a1", 2, 16384)]), vnode("n2", [("GPU-b0", 2, 16384)]),
            pg("run"), pod("r0", "run", 4000, "n1", {dv.VGPU_IDS: "GPU-a1,NVIDIA,4000,0:"}),
            pg("a", 3), pod("a0", "a", 2000), pod("a1", "a", 3000), pod("a2", "a", 1000)]
    ssn, plugin = session(objs)
    before = use(plugin)
    job = ssn.jobs["ns/a"]
    tasks = sorted(job.tasks.values(), key=lambda t: t.name)
    running = next(iter(ssn.jobs["ns/run"].tasks.values()))
    stmt = Statement(ssn)
    stmt.allocate(tasks[0], ssn.nodes.pos["n1"])
    stmt.pipeline(tasks[1], ssn.nodes.pos["n2"])
    stmt.evict(running, "test")
    stmt.allocate(tasks[2], ssn.nodes.pos["n1"])
    assert tasks[0].pod_annotations and tasks[0].pod_annotations[dv.VGPU_IDS] == "GPU-a1,NVIDIA,2000,0:"
    pool = plugin.state.vgpu
    assert pool is not None and "ns/r0" not in pool.held  # an evicted pod's devices are free
    # binpack: a0 on GPU-a1 (the most used), then r0 gone, a2 on GPU-a1 again (still the most used); a1 on GPU-b0
    assert pool.used_mem.tolist() == [0, 3000, 3000] and pool.used_num.tolist() == [0, 2, 1]
    stmt.discard()
    assert all(t.pod_annotations is None for t in tasks)  # the binding annotations go
    assert running.status == TaskStatus.Running
    # r0 holds GPU-a1 again; a0, a1 and a2 still hold what they took
    assert pool.used_mem.tolist() == [0, 7000, 3000] and pool.used_num.tolist() == [0, 3, 1]
    assert set(pool.held) == {"ns/r0", "ns/a0", "ns/a1", "ns/a2"}
    assert set(pool.holders[1]) == {"ns/r0", "ns/a0", "ns/a2"} and set(pool.holders[2]) == {"ns/a1"}
    assert not same(before, use(plugin))
    # a pod taken again in the session takes its share a second time, as TryAddPod does on the live devices
    stmt = Statement(ssn)
    stmt.allocate(tasks[1], ssn.nodes.pos["n2"])
    assert pool.used_mem.tolist() == [0, 7000, 6000] and pool.holders[2]["ns/a1"][0] == 6000


def test_gpushare_discard_gives_back_exactly() -> None:
    """gpushare's release forgets a pod on every GPU when its own annotations name none: exact, as in Volcano."""
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
            "status": {"allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110", dv.GPU_MEMORY: "32000",
                                       dv.GPU_NUMBER: "2"},
                       "capacity": {"cpu": "16", "memory": "64Gi", "pods": "110", dv.GPU_MEMORY: "32000",
                                    dv.GPU_NUMBER: "2"}}}
    p = pod("a0", "a", mem=None, res={dv.GPU_MEMORY: "5000"})
    ssn, plugin = session([node, pg("a"), p], CONF.replace("VGPUEnable", "GPUSharingEnable"))
    pool = plugin.state.gpushare
    assert pool is not None
    task = next(iter(ssn.jobs["ns/a"].tasks.values()))
    stmt = Statement(ssn)
    stmt.allocate(task, ssn.nodes.pos["n1"])
    assert pool.used_mem.tolist() == [5000, 0] and task.pod_annotations and task.pod_annotations[dv.GPU_INDEX] == "0"
    stmt.discard()
    assert pool.used_mem.tolist() == [0, 0] and not pool.held and task.pod_annotations is None


def test_gpushare_answers_follow_the_use() -> None:
    """gpushare's per-node answers (the most memory left on one GPU, the idle GPUs) are kept per use of the pool:
    each placement changes them, and they are what reducing every device afresh gives."""
    cap = {"cpu": "16", "memory": "64Gi", "pods": "110", dv.GPU_MEMORY: "32000", dv.GPU_NUMBER: "2"}
    nodes = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{k}"},
              "status": {"allocatable": dict(cap), "capacity": dict(cap)}} for k in (1, 2)]
    pods = [pod(f"a{k}", "a", mem=None, res={dv.GPU_MEMORY: "10000"}) for k in range(3)]
    ssn, plugin = session([*nodes, pg("a", 3), *pods], CONF.replace("VGPUEnable", "GPUSharingEnable").replace(
        "SchedulePolicy: binpack", "GPUShareWholeGPUs: true"))
    pool = plugin.state.gpushare
    assert pool is not None
    tasks = sorted(ssn.jobs["ns/a"].tasks.values(), key=lambda t: t.name)
    idx = np.arange(len(ssn.nodes))
    stmt = Statement(ssn)
    for t in tasks:
        for mem, num in ((10000, 0), (16000, 0), (0, 1), (0, 2), (6001, 0)):
            mem_ok, num_ok = plugin._gpushare_ok(pool, mem, num)
            starts = pool.first[pool.nodes_with]
            free = np.maximum(pool.memory - pool.used_mem, 0)
            assert (mem_ok[pool.nodes_with] == (np.logical_or.reduceat(free >= mem, starts) if mem else True)).all()
            assert (num_ok[pool.nodes_with] == (np.add.reduceat(pool.used_num == 0, starts) >= num if num
                                                else True)).all()
        if t is tasks[2]:
            break
        assert plugin.fits(t, idx).all()
        stmt.allocate(t, ssn.nodes.pos["n1"])
    assert pool.used_mem.tolist() == [10000, 10000, 0, 0]  # each GPU of n1 has 6000 left
    assert plugin.fits(tasks[2], idx).tolist() == [False, True]
    assert plugin._gpushare_ok(pool, 6000, 0)[0].tolist() == [True, True]
    assert plugin._gpushare_ok(pool, 0, 1)[1].tolist() == [False, True]
    stmt.discard()
    assert plugin.fits(tasks[2], idx).all() and plugin._gpushare_ok(pool, 0, 2)[1].tolist() == [True, True]


def test_vector_and_scalar_predicates_agree() -> None:
    objs = [vnode(f"n{k}", [(f"GPU-{k}0", 2, 8000 + 1000 * k), (f"GPU-{k}1", 1, 16000)]) for k in range(6)]
    objs += [pg("run"), pod("r0", "run", 8000, "n1", {dv.VGPU_IDS: "GPU-10,NVIDIA,8000,0:"}),
             pod("r1", "run", 100, "n2", {dv.VGPU_IDS: "GPU-21,NVIDIA,100,100:"})]
    asks = [dict(mem=m, res=r) for m in (None, 500, 9000, 12000, 20000)
            for r in ({}, {dv.VGPU_CORES: "100"}, {dv.VGPU_NUMBER: "2"}, {dv.VGPU_CORES: "50"})]
    objs += [pg("a")] + [pod(f"p{k}", "a", **a) for k, a in enumerate(asks)]  # type: ignore[arg-type]
    ssn, plugin = session(objs)
    idx = np.arange(len(ssn.nodes))
    for t in ssn.jobs["ns/a"].tasks.values():
        vec = plugin.fits(t, idx)
        one = np.array([plugin.fit_error(t, i) is None for i in idx])
        assert (vec == one).all(), t.name
        req = plugin.vreq(t)
        if req is not None:
            exact = np.array([plugin._vgpu_take(plugin.state.vgpu, i, req)[2] for i in idx])  # type: ignore[arg-type]
            want = np.where(vec, np.floor(exact + 0.5) * 10, 0)
            assert (plugin.scores(t, idx)[vec] == want[vec]).all(), t.name


def test_conf_errors() -> None:
    both = CONF.replace("deviceshare.VGPUEnable: true",
                        "deviceshare.VGPUEnable: true\n      deviceshare.GPUSharingEnable: true")
    with pytest.raises(ConfigError, match="can't be used together"):
        cycle_objects([vnode("n1", [("G", 1, 100)])], load_conf(both))


@pytest.mark.parametrize("bad, field", [
    (lambda o: o[0]["metadata"]["annotations"].update({dv.VGPU_REGISTER: "GPU-0,10,16384:"}),
     "Node n1: field metadata.annotations.volcano.sh/node-vgpu-register"),
    (lambda o: o[3]["metadata"]["annotations"].update({dv.VGPU_IDS: "GPU-a0,NVIDIA,lots,0:"}),
     "Pod ns/b0: field metadata.annotations.volcano.sh/vgpu-ids-new"),
    (lambda o: o[3]["spec"]["containers"][0]["resources"]["limits"].update({dv.VGPU_NUMBER: "0"}),
     "Pod ns/b0: field spec.containers[0].resources.limits.volcano.sh/vgpu-number"),
    (lambda o: o[3]["spec"]["containers"][0]["resources"]["limits"].update({dv.GPU_MEMORY: "-1"}),
     "Pod ns/b0: field spec.containers[0].resources.limits.volcano.sh/gpu-memory"),
    (lambda o: o[3]["spec"]["containers"][0]["resources"]["limits"].update({dv.GPU_MEMORY: float("nan")}),
     "Pod ns/b0: field spec.containers[0].resources.limits.volcano.sh/gpu-memory"),
])
def test_bad_device_input_is_named_and_the_rest_scheduled(bad: Any, field: str) -> None:
    objs = [vnode("n1", [("GPU-a0", 10, 16384)]), vnode("n2", [("GPU-b0", 10, 16384)]), pg("a"), pod("b0", "b"),
            pg("b"), pod("a0", "a")]
    bad(objs)
    cache = SchedulerCache.from_objects(objs)
    assert any(p.startswith(field) for p in cache.problems), cache.problems
    result, _ = cycle_objects(objs, load_conf(CONF))
    assert "ns/a0" in result_json(result)["binds"]  # the rest is scheduled


def test_nothing_changes_without_the_plugin() -> None:
    objs = [vnode("n1", [("GPU-a0", 1, 16384)]), pg("a", 2), pod("a0", "a"), pod("a1", "a")]
    plain = CONF.split("  - name: deviceshare")[0]
    result, _ = cycle_objects(objs, load_conf(plain))
    out = result_json(result)
    assert len(out["binds"]) == 2 and "annotations" not in out  # one share, two pods: only the plugin keeps them apart
    result, _ = cycle_objects(objs, load_conf(CONF))
    assert result_json(result)["binds"] == {}
