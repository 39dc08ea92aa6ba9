"""Which Events a scheduler writes for a drain, by kind and reason (what ``kubectl describe`` would list).

    .venv/bin/python -m benchmarks.race_events [--scheduler volcano|pyvolcano|pyvolcano-baseline]
                                               [--nodes 200] [--pods 400] [--gang 8-64] [--baseline DIR]

One kube-apiserver (``../shared/tools/kube/kube-up``), N fake nodes and a backlog of M pods in PodGroups, as
in ``benchmarks/race.py``; the scheduler drains it, and once its writes have stopped for 20 s the Events of the
namespace are counted by (involved kind, reason, type, message start), with the writes it sent
(``apiserver_request_total``).  docs/kubernetes.md ("Events per pod") has the figures for Volcano ed72c7c8
and pyvolcano.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from tests.kube import kubeserver

from benchmarks import race
from pyvolcano.kube.client import KubeClient
from pyvolcano.kube.resources import EVENT, NAMESPACE, POD


def drain_events(scheduler: str, nodes: int, pods: int, gang: str, work: Path) -> dict[str, object]:
    srv = kubeserver.up(work / "kube")
    try:
        api = KubeClient.from_config(srv.kubeconfig)
        vdir = work / "volcano-crds"  # Volcano's CRDs and queues, as race.run_row does
        subprocess.run([str(race.VOLCANO_UP), srv.kubeconfig, str(vdir)], capture_output=True, text=True,
                       timeout=180, check=True)
        subprocess.run([str(race.VOLCANO_DOWN), str(vdir)], capture_output=True, timeout=120)
        api.create(NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": race.NS}})
        race.create_nodes(api, nodes)
        backlog = race.make_backlog(pods, gang)
        race.create_backlog(api, backlog, True)
        before = race.request_counts(api)
        running = race.STARTERS[scheduler](srv.kubeconfig, work)
        try:
            t = time.monotonic()
            while time.monotonic() - t < 300:
                if all((p.get("spec") or {}).get("nodeName") for p in api.list(POD, race.NS)[0]):
                    break
                time.sleep(2)
            bound_after = time.monotonic() - t
            last: dict[str, int] | None = None
            quiet = time.monotonic()
            while time.monotonic() - quiet < 20 and time.monotonic() - t < 600:
                writes = {k: v for k, v in (race.request_counts(api) - before).items() if race.is_write(k)}
                if writes != last:
                    last, quiet = writes, time.monotonic()
                time.sleep(2)
            events = api.list(EVENT, race.NS)[0]
        finally:
            running.stop()
    finally:
        srv.down()
    kinds = Counter(f"{e['involvedObject'].get('kind')} {e.get('type')} {e.get('reason')}: "
                    f"{(e.get('message') or '')[:40]}" for e in events
                    if e["involvedObject"].get("kind") != "Pod")  # pods: one message per pod, counted below
    return {"scheduler": scheduler, "nodes": nodes, "pods": backlog.pods, "podgroups": len(backlog.groups),
            "gang": gang, "all_bound_after_s": round(bound_after, 1), "writes": last,
            "events_by_kind_reason": dict(Counter(f"{e['involvedObject'].get('kind')} {e.get('reason')}"
                                                  for e in events)),
            "podgroup_events": dict(kinds.most_common())}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="race_events", description=__doc__.splitlines()[0])
    ap.add_argument("--scheduler", default="volcano", choices=["volcano", "pyvolcano", "pyvolcano-baseline"])
    ap.add_argument("--nodes", type=int, default=200)
    ap.add_argument("--pods", type=int, default=400)
    ap.add_argument("--gang", default="", help="gang sizes LO-HI; default one pod per PodGroup")
    ap.add_argument("--baseline", type=Path, help="for pyvolcano-baseline: another checkout's src")
    a = ap.parse_args(argv)
    if not kubeserver.tools_available():
        print(f"race_events: {kubeserver.HOW_TO_RUN}", file=sys.stderr)
        return 2
    if a.scheduler == "pyvolcano-baseline":
        if a.baseline is None:
            print("race_events: pyvolcano-baseline needs --baseline DIR", file=sys.stderr)
            return 2
        race.BASELINE_SRC[:] = [(a.baseline / "src" if (a.baseline / "src").is_dir() else a.baseline).resolve()]
    with tempfile.TemporaryDirectory(prefix="race-events-") as tmp:
        print(json.dumps(drain_events(a.scheduler, a.nodes, a.pods, a.gang, Path(tmp)), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
