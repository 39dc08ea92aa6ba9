"""How one session's time grows with nodes x pods: the figures and the plot of docs/performance.md.

    .venv/bin/python benchmarks/scaling.py --out docs/          # about 5 minutes on the 2-core machine

Every point is a fresh ``pyvolcano bench -o json`` process (so peak RSS is that run's own), default conf,
gangs of 10 over 10 queues.  Writes ``performance-scaling.png`` and ``performance-scaling.json`` into --out and
prints a Markdown table.  Not part of ``make test``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

NODES = (1000, 2500, 5000, 10000)
PODS = (10000, 25000, 50000, 100000)
ENGINE_SIZES = ((50, 1000), (100, 1000), (200, 1000), (500, 1000))


def bench(*args: str) -> dict[str, Any]:
    out = subprocess.run([sys.executable, "-m", "pyvolcano.cli", "bench", "-o", "json", *args],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("docs"))
    ap.add_argument("--quick", action="store_true", help="Smaller grid (a smoke run).")
    a = ap.parse_args()
    nodes, pods = ((500, 1000), (2000, 5000)) if a.quick else (NODES, PODS)
    grid = []
    for n in nodes:
        for p in pods:
            r = bench("--nodes", str(n), "--pods", str(p))
            s = r["seconds"]
            row = {"nodes": n, "pods": p, "enqueue_allocate": round(s["enqueue"] + s["allocate"], 3),
                   "session": round(sum(s.values()), 3), "pods_per_second": r["pods_per_second"],
                   "peak_rss_mb": r["peak_rss_mb"], "placed": r["placed"]}
            grid.append(row)
            print(json.dumps(row), flush=True)
    engines = []
    for n, p in (ENGINE_SIZES[:2] if a.quick else ENGINE_SIZES):
        r = bench("--nodes", str(n), "--pods", str(p), "--compare-engines")
        engines.append({"nodes": n, "pods": p, "vector_seconds": round(r["seconds"]["allocate"], 3),
                        "scalar_seconds": round(r["scalar_seconds"]["allocate"], 3),
                        "speedup": r["vector_speedup"], "same_decisions": r["same_decisions"]})
        print(json.dumps(engines[-1]), flush=True)
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "performance-scaling.json").write_text(json.dumps({"grid": grid, "engines": engines}, indent=1))
    plot(grid, a.out / "performance-scaling.png")
    print("\n| nodes | pending pods | enqueue+allocate s | whole session s | pods/s | peak RSS MB |")
    print("|---:|---:|---:|---:|---:|---:|")
    for r in grid:
        print(f"| {r['nodes']:,} | {r['pods']:,} | {r['enqueue_allocate']} | {r['session']} | "
              f"{r['pods_per_second']:,.0f} | {r['peak_rss_mb']:.0f} |")
    print("\n| nodes | pods | vector allocate s | scalar allocate s | speed-up | same decisions |")
    print("|---:|---:|---:|---:|---:|:---:|")
    for r in engines:
        print(f"| {r['nodes']} | {r['pods']} | {r['vector_seconds']} | {r['scalar_seconds']} | "
              f"{r['speedup']}x | {r['same_decisions']} |")


def plot(grid: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    for n in sorted({r["nodes"] for r in grid}):
        rows = [r for r in grid if r["nodes"] == n]
        xs = [r["pods"] for r in rows]
        left.plot(xs, [r["enqueue_allocate"] for r in rows], marker="o", label=f"{n:,} nodes")
        right.plot(xs, [r["pods_per_second"] for r in rows], marker="o", label=f"{n:,} nodes")
    left.set(xlabel="pending pods (gangs of 10)", ylabel="enqueue + allocate (s)",
             title="One session: time grows linearly in pods")
    right.set(xlabel="pending pods (gangs of 10)", ylabel="pods placed per second",
              title="Throughput barely depends on node count")
    right.axhline(10000, color="grey", linestyle="--", linewidth=1)
    right.text(right.get_xlim()[0], 10300, " target 10,000 pods/s", color="grey", fontsize=8)
    for ax in (left, right):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
