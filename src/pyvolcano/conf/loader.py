"""Parse and validate ``volcano-scheduler.conf``.

The format is Volcano's: an ``actions`` string, ``tiers`` of ``plugins`` (name, enable flags, arguments),
and optional per-action ``configurations``.  Every error names the line and, for unknown names, lists the
known ones.  Pydantic checks the shape; the YAML node tree supplies line numbers.

The conf may also be given as the Kubernetes ConfigMap that holds it (what ``kubectl get configmap
volcano-scheduler-configmap -n volcano-system -o yaml`` prints): its ``volcano-scheduler.conf`` key is read,
and line numbers in errors still point into the ConfigMap file.
"""

from __future__ import annotations

import math
import re
import sys
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator

from pyvolcano import registry, safeyaml
from pyvolcano.conf.arguments import Arguments
from pyvolcano.conf.flags import FLAG_ALIASES, FLAGS
from pyvolcano.conf.registration import Registration
from pyvolcano.errors import ConfigError, UserError

DEFAULT_CONF = """\
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
    enablePreemptable: false
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
"""


class PluginOption(BaseModel):
    """One plugin in a tier: its name, enable flags (unset means enabled) and arguments."""

    model_config = ConfigDict(extra="allow")
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    #: "FILE: line N: " of this plugin in its conf, so that an argument error found when the plugin reads it
    #: names where it was written
    _where: str = PrivateAttr(default="")

    def __eq__(self, other: object) -> bool:  # where it was written is not part of what it says
        return type(other) is type(self) and self.model_dump() == other.model_dump()

    __hash__ = None  # type: ignore[assignment]

    @field_validator("arguments", mode="before")
    @classmethod
    def _args(cls, v: Any) -> Any:
        return {} if v is None else v

    @property
    def flags(self) -> dict[str, bool]:
        out: dict[str, bool] = {}
        for k, v in (self.model_extra or {}).items():
            out[FLAG_ALIASES.get(k, k)] = bool(v) if not isinstance(v, str) else v.lower() == "true"
        return out

    def enabled(self, flag: str | None) -> bool:
        """Volcano's isEnabled: a flag that is not set means enabled."""
        return flag is None or self.flags.get(flag, True)

    def args(self) -> Arguments:
        return Arguments(self.arguments, f"{self._where}plugin {self.name}")


class Tier(BaseModel):
    plugins: list[PluginOption] = Field(default_factory=list)


class ActionConfiguration(BaseModel):
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    _where: str = PrivateAttr(default="")

    def __eq__(self, other: object) -> bool:  # where it was written is not part of what it says
        return type(other) is type(self) and self.model_dump() == other.model_dump()

    __hash__ = None  # type: ignore[assignment]


class SchedulerConf(BaseModel):
    actions: list[str]
    tiers: list[Tier] = Field(default_factory=list)
    configurations: list[ActionConfiguration] = Field(default_factory=list)
    #: Volcano's ``metrics:`` section (``MetricsConfiguration``: type, address, interval, ...): the metrics source
    #: the Kubernetes scheduler reads node usage from (``kube/node_metrics.py``)
    metrics: dict[str, Any] = Field(default_factory=dict)
    _registration: Registration | None = PrivateAttr(default=None)
    _action_args: tuple[list[ActionConfiguration], dict[str, Arguments]] | None = PrivateAttr(default=None)

    def __eq__(self, other: object) -> bool:  # the cached registration is not part of what it says
        return type(other) is type(self) and self.model_dump() == other.model_dump()

    __hash__ = None  # type: ignore[assignment]

    @property
    def registration(self) -> Registration:
        """Which plugin's callbacks go to which tier, resolved once for this conf (``conf/registration.py``);
        built again when ``tiers`` is another list (a copy of the conf with other tiers)."""
        private = self.__pydantic_private__  # read directly: pydantic's ``__getattr__`` costs a microsecond
        assert private is not None  # the model has private attributes
        reg = private["_registration"]
        if reg is None or reg.tiers is not self.tiers:
            reg = private["_registration"] = Registration(self.tiers)
        return reg

    @field_validator("actions", mode="before")
    @classmethod
    def _split(cls, v: Any) -> Any:
        if isinstance(v, str):
            return [a.strip() for a in v.split(",") if a.strip()]
        return v

    def action_args(self, name: str) -> Arguments:
        """The action's ``configurations`` arguments (read-only), built once per conf: every session asks for
        each of its actions'.  Rebuilt when ``configurations`` is another list (a copy of the conf)."""
        private = self.__pydantic_private__  # as in ``registration``
        assert private is not None
        cached = private["_action_args"]
        if cached is None or cached[0] is not self.configurations:
            cached = private["_action_args"] = (self.configurations, {})
        got = cached[1].get(name)
        if got is None:
            got = cached[1][name] = self._build_action_args(name)
        return got

    def _build_action_args(self, name: str) -> Arguments:
        for c in self.configurations:
            if c.name == name:
                return Arguments(c.arguments, f"{c._where}action {name}")
        return Arguments({}, f"action {name}")

    def plugin(self, name: str) -> PluginOption | None:
        for tier in self.tiers:
            for p in tier.plugins:
                if p.name == name:
                    return p
        return None

    @property
    def plugin_names(self) -> list[str]:
        return [p.name for t in self.tiers for p in t.plugins]


