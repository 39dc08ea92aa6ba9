"""Where each plugin's callbacks land, resolved once per conf.

Volcano's session asks, for every callback a plugin registers, whether the plugin's option enables that point
(``isEnabled`` in ``pkg/scheduler/framework/util.go``: an unset flag means enabled) and in which tier the plugin
sits (the tier loops of ``framework/session_plugins.go``).  Those answers depend on the conf alone, and a
simulation opens thousands of sessions on one conf (each plugin registers 2-10 callbacks per session), so they
are resolved here once, when a session first uses the conf: ``Registration.at[(plugin, flag)]`` is the plugin's
tier, or None where its option switches that flag off.  A session then only appends the plugin instance's
callables to its per-point lists (``framework/session.py: Session._add``).

A conf is treated as a value: a reload builds a new ``SchedulerConf`` (``kube/conf_watch.py``, ``load_conf``)
and with it a new registration; a copy with other tiers (``model_copy(update={"tiers": ...})``) is resolved
afresh because the registration remembers the tier list it was built from (``SchedulerConf.registration``).
Changing a loaded conf's plugin options in place is not supported (nothing in pyvolcano does; the blocked-job
memo, ``framework/incremental/memo.py``, makes the same assumption).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyvolcano import registry
from pyvolcano.conf.flags import FLAGS
from pyvolcano.errors import ConfigError

if TYPE_CHECKING:
    from pyvolcano.conf.arguments import Arguments
    from pyvolcano.conf.loader import PluginOption, Tier
    from pyvolcano.framework.incremental.contracts import Contracts
    from pyvolcano.framework.plugin import Plugin

#: a conf's plugin entry resolved: tier, option, parsed arguments, the plugin's class and its contracts under them
Built = tuple[int, "PluginOption", "Arguments", "type[Plugin]", "Contracts"]

#: (plugin name, enable flag or None for a point no flag switches) -> the plugin's tier, or None: switched off
Slots = dict[tuple[str, str | None], int | None]


class Registration:
    """A conf's plugins resolved: each plugin's (tier, option) and, per enable flag, the tier its callbacks go to.

    ``options`` keeps Volcano's reading of a conf naming a plugin twice (the later entry's option and tier win,
    as ``Session.options`` always did).  ``n_tiers`` is at least 1, so a conf without tiers still has one (empty)
    tier for callbacks registered by plugins it does not name."""

    __slots__ = ("_actions", "_built", "_flags", "at", "n_tiers", "options", "plugins", "tiers")

    def __init__(self, tiers: list[Tier]) -> None:
        #: the tier list this was built from (``SchedulerConf.registration`` rebuilds when it is another list)
        self.tiers = tiers
        self.options: dict[str, tuple[int, PluginOption]] = {}
        for ti, tier in enumerate(tiers):
            for opt in tier.plugins:
                self.options[opt.name] = (ti, opt)
        self.n_tiers = max(1, len(tiers))
        self.at: Slots = {}
        for name, (ti, opt) in self.options.items():
            self.at.update(slots(name, ti, opt))
        #: every plugin entry of the conf in order, with its tier and its parsed ``arguments`` (read-only
        #: ``Arguments``, shared by the plugin instances of every session: building them, with the pydantic
        #: attribute reads, was a tenth of a session's fixed cost)
        self.plugins: list[tuple[int, PluginOption, Arguments]] = [
            (ti, opt, opt.args()) for ti, tier in enumerate(tiers) for opt in tier.plugins]
        #: per plugin entry (by identity), its ``flags`` as set in the conf: read by plugins every session
        #: (``PluginOption.flags`` builds the dict from the pydantic extras at each read)
        self._flags: dict[int, tuple[PluginOption, dict[str, bool]]] = {}
        #: ``built()``'s answer and the registry generation it was made at
        self._built: tuple[int, list[Built]] | None = None
        #: ``action_contracts``'s answer: the action list it was made for, the registry generation, the contracts
        self._actions: tuple[object, int, list[Contracts]] | None = None

    def built(self) -> list[Built]:
        """``plugins`` with each entry's class and contracts (``Plugin.contracts_for``, which reads only the
        arguments), looked up in the registry once for the conf rather than by every session, and again only
        after something registered a plugin or an action (``registry.generation``).  An unknown plugin raises
        ``ConfigError`` located at its entry, as the session's own lookup did."""
        got = self._built
        if got is not None and got[0] == registry.generation:
            return got[1]
        out: list[Built] = []
        for ti, opt, args in self.plugins:
            try:
                cls = registry.plugin_class(opt.name)
                out.append((ti, opt, args, cls, cls.contracts_for(args)))
            except ConfigError as exc:
                raise args.located(exc) from None
        self._built = (registry.generation, out)
        return out

    def action_contracts(self, actions: list[str]) -> list[Contracts]:
        """Each action's class's ``contracts``, in the order of ``actions`` (the conf's action list: a copy of a
        conf may share its tiers, and so this registration, with other actions)."""
        got = self._actions
        if got is not None and got[0] is actions and got[1] == registry.generation:
            return got[2]
        out = [registry.action_class(a).contracts for a in actions]
        self._actions = (actions, registry.generation, out)
        return out

    def flags_of(self, opt: PluginOption) -> dict[str, bool]:
        """``opt.flags``, made once per entry of this conf (read-only: the conf is a value)."""
        got = self._flags.get(id(opt))
        if got is None or got[0] is not opt:
            got = self._flags[id(opt)] = (opt, opt.flags)
        return got[1]

    def tier(self, plugin: str, flag: str | None) -> int | None:
        """The tier of ``plugin``'s callbacks on a point switched by ``flag``, None when its option switches the
        flag off.  A plugin the conf does not name (a test, a plugin registering under another name) lands in
        the first tier, enabled."""
        ti = self.at.get((plugin, flag), -1)
        if ti is None or ti >= 0:
            return ti
        got = self.options.get(plugin)
        if got is None:
            return 0
        return got[0] if got[1].enabled(flag) else None  # a flag outside FLAGS: unset, so enabled


def slots(name: str, ti: int, opt: PluginOption) -> Slots:
    """Every flag of ``FLAGS`` (and None) resolved for the plugin ``name`` at tier ``ti`` with option ``opt``."""
    flags = opt.flags
    out: Slots = {(name, None): ti}
    for flag in FLAGS:
        out[(name, flag)] = ti if flags.get(flag, True) else None
    return out


__all__ = ["Built", "Registration", "Slots", "slots"]
