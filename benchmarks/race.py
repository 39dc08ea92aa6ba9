"""The race: pyvolcano, real Volcano and kube-scheduler draining the same backlog on one real API server.

    scripts/race                                       # the whole grid (docs/performance.md), ~15-25 min
    scripts/race --nodes 1000 --pods 5000               # one row
    scripts/race --nodes 1000 --pods 5000 --gang 8-64   # gangs of 8 to 64 pods
    .venv/bin/python -m benchmarks.race --help

What one row does (issue 16): ``../shared/tools/kube/kube-up`` starts etcd + kube-apiserver v1.32.6 on loopback;
N fake Ready Node objects are created (16 CPU, 64 Gi, 110 pods); then for each scheduler in turn:

1. a backlog of M pending pods is created *before* the scheduler starts, with the same requests for every
   scheduler (a seeded mix of 250m-2 CPU, 256Mi-4Gi): in PodGroups (one per pod, or gangs with ``--gang``;
   queue ``default``) and ``schedulerName: volcano`` for pyvolcano and Volcano, plain pods for kube-scheduler;
2. the scheduler is started: ``pyvolcano scheduler``, ``../shared/tools/volcano/volcano-up`` (vc-scheduler and
   vc-controller-manager, Volcano master ed72c7c8), or ``../shared/tools/kube/kube-scheduler-run``;
3. a watch counts each pod's first bind; the clock runs from the scheduler process's start (its
   ``/proc/PID/stat`` start time) to the last bind;
4. CPU seconds (``/proc/PID/stat`` utime+stime) of the scheduler, of kube-apiserver and of etcd over that
   interval, and the API server's own ``apiserver_request_total`` counters (what each scheduler sent);
5. the scheduler is stopped and the backlog deleted (a ``deletecollection`` with grace period 0).

Like for like: Events are on for all three (each writes a ``Scheduled`` Event per pod); pyvolcano and Volcano
run the same ``volcano-scheduler.conf`` (Volcano's installer default) with the default 1 s period and no leader
election; client QPS/burst is 5,000 for kube-scheduler (``kube-scheduler-run``) and for vc-scheduler
(``--kube-api-qps/--kube-api-burst``); pyvolcano has no client-side rate limiter (16 concurrent bind workers).
Everything (API server, etcd, the scheduler, this harness) shares the machine's cores, so the load the machine
had is printed with the results; numbers within one run compare, numbers across machines do not.
"""

from __future__ import annotations

import argparse
import compileall
import contextlib
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tests.kube import kubeserver

from pyvolcano.kube.client import ApiError, KubeClient
from pyvolcano.kube.resources import EVENT, NAMESPACE, NODE, POD, PODGROUP

SCHEDULERS = ("pyvolcano", "volcano", "kube-scheduler")
GRID = ((1000, 5000, ""), (5000, 10000, ""), (1000, 5000, "8-64"))
NS = "race"
CLK_TCK = os.sysconf("SC_CLK_TCK")
VOLCANO_CONF = kubeserver.TOOLS / "volcano" / "volcano-scheduler.conf"
VOLCANO_UP = kubeserver.TOOLS / "volcano" / "volcano-up"
VOLCANO_DOWN = kubeserver.TOOLS / "volcano" / "volcano-down"
KUBE_SCHEDULER_RUN = kubeserver.TOOLS / "kube" / "kube-scheduler-run"
CPU_MIX = ("250m", "500m", "1", "2")
MEM_MIX = ("256Mi", "1Gi", "2Gi", "4Gi")
#: seconds after the last bind to count the writes that follow it (Events, PodGroup status), at least ...
SETTLE = 5.0
#: ... and at most: until as many Events as binds were POSTed (a scheduler may send Events after its binds)
SETTLE_MAX = 60.0
#: then every write a scheduler makes for the drain is counted until none came for WRITES_QUIET seconds (at most
#: WRITES_MAX after the last bind): Volcano writes its PodGroup statuses when its first session closes, after
#: all its binds, so a window of a few seconds after the last bind saw almost none of them (0.04 `PUT` per pod
#: in the first runs; 2 per pod in all)
WRITES_QUIET = 10.0
WRITES_MAX = 240.0


