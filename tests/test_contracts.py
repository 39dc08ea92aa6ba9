"""Declared contracts (``framework/incremental/contracts.py``): the incremental layer knows plugins and actions only
by what their classes declare, never by name; a plugin that declares nothing turns the memo off, and the commands
say which one, once."""

from __future__ import annotations

import ast
from pathlib import Path

from click.testing import CliRunner

import pyvolcano
from pyvolcano import registry
from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.cli import main
from pyvolcano.conf.loader import DEFAULT_CONF, load_conf
from pyvolcano.framework.incremental.contracts import Contract, memo_note, memo_off_by
from pyvolcano.framework.incremental.memo import plugin_contracts
from pyvolcano.framework.plugin import Plugin
from pyvolcano.framework.session import Session

SRC = Path(pyvolcano.__file__).parent

#: string literals spelled like a registered name but meaning something else (file, literal): why
_SAME_SPELLING = {
    ("cache/cache.py", "priority"): "the pod's spec.priority field",
    ("framework/points.py", "gangpreempt"): "Volcano's eviction kind (EvictionContext.kind)",
    ("framework/points.py", "gangreclaim"): "Volcano's eviction kind (EvictionContext.kind)",
    ("framework/topology.py", "allocate"): "a hypernode gradient's purpose",
}


def test_no_plugin_or_action_name_in_the_framework_cache_or_incremental_layer() -> None:
    names = set(registry.known_plugins()) | set(registry.known_actions())
    assert {"gang", "proportion", "capacity", "enqueue", "allocate", "backfill"} <= names
    found = []
    for d in ("cache", "framework"):  # framework/incremental/ included
        for path in sorted((SRC / d).rglob("*.py")):
            rel = str(path.relative_to(SRC))
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names \
                        and (rel, node.value) not in _SAME_SPELLING:
                    found.append(f"{rel}:{node.lineno}: {node.value!r}")
    assert not found, "plugin or action names in the framework (declare a contract instead):\n" + "\n".join(found)


def test_the_built_in_declarations() -> None:
    def declared(c: Contract) -> set[str]:
        return {n for n in registry.known_plugins() if c in registry.plugin_class(n).contracts} | \
            {n for n in registry.known_actions() if c in registry.action_class(n).contracts}
    assert declared(Contract.FINGERPRINTED) == {"priority", "gang", "conformance", "overcommit", "drf", "predicates",
                                                "proportion", "nodeorder", "binpack", "cdp", "pdb", "rescheduling",
                                                "nodegroup", "resource-strategy-fit", "fgd", "fgdpack", "random",
                                                "dotprod", "gpuclustering", "gpupacking", "bestfit", "capacity",
                                                "network-topology-aware"}
    assert declared(Contract.STATEFUL_PERMIT) == {"proportion", "capacity"}
    assert declared(Contract.GANG_READINESS) == declared(Contract.READY_CONDITION) == {"gang"}
    assert declared(Contract.STARVING_BY_VERSION) == {"priority", "gang"}
    assert declared(Contract.LEAVES_BLOCKED) == {"enqueue", "allocate", "backfill", "shuffle", "preempt", "reclaim"}
    assert declared(Contract.CHECKS_BLOCKED) == {"allocate"} and declared(Contract.ADMITS) == {"enqueue"}
    # every declaration is in docs/extending.md's table
    table = (SRC.parents[1] / "docs" / "extending.md").read_text()
    for c in Contract:
        row = next(line for line in table.splitlines() if line.startswith(f"| `{c.name}`"))
        assert all(n in row for n in sorted(declared(c))), (c, row)


class Quiet(Plugin):
    """A third-party plugin that declares nothing: it gets the exact path."""

    name = "quiet"

    def on_session_open(self, ssn: Session) -> None:
        ssn.add_job_order_fn(self.name, lambda left, right: 0)


class Declared(Quiet):
    name = "declared"
    contracts = frozenset({Contract.FINGERPRINTED})


def _conf(extra: str) -> str:
    return ('actions: "enqueue, allocate, backfill"\ntiers:\n- plugins:\n  - name: priority\n  - name: gang\n'
            f'  - name: predicates\n  - name: proportion\n{extra}')


def test_a_plugin_that_declares_nothing_turns_the_memo_off() -> None:
    quiet = load_conf(_conf("  - name: tests.test_contracts:Quiet\n"))
    declared = load_conf(_conf("  - name: tests.test_contracts:Declared\n"))
    assert memo_off_by(plugin_contracts(load_conf(DEFAULT_CONF))) is None
    assert memo_off_by(plugin_contracts(declared)) is None
    assert memo_off_by(plugin_contracts(quiet)) == "tests.test_contracts:Quiet"
    for conf, on in ((quiet, False), (declared, True)):
        cache = SchedulerCache(reuse_clones=True, memo=True)
        ssn = Session(cache.snapshot(), conf).open()
        assert ssn.memo is not None and (ssn.memo.enqueue_ok, ssn.memo.allocate_ok) == (on, on)


