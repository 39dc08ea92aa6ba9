"""Options and helpers shared by the commands that talk to a cluster (not a command itself)."""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable
from typing import Any

import click

from pyvolcano.errors import UserError

_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_UNIT = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(text: str, flag: str = "duration") -> float:
    """A Go duration (``1s``, ``500ms``, ``1m30s``) or plain seconds, in seconds."""
    s = str(text).strip()
    try:
        return float(s)
    except ValueError:
        pass
    pos, total = 0, 0.0
    for m in _DURATION.finditer(s):
        if m.start() != pos:
            break
        total += float(m.group(1)) * _UNIT[m.group(2)]
        pos = m.end()
    if pos != len(s) or not s:
        raise UserError(f"{flag}: {text!r} is not a duration (examples: 1s, 500ms, 1m30s)")
    return total


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
