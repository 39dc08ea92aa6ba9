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


def _register() -> None:
    import pyvolcano.commands as pkg

    for mod in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda m: m.name):
        if not mod.name.startswith("_"):
            importlib.import_module(f"pyvolcano.commands.{mod.name}").register(main)


_register()

if __name__ == "__main__":  # pragma: no cover
    main()
