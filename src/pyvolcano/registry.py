"""Registries of actions and plugins by name (Volcano's ``framework/plugins.go``: RegisterPluginBuilder and
RegisterAction).

Built-in plugins and actions register themselves when their module is imported (every module of
``pyvolcano.plugins`` and ``pyvolcano.actions`` is imported on first use).  Third-party ones come from the
``pyvolcano.plugins`` / ``pyvolcano.actions`` entry-point groups, or from a ``module:Class`` name written
directly in the scheduler conf.
"""

from __future__ import annotations

import importlib
import pkgutil
import threading
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, TypeVar

from pyvolcano.errors import ConfigError

if TYPE_CHECKING:
    from pyvolcano.framework.action import Action
    from pyvolcano.framework.plugin import Plugin

_PLUGINS: dict[str, type[Plugin]] = {}
_ACTIONS: dict[str, type[Action]] = {}
_loaded = False
_loading = False
_lock = threading.RLock()
#: bumped whenever a plugin or an action is registered: what a conf resolved its names to stays valid while it is
#: unchanged (``conf/registration.py: Registration.built``)
generation = 0

P = TypeVar("P", bound="type[Plugin]")
A = TypeVar("A", bound="type[Action]")


def register_plugin(cls: P) -> P:
    global generation
    _PLUGINS[cls.name] = cls
    generation += 1
    return cls


def register_action(cls: A) -> A:
    global generation
    _ACTIONS[cls.name] = cls
    generation += 1
    return cls


def _load() -> None:
    """Import the built-in plugins and actions and the entry points, once.  Threads that ask while another one is
    loading wait for it (a sweep or the Kubernetes mode may load confs from several threads); an import below that
    asks again, on the loading thread, returns at once."""
    global _loaded, _loading
    if _loaded:
        return
    with _lock:
        if _loaded or _loading:
            return
        _loading = True
        try:
            _import_all()
        finally:
            _loading = False
        _loaded = True


def _import_all() -> None:
    for pkg_name in ("pyvolcano.plugins", "pyvolcano.actions"):
        pkg = importlib.import_module(pkg_name)
        for mod in pkgutil.iter_modules(pkg.__path__):
            if not mod.name.startswith("_"):
                importlib.import_module(f"{pkg_name}.{mod.name}")
    for group, table in (("pyvolcano.plugins", _PLUGINS), ("pyvolcano.actions", _ACTIONS)):
        for ep in entry_points(group=group):
            try:
                cls = ep.load()
            except Exception as exc:  # a broken third-party package must not stop the scheduler
                import sys

                print(f"pyvolcano: warning: entry point {group}:{ep.name} failed to load: {exc}", file=sys.stderr)
                continue
            table.setdefault(ep.name, cls)


def _by_path(path: str, kind: str) -> type:
    """The class an out-of-tree ``module:Class`` name points at; it must be a Plugin or Action subclass (``math:pi``
    or ``json:dumps`` would otherwise be *called* when a session opens)."""
    from pyvolcano.framework.action import Action  # here, not at the top: the framework imports this module
    from pyvolcano.framework.plugin import Plugin

    mod_name, _, attr = path.partition(":")
    try:
        obj = getattr(importlib.import_module(mod_name), attr)
    except (ImportError, AttributeError, ValueError, TypeError) as exc:  # ValueError/TypeError: a bad module name
        raise ConfigError(f"{kind} {path!r}: cannot import it ({exc})") from None
    base: type = Plugin if kind == "plugin" else Action
    if not (isinstance(obj, type) and issubclass(obj, base)):
        raise ConfigError(f"{kind} {path!r} is a {type(obj).__name__}, not a {base.__name__} class")
    return obj


def plugin_class(name: str) -> type[Plugin]:
    _load()
    if name in _PLUGINS:
        return _PLUGINS[name]
    if ":" in name:
        return _by_path(name, "plugin")
    raise ConfigError(f"unknown plugin {name!r}; known plugins: {', '.join(known_plugins())}")


def action_class(name: str) -> type[Action]:
    _load()
    if name in _ACTIONS:
        return _ACTIONS[name]
    if ":" in name:
        return _by_path(name, "action")
    raise ConfigError(f"unknown action {name!r}; known actions: {', '.join(known_actions())}")


def known_plugins() -> list[str]:
    _load()
    return sorted(_PLUGINS)


def known_actions() -> list[str]:
    _load()
    return sorted(_ACTIONS)
