"""Plugin and action ``arguments`` (re-exported from ``pyvolcano.conf.arguments``, where the conf loader, which
must not import the framework, defines them)."""

from pyvolcano.conf.arguments import Arguments, parse_duration

__all__ = ["Arguments", "parse_duration"]
