"""Third-party plugins and actions found through the ``pyvolcano.plugins`` / ``pyvolcano.actions`` entry-point
groups: they resolve by name from the conf, a broken package only warns, and built-in names win."""

from __future__ import annotations

from importlib.metadata import EntryPoint

import pytest

from pyvolcano import registry
from pyvolcano.framework.action import Action
from pyvolcano.framework.plugin import Plugin


class Oldest(Plugin):
    name = "oldest"


class Noop(Action):
    name = "noop"

    def execute(self, ssn: object) -> None:
        return None


@pytest.fixture
def fake_entry_points(monkeypatch: pytest.MonkeyPatch) -> None:
    groups = {
        "pyvolcano.plugins": [EntryPoint("oldest", f"{__name__}:Oldest", "pyvolcano.plugins"),
                              EntryPoint("broken", "no_such_module_here:Thing", "pyvolcano.plugins"),
                              EntryPoint("gang", f"{__name__}:Oldest", "pyvolcano.plugins")],
        "pyvolcano.actions": [EntryPoint("noop", f"{__name__}:Noop", "pyvolcano.actions")],
    }
    registry.known_plugins()  # the built-ins registered in the real tables first
    monkeypatch.setattr(registry, "entry_points", lambda group: groups.get(group, []))
    monkeypatch.setattr(registry, "_PLUGINS", dict(registry._PLUGINS))
    monkeypatch.setattr(registry, "_ACTIONS", dict(registry._ACTIONS))
    monkeypatch.setattr(registry, "_loaded", False)


def test_entry_points_resolve_by_name(fake_entry_points: None, capsys: pytest.CaptureFixture[str]) -> None:
    assert registry.plugin_class("oldest") is Oldest
    assert registry.action_class("noop") is Noop
    assert "oldest" in registry.known_plugins() and "noop" in registry.known_actions()
    err = capsys.readouterr().err
    assert "entry point pyvolcano.plugins:broken failed to load" in err  # a warning, not a crash


def test_builtin_names_win_over_entry_points(fake_entry_points: None) -> None:
    assert registry.plugin_class("gang") is not Oldest


def test_conf_resolution_follows_later_registrations(monkeypatch: pytest.MonkeyPatch) -> None:
    """A conf resolves its plugins' classes and contracts once (``Registration.built``) and again after something
    registers a plugin or an action: a session of a conf already used sees the class registered since."""
    from pyvolcano.conf import load_conf
    from pyvolcano.framework.incremental.contracts import Contract

    monkeypatch.setattr(registry, "_PLUGINS", dict(registry._PLUGINS))
    reg = load_conf("actions: enqueue\ntiers:\n- plugins:\n  - name: gang\n", "test").registration
    (_, _, _, first, _), = reg.built()
    assert first is registry.plugin_class("gang") and reg.built() is reg.built()

    class Gang2(Plugin):
        name = "gang"
        contracts = frozenset({Contract.FINGERPRINTED})

    registry.register_plugin(Gang2)
    (_, _, _, cls, contracts), = reg.built()
    assert cls is Gang2 and contracts == frozenset({Contract.FINGERPRINTED})
    assert reg.action_contracts(["enqueue"]) == [registry.action_class("enqueue").contracts]
