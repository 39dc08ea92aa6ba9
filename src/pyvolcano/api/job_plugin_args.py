"""The arguments of Volcano's job plugins (a Job's ``spec.plugins: {name: [args...]}``), parsed as Volcano parses
them: each plugin builds a Go ``flag.FlagSet`` with ``ContinueOnError`` (``pkg/controllers/job/plugins/*/``:
``addFlags``) and parses its argument list with it.

Go's flag syntax: ``-name=value``, ``--name=value``, ``-name value`` (not for booleans), ``-name`` (booleans only);
parsing stops at the first argument that is not a flag, or after ``--``.  Integers take Go's ``ParseInt(s, 0,
64)`` forms (``0x1f``, ``0o17``, ``017``, ``0b101``); booleans ``1 t T TRUE true True 0 f F FALSE false False``.

Volcano logs a parse error and goes on with the values parsed before it; pyvolcano's admission refuses the Job
instead, with Go's message (``api/job_validate.py``; docs/volcano-differences.md), so the controller only ever sees
arguments that parse.  ``parse`` still returns what was parsed up to an error, as Volcano would use it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

#: plugin -> flag -> default (its type is the default's: str, int or bool), as each plugin's ``addFlags`` declares
#: them; ``env`` declares none and never parses its arguments (``env.New``)
PLUGIN_FLAGS: dict[str, dict[str, str | int | bool]] = {
    "ssh": {"ssh-key-file-path": "/root/.ssh", "ssh-private-key": "", "ssh-public-key": "", "ssh-port": 22},
    "env": {},
    "svc": {"publish-not-ready-addresses": False, "disable-network-policy": False, "inject-hosts-env": True},
    "tensorflow": {"ps": "ps", "worker": "worker", "chief": "chief", "evaluator": "evaluator", "port": 2222},
    "mpi": {"master": "master", "worker": "worker", "port": 22},
    "pytorch": {"master": "master", "worker": "worker", "port": 23456, "wait-master-enabled": False,
                "wait-master-timeout": 300, "wait-master-image": "busybox:1.36.1"},
    "hcclrank": {"master": "master", "worker": "worker"},
    "ray": {"head": "head", "headContainer": "head", "worker": "worker", "workerContainer": "worker",
            "port": 6379, "dashboardPort": 8265, "clientPort": 10001},
}
#: the job plugins Volcano registers (``pkg/controllers/job/plugins/factory.go``); any other name is refused at
#: admission (``admit_job.go: validateJobCreate``: "unable to find job plugin")
VOLCANO_PLUGINS: tuple[str, ...] = tuple(PLUGIN_FLAGS)

#: the plugins that need ``svc`` (their pods find each other by host name) and the one that needs ``ssh``
#: (``mutate_job.go: patchDefaultPlugins``)
NEED_SVC: tuple[str, ...] = ("tensorflow", "mpi", "pytorch", "ray")
NEED_SSH: tuple[str, ...] = ("mpi",)


def default_plugins(plugins: dict[str, Any]) -> dict[str, Any]:
    """A Job's ``spec.plugins`` with the plugins Volcano's mutating webhook adds (``jobs/mutate/mutate_job.go:
    patchDefaultPlugins``): ``svc`` (no arguments) for tensorflow, mpi, pytorch and ray, ``ssh`` for mpi; a plugin
    already listed keeps its arguments.  The one rule: the webhook's Job mutation (``api/admission.mutate_job``)
    applies it, so an MPI Job written without ``svc``/``ssh`` starts as in Volcano."""
    out = dict(plugins)
    if any(p in plugins for p in NEED_SVC):
        out.setdefault("svc", [])
    if any(p in plugins for p in NEED_SSH):
        out.setdefault("ssh", [])
    return out


_INT64 = (-(1 << 63), (1 << 63) - 1)
_TRUE = {"1", "t", "T", "TRUE", "true", "True"}
_FALSE = {"0", "f", "F", "FALSE", "false", "False"}
_OCTAL = re.compile(r"^[+-]?0[0-7_]+$")


@dataclass(frozen=True)
class PluginArgs:
    """One plugin's flag values (the defaults, overridden by its arguments) and the parse error, if any."""

    plugin: str
    values: dict[str, str | int | bool]
    error: str | None = None

    def text(self, flag: str) -> str:
        """A string flag's value."""
        return str(self.values[flag])

    def number(self, flag: str) -> int:
        """An integer flag's value."""
        return int(self.values[flag])

    def on(self, flag: str) -> bool:
        """A boolean flag's value."""
        return bool(self.values[flag])


def go_int(s: str) -> int | None:
    """Go's ``strconv.ParseInt(s, 0, 64)``: None for a syntax error or an out-of-range value."""
    t = s
    if not s.isascii() or s != s.strip():  # Python's int() takes spaces and other scripts' digits; Go does not
        return None
    if _OCTAL.match(t):  # a leading 0 means octal in Go (Python's int(x, 0) refuses it)
        sign = -1 if t.startswith("-") else 1
        t = t.lstrip("+-")[1:]
        if t.startswith("_") or t.endswith("_") or "__" in t:
            return None
        v = sign * int(t.replace("_", ""), 8)
    else:
        try:
            v = int(t, 0)
        except ValueError:
            return None
    return v if _INT64[0] <= v <= _INT64[1] else None


def parse(plugin: str, args: Any) -> PluginArgs:
    """Parse ``args`` with ``plugin``'s flags as Go's ``FlagSet.Parse`` does; the error text is Go's."""
    flags = PLUGIN_FLAGS.get(plugin, {})
    values: dict[str, str | int | bool] = dict(flags)
    if plugin == "env" or args is None:
        return PluginArgs(plugin, values)
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        return PluginArgs(plugin, values, "arguments must be a list of strings")
    rest = list(args)
    while rest:
        s = rest[0]
        if len(s) < 2 or s[0] != "-":
            break  # the first non-flag argument ends the flags
        minuses = 2 if s[1] == "-" else 1
        if minuses == 2 and len(s) == 2:  # "--" ends the flags
            break
        name = s[minuses:]
        if not name or name[0] in "-=":
            return PluginArgs(plugin, values, f"bad flag syntax: {s}")
        rest = rest[1:]
        value: str | None = None
        if "=" in name[1:]:
            i = name.index("=", 1)
            name, value = name[:i], name[i + 1:]
        if name not in flags:
            if name in ("help", "h"):
                return PluginArgs(plugin, values, "flag: help requested")
            return PluginArgs(plugin, values, f"flag provided but not defined: -{name}")
        default = flags[name]
        if isinstance(default, bool):
            v = "true" if value is None else value
            if v not in _TRUE and v not in _FALSE:
                return PluginArgs(plugin, values, f"invalid boolean value {_go_quote(v)} for -{name}: parse error")
            values[name] = v in _TRUE
            continue
        if value is None:
            if not rest:
                return PluginArgs(plugin, values, f"flag needs an argument: -{name}")
            value, rest = rest[0], rest[1:]
        if isinstance(default, int):
            n = go_int(value)
            if n is None:
                why = "value out of range" if re.fullmatch(r"[+-]?\d+", value) else "parse error"
                return PluginArgs(plugin, values, f"invalid value {_go_quote(value)} for flag -{name}: {why}")
            values[name] = n
        else:
            values[name] = value
    return PluginArgs(plugin, values)


def _go_quote(s: str) -> str:
    """Go's ``%q`` for the plain strings flags hold (double quotes, backslash escapes)."""
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'