#: the plugins that stay exact, each with the reason docs/extending.md gives (the table's "exact" row)
EXACT = ["task-topology", "numa-aware", "usage", "tdm", "extender", "sla", "resourcequota"]


def test_the_exact_plugins_turn_the_memo_off_and_are_explained() -> None:
    table = (SRC.parents[1] / "docs" / "extending.md").read_text()
    for name in EXACT:
        conf = load_conf(_conf(f"  - name: {name}\n"))
        assert memo_off_by(plugin_contracts(conf)) == name
        assert f"| `{name}` |" in table, name  # the row saying why it is exact
    exact = {n for n in registry.known_plugins() if Contract.FINGERPRINTED not in registry.plugin_class(n).contracts}
    assert exact - {"deviceshare"} == set(EXACT)  # deviceshare: its own branch declares (or not) and explains


def test_resource_strategy_fit_is_exact_with_its_proportional_filter() -> None:
    """The filter refuses a node whose idle cpu/memory would not cover its idle GPUs times a rate: other pods
    taking the GPUs lift the refusal, which the memo's fingerprint does not see.  Its scores alone keep the memo."""
    scores = load_conf(_conf("  - name: resource-strategy-fit\n    arguments: {sra: {enable: true, weight: 1}}\n"))
    proportional = load_conf(_conf("  - name: resource-strategy-fit\n    arguments: {proportional: {enable: true, "
                                   "resources: nvidia.com/gpu}}\n"))
    broken = load_conf(_conf("  - name: resource-strategy-fit\n    arguments: {proportional: 3}\n"))
    assert memo_off_by(plugin_contracts(scores)) is None
    assert memo_off_by(plugin_contracts(proportional)) == "resource-strategy-fit"
    assert memo_off_by(plugin_contracts(broken)) == "resource-strategy-fit"  # the session reports the argument
    for conf, on in ((scores, True), (proportional, False)):
        ssn = Session(SchedulerCache(reuse_clones=True, memo=True).snapshot(), conf).open()
        assert ssn.memo is not None and (ssn.memo.enqueue_ok, ssn.memo.allocate_ok) == (on, on)
        assert (Contract.FINGERPRINTED in ssn.contracts["resource-strategy-fit"]) == on


def test_stateful_voter_must_vote_last_in_its_tier() -> None:
    first = load_conf('actions: "enqueue"\ntiers:\n- plugins:\n  - name: proportion\n  - name: overcommit\n')
    last = load_conf('actions: "enqueue"\ntiers:\n- plugins:\n  - name: overcommit\n  - name: proportion\n')
    for conf, enqueue_ok in ((first, False), (last, True)):
        ssn = Session(SchedulerCache(reuse_clones=True, memo=True).snapshot(), conf).open()
        assert ssn.memo is not None and (ssn.memo.enqueue_ok, ssn.memo.allocate_ok) == (enqueue_ok, True)


def test_cycle_verbose_names_the_plugin_once(tmp_path: Path) -> None:
    conf = tmp_path / "conf.yaml"
    conf.write_text(_conf("  - name: tests.test_contracts:Quiet\n"))
    snap = tmp_path / "snap.yaml"
    snap.write_text("apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus:\n  allocatable: {cpu: '4', "
                    "memory: 8Gi, pods: '110'}\n")
    for verbose, times in ((True, 1), (False, 0)):
        res = CliRunner().invoke(main, ["cycle", str(snap), "--config", str(conf), *(["-v"] if verbose else [])])
        assert res.exit_code == 0, res.output
        note = memo_note(plugin_contracts(load_conf(conf.read_text())))
        assert note is not None and "'tests.test_contracts:Quiet'" in note
        assert res.stderr.count(note) == times


def test_simulate_names_the_plugin_once_per_conf(tmp_path: Path) -> None:
    conf = tmp_path / "conf.yaml"
    conf.write_text(_conf("  - name: tests.test_contracts:Quiet\n"))
    note = memo_note(plugin_contracts(load_conf(conf.read_text())))
    assert note is not None
    base = ["simulate", "--no-progress", "--synthetic", "4", "--cluster", "2x{cpu: 8, memory: 32Gi}",
            "--config", str(conf)]
    for extra, times in (([], 1), (["--full-sessions"], 0)):
        res = CliRunner().invoke(main, [*base, "--out", str(tmp_path / f"out{times}"), *extra])
        assert res.exit_code == 0, res.output
        assert res.stderr.count(note) == times
    quiet = CliRunner().invoke(main, ["simulate", "--no-progress", "--synthetic", "4", "--cluster",
                                      "2x{cpu: 8, memory: 32Gi}", "--out", str(tmp_path / "default")])
    assert quiet.exit_code == 0 and "note:" not in quiet.stderr  # Volcano's default conf: every plugin declares
