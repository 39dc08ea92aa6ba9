"""``pyvolcano controller``: run as Volcano's vc-controller-manager (job, queue controllers) on a cluster."""

from __future__ import annotations

import logging
import signal
import threading
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from pyvolcano.commands._kube import kube_options, make_client, parse_duration, setup_logging, step_down
from pyvolcano.errors import UserError

if TYPE_CHECKING:
    from pyvolcano.kube.leader import LeaderElector

log = logging.getLogger("pyvolcano.controller")

#: the controllers this command runs, by Volcano's names (``Name()`` of each in ``pkg/controllers``)
KNOWN_CONTROLLERS = ("job-controller", "pg-controller", "queue-controller", "hyperNode-controller",
                     "cronjob-controller", "jobflow-controller", "jobtemplate-controller")


def controller_enabled(name: str, gates: list[str]) -> bool:
    """Volcano's ``--controllers`` gate (``cmd/controller-manager/app/server.go: isControllerEnabled``): an explicit
    ``name`` or ``+name`` enables, ``-name`` disables (the first mention wins), otherwise ``*`` enables all; no
    gates at all enable everything."""
    if not gates:
        return True
    star = False
    for g in gates:
        if g in (name, f"+{name}"):
            return True
        if g == f"-{name}":
            return False
        star = star or g == "*"
    return star


def parse_gates(values: tuple[str, ...]) -> list[str]:
    """``--controllers`` values (repeatable, comma-separated); an unknown controller name is a user error."""
    gates = [g.strip() for v in values for g in v.split(",") if g.strip()]
    for g in gates:
        if g != "*" and g.lstrip("+-") not in KNOWN_CONTROLLERS:
            raise UserError(f"--controllers: unknown controller {g.lstrip('+-')!r} (known: "
                            f"{', '.join(KNOWN_CONTROLLERS)}, or '*')")
    return gates


def _leader_election_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The leader-election flags, as Volcano's controller manager names them (``--leader-elect`` and the Lease's
    namespace, name and timings)."""
    for option in reversed((
        click.option("--leader-elect/--no-leader-elect", default=True, show_default=True,
                     help="Hold a Lease so that only one replica runs the controllers."),
        click.option("--lock-object-namespace", default="volcano-system", show_default=True),
        click.option("--leader-elect-resource-name", default="vc-controller-manager", show_default=True),
        click.option("--leader-elect-lease-duration", default="15s", show_default=True),
        click.option("--leader-elect-renew-deadline", default="10s", show_default=True),
        click.option("--leader-elect-retry-period", default="2s", show_default=True),
    )):
        fn = option(fn)
    return fn


def register(group: click.Group) -> None:
    @group.command("controller")
    @kube_options
    @_leader_election_options
    @click.option("--listen-address", default=":8081", show_default=True,
                  help="Address for /metrics and /healthz (empty: no HTTP server).")
    @click.option("--identity", default=None, help="Leader-election identity (default: hostname_pid).")
    @click.option("--scheduler-name", "scheduler_names", multiple=True, default=["volcano"], show_default=True,
                  help="Pods for these schedulers without a PodGroup get one (the podgroup controller).")
    @click.option("--controller-configmap", default=None, metavar="NAMESPACE/NAME",
                  help="The ConfigMap whose volcano-controller.conf configures HyperNode discovery (default: "
                  "$KUBE_POD_NAMESPACE/$HELM_RELEASE_NAME-controller-configmap, i.e. "
                  "volcano-system/volcano-controller-configmap, as Volcano's controller).")
    @click.option("--controllers", "controller_gates", multiple=True, default=["*"], show_default=True,
                  help="Which controllers run, as Volcano's flag: '*' for all, 'name' or '-name' to turn one on or "
                  f"off (comma-separated or repeated). Known: {', '.join(KNOWN_CONTROLLERS)}.")
    @click.option("-v", "--verbose", count=True, help="Debug logging.")
    def controller(kubeconfig: str | None, master: str | None, context: str | None, leader_elect: bool,
                   lock_object_namespace: str, leader_elect_resource_name: str, leader_elect_lease_duration: str,
                   leader_elect_renew_deadline: str, leader_elect_retry_period: str, listen_address: str,
                   identity: str | None, scheduler_names: tuple[str, ...], controller_configmap: str | None,
                   controller_gates: tuple[str, ...], verbose: int) -> None:
        """Turn Volcano Jobs into PodGroups and Pods, keep Job, Queue and HyperNode status, discover HyperNodes, run
        CronJobs and JobFlows."""
        from pyvolcano.kube.leader import LeaderElector
        from pyvolcano.kube.scheduler import default_identity

        setup_logging(verbose)
        gates = parse_gates(controller_gates)
        on = {n for n in KNOWN_CONTROLLERS if controller_enabled(n, gates)}
        cm = _configmap(controller_configmap)
        me = identity or default_identity()
        api = make_client(kubeconfig, master, context)
        elector = None
        if leader_elect:
            try:
                elector = LeaderElector(
                    api, lock_object_namespace, leader_elect_resource_name, me,
                    lease_duration=parse_duration(leader_elect_lease_duration, "--leader-elect-lease-duration"),
                    renew_deadline=parse_duration(leader_elect_renew_deadline, "--leader-elect-renew-deadline"),
                    retry_period=parse_duration(leader_elect_retry_period, "--leader-elect-retry-period"))
            except ValueError as exc:
                raise UserError(str(exc)) from None
        _run(api, me, on, cm, tuple(scheduler_names), elector, listen_address)


def _configmap(value: str | None) -> tuple[str, str]:
    """``--controller-configmap NAMESPACE/NAME``, or the ConfigMap Volcano's controller reads by default."""
    from pyvolcano.kube.hypernode_controller import default_configmap

    if not value:
        return default_configmap()
    ns, _, name = value.partition("/")
    if not ns or not name or "/" in name:
        raise UserError(f"--controller-configmap: {value!r} is not NAMESPACE/NAME")
    return ns, name


