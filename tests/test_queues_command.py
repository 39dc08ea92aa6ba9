"""``pyvolcano queues``: numbers come from the plugins' own computations, each with a reason; bad input exits 2."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import yaml
from click.testing import CliRunner

from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.cli import main
from pyvolcano.commands.queues import NUMBERS, build_report
from pyvolcano.conf.loader import load_conf
from pyvolcano.framework.session import Session
from pyvolcano.plugins._shared import build_attrs, deserved_loop
from tests.scenario_check import OWN, SHARED

PROPORTION = "actions: allocate\ntiers:\n- plugins:\n  - name: gang\n  - name: proportion\n"


def scenario(path: Path) -> dict:
    return yaml.safe_load(path.read_text())


def run(args: list[str]) -> tuple[int, str, str]:
    r = CliRunner().invoke(main, args)
    return r.exit_code, r.stdout, r.stderr if r.stderr_bytes is not None else ""


def test_proportion_numbers_match_the_plugin(tmp_path: Path) -> None:
    sc = scenario(SHARED / "07-reclaim-from-overused-queue.yaml")
    rep = build_report(sc["objects"], load_conf(PROPORTION, "t"))
    by = {q.name: q for q in rep.queues}
    assert rep.plugin == "proportion"
    assert by["q1"].values["deserved"] == {"cpu": "3"} and by["q2"].values["deserved"] == {"cpu": "1"}
    assert by["q1"].values["allocated"] == {"cpu": "4"} and by["q1"].values["share"] == round(4 / 3, 4)
    # the same numbers straight from proportion's functions
    cache = SchedulerCache.from_objects(sc["objects"])
    ssn = Session(cache.snapshot(), load_conf(PROPORTION, "t"))
    attrs = build_attrs(ssn)
    deserved_loop(attrs, ssn.total_resource, ssn.res.fair_mask)
    assert np.isclose(attrs["q1"].deserved[0], 3000) and np.isclose(attrs["q2"].deserved[0], 1000)
    for q in rep.queues:
        assert set(NUMBERS) <= set(q.values) and all(q.reasons.get(k) for k in NUMBERS)
    assert "capped at its request" in by["q2"].reasons["deserved"]
    assert "no PodGroups" in by["default"].reasons["deserved"]


def test_capacity_hierarchy_tree_and_json(tmp_path: Path) -> None:
    sc = scenario(OWN / "queues" / "c07-hierarchy-capability.yaml")
    snap, conf = tmp_path / "s.yaml", tmp_path / "c.yaml"
    snap.write_text(yaml.safe_dump_all(sc["objects"]))
    conf.write_text(sc["config"])
    code, out, _ = run(["queues", str(snap), "--config", str(conf), "--output", "json"])
    assert code == 0
    data = json.loads(out)
    assert data["plugin"] == "capacity" and data["hierarchy"] is True
    by = {q["name"]: q for q in data["queues"]}
    assert data["queues"][0]["name"] == "root"
    assert by["dev"]["parent"] == "eng" and by["eng"]["parent"] == "root"
    assert by["dev"]["realCapability"]["cpu"] == "2" and by["prod"]["realCapability"]["cpu"] == "4"
    assert by["eng"]["request"]["cpu"] == "8"  # the parent sums its children
    assert data["problems"] == []
    code, out, _ = run(["queues", str(snap), "--config", str(conf), "-o", "wide"])
    assert code == 0 and "dev" in out and "realCapability" in out


def test_problems_are_listed(tmp_path: Path) -> None:
    objs = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"},
             "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "10"}}},
            {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "queue-test"},
             "spec": {"weight": 3, "capability": {"cpu": "15"}, "guarantee": {"resource": {"cpu": "10000"}}}}]
    conf = load_conf(PROPORTION.replace("  - name: proportion\n", "  - name: proportion\n  - name: capacity\n"), "t")
    rep = build_report(objs, conf)
    msgs = [p.message for p in rep.problems]
    assert any("both proportion and capacity" in m for m in msgs)
    assert any("queue queue-test: spec.guarantee (cpu=10000) is above spec.capability (cpu=15)" in m for m in msgs)
    assert any("above the cluster" in m for m in msgs)


def test_bad_input_exits_2_without_traceback(tmp_path: Path) -> None:
    code, out, err = run(["queues", str(tmp_path / "missing.yaml")])
    assert code == 2 and "cannot read" in err and "Traceback" not in err + out
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: [unclosed\n")
    code, out, err = run(["queues", str(bad)])
    assert code == 2 and "YAML error" in err and "Traceback" not in err + out
    good = tmp_path / "good.yaml"
    good.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}}))
    badconf = tmp_path / "conf.yaml"
    badconf.write_text("actions: allocate\ntiers:\n- plugins:\n  - name: no-such-plugin\n")
    code, out, err = run(["queues", str(good), "--config", str(badconf)])
    assert code == 2 and "no-such-plugin" in err and "Traceback" not in err + out


def test_capacity_hierarchy_verdict_is_reported(tmp_path: Path) -> None:
    sc = scenario(OWN / "queues" / "volcano" / "ch01-parent-deserved-below-children-warns.yaml")
    rep = build_report(sc["objects"], load_conf(sc["config"], "t"))
    assert rep.hierarchy
    msgs = [p.message for p in rep.problems]
    assert "queue eng: its children's deserved add up to {cpu: 2}, above its own deserved 0 (spec.deserved unset)" \
        in msgs
    sc = scenario(OWN / "queues" / "volcano" / "ch02-job-in-parent-queue.yaml")
    rep = build_report(sc["objects"], load_conf(sc["config"], "t"))
    assert [p.queue for p in rep.problems] == ["eng"] and "only leaf queues" in rep.problems[0].message
