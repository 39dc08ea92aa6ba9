"""volcano-scheduler.conf: the format, Volcano's default, enable flags, arguments, configurations, and the
conf given as a ConfigMap."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pyvolcano.conf.loader import DEFAULT_CONF, load_conf, load_conf_file
from pyvolcano.errors import ConfigError
from pyvolcano.framework.arguments import Arguments, parse_duration

FULL = """\
actions: "enqueue, allocate, preempt, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
    enableJobStarving: "false"
  - name: conformance
- plugins:
  - name: drf
    enableJobOrder: true
  - name: predicates
    arguments:
      predicate.NodeAffinityEnable: true
  - name: binpack
    arguments:
      binpack.weight: 10
      binpack.cpu: "5"
configurations:
- name: preempt
  arguments:
    enableTopologyAwarePreemption: true
"""


def test_volcano_default_when_no_conf_is_given() -> None:
    conf = load_conf_file(None)
    assert conf.actions == ["enqueue", "allocate", "backfill"]
    assert [[p.name for p in t.plugins] for t in conf.tiers] == [
        ["priority", "gang", "conformance"],
        ["overcommit", "drf", "predicates", "proportion", "nodeorder", "binpack"]]
    assert not conf.plugin("gang").enabled("enablePreemptable")  # type: ignore[union-attr]
    assert not conf.plugin("drf").enabled("enablePreemptable")  # type: ignore[union-attr]
    assert conf.plugin("drf").enabled("enableJobOrder")  # type: ignore[union-attr]
    assert load_conf(DEFAULT_CONF) == conf


def test_full_format() -> None:
    conf = load_conf(FULL)
    assert conf.actions == ["enqueue", "allocate", "preempt", "backfill"]
    gang = conf.plugin("gang")
    assert gang is not None
    assert gang.flags == {"enablePreemptable": False, "enableJobStarving": False}
    assert gang.enabled(None) and gang.enabled("enableJobOrder")  # unset means enabled
    assert not gang.enabled("enableJobStarving")
    assert conf.plugin("drf").enabled("enableJobOrder")  # type: ignore[union-attr]
    args = conf.plugin("binpack").args()  # type: ignore[union-attr]
    assert args.get_float("binpack.weight", 1) == 10 and args.get_int("binpack.cpu", 1) == 5
    assert conf.action_args("preempt").get_bool("enableTopologyAwarePreemption", False) is True
    assert len(conf.action_args("allocate")) == 0
    assert conf.plugin("nosuch") is None
    assert conf.plugin_names == ["priority", "gang", "conformance", "drf", "predicates", "binpack"]


def test_flag_aliases_volcano_users_write() -> None:
    conf = load_conf('actions: "enqueue"\ntiers:\n- plugins:\n  - name: overcommit\n    enableJobEnqueueable: false\n')
    assert not conf.plugin("overcommit").enabled("enableJobEnqueued")  # type: ignore[union-attr]


def test_unknown_option_is_a_warning(capsys: pytest.CaptureFixture[str]) -> None:
    conf = load_conf('actions: "allocate"\ntiers:\n- plugins:\n  - name: gang\n    enableEverything: true\n', "c")
    assert conf.plugin("gang") is not None
    err = capsys.readouterr().err
    assert "c: line 5" in err and "enableEverything" in err and "enableJobOrder" in err


def test_actions_may_be_a_list_and_spaces_do_not_matter() -> None:
    assert load_conf("actions: [enqueue, allocate]\n").actions == ["enqueue", "allocate"]
    assert load_conf('actions: " enqueue ,allocate,, "\n').actions == ["enqueue", "allocate"]


def test_module_class_names_load_user_plugins_and_actions() -> None:
    conf = load_conf('actions: "pyvolcano.actions.allocate:Allocate"\ntiers:\n- plugins:\n'
                     '  - name: pyvolcano.plugins.gang:Gang\n')
    assert conf.actions == ["pyvolcano.actions.allocate:Allocate"]
    with pytest.raises(ConfigError, match="cannot import"):
        load_conf('actions: "allocate"\ntiers:\n- plugins:\n  - name: pyvolcano.plugins.gang:Nope\n')


def test_configmap(tmp_path: Path) -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap",
          "metadata": {"name": "volcano-scheduler-configmap", "namespace": "volcano-system"},
          "data": {"volcano-scheduler.conf": FULL, "other": "x"}}
    path = tmp_path / "cm.yaml"
    path.write_text(yaml.safe_dump(cm, default_style=None))
    assert load_conf_file(path) == load_conf(FULL)
    with pytest.raises(ConfigError, match="has no data"):
        load_conf("kind: ConfigMap\nmetadata: {name: x}\n")
    with pytest.raises(ConfigError, match="must be a string"):
        load_conf("kind: ConfigMap\nmetadata: {name: x}\ndata:\n  volcano-scheduler.conf: {actions: x}\n")


def test_unreadable_conf_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read scheduler conf"):
        load_conf_file(tmp_path / "missing.conf")


def test_arguments_typed_getters() -> None:
    a = Arguments({"f": "1.5", "i": "7", "b1": "True", "b0": 0, "s": 3, "d": "1h2m3s", "bad": "x", "n": None},
                  "plugin p")
    assert a.get_float("f", 0) == 1.5 and a.get_float("missing", 2.5) == 2.5
    assert a.get_int("i", 0) == 7 and a.get_int("f", 0) == 1
    assert a.get_bool("b1", False) is True and a.get_bool("b0", True) is False
    assert a.get_str("s", "") == "3" and a.get_str("n", "dflt") == "dflt"
    assert a.get_duration("d", None) == 3723
    for getter in (a.get_float, a.get_int, a.get_bool):
        with pytest.raises(ConfigError, match="plugin p: argument 'bad'"):
            getter("bad", 0)  # type: ignore[operator]
    # a bool is no number (Volcano's GetInt/GetFloat64 take int and float64 only); digits are ASCII
    odd = Arguments({"t": True, "u": "\u0663", "us": "1_0"}, "plugin p")
    for key in ("t", "u", "us"):
        for num in (odd.get_float, odd.get_int):
            with pytest.raises(ConfigError, match=f"plugin p: argument '{key}'"):
                num(key, 0)
    with pytest.raises(ConfigError, match="duration"):
        a.get_duration("bad", None)


@pytest.mark.parametrize(("text", "seconds"), [("90s", 90), ("1h2m3s4ms", 3723.004), ("500ms", 0.5),
                                                ("1.5h", 5400), ("10us", 1e-5)])
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "5", "1x", "h1", "1h 2m"])
def test_parse_duration_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        parse_duration(text)