# --- /proc ---------------------------------------------------------------------------------------------
def _stat(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def cpu_seconds(pid: int) -> float:
    """utime + stime of a live process (threads included), in seconds."""
    f = _stat(pid)
    return (int(f[11]) + int(f[12])) / CLK_TCK


def start_time(pid: int) -> float:
    """When the process started, on the CLOCK_BOOTTIME scale (``/proc/PID/stat`` field 22)."""
    return int(_stat(pid)[19]) / CLK_TCK


def now() -> float:
    return time.clock_gettime(time.CLOCK_BOOTTIME)


def load_note() -> str:
    la = os.getloadavg()
    return f"load average {la[0]:.1f} {la[1]:.1f} {la[2]:.1f} on {os.cpu_count()} CPUs"


# --- the backlog ---------------------------------------------------------------------------------------
@dataclass
class Backlog:
    """The pods of one row: (group name, pod names) in creation order, and each pod's (cpu, memory)."""

    groups: list[tuple[str, list[str]]]
    requests: dict[str, tuple[str, str]]

    @property
    def pods(self) -> int:
        return len(self.requests)


def make_backlog(pods: int, gang: str, seed: int = 1) -> Backlog:
    rng = random.Random(seed)
    lo, hi = (int(x) for x in gang.split("-")) if gang else (1, 1)
    groups: list[tuple[str, list[str]]] = []
    requests: dict[str, tuple[str, str]] = {}
    n = 0
    while n < pods:
        size = min(rng.randint(lo, hi), pods - n)
        g = f"g{len(groups)}"
        names = [f"{g}-{i}" for i in range(size)]
        groups.append((g, names))
        for p in names:
            requests[p] = (rng.choice(CPU_MIX), rng.choice(MEM_MIX))
        n += size
    return Backlog(groups, requests)


def pod_body(name: str, group: str | None, cpu: str, mem: str, scheduler_name: str) -> dict[str, Any]:
    md: dict[str, Any] = {"name": name, "namespace": NS, "labels": {"race": "1"}}
    if group:
        md["annotations"] = {"scheduling.k8s.io/group-name": group}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": md, "spec": {
        "schedulerName": scheduler_name, "terminationGracePeriodSeconds": 0, "containers": [
            {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu, "memory": mem}}}]}}


def create_backlog(api: KubeClient, b: Backlog, volcano: bool, workers: int = 24) -> None:
    def one(item: tuple[str, list[str]]) -> None:
        g, names = item
        if volcano:
            api.create(PODGROUP, {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                                  "metadata": {"name": g, "namespace": NS},
                                  "spec": {"minMember": len(names), "queue": "default"}}, NS)
        for p in names:
            cpu, mem = b.requests[p]
            api.create(POD, pod_body(p, g if volcano else None, cpu, mem,
                                     "volcano" if volcano else "default-scheduler"), NS)

    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(one, b.groups))


def delete_backlog(api: KubeClient) -> None:
    """Remove every pod, PodGroup and Event of the race namespace (grace 0: there is no kubelet)."""
    for res in (POD, PODGROUP, EVENT):
        with contextlib.suppress(ApiError):
            api.request("DELETE", res.path(NS), {"gracePeriodSeconds": 0})
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if not api.list(POD, NS, page_size=50)[0] and not api.list(PODGROUP, NS, page_size=50)[0]:
            return
        time.sleep(1)
    raise RuntimeError("the race namespace did not empty in 300 s")


