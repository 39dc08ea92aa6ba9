"""Plugin and action ``arguments``: a mapping that reads numbers and booleans written as strings too."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, cast

from pyvolcano.errors import ConfigError

T = TypeVar("T")

_DURATION = re.compile(r"([0-9]+(?:\.[0-9]+)?)(ns|us|µs|ms|s|m|h)")  # Go's ParseDuration: ASCII digits
_UNIT = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(text: str) -> float:
    """Go's time.ParseDuration (``1h2m3s``, ``500ms``) in seconds."""
    s = str(text).strip()
    if not s:
        raise ValueError("empty duration")
    pos, total = 0, 0.0
    for m in _DURATION.finditer(s):
        if m.start() != pos:
            break
        total += float(m.group(1)) * _UNIT[m.group(2)]
        pos = m.end()
    if pos != len(s):
        raise ValueError(f"{text!r} is not a duration (e.g. 1h2m3s, 90s, 500ms)")
    return total


class Arguments(Mapping[str, Any]):
    """Read-only view of a plugin's ``arguments`` with typed getters that name the bad key."""

    def __init__(self, values: Mapping[str, Any] | None = None, owner: str = "") -> None:
        self._values = dict(values or {})
        self._owner = owner
        self._derived: dict[str, Any] = {}

    def derived(self, key: str, make: Callable[[Arguments], T]) -> T:
        """``make(self)``, worked out once per ``key``: a session builds its plugins anew, but a conf's entries keep
        their ``Arguments`` (``conf/registration.py``), so a plugin whose arguments take work to read reads them
        once per conf.  An error ``make`` raises is raised again on every call."""
        got = self._derived.get(key)
        if got is None:
            got = self._derived[key] = make(self)
        return cast("T", got)

    def __getitem__(self, key: str) -> Any:
        return self._values[key]

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def located(self, exc: ConfigError) -> ConfigError:
        """``exc`` naming the conf file and line of this entry: plugins that read nested or structured arguments
        raise "plugin NAME: ..." themselves; the session puts where the entry is written in front."""
        msg = str(exc)
        head = self._owner.rsplit(": ", 1)[-1]
        if head == self._owner or not msg.startswith(head + ":") or msg.startswith(self._owner):
            return exc
        return ConfigError(self._owner + msg[len(head):])

    def _bad(self, key: str, want: str) -> ConfigError:
        return ConfigError(f"{self._owner}: argument {key!r} = {self._values[key]!r} is not {want}")

    def _number(self, key: str, want: str) -> Any:
        """The value of ``key`` if it may be read as a number: never a bool (Volcano's ``GetInt``/``GetFloat64``
        take an int or a float, not ``true``), and a string only in ASCII digits (``float("٣")`` is 3 in Python)."""
        v = self._values[key]
        if isinstance(v, bool) or (isinstance(v, str) and (not v.isascii() or "_" in v)):
            raise self._bad(key, want)
        return v

    def get_float(self, key: str, default: float) -> float:
        if key not in self._values:
            return default
        try:
            v = float(self._number(key, "a number"))
        except (TypeError, ValueError):
            raise self._bad(key, "a number") from None
        if not math.isfinite(v):  # a NaN weight or threshold poisons every comparison downstream
            raise self._bad(key, "a finite number")
        return v

    def get_int(self, key: str, default: int) -> int:
        if key not in self._values:
            return default
        try:
            return int(float(self._number(key, "an integer")))
        except (TypeError, ValueError, OverflowError):  # OverflowError: int(inf)
            raise self._bad(key, "an integer") from None

    def get_bool(self, key: str, default: bool) -> bool:
        if key not in self._values:
            return default
        v = self._values[key]
        if isinstance(v, bool):
            return v
        if str(v).lower() in ("true", "1", "yes"):
            return True
        if str(v).lower() in ("false", "0", "no"):
            return False
        raise self._bad(key, "a boolean")

    def get_str(self, key: str, default: str) -> str:
        v = self._values.get(key, default)
        return default if v is None else str(v)

    def get_duration(self, key: str, default: float | None) -> float | None:
        if key not in self._values:
            return default
        try:
            return parse_duration(self._values[key])
        except ValueError as exc:
            raise self._bad(key, "a duration (e.g. 1h2m3s)") from exc