def _line_of(root: yaml.Node | None, path: list[Any]) -> int | None:
    """1-based line of the YAML node at ``path`` (keys and list indexes), or of its nearest parent."""
    node = root
    line = node.start_mark.line + 1 if node is not None else None
    for step in path:
        nxt = None
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                if isinstance(k, yaml.ScalarNode) and k.value == step:
                    nxt = v
                    break
        elif isinstance(node, yaml.SequenceNode) and isinstance(step, int) and step < len(node.value):
            nxt = node.value[step]
        if nxt is None:
            break
        node = nxt
        line = node.start_mark.line + 1
    return line


def load_conf(text: str, source: str = "scheduler conf") -> SchedulerConf:
    """Parse, validate and check every action and plugin name against the registries."""
    try:
        data = safeyaml.load(text, source)
        root = safeyaml.compose(text, source)
    except safeyaml.YAMLInputError as exc:
        raise ConfigError(str(exc)) from None
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a mapping with 'actions' and 'tiers', got {type(data).__name__}")
    if data.get("kind") == "ConfigMap":
        return _from_configmap(data, root, source)
    try:
        conf = SchedulerConf.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = list(err["loc"])
        line = _line_of(root, loc)
        field = ".".join(str(x) for x in loc)
        raise ConfigError(f"{source}: line {line}: {field}: {err['msg']}") from None
    if not conf.actions:
        raise ConfigError(f"{source}: line {_line_of(root, ['actions'])}: actions: no action given; known "
                          f"actions: {', '.join(registry.known_actions())}")
    for i, name in enumerate(conf.actions):
        try:
            _check_class(name, "action")
        except ConfigError as exc:
            raise ConfigError(f"{source}: line {_line_of(root, ['actions'])}: {exc}") from None
        del i
    for ti, tier in enumerate(conf.tiers):
        for pi, p in enumerate(tier.plugins):
            line = _line_of(root, ["tiers", ti, "plugins", pi, "name"])
            p._where = f"{source}: line {line}: "
            _check_arguments(p.arguments, root, ["tiers", ti, "plugins", pi, "arguments"], source,
                             f"plugin {p.name}")
            try:
                _check_class(p.name, "plugin")
            except ConfigError as exc:
                raise ConfigError(f"{source}: line {line}: {exc}") from None
            for key, val in (p.model_extra or {}).items():
                if key not in FLAGS and key not in FLAG_ALIASES:
                    print(f"pyvolcano: warning: {source}: line {_line_of(root, ['tiers', ti, 'plugins', pi, key])}:"
                          f" plugin {p.name}: unknown option {key!r} ignored (known: {', '.join(FLAGS)})",
                          file=sys.stderr)
                elif not isinstance(val, bool) and str(val).lower() not in ("true", "false"):
                    raise ConfigError(f"{source}: line {_line_of(root, ['tiers', ti, 'plugins', pi, key])}: "
                                      f"plugin {p.name}: {key} must be true or false, got {val!r}")
    for ci, c in enumerate(conf.configurations):
        c._where = f"{source}: line {_line_of(root, ['configurations', ci, 'name'])}: "
        _check_arguments(c.arguments, root, ["configurations", ci, "arguments"], source, f"action {c.name}")
    names = conf.plugin_names
    if "proportion" in names and "capacity" in names:
        print(f"pyvolcano: warning: {source}: proportion and capacity are both enabled; Volcano says they must "
              "not be used together (both set queue deserved and overused)", file=sys.stderr)
    return conf


