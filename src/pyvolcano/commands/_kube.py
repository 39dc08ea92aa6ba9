"""Options and helpers shared by the commands that talk to a cluster (not a command itself)."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

import click

from pyvolcano.errors import UserError
from pyvolcano.framework.arguments import parse_duration as go_duration


def parse_duration(text: str, flag: str = "duration") -> float:
    """A Go duration (``1s``, ``500ms``, ``1m30s``) or plain seconds, in seconds; a user error names the flag."""
    s = str(text).strip()
    try:
        return float(s)
    except ValueError:
        pass
    try:
        return go_duration(s)
    except ValueError:
        raise UserError(f"{flag}: {text!r} is not a duration (examples: 1s, 500ms, 1m30s)") from None


def kube_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """--kubeconfig / --master / --context, defaulting to $KUBECONFIG and then the in-cluster config."""
    fn = click.option("--context", default=None, help="kubeconfig context (default: the current one).")(fn)
    fn = click.option("--master", default=None, help="API server URL, overriding the kubeconfig's.")(fn)
    fn = click.option("--kubeconfig", default=None, envvar="KUBECONFIG",
                      help="kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster).")(fn)
    return fn


def make_client(kubeconfig: str | None, master: str | None, context: str | None = None) -> Any:
    from pyvolcano.kube.client import KubeClient

    if kubeconfig is None and "KUBERNETES_SERVICE_HOST" not in os.environ:
        home = os.path.expanduser("~/.kube/config")
        if os.path.exists(home):
            kubeconfig = home
    return KubeClient.from_config(kubeconfig, context=context, master=master)


def setup_logging(verbosity: int) -> None:
    logging.basicConfig(level=logging.DEBUG if verbosity > 0 else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("urllib3").setLevel(logging.WARNING)
    logging.getLogger("kubernetes").setLevel(logging.WARNING)


@contextlib.contextmanager
def api_errors(what: str) -> Iterator[None]:
    """Turn API errors into one-line user errors (404 names the object; no traceback)."""
    from pyvolcano.kube.client import ApiError, Unavailable

    try:
        yield
    except Unavailable as exc:
        raise UserError(f"{what}: cannot reach the API server ({exc.message})") from None
    except ApiError as exc:
        raise UserError(f"{what}: {exc.message or exc.reason} (HTTP {exc.status})") from None


def render_table(title: str, columns: list[str], rows: list[list[Any]], output: str = "table") -> None:
    """Rows as kubectl prints them (``table``/``wide``, sized to the terminal) or as a list of objects keyed by
    column name (``json``/``yaml``)."""
    from rich.table import Table

    from pyvolcano.commands._output import console, emit

    if output in ("json", "yaml"):
        emit([dict(zip(columns, r, strict=True)) for r in rows], output)
        return
    t = Table(title=title or None, box=None, header_style="bold", pad_edge=False)
    for c in columns:
        t.add_column(c, no_wrap=True)
    cells = [[str(x) for x in r] for r in rows]
    for r in cells:
        t.add_row(*r)
    # kubectl's way: a row never folds inside a cell (names stay whole); it is as wide as the terminal when it
    # fits, and as wide as it must be otherwise
    need = sum(max(len(c), *(len(r[i]) for r in cells)) + 2 for i, c in enumerate(columns)) + 2
    out = console()
    out.width = max(out.width, need)
    out.print(t)


def age(timestamp: str | None) -> str:
    """kubectl-style age (``5m``, ``3h``, ``2d``) of an RFC 3339 time."""
    from datetime import UTC, datetime

    if not timestamp:
        return "-"
    try:
        t = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    except ValueError:
        return "-"
    s = max(0, int((datetime.now(UTC) - t).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if s >= size:
            return f"{s // size}{unit}"
    return f"{s}s"


def step_down(elector: Any, deposed: threading.Event, server: Any) -> None:
    """The end of a leader-elected process (Volcano's ``OnStoppedLeading``): release the Lease unless it was lost,
    stop the health server, and exit 1 when deposed so that a fresh replica campaigns (scheduler and controller)."""
    if elector is not None and not deposed.is_set():
        elector.release()
    if server is not None:
        server.stop()
    if deposed.is_set():
        click.echo("pyvolcano: leader election lost; exiting so that a fresh replica can campaign", err=True)
        sys.exit(1)
