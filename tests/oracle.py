"""Run the real Volcano (``../shared/tools/volcano/vc-oracle``, Volcano master ed72c7c8) on a scenario.

The oracle is one real Volcano scheduling session built on Volcano's unit-test harness
(``pkg/scheduler/uthelper``, ``cache.NewCustomMockSchedulerCache``); see ``../shared/tools/README.md``. This module
is the measuring instrument of the differential tests (``tests/test_oracle_scenarios.py``,
``tests/test_differential.py``):

- it finds the oracle next to the project root as ``tests/scenario_check.py`` finds ``../shared``, and the tests
  skip with :data:`SKIP_REASON` when it is absent;
- it adds what Volcano's installer creates and pyvolcano assumes: a ``default`` Queue (weight 1, Open) when the
  objects have none, and a ``root`` Queue when a queue names a parent or the capacity plugin runs its hierarchy
  (the oracle's mock cache creates no queue at all, so without them every job is ignored);
- :func:`stable` runs the oracle twice and keeps only what both runs decided the same way, because Volcano is
  nondeterministic where it iterates Go maps, picks random offsets (``util.GetMinInt`` sampling in
  ``predicateNodes``) or picks among equally scored nodes (``util.SelectBestNodeAndScore``);
- every run is at log level 5, and :func:`run` collects, per task, the node scores Volcano had when it chose
  (``util/scheduler_helper.go: PrioritizeNodes`` logs "Prioritize nodeScoreMap for task<ns/name>"), so that a
  node chosen differently counts as agreement when both nodes had the best score (Volcano picks one of the best
  at random, ``util.SelectBestNodeAndScore``). The oracle's own ``nodeScores`` (``actions: ""``) are not used for
  this: they are ``ssn.NodeOrderFn`` alone, and at ed72c7c8 LeastAllocated, BalancedAllocation and
  TaintToleration are batch scores (``nodeorder.go: BatchNodeOrderFn``), so those numbers tie where Volcano does not.
"""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

import yaml

ROOT = Path(__file__).resolve().parents[1]
ORACLE = ROOT.parent / "shared" / "tools" / "volcano" / "vc-oracle"
#: kinds the oracle accepts (``src/vc-oracle/main.go``); any other kind makes it exit 2.
ORACLE_KINDS = frozenset({"Node", "Pod", "PodGroup", "Queue", "PriorityClass", "HyperNode"})
#: how long the oracle waits for no further bind/evict event (its ``-quiet``); binds arrive on a goroutine, and on
#: a loaded machine 150 ms (and even the oracle's own 500 ms default) sometimes ended a run before its last bind.
QUIET = os.environ.get("PYVOLCANO_ORACLE_QUIET", "1s")
QUEUE_API = "scheduling.volcano.sh/v1beta1"
#: how many test cases ahead :class:`Ahead` runs the oracle (each case runs it twice at once): a run takes about
#: ``QUIET`` of wall time and some 0.05 CPU s, so the cases' waits overlap at almost no cost in CPU
AHEAD = int(os.environ.get("PYVOLCANO_ORACLE_AHEAD", "8"))


#: What the oracle prints for a PodGroup the real scheduler would call ``Unknown``. The oracle, like Volcano's
#: ``uthelper.CheckAll``, runs ``framework.NewJobUpdater(ssn).UpdateAll()`` without ``framework.CloseSession``, so
#: plugins' ``OnSessionClose`` never run: gang (``plugins/gang/gang.go: OnSessionClose``) never sets this
#: session's Unschedulable condition, and ``framework/session.go: getPodGroupPhase`` never sees
#: ``unschedulable`` and falls through to Pending (or keeps Inqueue). The real scheduler's ``CloseSession`` runs
#: the plugins first, so a gang with running pods that is short this session is ``Unknown`` there.
UNKNOWN_SEEN_AS = frozenset({"Pending", "Inqueue", "Running", "Completed"})


def available() -> bool:
    return ORACLE.is_file() and os.access(ORACLE, os.X_OK) and shutil.which("bash") is not None


SKIP_REASON = (f"the real Volcano oracle is not present at {ORACLE} (it ships in the shared tools, "
               "../shared/tools/volcano/vc-oracle next to the project root); differential tests need it")


