"""What every command that prints objects shares, kubectl's way: ``-o table|wide|json|yaml``, ``-f FILE`` (``-``
for stdin), and tables as wide as the terminal (never a forced width: a box drawn for 140 columns breaks in an
80-column terminal; the long reasons go to ``-o wide``)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

import click

FORMATS = ("table", "wide", "json", "yaml")
F = TypeVar("F", bound=Callable[..., Any])


def output_option(formats: tuple[str, ...] = FORMATS) -> Callable[[F], F]:
    return click.option("--output", "-o", "output", type=click.Choice(formats), default="table", show_default=True,
                        help="table: the summary; wide: with the reasons; json or yaml: every field.")


def console() -> Any:
    """A rich Console sized to the terminal (80 columns when the output is not a terminal, or $COLUMNS)."""
    from rich.console import Console

    return Console(soft_wrap=False)


def emit(data: Any, fmt: str) -> None:
    """``data`` as JSON (one line, as the scenario tools read it) or YAML."""
    if fmt == "yaml":
        import yaml

        click.echo(yaml.safe_dump(data, sort_keys=False, default_flow_style=False), nl=False)
    else:
        click.echo(json.dumps(data))


def pick_file(positional: str | None, filename: str | None, what: str) -> str:
    """The input file of a command that takes it as an argument or as ``-f`` (kubectl's form); one of them."""
    if positional and filename and positional != filename:
        raise click.UsageError(f"give the {what} once: as an argument or with -f, not both")
    path = filename or positional
    if not path:
        raise click.UsageError(f"no {what} given: pass a file (or - for stdin) as an argument or with -f")
    return path
