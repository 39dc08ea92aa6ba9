"""kubectl's conventions on every command (issue 17): -h, python -m pyvolcano, -f FILE / -f -, -o
table|wide|json|yaml, tables that fit an 80-column terminal, a scenario file's own config, cycle -v scores."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from pyvolcano.cli import main

ROOT = Path(__file__).resolve().parents[1]
SNAP = ROOT / "examples" / "snapshot.yaml"
CONF = ROOT / "examples" / "volcano-scheduler.conf"
SCENARIO = ROOT / "tests" / "scenarios" / "core" / "binpack-cpu-weight.yaml"


def run(*args: str, input: str | None = None, columns: int = 80) -> tuple[int, str]:
    r = CliRunner().invoke(main, list(args), input=input, env={"COLUMNS": str(columns)})
    assert r.exception is None or isinstance(r.exception, SystemExit), r.output
    return r.exit_code, r.output


@pytest.mark.parametrize("cmd", [["cycle"], ["queues"], ["simulate"], ["job", "list"], ["queue", "list"], []])
def test_dash_h_is_help(cmd: list[str]) -> None:
    code, out = run(*cmd, "-h")
    assert code == 0 and "Usage:" in out
    if cmd:
        assert "-o, --output [table|wide|json|yaml]" in out


def test_python_dash_m() -> None:
    out = subprocess.run([sys.executable, "-m", "pyvolcano", "--version"], capture_output=True, text=True,
                         check=False, timeout=60)
    assert out.returncode == 0 and "pyvolcano" in out.stdout


def test_f_file_and_stdin_and_yaml_output() -> None:
    def stdout(*args: str, input: str | None = None) -> str:
        r = CliRunner().invoke(main, list(args), input=input)
        assert r.exit_code == 0, r.output
        return r.stdout  # warnings (a missing PodGroup) go to stderr

    by_arg = stdout("cycle", str(SNAP), "-c", str(CONF), "-o", "json")
    assert stdout("cycle", "-f", str(SNAP), "-c", str(CONF), "-o", "json") == by_arg
    by_stdin = stdout("cycle", "-f", "-", "-c", str(CONF), "-o", "yaml", input=SNAP.read_text())
    assert yaml.safe_load(by_stdin) == json.loads(by_arg)
    code, out = run("cycle", str(SNAP), "-f", str(CONF))
    assert code == 2 and "not both" in out


@pytest.mark.parametrize("cmd", [["cycle", str(SNAP), "-c", str(CONF)], ["queues", str(SNAP)]])
@pytest.mark.parametrize("fmt", ["table", "wide"])
def test_tables_fit_80_columns(cmd: list[str], fmt: str) -> None:
    code, out = run(*cmd, "-o", fmt)
    assert code == 0, out
    assert max(len(line) for line in out.splitlines()) <= 80, out


def test_reasons_are_in_wide_only() -> None:
    _, table = run("cycle", str(SNAP), "-c", str(CONF))
    _, wide = run("cycle", str(SNAP), "-c", str(CONF), "-o", "wide")
    assert "Why" not in table and "Why" in wide and "minAvailable" in wide


def test_scenario_file_uses_its_config_or_says_it_ignores_it() -> None:
    code, out = run("cycle", str(SCENARIO), "-o", "json")
    assert code == 0 and json.loads(out)["binds"] == {"ns/a-0": "n1"}  # its binpack conf picks n1
    r = CliRunner().invoke(main, ["cycle", str(SCENARIO), "-o", "json", "-c", str(CONF)])
    assert "its config: is ignored" in r.output


def test_cycle_verbose_shows_plugin_scores() -> None:
    code, out = run("cycle", str(SCENARIO), "-o", "json", "-v")
    assert code == 0
    best = json.loads(out)["scores"]["ns/a-0"]["best"]
    assert [b["node"] for b in best] == ["n1", "n2"]
    assert best[0]["plugins"]["binpack"] == best[0]["total"] > best[1]["total"]
    code, out = run("cycle", str(SCENARIO), "-v")
    assert code == 0 and "binpack" in out and "passing every predicate" in out


def test_simulate_output_formats(tmp_path: Path) -> None:
    args = ["simulate", "--cluster", "2x{cpu: 8, memory: 32Gi}", "--synthetic", "5", "--gpu-fraction", "0",
            "--no-progress", "--out", str(tmp_path / "o")]
    r = CliRunner().invoke(main, [*args, "-o", "yaml"])
    assert r.exit_code == 0 and yaml.safe_load(r.stdout)["jobs"] == 5
    assert "report:" in r.stderr and "report:" not in r.stdout
    code, out = run(*args)
    assert code == 0 and "completed" in out and "never started" in out