class OracleError(RuntimeError):
    """The oracle refused the input or crashed: the message has its stderr tail."""


def unsupported(objects: list[dict[str, Any]]) -> str | None:
    """Why the oracle cannot run these objects, or None when it can."""
    kinds = sorted({str(o.get("kind")) for o in objects} - ORACLE_KINDS)
    if kinds:
        return f"the oracle does not support kind(s) {', '.join(kinds)}"
    return None


def _queue(name: str, spec: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"apiVersion": QUEUE_API, "kind": "Queue", "metadata": {"name": name},
            "spec": {"weight": 1, "reclaimable": True, **(spec or {})}, "status": {"state": "Open"}}


def _uses_hierarchy(config: str) -> bool:
    try:
        conf = yaml.safe_load(config or "") or {}
    except yaml.YAMLError:
        return False
    for tier in conf.get("tiers") or []:
        for plugin in (tier or {}).get("plugins") or []:
            if plugin.get("name") == "capacity" and plugin.get("enableHierarchy"):
                return True
    return False


def with_installer_queues(objects: list[dict[str, Any]], config: str = "") -> list[dict[str, Any]]:
    """The objects plus the queues Volcano's installer creates (``default``; ``root`` for a hierarchy) if absent.

    pyvolcano's cache assumes a ``default`` queue (``api/types.py: DEFAULT_QUEUE``) and an implicit ``root``
    (``plugins/capacity.py``); a real cluster has both (Volcano's queue controller and installer create them).
    """
    queues = {o.get("metadata", {}).get("name") for o in objects if o.get("kind") == "Queue"}
    extra: list[dict[str, Any]] = []
    if "default" not in queues:
        extra.append(_queue("default"))
    has_parent = any(o.get("kind") == "Queue" and (o.get("spec") or {}).get("parent") for o in objects)
    if "root" not in queues and (has_parent or _uses_hierarchy(config)):
        extra.append(_queue("root"))
    return list(objects) + extra


_YAML11_BOOL = re.compile(r"^(y|Y|yes|Yes|YES|n|N|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)$")


class _Dumper(yaml.SafeDumper):
    """Quotes strings that YAML 1.1 readers (Go's yaml.v2, which the oracle uses) take for booleans: a pod or
    PodGroup named ``y`` or ``n`` must stay a string."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "'" if _YAML11_BOOL.match(value) else ("|" if "\n" in value else None)
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def dump(scenario: dict[str, Any]) -> str:
    """A scenario as YAML that both the oracle and pyvolcano read the same way."""
    return yaml.dump(scenario, Dumper=_Dumper, sort_keys=False)


def run(objects: list[dict[str, Any]], config: str, *, keep: Path | None = None,
        installer_queues: bool = True, env: dict[str, str] | None = None) -> dict[str, Any]:
    """One oracle run: its JSON output (binds, evictions, pipelined, podgroups; nodeScores etc. when
    ``actions`` is empty). ``keep`` writes the exact scenario file given to the oracle there.
    ``installer_queues=False`` (a scenario's ``installerQueues: false``) runs the objects as they are, for a
    situation the installer's queues would hide (a hierarchy without a ``root`` Queue).  ``env`` (a scenario's
    ``oracleEnv``) adds environment variables, e.g. ``PANIC_ON_ERROR: "false"`` where Volcano asserts
    (``pkg/scheduler/util/assert``) and pyvolcano does what Volcano does with the switch off."""
    objs = with_installer_queues(objects, config) if installer_queues else list(objects)
    scenario = {"name": "differential", "config": config, "objects": objs}
    text = dump(scenario)
    if keep is not None:
        keep.write_text(text)
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as fh:
        fh.write(text)
        path = fh.name
    try:
        out = subprocess.run(["bash", str(ORACLE), "-quiet", QUIET, "-v", "5", path], capture_output=True,
                             text=True, check=False, timeout=120, env={**os.environ, **(env or {})})
    finally:
        os.unlink(path)
    if out.returncode != 0:
        raise OracleError(f"vc-oracle exit {out.returncode}: {out.stderr[-2000:]}")
    data: dict[str, Any] = json.loads(out.stdout)
    data["binds"] = data.get("binds") or {}
    data["evictions"] = sorted(data.get("evictions") or [])
    data["pipelined"] = data.get("pipelined") or {}
    data["podgroups"] = data.get("podgroups") or {}
    data["decisionScores"] = decision_scores(out.stderr)
    data["scoreMaps"] = score_maps(out.stderr)
    data["nominated"] = nominations(out.stderr)
    return data


_NOMINATE = re.compile(r"Updating pod nominatedNodeName for ([^ ]+) from \(([^)]*)\) to \(([^)]*)\)")


def nominations(log: str) -> dict[str, str]:
    """The pods whose ``status.nominatedNodeName`` Volcano wrote, pod -> node: the oracle's status updater is a
    fake, so they are read from ``cache.taskUnschedulable``'s log line (klog level 3)."""
    return {pod: node for pod, _, node in _NOMINATE.findall(log)}