def create_nodes(api: KubeClient, n: int, workers: int = 24) -> None:
    def one(i: int) -> None:
        name = f"race-n{i:05d}"
        alloc = {"cpu": "16", "memory": "64Gi", "pods": "110"}
        api.create(NODE, {"apiVersion": "v1", "kind": "Node", "metadata": {
            "name": name, "labels": {"race": "1", "kubernetes.io/hostname": name}},
            "status": {"capacity": alloc, "allocatable": alloc,
                       "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]}})

    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(one, range(n)))


# --- watching the binds --------------------------------------------------------------------------------
class BindWatch:
    """Counts each pod's first bind from a pods watch, with the time it was seen (CLOCK_BOOTTIME)."""

    def __init__(self, api: KubeClient, expect: int) -> None:
        self.api = api
        self.expect = expect
        self.bound: dict[str, str] = {}
        self.rebound: list[str] = []  # a pod seen on a second node: a double bind
        self.first = 0.0
        self.last = 0.0
        self.times: list[float] = []  # when each first bind was seen
        self.done = threading.Event()
        self._stop = False
        _, self.rv = api.list(POD, NS, page_size=1, label_selector="race=none")
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _run(self) -> None:
        while not self._stop:
            try:
                w = self.api.watch(POD, self.rv, NS, timeout_seconds=600)
                for typ, obj in w:
                    if self._stop:
                        w.close()
                        return
                    md = obj.get("metadata") or {}
                    if typ == "BOOKMARK":
                        self.rv = md.get("resourceVersion", self.rv)
                        continue
                    self.rv = md.get("resourceVersion", self.rv)
                    node = (obj.get("spec") or {}).get("nodeName")
                    if not node or typ == "DELETED":
                        continue
                    name = md["name"]
                    old = self.bound.get(name)
                    if old is None:
                        self.bound[name] = node
                        self.last = now()
                        self.times.append(self.last)
                        if len(self.bound) == 1:
                            self.first = self.last
                        if len(self.bound) >= self.expect:
                            self.done.set()
                    elif old != node:
                        self.rebound.append(name)
            except ApiError as exc:
                if exc.gone:
                    raise RuntimeError("the bind watch expired (410); rerun") from exc
                time.sleep(0.2)

    def stop(self) -> None:
        self._stop = True


# --- API server request counters -----------------------------------------------------------------------
_METRIC = re.compile(r'^apiserver_request_total\{(.*)\} ([0-9.e+]+)$')


def request_counts(api: KubeClient) -> Counter[str]:
    """``apiserver_request_total`` summed by verb and resource/subresource (the server's view of the load)."""
    raw = api._send("GET", "/metrics", timeout=(10.0, 60.0))
    text = raw.data.decode()
    raw.release_conn()
    out: Counter[str] = Counter()
    for line in text.splitlines():
        m = _METRIC.match(line)
        if not m:
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(1)))
        res = labels.get("resource", "")
        if labels.get("subresource"):
            res += "/" + labels["subresource"]
        out[f"{labels.get('verb', '')} {res}"] += int(float(m.group(2)))
    return out


# --- the schedulers ------------------------------------------------------------------------------------
@dataclass
class Running:
    pid: int  # the scheduler process
    stop: Any
    extra_pids: dict[str, int] = field(default_factory=dict)  # e.g. vc-controller-manager


def _start_process(cmd: list[str], log_path: Path, env: dict[str, str] | None = None) -> Running:
    """A scheduler as a child process logging to ``log_path``; stopping it is SIGTERM, then SIGKILL after 30 s."""
    log = log_path.open("ab")
    p = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)

    def stop() -> None:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(10)
        log.close()

    return Running(p.pid, stop)


#: ``--baseline DIR``: the ``src`` of another pyvolcano checkout, raced as ``pyvolcano-baseline`` (before/after a
#: change, interleaved on one API server so that both see the same load)
BASELINE_SRC: list[Path] = []
#: ``--pyvolcano-arg``: extra flags for both pyvolcano schedulers (e.g. ``-v`` for the session log)
PYVOLCANO_ARGS: list[str] = []


