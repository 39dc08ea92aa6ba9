"""The FGD paper's Fig. 9(a) from a ``pyvolcano sweep`` of ``examples/sweeps/fgd-fig9a.yaml``, beside the paper's.

Fig. 9(a) of Weng et al. ("Beware of Fragmentation", USENIX ATC '23) plots, for six GPU placement policies on the
default openb pod list, the GPU allocation rate against the GPU demand that has arrived (0-130 % of the cluster's
GPUs), each the mean of ten runs (seeds 42-51).  Our curves come from the sweep's points (``summary.json``'s
``fill_curve``, written by ``simulate --fill``); the paper's from ``benchmarks/data/fgd_expected_alloc_default.csv``,
the default pod list's rows of their repository's ``experiments/analysis/expected_results/analysis_allo_discrete.csv``
(``benchmarks/data/README.md``)::

    pyvolcano sweep examples/sweeps/fgd-fig9a.yaml --out fig9a -j 2
    .venv/bin/python benchmarks/fgd_fig9a.py --sweep fig9a --out docs/fgd-fig9a.png

prints the table of docs/gpu-sharing.md ("The paper's experiment") and writes the plot.
``benchmarks/test_fgd_fig9a.py`` checks the targets of issue 28 on the same numbers.
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
PAPER_CSV = ROOT / "benchmarks" / "data" / "fgd_expected_alloc_default.csv"
SWEEP_FILE = ROOT / "examples" / "sweeps" / "fgd-fig9a.yaml"
#: our conf name (examples/confs/fgd/) -> the paper's ``sc_policy``, in the paper's order
POLICIES = {"random": "01-Random", "dotprod": "02-DotProd", "gpuclustering": "03-GpuClustering",
            "gpupacking": "04-GpuPacking", "bestfit": "05-BestFit", "fgd": "06-FGD"}
SEEDS = tuple(range(42, 52))
ARRIVED = np.arange(131)  # arrived GPU demand, % of the cluster's GPUs


def paper_curves(path: Path = PAPER_CSV) -> dict[str, dict[int, np.ndarray]]:
    """Per conf name, per seed: the paper's allocated GPU % at arrived 0..130 % (NaN where their cell is empty)."""
    out: dict[str, dict[int, np.ndarray]] = {name: {} for name in POLICIES}
    by_paper = {v: k for k, v in POLICIES.items()}
    with path.open(newline="") as f:
        for row in csv.DictReader(f):
            name = by_paper.get(row["sc_policy"])
            if name is None or row["workload"] != "openb_pod_list_default":
                continue
            out[name][int(row["seed"])] = np.array([float(row[str(p)]) if row[str(p)] else np.nan for p in ARRIVED])
    return out


def sweep_curves(sweep: Path) -> dict[str, dict[int, np.ndarray]]:
    """Per conf name, per seed: our allocated GPU % at arrived 0..130 %, from the points the sweep finished."""
    out: dict[str, dict[int, np.ndarray]] = {name: {} for name in POLICIES}
    for summary in sorted((sweep / "points").glob("*/summary.json")):
        point = json.loads((summary.parent / "point.json").read_text())
        if point["conf"] not in out or point["params"]:
            continue
        curve = json.loads(summary.read_text()).get("fill_curve")
        if not curve:
            raise ValueError(f"{summary}: no fill_curve (not a --fill run)")
        if list(curve["arrived_gpu_pct"]) != list(ARRIVED):
            raise ValueError(f"{summary}: fill_curve.arrived_gpu_pct is not 0..130")
        out[point["conf"]][int(point["seed"])] = np.array(
            [np.nan if v is None else float(v) for v in curve["allocated_gpu_pct"]])
    return out


def mean_curve(curves: dict[int, np.ndarray]) -> np.ndarray:
    """The mean over the seeds at each arrived %, of the seeds that have a value there."""
    if not curves:
        return np.full(len(ARRIVED), np.nan)
    a = np.vstack(list(curves.values()))
    counts = np.sum(~np.isnan(a), axis=0)
    sums = np.nansum(a, axis=0)
    return np.divide(sums, counts, out=np.full(len(ARRIVED), np.nan), where=counts > 0)


def table_rows(ours: dict[str, dict[int, np.ndarray]],
               paper: dict[str, dict[int, np.ndarray]]) -> list[dict[str, float | int | str]]:
    """Per policy: our and the paper's mean allocated % at arrived 100 % and 130 %, and ours minus theirs."""
    rows: list[dict[str, float | int | str]] = []
    for name in POLICIES:
        o, p = mean_curve(ours[name]), mean_curve(paper[name])
        rows.append({"policy": name, "seeds": len(ours[name]), "ours_100": float(o[100]), "paper_100": float(p[100]),
                     "ours_130": float(o[130]), "paper_130": float(p[130]),
                     "diff_100": float(o[100] - p[100]), "diff_130": float(o[130] - p[130])})
    return rows


def markdown(rows: list[dict[str, float | int | str]]) -> str:
    lines = ["| policy | ours 100 % | paper 100 % | ours 130 % | paper 130 % | difference (100 % / 130 %) |",
             "|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| `{r['policy']}` | {r['ours_100']:.2f} | {r['paper_100']:.2f} | {r['ours_130']:.2f} | "
                     f"{r['paper_130']:.2f} | {r['diff_100']:+.2f} / {r['diff_130']:+.2f} |")
    return "\n".join(lines)


def plot(ours: dict[str, dict[int, np.ndarray]], paper: dict[str, dict[int, np.ndarray]], path: Path) -> None:
    """Left: the whole curves (solid ours, dashed the paper's); right: the same from 70 % arrived, where they part."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colours = dict(zip(POLICIES, plt.get_cmap("tab10").colors, strict=False))
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.8), gridspec_kw={"width_ratios": [1, 1.25]})
    for ax, lo in zip(axes, (0, 70), strict=True):
        xs = ARRIVED[lo:]
        for name in POLICIES:
            c = colours[name]
            ax.plot(xs, mean_curve(ours[name])[lo:], color=c, linewidth=1.8,
                    label=f"{name} (pyvolcano, {len(ours[name])} seeds)")
            ax.plot(xs, mean_curve(paper[name])[lo:], color=c, linewidth=1.4, linestyle="--",
                    label=f"{POLICIES[name][3:]} (paper)")
        ax.plot(xs, np.minimum(xs, 100), color="grey", linewidth=0.8, linestyle=":")
        ax.set(xlabel="arrived GPU demand (% of the cluster's GPUs)", ylabel="allocated GPUs (%)")
        ax.grid(alpha=0.3)
    axes[0].set(xlim=(0, 130), ylim=(0, 100), title="GPU allocation as the pods arrive (mean of seeds 42-51)")
    axes[1].set(xlim=(70, 130), ylim=(70, 97), title="From 70 % arrived: solid pyvolcano, dashed the paper")
    axes[1].legend(fontsize=7.5, ncol=2, loc="lower right")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sweep", type=Path, required=True, help="the --out folder of the fgd-fig9a sweep")
    ap.add_argument("--out", type=Path, help="write the plot here (PNG)")
    ap.add_argument("--paper", type=Path, default=PAPER_CSV, help="the paper's curves (default: %(default)s)")
    args = ap.parse_args()
    ours, paper = sweep_curves(args.sweep), paper_curves(args.paper)
    print(markdown(table_rows(ours, paper)))
    if args.out is not None:
        plot(ours, paper, args.out)
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