_PRIORITIZE = re.compile(r"Prioritize nodeScoreMap for task<([^>]+)> is: map\[([^\]]*)\]")


def decision_scores(log: str) -> dict[str, dict[str, float]]:
    """Per task, the last node score map Volcano computed for it (its candidates at the moment it chose)."""
    return {task: maps[-1] for task, maps in score_maps(log).items()}


def score_maps(log: str) -> dict[str, list[dict[str, float]]]:
    """Per task, every node score map Volcano computed for it, in order: topology-aware allocate dry-runs a job in
    several hypernodes and keeps the best one, so the map of the placement it kept need not be the last."""
    out: dict[str, list[dict[str, float]]] = {}
    for task, body in _PRIORITIZE.findall(log):
        scores: dict[str, float] = {}
        for item in body.split():
            node, _, value = item.rpartition(":")
            try:
                scores[node] = float(value)
            except ValueError:
                continue
        out.setdefault(task, []).append(scores)
    return out


def best_tie(scores: dict[str, float], a: str, b: str) -> bool:
    """Both nodes are among the best-scored candidates."""
    return bool(scores) and a in scores and b in scores and scores[a] == scores[b] == max(scores.values())


@dataclass
class Stable:
    """What two oracle runs decided the same way; ``unstable`` names what they did not (excluded from checks)."""

    binds: dict[str, str] = field(default_factory=dict)  # pod -> node, or "*" when bound in both runs to different nodes
    evictions: set[str] = field(default_factory=set)
    pipelined: dict[str, str] = field(default_factory=dict)
    phases: dict[str, str] = field(default_factory=dict)
    unstable: list[str] = field(default_factory=list)
    runs: list[dict[str, Any]] = field(default_factory=list)

    def tie(self, pod: str, a: str, b: str) -> bool:
        """Volcano scored nodes ``a`` and ``b`` both best for ``pod`` in some run (in any of the score maps it
        computed for the pod: a hypernode dry run's choice is kept only if that hypernode wins)."""
        return any(best_tie(m, a, b) for r in self.runs for m in r.get("scoreMaps", {}).get(pod) or ())


def _stable_nodes(a: dict[str, str], b: dict[str, str], what: str, st: Stable) -> dict[str, str]:
    out: dict[str, str] = {}
    for pod in sorted(set(a) | set(b)):
        if pod in a and pod in b:
            out[pod] = a[pod] if a[pod] == b[pod] else "*"
            if a[pod] != b[pod]:
                st.unstable.append(f"{what} {pod}: {a[pod]} / {b[pod]} (tie)")
        else:
            st.unstable.append(f"{what} {pod}: only in one run")
    return out


def stable(objects: list[dict[str, Any]], config: str, runs: int = 2) -> Stable:
    """Run the oracle ``runs`` times (at once: it mostly waits); keep what every run decided the same way."""
    with ThreadPoolExecutor(runs) as pool:
        results = list(pool.map(lambda _: run(objects, config), range(runs)))
    st = Stable(runs=results)
    first = results[0]
    binds, pipelined = dict(first["binds"]), dict(first["pipelined"])
    for other in results[1:]:
        binds = _stable_nodes(binds, other["binds"], "bind", st)
        pipelined = _stable_nodes(pipelined, other["pipelined"], "pipelined", st)
    st.binds, st.pipelined = binds, pipelined
    ev: list[set[str]] = [set(r["evictions"]) for r in results]
    st.evictions = set(ev[0]).intersection(*ev[1:])
    for pod in sorted(set(ev[0]).union(*ev[1:]) - st.evictions):
        st.unstable.append(f"eviction {pod}: only in some runs")
    groups: set[str] = set()
    for r in results:
        groups |= set(r["podgroups"])
    for pg in sorted(groups):
        phases = {r["podgroups"].get(pg, {}).get("phase") for r in results}
        if len(phases) == 1:
            phase = phases.pop()
            if phase is not None:
                st.phases[pg] = phase
        else:
            st.unstable.append(f"phase {pg}: {sorted(str(p) for p in phases)}")
    return st