def start_pyvolcano(kubeconfig: str, work: Path, src: Path | None = None, variant: tuple[str, ...] = ()) -> Running:
    """``variant``: extra flags (``-x``) and environment variables (``NAME=VALUE``) of this run only."""
    env = {**os.environ, **dict(v.split("=", 1) for v in variant if not v.startswith("-"))}
    if src is not None:  # put the other checkout's package ahead of this one's (an editable install)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, (str(src), env.get("PYTHONPATH"))))
    flags = [v for v in variant if v.startswith("-")]
    log = "pyvolcano" + ("-baseline" if src else "") + ("-variant" if variant else "") + "-scheduler.log"
    return _start_process([sys.executable, "-m", "pyvolcano.cli", "scheduler", "--kubeconfig", kubeconfig,
                           "--scheduler-conf", str(VOLCANO_CONF), "--no-leader-elect", "--listen-address", "",
                           *PYVOLCANO_ARGS, *flags], work / log, env)


def start_pyvolcano_baseline(kubeconfig: str, work: Path) -> Running:
    if not BASELINE_SRC:
        raise RuntimeError("pyvolcano-baseline needs --baseline DIR")
    return start_pyvolcano(kubeconfig, work, BASELINE_SRC[0])


def start_volcano(kubeconfig: str, work: Path) -> Running:
    d = work / "volcano"
    r = subprocess.run([str(VOLCANO_UP), kubeconfig, str(d), "--conf", str(VOLCANO_CONF), "--",
                        "--kube-api-qps=5000", "--kube-api-burst=5000"], capture_output=True, text=True, timeout=180)
    if r.returncode != 0:
        raise RuntimeError(f"volcano-up failed: {r.stderr[-2000:]}")
    pid = int((d / "vc-scheduler.pid").read_text())
    cm = int((d / "vc-controller-manager.pid").read_text())
    return Running(pid, lambda: subprocess.run([str(VOLCANO_DOWN), str(d)], capture_output=True, timeout=120),
                   {"vc-controller-manager": cm})


def start_kube_scheduler(kubeconfig: str, work: Path) -> Running:
    return _start_process([str(KUBE_SCHEDULER_RUN), kubeconfig], work / "kube-scheduler.log")


#: ``--profile``: sample pyvolcano's stacks with py-spy from its start to its last bind (``WORK/NAME-N.folded``)
PROFILE: list[bool] = []
PY_SPY = Path(sys.executable).parent / "py-spy"


def start_profile(name: str, pid: int, work: Path) -> subprocess.Popen[bytes] | None:
    """py-spy on a pyvolcano scheduler: folded stacks of the thread holding the GIL (its Python CPU), by thread,
    100 samples/s, without pausing the process."""
    if not PROFILE or not name.startswith("pyvolcano"):
        return None
    name = re.sub(r"[^A-Za-z0-9_.=-]", "_", name)
    n = len(list(work.glob(f"{name}-*.folded")))
    out = work / f"{name}-{n}.folded"
    return subprocess.Popen([str(PY_SPY), "record", "--pid", str(pid), "--format", "raw", "--rate", "100",
                             "--nonblocking", "--threads", "--gil", "--output", str(out)],
                            stdout=subprocess.DEVNULL, stderr=(work / f"{name}-{n}.py-spy.log").open("wb"))


def stop_profile(spy: subprocess.Popen[bytes] | None) -> None:
    if spy is None or spy.poll() is not None:
        return
    spy.send_signal(signal.SIGINT)  # py-spy writes its output on SIGINT
    try:
        spy.wait(30)
    except subprocess.TimeoutExpired:
        spy.kill()


STARTERS = {"pyvolcano": start_pyvolcano, "volcano": start_volcano, "kube-scheduler": start_kube_scheduler,
            "pyvolcano-baseline": start_pyvolcano_baseline}


