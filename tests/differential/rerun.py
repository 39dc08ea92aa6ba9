"""Rerun differential cases by hand.

``python -m tests.differential.rerun FILE.yaml``: one scenario file (a kept failing case or a repro) through
pyvolcano and the real Volcano, with the differences.
``python -m tests.differential.rerun --sweep FAMILY[,FAMILY] FIRST LAST``: seeds FIRST..LAST of those families,
one line per disagreeing case and a count per disagreement class.
"""

from __future__ import annotations

import sys
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

from pyvolcano.conf.loader import load_conf
from tests.differential.compare import CAUSES, Outcome, compare
from tests.differential.gen import CONFS, FAMILIES, Case, generate


def from_file(path: Path) -> Case:
    sc = yaml.safe_load(path.read_text())
    return Case(path.stem, 0, sc["config"], sc["objects"])


def sweep(families: list[str], first: int, last: int, workers: int = 4) -> list[Outcome]:
    """Every case of ``families`` with seeds first..last; the oracle mostly waits, so a few threads overlap it."""
    cases = [generate(f, s) for f in families for s in range(first, last + 1)]
    # pyvolcano's registry imports its plugin modules on first use and is not thread-safe: load it here first.
    load_conf(CONFS["default"], "warm-up")
    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(compare, cases))


def summary(outcomes: list[Outcome]) -> str:
    causes = Counter(o.cause for o in outcomes if not o.agrees)
    per_family: dict[str, Counter[str]] = {}
    for o in outcomes:
        per_family.setdefault(o.case.family, Counter())["agree" if o.agrees else "disagree"] += 1
    lines = [f"{len(outcomes)} cases, {sum(o.agrees for o in outcomes)} agree in full"]
    lines += [f"  {fam}: {c['agree']} agree, {c['disagree']} disagree" for fam, c in sorted(per_family.items())]
    lines += [f"  {n:4} x {cause}: {CAUSES.get(cause, '')}" for cause, n in causes.most_common()]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if argv[:1] == ["--sweep"]:
        families = FAMILIES if argv[1] == "all" else argv[1].split(",")
        outcomes = sweep(list(families), int(argv[2]), int(argv[3]))
        for o in outcomes:
            if not o.agrees:
                print(o.report())
        print(summary(outcomes))
        return 0
    for arg in argv:
        print(compare(from_file(Path(arg)), Path(arg).parent / "rerun").report())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