K = TypeVar("K", bound=Hashable)
T = TypeVar("T")


class Ahead(Generic[K, T]):
    """The oracle work of a parametrized test's cases, started a few cases ahead of the test that needs it.

    A case's oracle runs are nearly all waiting (each waits ``QUIET`` for stragglers after Volcano's last bind), so
    running them one case at a time made the oracle tests (every scenario file, the differential cases) mostly
    sleep. ``get(key)`` starts ``work`` for the :data:`AHEAD` keys after ``key`` (in ``keys`` order, the order
    pytest and pytest-xdist hand the cases out in) in background threads, and returns ``key``'s own result (from
    an earlier ``get``'s start, or computed here); an exception of ``work`` is raised by ``get`` for that key
    alone. Each case's oracle work is what it was without this; only the waiting of several cases overlaps.
    ``close`` drops what has not started (cases another xdist worker took, or past this module's last test)."""

    def __init__(self, keys: Sequence[K], work: Callable[[K], T], ahead: int = AHEAD) -> None:
        self.keys = list(keys)
        self.index = {k: i for i, k in enumerate(self.keys)}
        self.work = work
        self.ahead = max(0, ahead)
        self.pool = ThreadPoolExecutor(max(1, self.ahead))
        self.futures: dict[K, Future[T]] = {}
        self.taken: set[K] = set()

    def get(self, key: K) -> T:
        own = self.futures.pop(key, None)
        self.taken.add(key)
        i = self.index.get(key, len(self.keys))  # a key not in ``keys`` is computed here alone
        for k in self.keys[i + 1:i + 1 + self.ahead]:
            if k not in self.futures and k not in self.taken:
                self.futures[k] = self.pool.submit(self.work, k)
        return self.work(key) if own is None else own.result()

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)


def selected(request: Any, test: str, *names: str) -> list[Any]:
    """The parameters of ``test``'s cases that this pytest run selected, in run order (``-k`` or a node id keeps
    :class:`Ahead` from running the oracle for cases nobody asked for): one value per case, or a tuple of
    ``names``' values when more than one."""
    out: list[Any] = []
    for item in request.session.items:
        if getattr(item, "originalname", None) == test and item.module is request.module:
            vals = tuple(item.callspec.params[n] for n in names)
            out.append(vals if len(names) > 1 else vals[0])
    return out


def scores_config(config: str) -> str:
    """The same conf with ``actions: ""``: the oracle then prints each pending task's ``ssn.NodeOrderFn`` scores,
    predicate codes and enqueueability (for looking at a case by hand; see the module doc for why the
    differential test does not use them)."""
    conf = yaml.safe_load(config or "") or {}
    conf = copy.deepcopy(conf)
    conf["actions"] = ""
    return yaml.safe_dump(conf, sort_keys=False)


def check_expect(result: dict[str, Any], expect: dict[str, Any]) -> list[str]:
    """``tests/scenario_check.py: check`` against an oracle result: pyvolcano-only keys (``unschedulable``,
    ``schedulable``) dropped, and an expected ``Unknown`` phase accepted as the oracle reports it
    (:data:`UNKNOWN_SEEN_AS`)."""
    from tests.scenario_check import check

    want = {k: v for k, v in expect.items() if k not in ("unschedulable", "schedulable")}
    if "podgroupPhases" in want:
        want["podgroupPhases"] = {
            pg: phase for pg, phase in (want["podgroupPhases"] or {}).items()
            if not (phase == "Unknown" and result["podgroups"].get(pg, {}).get("phase") in UNKNOWN_SEEN_AS)}
    return check({**result, "unschedulable": {}}, want)