def _check_arguments(args: dict[str, Any], root: yaml.Node | None, path: list[Any], source: str, owner: str) -> None:
    """Arguments are read by the plugin later, with typed getters (``framework/arguments.py``); what no getter
    can mean is refused here, where the line is known: a non-finite number (``.nan``/``.inf``, which YAML
    reads as floats) or a key that is not a string."""
    stack: list[tuple[list[Any], Any]] = [(path, args)]
    while stack:
        p, v = stack.pop()
        bad = None
        if isinstance(v, float) and not math.isfinite(v):
            bad = f"{v!r} is not a finite number"
        elif isinstance(v, dict):
            for k, x in v.items():
                if not isinstance(k, str):
                    bad = f"key {k!r} is not a string"
                    break
                stack.append(([*p, k], x))
        elif isinstance(v, list):
            stack.extend(([*p, i], x) for i, x in enumerate(v))
        if bad:
            field = ".".join(str(x) for x in p[len(path):]) or "arguments"
            raise ConfigError(f"{source}: line {_line_of(root, p)}: {owner}: argument {field}: {bad}")


_DOTTED = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


def _check_class(name: str, kind: str) -> None:
    """The plugin or action ``name`` resolves to a Plugin or Action class.  A ``module:attr`` name (an
    out-of-tree plugin, docs/extending.md) must name a module and an attribute; the registry checks that the
    attribute is a subclass of the framework's base class (``registry._by_path``)."""
    if ":" in name:
        mod, _, attr = name.partition(":")
        if not _DOTTED.match(mod) or not _DOTTED.match(attr) or "." in attr:
            raise ConfigError(f"{kind} {name!r}: expected MODULE:CLASS (e.g. mypkg.plugins:MyPlugin)")
    if kind == "plugin":
        registry.plugin_class(name)
    else:
        registry.action_class(name)


CONF_KEY = "volcano-scheduler.conf"


def _from_configmap(cm: dict[str, Any], root: yaml.Node | None, source: str) -> SchedulerConf:
    """The conf inside a ConfigMap: the ``volcano-scheduler.conf`` key, or the only key there is."""
    data = cm.get("data")
    name = (cm.get("metadata") or {}).get("name", "?") if isinstance(cm.get("metadata"), dict) else "?"
    if not isinstance(data, dict) or not data:
        raise ConfigError(f"{source}: line {_line_of(root, ['data'])}: ConfigMap {name} has no data; expected "
                          f"a {CONF_KEY!r} key holding the scheduler conf")
    key = CONF_KEY if CONF_KEY in data else (next(iter(data)) if len(data) == 1 else None)
    if key is None:
        raise ConfigError(f"{source}: line {_line_of(root, ['data'])}: ConfigMap {name} has no {CONF_KEY!r} key "
                          f"(keys: {', '.join(map(str, data))})")
    text = data[key]
    if not isinstance(text, str):
        raise ConfigError(f"{source}: line {_line_of(root, ['data', key])}: data.{key} must be a string (the conf "
                          f"text, usually a '|' block)")
    # pad with blank lines so that line numbers of the embedded conf are those of the ConfigMap file
    first = _line_of(root, ["data", key]) or 1
    node = root
    for step in ("data", key):
        node = next((v for k, v in node.value if k.value == step), None) if isinstance(node, yaml.MappingNode) else None
    if isinstance(node, yaml.ScalarNode) and node.style in ("|", ">"):
        first += 1  # a block scalar's text starts on the line after the indicator
    return load_conf("\n" * (first - 1) + text, f"{source} (ConfigMap {name}, key {key})")


def load_conf_file(path: str | Path | None) -> SchedulerConf:
    if path is None:
        return load_conf(DEFAULT_CONF, "default conf")
    try:
        text, source = safeyaml.read_text(str(path), "scheduler conf")
    except UserError as exc:
        raise ConfigError(str(exc)) from None
    return load_conf(text, source)