def _run(api: Any, me: str, on: set[str], cm: tuple[str, str], scheduler_names: tuple[str, ...],
         elector: LeaderElector | None, listen_address: str) -> None:
    """Run the controllers named in ``on`` until SIGTERM/SIGINT or, with ``elector``, until the Lease is lost
    (then exit 1, as Volcano's controller manager does, so that a fresh replica campaigns)."""
    from pyvolcano.kube.controller import JobRunner
    from pyvolcano.kube.flow_controller import NAMES as FLOW_CONTROLLERS
    from pyvolcano.kube.flow_controller import FlowControllers
    from pyvolcano.kube.hypernode_controller import HyperNodeControllerRunner
    from pyvolcano.kube.metrics import ControllerMetrics, HealthServer
    from pyvolcano.kube.podgroup_controller import PodGroupController
    from pyvolcano.kube.queue_controller import QueueController
    from pyvolcano.kube.writer import EventRecorder, Writer

    writer = Writer(4, "events")
    recorder = EventRecorder(api, writer, "vc-controller-manager", me)
    jobs = JobRunner(api, recorder) if "job-controller" in on else None
    queues = QueueController(api, recorder) if "queue-controller" in on else None
    podgroups = PodGroupController(api, scheduler_names) if "pg-controller" in on else None
    hypernodes = HyperNodeControllerRunner(api, cm) if "hyperNode-controller" in on else None
    flows = FlowControllers(api, recorder, on) if on & set(FLOW_CONTROLLERS) else None
    running: list[Any] = [c for c in (queues, jobs, podgroups, hypernodes, flows) if c is not None]
    metrics = ControllerMetrics()
    stop, deposed, started = threading.Event(), threading.Event(), threading.Event()

    def healthy() -> tuple[bool, str]:
        if started.is_set() and not all(
                all(r.alive for r in c.reflectors) if isinstance(c, QueueController) else c.alive for c in running):
            return False, "a controller thread stopped"
        return True, "ok"

    server = None
    if listen_address:
        try:
            server = HealthServer(listen_address, metrics, healthy).start()
        except (OSError, ValueError) as exc:
            raise UserError(f"--listen-address {listen_address}: {exc}") from None
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())

    def on_started() -> None:
        started.set()

    def on_stopped() -> None:
        deposed.set()
        stop.set()

    if elector is not None:
        threading.Thread(target=elector.run, args=(stop, on_started, on_stopped), daemon=True).start()
        log.info("pyvolcano controller %s: waiting for the lease %s/%s", me, elector.namespace, elector.name)
        while not started.wait(1.0):
            if stop.is_set():
                return
    else:
        started.set()
    metrics.is_leader.set(1)
    if not all(c.start() for c in running):
        raise UserError("controller: informers did not sync")
    log.info("pyvolcano controller %s: controllers running: %s", me,
             ", ".join(n for n in KNOWN_CONTROLLERS if n in on) or "none")
    while not stop.wait(5.0):
        if jobs is None:
            continue
        phases = Counter(st.phase for st in jobs.ctrl.jobs.values())
        for phase in ("Pending", "Running", "Restarting", "Aborting", "Aborted", "Terminating", "Terminated",
                      "Completing", "Completed", "Failed"):
            metrics.jobs.labels(phase).set(phases.get(phase, 0))
        metrics.handled.set(jobs.processed)
        metrics.invalid.set(len(jobs.invalid))
    for c in running:
        c.stop()
    writer.shutdown(5)
    step_down(elector, deposed, server)
