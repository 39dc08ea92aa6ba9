"""A decision digest of one simulator workload: proof that a speed change changes nothing.

A speed change to the scheduler or the simulator must leave every decision as it was.  This runs one workload and
writes every job's record (submit, enqueue, start, finish, phase, restarts, preemptions), every bind with its
simulated time and node, every sample and every eviction, one line each, with a digest of them all; lines
starting with ``#`` are timings (wall and CPU seconds).  Run it on main and on the change, then compare::

    .venv/bin/python benchmarks/simcheck.py openb2k /tmp/before.txt      # on main
    .venv/bin/python benchmarks/simcheck.py openb2k /tmp/after.txt       # on the change
    diff <(grep -v '^#' /tmp/before.txt) <(grep -v '^#' /tmp/after.txt)  # must print nothing

Workloads: ``openb`` (the whole bundled trace, issue 15's 15 s target), ``openb2k`` (its first 2,000 pods, a few
seconds), ``fill13`` (the FGD paper's fill protocol, ``--fill 1.3 --seed 42``, about 10,800 pods on 1,213 nodes),
``synth3k`` (3,000 synthetic jobs on 200 nodes), ``synth20k`` (the ``make bench`` 20,000 jobs on 1,000 nodes),
``svc1k`` / ``svc4k`` / ``svc24k`` (months of 1,000 / 4,000 / 24,000 services on 10 / 40 / 250 nodes of 256 cpu / 8
GPUs).
``--profile`` also writes a cProfile (``OUT.prof``) and prints its top.  CPU seconds are the
fair figure on a shared machine.

``--conf FILE`` runs the workload under another scheduler conf (Volcano's default otherwise): the per-plugin confs
of ``benchmarks/confs/`` measure what turning a plugin on costs; ``--full-sessions`` turns the blocked-job memo and
everything carried between sessions off (``SchedulerCache(memo=False)``), for the same run on the exact path::

    C=benchmarks/confs/resource-strategy-fit.conf
    .venv/bin/python benchmarks/simcheck.py svc4k /tmp/rsf.txt --conf $C
    .venv/bin/python benchmarks/simcheck.py svc4k /tmp/rsf-full.txt --conf $C --full-sessions
    diff <(grep -v '^#' /tmp/rsf.txt) <(grep -v '^#' /tmp/rsf-full.txt)  # must print nothing
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import pstats
import time
from typing import Any

from pyvolcano.api.devices import GPU_INDEX
from pyvolcano.conf.loader import load_conf, load_conf_file
from pyvolcano.sim import alibaba
from pyvolcano.sim.cluster import parse_cluster_spec
from pyvolcano.sim.engine import SimResult, Simulator
from pyvolcano.sim.run import alibaba_inputs
from pyvolcano.sim.workload import services, synthetic

WORKLOADS = ("openb", "openb2k", "fill13", "synth3k", "synth20k", "svc1k", "svc4k", "svc24k")
SERVICES = {"svc1k": (1000, 10), "svc4k": (4000, 40), "svc24k": (24000, 250)}


def make(name: str, conf: str | None = None, full: bool = False) -> Simulator:
    """The simulator of workload ``name``, under the conf file ``conf`` (Volcano's default conf when None; for the
    openb workloads, what ``simulate --alibaba`` runs: Volcano's default conf with deviceshare); ``full``:
    ``--full-sessions``."""
    sc = load_conf_file(conf) if conf or name not in ("openb", "openb2k", "fill13") else load_conf(
        alibaba.DEVICE_CONF)
    if name in ("openb", "openb2k"):
        knobs = alibaba.AlibabaKnobs(nodes=0, pods=0 if name == "openb" else 2000, compress=1.0)
        inp = alibaba_inputs(None, knobs, None)
        return Simulator(inp.nodes, inp.queues, inp.workload, sc, full_sessions=full)
    if name == "fill13":  # the FGD paper's protocol: simulate --alibaba --ali-nodes 0 --ali-pods 0 --fill 1.3 --seed 42
        inp = alibaba_inputs(None, alibaba.AlibabaKnobs(nodes=0, pods=0, fill=1.3, seed=42), None)
        sim = Simulator(inp.nodes, inp.queues, inp.workload, sc, full_sessions=full, one_try=True)
        sim.until = len(inp.workload.jobs) + 3.0
        return sim
    if name in ("synth3k", "synth20k"):
        jobs, nodes = (3000, 200) if name == "synth3k" else (20000, 1000)
        wl = synthetic(seed=1, jobs=jobs, rate=2.0 * nodes / 1000, queues={"a": 1, "b": 1, "c": 2},
                       mean_duration=600)
        queues = [{"kind": "Queue", "metadata": {"name": q}, "spec": {"weight": w}}
                  for q, w in (("a", 1), ("b", 1), ("c", 2))]
        return Simulator(parse_cluster_spec(f"{nodes}x{{cpu: 32, memory: 256Gi, nvidia.com/gpu: 8}}"), queues, wl,
                         sc, full_sessions=full)
    jobs, nodes = SERVICES[name]
    queues = [{"kind": "Queue", "metadata": {"name": "default"}, "spec": {"weight": 1}}]
    return Simulator(parse_cluster_spec(f"{nodes}x{{cpu: 256, memory: 1Ti, nvidia.com/gpu: 8}}"), queues,
                     services(seed=0, jobs=jobs), sc, full_sessions=full)


def digest_lines(res: SimResult, binds: list[str]) -> list[str]:
    """Every decision of a run, one line each, in a stable order."""
    lines = [f"cycles {res.cycles} events {res.events} evictions {res.evictions} rollbacks {res.rollbacks} "
             f"end {res.end_time:.3f}"]
    for key in sorted(res.records):
        r = res.records[key]
        lines.append(f"job {key} {r.queue} {r.tasks} {r.min_available} {r.submit} {r.enqueued} {r.first_start} "
                     f"{r.all_started} {r.finished} {r.phase} {r.restarts} {r.preempted}")
    lines += [f"bind {b}" for b in binds]
    lines += [f"sample {s.t:.3f} {list(map(float, s.used))} {sorted(s.queues.items())}" for s in res.samples]
    lines += [f"evict {e}" for e in res.eviction_log]
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("workload", choices=WORKLOADS)
    ap.add_argument("out", help="the digest file to write")
    ap.add_argument("--profile", action="store_true", help="also write OUT.prof and print the profile's top")
    ap.add_argument("--conf", metavar="FILE", help="the scheduler conf (default: Volcano's default conf)")
    ap.add_argument("--full-sessions", action="store_true",
                    help="no blocked-job memo, nothing carried between sessions (the exact path)")
    args = ap.parse_args()
    sim = make(args.workload, args.conf, args.full_sessions)
    binds: list[str] = []
    bind = sim.writer.bind

    def recording_bind(task: Any, node: str) -> None:
        gpus = (task.pod_annotations or {}).get(GPU_INDEX)
        binds.append(f"{sim.now:.3f} {task.namespace}/{task.name} {node}" + (f" gpu {gpus}" if gpus else ""))
        bind(task, node)

    sim.writer.bind = recording_bind  # type: ignore[method-assign]
    wall, cpu = time.perf_counter(), time.process_time()
    profile = cProfile.Profile() if args.profile else None
    until = sim.until
    res = profile.runcall(sim.run, until) if profile is not None else sim.run(until)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    lines = digest_lines(res, binds)
    conf = f" conf {args.conf}" if args.conf else ""
    conf += " full-sessions" if args.full_sessions else ""
    head = [f"# {args.workload}{conf}: wall {wall:.2f} s, cpu {cpu:.2f} s, cycles {res.cycles}, events {res.events}",
            "# digest " + hashlib.sha256("\n".join(lines).encode()).hexdigest()[:16]]
    with open(args.out, "w") as f:
        f.write("\n".join(head + lines) + "\n")
    print("\n".join(head))
    if profile is not None:
        profile.dump_stats(args.out + ".prof")
        pstats.Stats(args.out + ".prof").sort_stats("cumulative").print_stats(40)


if __name__ == "__main__":
    main()
