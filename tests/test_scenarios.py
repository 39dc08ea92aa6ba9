"""Every scenario (shared/scenarios and tests/scenarios) through the same code path as ``pyvolcano cycle``,
with both node-selection engines; the shared ones also through the real CLI in a subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from pyvolcano.conf.loader import load_conf
from pyvolcano.framework.cycle import cycle_objects, result_json
from tests.scenario_check import SHARED, check, load, scenario_files

FILES = scenario_files()


def test_enough_own_scenarios() -> None:
    own = [f for f in FILES if SHARED not in f.parents]
    assert len(own) >= 40


@pytest.mark.parametrize("engine", ["vector", "scalar"])
@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_scenario(path: Path, engine: str) -> None:
    sc = load(path)
    conf = load_conf(sc["config"], f"{path.name}: config")
    args = sc.get("args") or []
    name = args[args.index("--scheduler-name") + 1] if "--scheduler-name" in args else "volcano"
    result, _ = cycle_objects(sc["objects"], conf, name, engine)
    errs = check(result_json(result), sc["expect"])
    assert not errs, f"{path.name} ({engine}):\n  " + "\n  ".join(errs) + f"\nresult: {result_json(result)}"


@pytest.mark.parametrize("path", sorted(SHARED.glob("*.yaml")) if SHARED.is_dir() else [], ids=lambda p: p.stem)
def test_shared_scenario_cli(path: Path, tmp_path: Path) -> None:
    sc = load(path)
    snap, conf = tmp_path / "snap.yaml", tmp_path / "conf.yaml"
    snap.write_text(yaml.safe_dump_all(sc["objects"]))
    conf.write_text(sc["config"])
    exe = Path(sys.executable).with_name("pyvolcano")
    out = subprocess.run([str(exe), "cycle", str(snap), "--config", str(conf), "--output", "json"],
                         capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    errs = check(json.loads(out.stdout), sc["expect"])
    assert not errs, "\n".join(errs)
