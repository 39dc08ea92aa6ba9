"""Every scenario file's ``expect`` checked against the real Volcano (master ed72c7c8), not against pyvolcano.

``tests/test_scenarios.py`` checks that pyvolcano decides what each file expects; this module checks that the file
expects what Volcano decides, by running ``../shared/tools/volcano/vc-oracle`` (``tests/oracle.py``) on it, twice:
the expectation must hold on both runs (a file must use ``"*"`` / ``evictionsFrom`` where Volcano picks at random).

Some files still encode Volcano 1.9 behaviour that issue 13 (rules 1-17) replaces. They are listed in
:data:`KNOWN_DISAGREEMENTS`, each with the issue-13 rule that causes it (or "new": a difference no rule covers,
see docs/volcano-differences.md, "How agreement is checked"). The test fails on any other disagreement, and also
when a listed file now agrees with Volcano: delete its row, so that the table only shrinks as rules land.

Files the oracle cannot run are skipped with the reason (:func:`oracle_cannot_run`).
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests import oracle
from tests.scenario_check import load, scenario_files

FILES = scenario_files()

#: scenario file stem -> (issue-13 rule number, or "new" for a difference no rule covers; what Volcano does)
#: (empty since every issue-13 rule and the new findings landed: a file that disagrees now fails outright)
KNOWN_DISAGREEMENTS: dict[str, tuple[str, str]] = {}


def oracle_cannot_run(sc: dict[str, Any]) -> str | None:
    """Why the oracle cannot judge this file, or None."""
    if sc.get("oracleCannot"):  # e.g. node usage: the oracle's mock cache has no metrics source
        return str(sc["oracleCannot"])
    why = oracle.unsupported(sc["objects"])
    if why:
        return why
    if "--scheduler-name" in (sc.get("args") or []):
        return ("it sets --scheduler-name; the oracle's mock cache (cache.NewCustomMockSchedulerCache) takes "
                "every pod whatever its schedulerName")
    groups = {o["metadata"].get("name") for o in sc["objects"] if o.get("kind") == "PodGroup"}
    for o in sc["objects"]:
        spec = o.get("spec") or {}
        if o.get("kind") == "Pod" and spec.get("schedulerName") == "volcano" and not spec.get("nodeName") and \
                (o["metadata"].get("annotations") or {}).get("scheduling.k8s.io/group-name") not in groups:
            return ("a pending Volcano pod without a PodGroup: Volcano's podgroup controller creates one, and the "
                    "oracle runs no controller")
    return None


def _judge(path: Path) -> tuple[str | None, list[str]]:
    sc = load(path)
    why = oracle_cannot_run(sc)
    if why:
        return why, []
    with ThreadPoolExecutor(2) as pool:
        runs = list(pool.map(lambda _: oracle.run(sc["objects"], sc["config"],
                                                  installer_queues=sc.get("installerQueues", True),
                                                  env=sc.get("oracleEnv")), range(2)))
    errs: list[str] = []
    for i, result in enumerate(runs):
        errs += [f"run {i + 1}: {e}" for e in oracle.check_expect(result, sc["expect"])]
    return None, errs


def test_known_disagreements_name_files_and_rules() -> None:
    stems = {p.stem for p in FILES}
    assert set(KNOWN_DISAGREEMENTS) <= stems, f"rows for missing files: {sorted(set(KNOWN_DISAGREEMENTS) - stems)}"
    for stem, (rule, what) in KNOWN_DISAGREEMENTS.items():
        assert rule == "new" or 1 <= int(rule) <= 17, f"{stem}: {rule!r} is not an issue-13 rule"
        assert what, stem


@pytest.fixture(scope="module")
def judged(request: pytest.FixtureRequest) -> Iterator[oracle.Ahead[Path, tuple[str | None, list[str]]]]:
    """Each file judged a few files ahead of its test (``oracle.Ahead``: the oracle runs mostly wait)."""
    ahead = oracle.Ahead(oracle.selected(request, "test_expectation_is_what_volcano_decides", "path"), _judge)
    yield ahead
    ahead.close()


@pytest.mark.skipif(not oracle.available(), reason=oracle.SKIP_REASON)
@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_expectation_is_what_volcano_decides(path: Path,
                                             judged: oracle.Ahead[Path, tuple[str | None, list[str]]]) -> None:
    why, errs = judged.get(path)
    if why:
        pytest.skip(f"{path.name}: the oracle cannot run it: {why}")
    row = KNOWN_DISAGREEMENTS.get(path.stem)
    if row is None:
        assert not errs, (f"{path.name} expects what Volcano master does not decide:\n  " + "\n  ".join(errs)
                          + f"\nrerun: ../shared/tools/volcano/vc-oracle {path} 2>/dev/null")
    else:
        assert errs, (f"{path.name} now agrees with Volcano: delete its row (rule {row[0]}) from "
                      "KNOWN_DISAGREEMENTS and from docs/volcano-differences.md")