# --- one run, one row ----------------------------------------------------------------------------------
@dataclass
class Result:
    scheduler: str
    nodes: int
    pods: int
    gang: str
    bound: int
    seconds: float  # scheduler process start to the last bind
    pods_per_s: float
    scheduler_cpu_s: float
    apiserver_cpu_s: float
    etcd_cpu_s: float
    other_cpu_s: dict[str, float]
    double_binds: int
    requests: dict[str, int]  # API server requests from the start to the last bind, by verb and resource
    load: str
    requests_settled: dict[str, int]  # ... and until SETTLE seconds after the last bind
    scheduler_cpu_settled_s: float
    apiserver_cpu_settled_s: float
    #: scheduler start to the moment as many Events as binds had been POSTed (None: not within SETTLE_MAX)
    events_s: float | None = None
    events_before_last_bind: int = 0
    #: every request until the scheduler's writes stopped (``writes_s`` after its start), and the CPU until then
    requests_total: dict[str, int] = field(default_factory=dict)
    writes_s: float | None = None
    scheduler_cpu_total_s: float | None = None
    apiserver_cpu_total_s: float | None = None
    etcd_cpu_total_s: float | None = None
    #: the load average when the writes were done (``load`` is the one at the scheduler's start)
    load_end: str = ""
    #: scheduler start to its first bind (startup: imports, the informers' first lists, the first session's open)
    first_bind_s: float | None = None
    #: pods bound by each whole second after the scheduler's start (the drain's shape: startup, then the rate)
    bound_by_second: list[int] = field(default_factory=list)


def is_write(key: str) -> bool:
    """A request a scheduler sends to change something (not a read, not the API server's own Lease renewals)."""
    verb, res = key.split(" ", 1)
    return verb not in ("GET", "LIST", "WATCH") and res != "leases"


def per_pod(requests: dict[str, int], pods: int) -> dict[str, float]:
    """The writes of ``requests`` per drained pod."""
    return {k: round(v / pods, 3) for k, v in requests.items() if is_write(k) and pods}


def run_one(name: str, srv: kubeserver.Server, api: KubeClient, backlog: Backlog, nodes: int, gang: str,
            work: Path, timeout: float) -> Result:
    volcano = name != "kube-scheduler"  # pyvolcano (and its variants), pyvolcano-baseline and Volcano get PodGroups
    delete_backlog(api)
    create_backlog(api, backlog, volcano)
    assert srv.dir is not None
    apiserver = srv.apiserver_pid()
    etcd = int((srv.dir / "etcd.pid").read_text())
    time.sleep(2)  # let the API server settle after the bulk creation
    watch = BindWatch(api, backlog.pods)
    load = load_note()
    before = request_counts(api)
    api0, etcd0 = cpu_seconds(apiserver), cpu_seconds(etcd)
    t_start = now()
    base, *variant = name.split("@")
    if variant:  # pyvolcano@FLAG@NAME=VALUE: one scheduler's own flags and environment (--schedulers)
        running = start_pyvolcano(srv.kubeconfig, work, BASELINE_SRC[0] if base == "pyvolcano-baseline" else None,
                                  tuple(variant))
    else:
        running = STARTERS[name](srv.kubeconfig, work)
    spy = start_profile(name, running.pid, work)
    try:
        t0 = start_time(running.pid)
        others0 = {k: cpu_seconds(p) for k, p in running.extra_pids.items()}
        if not watch.done.wait(timeout):
            print(f"  {name}: only {len(watch.bound)}/{backlog.pods} bound after {timeout:.0f} s", file=sys.stderr)
        t_end = watch.last if watch.bound else now()
        sched_cpu = cpu_seconds(running.pid)
        stop_profile(spy)
        api1, etcd1 = cpu_seconds(apiserver), cpu_seconds(etcd)
        others = {k: round(cpu_seconds(p) - others0[k], 2) for k, p in running.extra_pids.items()}
        after = request_counts(api)
        # the writes a scheduler makes after its last bind (Events, PodGroup status): give them SETTLE seconds,
        # and longer (up to SETTLE_MAX) until there are as many Events as binds
        time.sleep(SETTLE)
        settled = request_counts(api)
        events_at: float | None = None
        while True:
            if settled["POST events"] - before["POST events"] >= len(watch.bound):
                events_at = now()
                break
            if now() - t_end > SETTLE_MAX:
                break
            time.sleep(1.0)
            settled = request_counts(api)
        sched_cpu_settled = cpu_seconds(running.pid)
        api_settled = cpu_seconds(apiserver)
        # every write of the drain: until no write was counted for WRITES_QUIET seconds
        def writes(c: Counter[str]) -> tuple[tuple[str, int], ...]:
            return tuple(sorted((k, v) for k, v in (c - before).items() if is_write(k)))

        total, seen, quiet_since = settled, writes(settled), now()
        while now() - quiet_since < WRITES_QUIET and now() - t_end < WRITES_MAX:
            time.sleep(2.0)
            total = request_counts(api)
            w = writes(total)
            if w != seen:
                seen, quiet_since = w, now()
        writes_at = quiet_since
        load_end = load_note()
        sched_cpu_total, api_total, etcd_total = cpu_seconds(running.pid), cpu_seconds(apiserver), cpu_seconds(etcd)
    finally:
        stop_profile(spy)
        watch.stop()
        running.stop()
    t0 = max(min(t0, t_start + 1), t_start - 1)  # the start time has 10 ms ticks; never before we launched it
    seconds = max(t_end - t0, 1e-3)
    reqs = {k: v for k, v in sorted((after - before).items(), key=lambda kv: -kv[1]) if v}
    reqs_settled = {k: v for k, v in sorted((settled - before).items(), key=lambda kv: -kv[1]) if v}
    reqs_total = {k: v for k, v in sorted((total - before).items(), key=lambda kv: -kv[1]) if v}
    return Result(name, nodes, backlog.pods, gang, len(watch.bound), round(seconds, 2),
                  round(len(watch.bound) / seconds, 1), round(sched_cpu, 2), round(api1 - api0, 2),
                  round(etcd1 - etcd0, 2), others, len(watch.rebound), reqs, load, reqs_settled,
                  round(sched_cpu_settled, 2), round(api_settled - api0, 2),
                  None if events_at is None else round(max(events_at - t0, seconds), 2), reqs.get("POST events", 0),
                  reqs_total, round(max(writes_at - t0, seconds), 2), round(sched_cpu_total, 2),
                  round(api_total - api0, 2), round(etcd_total - etcd0, 2), load_end,
                  round(watch.first - t0, 2) if watch.bound else None,
                  [sum(1 for t in watch.times if t - t0 <= s) for s in range(1, int(seconds) + 2)])


