"""The plugin and action registries (re-exported from ``pyvolcano.registry``: a name -> class table with no
framework imports, so the conf loader can check names without importing the framework)."""

from pyvolcano.registry import (
    action_class,
    known_actions,
    known_plugins,
    plugin_class,
    register_action,
    register_plugin,
)

__all__ = ["action_class", "known_actions", "known_plugins", "plugin_class", "register_action", "register_plugin"]
