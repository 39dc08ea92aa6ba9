"""Load a scenario file (shared/scenarios format) and check a cycle's JSON result against its ``expect``.

Extra keys our own scenarios may use, beyond shared/scenarios/README.md:
``unschedulable: {ns/pg: "substring"}`` (the job's unschedulable message contains it),
``schedulable: [ns/pg]`` (no unschedulable message), ``pipelinedCount``, ``bindsMaybe: {ns/pod: node}`` (pods
that Volcano binds in some runs and not in others, from Go map order; when bound, on that node or one of a list),
``pipelinedMaybe`` (the same for pipelined pods), ``oracleCannot: "why"`` (the oracle cannot express the file,
e.g. measured node usage: it is confirmed by reading Volcano's source or against vc-scheduler, as its ``notes``
say), ``volcanoExpect: {...}`` (keys of
``expect`` that Volcano's own vc-scheduler decides otherwise, where pyvolcano does not follow a Volcano bug,
docs/volcano-differences.md; read by the tests against vc-scheduler), ``oracleEnv: {NAME: value}`` (environment
for the oracle only, e.g. ``PANIC_ON_ERROR: "false"``),
``annotations: {ns/pod: {key: value}}`` (the bound pod's Binding carries these annotations, e.g. deviceshare's
``volcano.sh/vgpu-ids-new``: ``SessionResult.bind_annotations``; a list: any one of its values),
``nominated: {ns/pod: node}`` (exactly the pods whose ``status.nominatedNodeName`` the session writes; the oracle's
log shows Volcano's writes, ``tests/oracle.py``), and ``args: [...]`` (extra CLI options such as
``--scheduler-name``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "scenarios"
OWN = ROOT / "tests" / "scenarios"


def scenario_files() -> list[Path]:
    shared = sorted(SHARED.glob("*.yaml")) if SHARED.is_dir() else []
    return shared + sorted(OWN.rglob("*.yaml"))


def load(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text())
    assert isinstance(data, dict) and "objects" in data and "expect" in data, f"{path}: not a scenario"
    return data


def _match_nodes(got: dict[str, str], want: dict[str, Any], what: str) -> list[str]:
    """``want`` maps each pod to its node, ``"*"`` (any node) or a list of nodes (any of them: where Volcano picks
    at random among equally scored nodes but some nodes must still be avoided)."""
    errs = []
    if set(got) != set(want):
        errs.append(f"{what}: got pods {sorted(got)}, want {sorted(want)}")
    for pod, node in want.items():
        ok = node == "*" or (got.get(pod) in node if isinstance(node, list) else got.get(pod) == node)
        if pod in got and not ok:
            errs.append(f"{what}: {pod} went to {got[pod]}, want {'one of ' if isinstance(node, list) else ''}{node}")
    return errs


def check(result: dict[str, Any], expect: dict[str, Any]) -> list[str]:
    """Every mismatch between a ``cycle --output json`` result and a scenario's ``expect``."""
    errs: list[str] = []
    binds, evictions, pipelined = result["binds"], result["evictions"], result["pipelined"]
    if "binds" in expect:
        maybe = expect.get("bindsMaybe") or {}
        errs += _match_nodes({p: n for p, n in binds.items() if p not in maybe}, expect["binds"] or {}, "binds")
        errs += _match_nodes({p: n for p, n in binds.items() if p in maybe},
                             {p: n for p, n in maybe.items() if p in binds}, "bindsMaybe")
    if "bindsCount" in expect and len(binds) != expect["bindsCount"]:
        errs.append(f"bindsCount: got {len(binds)} ({sorted(binds)}), want {expect['bindsCount']}")
    if "evictions" in expect and sorted(evictions) != sorted(expect["evictions"] or []):
        errs.append(f"evictions: got {sorted(evictions)}, want {sorted(expect['evictions'] or [])}")
    if "evictionsCount" in expect and len(evictions) != expect["evictionsCount"]:
        errs.append(f"evictionsCount: got {len(evictions)} ({evictions}), want {expect['evictionsCount']}")
    if "evictionsFrom" in expect:
        extra = set(evictions) - set(expect["evictionsFrom"])
        if extra:
            errs.append(f"evictionsFrom: {sorted(extra)} evicted but not allowed")
    if "pipelined" in expect:
        maybe = expect.get("pipelinedMaybe") or {}
        errs += _match_nodes({p: n for p, n in pipelined.items() if p not in maybe}, expect["pipelined"] or {},
                             "pipelined")
        errs += _match_nodes({p: n for p, n in pipelined.items() if p in maybe},
                             {p: n for p, n in maybe.items() if p in pipelined}, "pipelinedMaybe")
    if "pipelinedCount" in expect and len(pipelined) != expect["pipelinedCount"]:
        errs.append(f"pipelinedCount: got {len(pipelined)}, want {expect['pipelinedCount']}")
    for pod, want in (expect.get("annotations") or {}).items():
        got = (result.get("annotations") or {}).get(pod) or {}
        for key, value in want.items():
            if got.get(key) not in (value if isinstance(value, list) else [value]):
                errs.append(f"annotations: {pod} {key} is {got.get(key)!r}, want {value!r}")
    if "nominated" in expect:
        errs += _match_nodes(result.get("nominated") or {}, expect["nominated"] or {}, "nominated")
    for pg, phase in (expect.get("podgroupPhases") or {}).items():
        got = result["podgroups"].get(pg, {}).get("phase")
        if got != phase:
            errs.append(f"podgroupPhases: {pg} is {got}, want {phase}")
    for pg, text in (expect.get("unschedulable") or {}).items():
        msg = result["unschedulable"].get(pg)
        if msg is None or str(text) not in msg:
            errs.append(f"unschedulable: {pg}: got {msg!r}, want it to contain {text!r}")
    for pg in expect.get("schedulable") or []:
        if pg in result["unschedulable"]:
            errs.append(f"schedulable: {pg} has message {result['unschedulable'][pg]!r}")
    return errs