def run_row(nodes: int, pods: int, gang: str, schedulers: tuple[str, ...], work: Path,
            timeout: float, repeat: int = 1) -> Iterator[Result]:
    srv = kubeserver.up(work / "kube")
    try:
        api = KubeClient.from_config(srv.kubeconfig)
        # Volcano's CRDs and the root/default queues: start Volcano once and stop it at once
        vdir = work / "volcano"
        r = subprocess.run([str(VOLCANO_UP), srv.kubeconfig, str(vdir)], capture_output=True, text=True,
                           timeout=180)
        if r.returncode != 0:
            raise RuntimeError(f"volcano-up failed: {r.stderr[-2000:]}")
        subprocess.run([str(VOLCANO_DOWN), str(vdir)], capture_output=True, timeout=120)
        api.create(NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
        t = time.monotonic()
        create_nodes(api, nodes)
        print(f"  {nodes} nodes created in {time.monotonic() - t:.0f} s", file=sys.stderr)
        backlog = make_backlog(pods, gang)
        for name in schedulers * repeat:  # interleaved (A B C A B C): a change in the machine's load hits all
            t = time.monotonic()
            res = run_one(name, srv, api, backlog, nodes, gang, work, timeout)
            print(f"  {name}: {res.bound} bound in {res.seconds} s ({res.pods_per_s} pods/s; first bind after "
                  f"{res.first_bind_s} s), scheduler CPU "
                  f"{res.scheduler_cpu_s} s, kube-apiserver CPU {res.apiserver_cpu_s} s, all Events after "
                  f"{res.events_s} s, writes done after {res.writes_s} s, writes per pod "
                  f"{per_pod(res.requests_total, res.bound)}, {res.load} (at the end: {res.load_end}) "
                  f"[run {time.monotonic() - t:.0f} s]", file=sys.stderr)
            yield res
    finally:
        srv.down()


def table(results: list[dict[str, Any]]) -> str:
    lines = ["| nodes | pods | gangs | scheduler | load | last bind after | pods/s | scheduler CPU s | "
             "kube-apiserver CPU s | etcd CPU s | writes done after | writes per pod (all of the drain) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        pp = per_pod(r.get("requests_total") or r["requests"], r["bound"])
        top = ", ".join(f"{v:g} {k}" for k, v in sorted(pp.items(), key=lambda kv: -kv[1]))
        other = "".join(f" (+{k} {v})" for k, v in r["other_cpu_s"].items())
        load = r["load"].split()[2] if r["load"].startswith("load average") else "?"
        lines.append(f"| {r['nodes']:,} | {r['pods']:,} | {r['gang'] or '1'} | {r['scheduler']} | {load} | "
                     f"{r['seconds']} s | **{r['pods_per_s']:.0f}** | {r['scheduler_cpu_s']}{other} | "
                     f"{r['apiserver_cpu_s']} | {r['etcd_cpu_s']} | {r.get('writes_s')} s | {top} |")
    return "\n".join(lines)


def plot(results: list[dict[str, Any]], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = sorted({(r["nodes"], r["pods"], r["gang"]) for r in results}, key=lambda x: (x[2], x[0]))
    fig, ax = plt.subplots(figsize=(8, 4))
    width = 0.8 / len(SCHEDULERS)
    top = 0.0
    for i, s in enumerate(SCHEDULERS):
        # the mean of a scheduler's runs on a row (--repeat interleaves them), as pods over the mean time
        runs = [[r["seconds"] for r in results if (r["nodes"], r["pods"], r["gang"]) == row and r["scheduler"] == s]
                for row in rows]
        ys = [row[1] * len(t) / sum(t) if t else 0 for row, t in zip(rows, runs, strict=True)]
        ax.bar([j + i * width for j in range(len(rows))], ys, width, label=s)
        top = max(top, *ys)
    ax.set_xticks([j + width for j in range(len(rows))])
    ax.set_xticklabels([f"{n:,} nodes\n{p:,} pods" + (f"\ngangs {g}" if g else "") for n, p, g in rows])
    ax.set_ylabel("pods/s, start to last bind (mean of runs)")
    ax.set_title("Draining one backlog on one kube-apiserver v1.32.6 (2 shared cores)")
    ax.set_ylim(0, top * 1.2 or 1)  # room above the bars for the legend
    ax.legend(loc="upper center", ncols=len(SCHEDULERS))
    fig.tight_layout()
    fig.savefig(out, dpi=100)


def compile_sources() -> None:
    """Byte-compile the pyvolcano sources the race starts (this checkout's and ``--baseline``'s), as an installed
    package is: an editable install run with ``PYTHONDONTWRITEBYTECODE`` (as in this project's shells) compiles
    every module from source at each start, 0.15-0.2 s before the first bind that a deployed scheduler does not
    spend (docs/performance.md, the race, round 6)."""
    import pyvolcano

    for src in (Path(pyvolcano.__file__).parent, *(b / "pyvolcano" for b in BASELINE_SRC)):
        compileall.compile_dir(str(src), quiet=1)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="race", description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, help="one row: this many nodes (default: the whole grid)")
    ap.add_argument("--pods", type=int, help="one row: this many pods")
    ap.add_argument("--gang", default="", help="gang sizes LO-HI (e.g. 8-64); default: one pod per PodGroup")
    ap.add_argument("--schedulers", default=",".join(SCHEDULERS), help="comma-separated, run in this order; "
                    "pyvolcano@FLAG@NAME=VALUE races pyvolcano with extra flags and environment variables, e.g. "
                    "pyvolcano@--bind-workers=8")
    ap.add_argument("--repeat", type=int, default=1, help="run the schedulers this many times each, interleaved")
    ap.add_argument("--timeout", type=float, default=600, help="seconds to wait for one scheduler's drain")
    ap.add_argument("--json", type=Path, help="append the results to this JSON file")
    ap.add_argument("--plot", type=Path, help="write a bar chart of the JSON file's results here")
    ap.add_argument("--work", type=Path, help="keep logs (API server, schedulers) in this directory")
    ap.add_argument("--baseline", type=Path, help="a checkout of another pyvolcano commit (e.g. `git archive main "
                    "src | tar -x -C DIR`): raced as the scheduler `pyvolcano-baseline`")
    ap.add_argument("--profile", action="store_true", help="sample pyvolcano with py-spy (`pip install py-spy`) "
                    "from its start to its last bind: WORK/ROW/NAME-N.folded (folded stacks of the thread holding the "
                    "GIL, by thread; needs --work)")
    ap.add_argument("--pyvolcano-arg", action="append", default=[], metavar="ARG",
                    help="an extra flag for `pyvolcano scheduler` (repeatable; e.g. --pyvolcano-arg=-v)")
    a = ap.parse_args(argv)
    PYVOLCANO_ARGS[:] = a.pyvolcano_arg
    if a.profile:
        if not a.work or not PY_SPY.exists():
            print("race: --profile needs --work DIR and py-spy in the venv (`.venv/bin/pip install py-spy`)",
                  file=sys.stderr)
            return 2
        PROFILE[:] = [True]
    if a.baseline is not None:
        src = a.baseline / "src" if (a.baseline / "src" / "pyvolcano").is_dir() else a.baseline
        if not (src / "pyvolcano" / "__init__.py").is_file():
            print(f"race: --baseline {a.baseline}: no pyvolcano package there (nor in its src/)", file=sys.stderr)
            return 2
        BASELINE_SRC[:] = [src.resolve()]
    if not kubeserver.tools_available():
        print(f"race: {kubeserver.HOW_TO_RUN}", file=sys.stderr)
        return 2
    compile_sources()
    schedulers = tuple(s for s in a.schedulers.split(",") if s)
    for s in schedulers:
        if s.split("@")[0] not in STARTERS or ("@" in s and not s.startswith("pyvolcano")):
            print(f"race: unknown scheduler {s!r} (choose from {', '.join(STARTERS)})", file=sys.stderr)
            return 2
        if s.split("@")[0] == "pyvolcano-baseline" and not BASELINE_SRC:
            print("race: the scheduler pyvolcano-baseline needs --baseline DIR", file=sys.stderr)
            return 2
    if bool(a.nodes) != bool(a.pods):
        print("race: --nodes and --pods go together", file=sys.stderr)
        return 2
    if a.gang and not re.fullmatch(r"[1-9][0-9]*-[1-9][0-9]*", a.gang):
        print(f"race: --gang {a.gang!r}: expected LO-HI, e.g. 8-64", file=sys.stderr)
        return 2
    grid = [(a.nodes, a.pods, a.gang)] if a.nodes else list(GRID)
    previous: list[dict[str, Any]] = json.loads(a.json.read_text()) if a.json and a.json.exists() else []
    results: list[dict[str, Any]] = []
    for nodes, pods, gang in grid:
        print(f"race: {nodes} nodes, {pods} pods{f', gangs {gang}' if gang else ''}; {load_note()}", file=sys.stderr)
        with contextlib.ExitStack() as stack:
            if a.work:
                tmp = str(a.work / f"{nodes}-{pods}-{gang or 1}")
                Path(tmp).mkdir(parents=True, exist_ok=True)
            else:
                tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="race-"))
            for res in run_row(nodes, pods, gang, schedulers, Path(tmp), a.timeout, max(1, a.repeat)):
                results.append(asdict(res))
                if a.json:
                    a.json.write_text(json.dumps(previous + results, indent=1) + "\n")
    print(table(results))
    if a.plot:
        plot(previous + results, a.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
