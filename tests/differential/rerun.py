"""Rerun differential cases by hand.

``python -m tests.differential.rerun FILE.yaml``: one scenario file (a kept failing case or a repro) through
pyvolcano and the real Volcano, with the differences.
``python -m tests.differential.rerun --minimize FAMILY SEED OUT.yaml`` (or ``--minimize CASE.yaml - OUT.yaml``):
shrink a disagreeing case (same disagreement class) and write it as a repro file, ``expect`` = Volcano's decision.
``python -m tests.differential.rerun --sweep FAMILY[,FAMILY] FIRST LAST``: seeds FIRST..LAST of those families,
one line per disagreeing case and a count per disagreement class.
"""

from __future__ import annotations

import sys
import tempfile
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

from pyvolcano.conf.loader import load_conf
from tests import oracle
from tests.differential.compare import CAUSES, Outcome, compare, expect_from_volcano, minimize
from tests.differential.gen import CONFS, FAMILIES, Case, generate


def from_file(path: Path) -> Case:
    sc = yaml.safe_load(path.read_text())
    family = next((f for f in sorted(FAMILIES, key=len, reverse=True) if path.stem.startswith(f)), path.stem)
    return Case(family, 0, sc["config"], sc["objects"])


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


def write_repro(case: Case, out: Outcome, path: Path, origin: str) -> None:
    """A repro scenario file: the case's objects, ``expect`` = what Volcano decides (two oracle runs), and notes
    with the differences pyvolcano shows today. Fill in ``rule`` and the notes' explanation by hand."""
    objects = oracle.with_installer_queues(case.objects, case.config)
    st = oracle.stable(objects, case.config)
    sc = {"name": f"differential repro: {out.cause} ({origin})", "rule": "?", "config": case.config,
          "objects": objects, "expect": expect_from_volcano(st),
          "notes": "pyvolcano today:\n" + "\n".join(str(d) for d in out.diffs)}
    path.write_text(oracle.dump(sc))


def main(argv: list[str]) -> int:
    if argv[:1] == ["--sweep"]:
        families = FAMILIES if argv[1] == "all" else argv[1].split(",")
        outcomes = sweep(list(families), int(argv[2]), int(argv[3]))
        for o in outcomes:
            if not o.agrees:
                print(o.report())
        print(summary(outcomes))
        return 0
    if argv[:1] == ["--minimize"]:
        # --minimize FAMILY SEED OUT.yaml: a smaller case with the same disagreement class, written to OUT.yaml
        case = minimize(from_file(Path(argv[1])) if argv[1].endswith(".yaml") else generate(argv[1], int(argv[2])))
        for _ in range(3):  # Volcano's own nondeterminism can hide the difference in one comparison
            out = compare(case, Path(tempfile.gettempdir()) / "min")
            if not out.agrees:
                break
        write_repro(case, out, Path(argv[3]), f"{argv[1]} seed {argv[2]}, minimized")
        print(out.report())
        return 0
    if argv[:1] == ["--repro"]:
        # --repro IN.yaml OUT.yaml: a (minimized) case file as a repro with Volcano's decisions as its expect
        case = from_file(Path(argv[1]))
        out = compare(case, Path(tempfile.gettempdir()) / "min")
        write_repro(case, out, Path(argv[2]), Path(argv[1]).stem)
        print(out.report())
        return 0
    for arg in argv:
        print(compare(from_file(Path(arg)), Path(arg).parent / "rerun").report())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
