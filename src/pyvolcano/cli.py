"""The ``pyvolcano`` command.  Subcommands live in ``pyvolcano.commands`` (one module each).

User mistakes (``UserError``) print one line and exit 2; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys

import click

from pyvolcano import __version__
from pyvolcano.errors import UserError


class _Group(click.Group):
    """Each subcommand is imported only when it is run (or listed by ``--help``): ``pyvolcano scheduler`` then
    starts without the simulator's and benchmark's imports (matplotlib among them), about 1.5 s less before a
    restarted scheduler can bind anything.  A command module is named after its command."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(_command_modules()))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in _command_modules():
            importlib.import_module(f"pyvolcano.commands.{cmd_name}").register(self)
        return super().get_command(ctx, cmd_name)

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except UserError as exc:
            click.echo(f"pyvolcano: error: {exc}", err=True)
            sys.exit(exc.exit_code)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="pyvolcano")
def main() -> None:
    """pyvolcano: a Volcano-compatible batch scheduler for Kubernetes, in Python."""


def _command_modules() -> list[str]:
    import pyvolcano.commands as pkg

    return sorted(m.name for m in pkgutil.iter_modules(pkg.__path__) if not m.name.startswith("_"))


if __name__ == "__main__":  # pragma: no cover
    main()
