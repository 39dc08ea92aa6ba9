"""``pyvolcano webhook``: Volcano's admission webhooks (vc-webhook-manager) over TLS (``kube/webhook.py``)."""

from __future__ import annotations

import logging
import signal
import tempfile
import threading
from pathlib import Path

import click

from pyvolcano.commands._kube import kube_options, make_client, setup_logging
from pyvolcano.errors import UserError

log = logging.getLogger("pyvolcano.webhook")


def _listen(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) < 65536:
        raise UserError(f"--listen {value!r}: expected HOST:PORT (for example 127.0.0.1:8443)")
    return host.strip("[]") or "0.0.0.0", int(port)


def register(group: click.Group) -> None:
    from pyvolcano.kube.webhook import PATHS

    @group.command("webhook")
    @kube_options
    @click.option("--listen", "listen", default="0.0.0.0:8443", show_default=True, metavar="HOST:PORT",
                  help="Address of the HTTPS server.")
    @click.option("--tls-cert-file", type=click.Path(exists=True, dir_okay=False), default=None,
                  help="Serving certificate (with --tls-private-key-file and --ca-cert-file); without it a CA and "
                  "a certificate are made at start.")
    @click.option("--tls-private-key-file", type=click.Path(exists=True, dir_okay=False), default=None)
    @click.option("--ca-cert-file", type=click.Path(exists=True, dir_okay=False), default=None,
                  help="The CA that signed the serving certificate (the caBundle of the registrations).")
    @click.option("--cert-dir", type=click.Path(file_okay=False), default=None,
                  help="Where a made CA and certificate are written (default: a temporary folder).")
    @click.option("--cert-host", "cert_hosts", multiple=True,
                  help="subjectAltName of a made certificate (repeatable; default: the --listen host, or the "
                  "Service's DNS names with --webhook-service).")
    @click.option("--register", "do_register", is_flag=True,
                  help="Register the Mutating/ValidatingWebhookConfigurations, pointing at this server.")
    @click.option("--webhook-url", default=None, help="Base URL the API server calls (default: https://<listen>).")
    @click.option("--webhook-service", default=None, metavar="NAMESPACE/NAME",
                  help="Register with a Service client config instead of a URL (in the cluster).")
    @click.option("--enabled-admission", default=",".join(PATHS), show_default=True,
                  help="Comma-separated admission paths to serve and register.")
    @click.option("--scheduler-name", "scheduler_names", multiple=True, default=["volcano"], show_default=True,
                  help="Schedulers whose pods are checked; the first is the default of a Job's schedulerName.")
    @click.option("--enable-queue-allocated-pods-check", "queue_pods_check", is_flag=True, default=False,
                  help="Refuse to delete a queue whose status.allocated still counts pods (Volcano's flag; off by "
                  "default, as Volcano's).")
    @click.option("--max-queue-depth", type=click.IntRange(min=1), default=5, show_default=True,
                  help="The most levels of hierarchical queues below root.")
    @click.option("--enable-root-queue-protection/--disable-root-queue-protection", "root_protection",
                  default=True, show_default=True,
                  help="Refuse updates of the root queue's capability, deserved and guarantee.")
    @click.option("-v", "--verbose", count=True, help="Debug logging.")
    def webhook(kubeconfig: str | None, master: str | None, context: str | None, listen: str,
                tls_cert_file: str | None, tls_private_key_file: str | None, ca_cert_file: str | None,
                cert_dir: str | None, cert_hosts: tuple[str, ...], do_register: bool, webhook_url: str | None,
                webhook_service: str | None, enabled_admission: str, scheduler_names: tuple[str, ...],
                queue_pods_check: bool, max_queue_depth: int, root_protection: bool, verbose: int) -> None:
        """Serve Volcano's validating and mutating admission webhooks (jobs, pods, podgroups, queues, hypernodes,
        cronjobs, jobflows)."""
        from pyvolcano.api.admission import QueueRules
        from pyvolcano.kube import webhook as wh

        setup_logging(verbose)
        host, port = _listen(listen)
        paths = [p.strip() for p in enabled_admission.split(",") if p.strip()]
        for p in paths:
            if p not in wh.PATHS:
                raise UserError(f"--enabled-admission: unknown path {p!r} (known: {', '.join(wh.PATHS)})")
        svc: tuple[str, str] | None = None
        if webhook_service:
            ns, _, name = webhook_service.partition("/")
            if not ns or not name:
                raise UserError(f"--webhook-service {webhook_service!r}: expected NAMESPACE/NAME")
            svc = (ns, name)
        given = (tls_cert_file, tls_private_key_file, ca_cert_file)
        if any(given) and not all(given):
            raise UserError("--tls-cert-file, --tls-private-key-file and --ca-cert-file go together")
        if all(given):
            certs = wh.Certs(Path(str(tls_cert_file)), Path(str(tls_private_key_file)), Path(str(ca_cert_file)))
        else:
            hosts = list(cert_hosts) or ([f"{svc[1]}.{svc[0]}.svc", f"{svc[1]}.{svc[0]}.svc.cluster.local"] if svc
                                         else [host if host != "0.0.0.0" else "127.0.0.1"])
            certs = wh.make_certs(Path(cert_dir or tempfile.mkdtemp(prefix="pyvolcano-webhook-")), hosts)
        api = make_client(kubeconfig, master, context)
        lookups = wh.KubeLookups(api)
        if not lookups.start():
            raise UserError("webhook: the queue informer did not sync")
        try:
            rules = QueueRules(queue_pods_check, max_queue_depth, root_protection)
            server = wh.WebhookServer(wh.Admission(lookups, tuple(scheduler_names), rules), host, port, certs).start()
        except (OSError, ValueError) as exc:
            raise UserError(f"--listen {listen}: {exc}") from None
        if do_register:
            client_config = (wh.service_client_config(svc[0], svc[1], certs.ca_bundle()) if svc else
                             wh.url_client_config(webhook_url or f"https://{host}:{server.port}", certs.ca_bundle()))
            wh.register(api, wh.webhook_configurations(client_config, svc[0] if svc else "volcano-system", paths))
        log.info("pyvolcano webhook serving on https://%s:%d (%s)", host, server.port, ", ".join(paths))
        stop = threading.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stop.set())
        stop.wait()
        server.stop()
        lookups.stop()
