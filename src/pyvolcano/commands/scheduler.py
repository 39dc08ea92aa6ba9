"""``pyvolcano scheduler``: run as Volcano's vc-scheduler against a real API server."""

from __future__ import annotations

import logging
import signal
import threading

import click

from pyvolcano.commands._kube import kube_options, make_client, parse_duration, setup_logging, step_down

log = logging.getLogger("pyvolcano.scheduler")


def _node_selector(values: tuple[str, ...]) -> str:
    """Volcano writes ``--node-selector key:value``; a label selector ``key=value`` is accepted too."""
    terms = []
    for v in values:
        for part in filter(None, (p.strip() for p in v.split(","))):
            terms.append(part.replace(":", "=", 1) if "=" not in part else part)
    return ",".join(terms)


def register(group: click.Group) -> None:
    @group.command("scheduler")
    @kube_options
    @click.option("--scheduler-conf", default=None, help="volcano-scheduler.conf (default: Volcano's default "
                  "conf); re-read whenever the file changes.")
    @click.option("--scheduler-name", default="volcano", show_default=True,
                  help="Schedule the pods whose spec.schedulerName is this.")
    @click.option("--schedule-period", default="1s", show_default=True, help="Time between sessions.")
    @click.option("--default-queue", default="default", show_default=True,
                  help="Queue created at start when missing.")
    @click.option("--node-selector", multiple=True, help="Only use nodes with these labels (key:value or "
                  "key=value; repeatable).")
    @click.option("--leader-elect/--no-leader-elect", default=True, show_default=True,
                  help="Hold a Lease so that only one replica schedules.")
    @click.option("--lock-object-namespace", default="volcano-system", show_default=True,
                  help="Namespace of the leader-election Lease.")
    @click.option("--leader-elect-resource-name", default="vc-scheduler", show_default=True)
    @click.option("--leader-elect-lease-duration", default="15s", show_default=True)
    @click.option("--leader-elect-renew-deadline", default="10s", show_default=True)
    @click.option("--leader-elect-retry-period", default="2s", show_default=True)
    @click.option("--listen-address", default=":8080", show_default=True,
                  help="Address for /metrics and /healthz (empty: no HTTP server).")
    @click.option("--bind-workers", default=16, show_default=True, type=click.IntRange(1, 512),
                  help="Concurrent pods/binding calls.")
    @click.option("--identity", default=None, help="Leader-election identity (default: hostname_pid).")
    @click.option("--watch-timeout", default="5m", show_default=True,
                  help="Server-side timeout of each watch; an ended watch resumes from the last resourceVersion "
                       "it saw (410 Gone when that was compacted away: then a re-list).")
    @click.option("--full-sessions", is_flag=True,
                  help="Examine every pending job in every session (no blocked-job memo; same decisions).")
    @click.option("--podgroup-ready-events", type=click.Choice(["gangs", "all"]), default="gangs", show_default=True,
                  help="The 'Scheduled: pod group is ready' Event of a PodGroup. gangs: not for a one-pod group "
                       "ready at its first try (its pod's own Scheduled Event says so: one Event per pod, as "
                       "kube-scheduler); all: for every PodGroup, as Volcano.")
    @click.option("--write-defer", default="30s", show_default=True,
                  help="Binds first: Events and status writes (PodGroup, pod condition, queue) wait while binds are "
                       "in flight, at most this long after they were queued (0: write at once).")
    @click.option("--why-pending-cpu", default=0.1, show_default=True, type=click.FloatRange(0, 1),
                  help="At most this share of one CPU for the WhyPending Event of unschedulable PodGroups: the "
                       "short reason and the best verified fix, searched by re-running sessions in the background "
                       "(0: no search, no Event).")
    @click.option("-v", "--verbose", count=True, help="Debug logging.")
    def scheduler(kubeconfig: str | None, master: str | None, context: str | None, scheduler_conf: str | None,
                  scheduler_name: str, schedule_period: str, default_queue: str, node_selector: tuple[str, ...],
                  leader_elect: bool, lock_object_namespace: str, leader_elect_resource_name: str,
                  leader_elect_lease_duration: str, leader_elect_renew_deadline: str, leader_elect_retry_period: str,
                  listen_address: str, bind_workers: int, identity: str | None, watch_timeout: str,
                  full_sessions: bool, podgroup_ready_events: str, write_defer: str, why_pending_cpu: float,
                  verbose: int) -> None:
        """Schedule pods of SCHEDULER_NAME on a cluster, one Volcano session per period."""
        import gc

        # the loop's collector thresholds from here on (kube/scheduler.py: KubeScheduler.run): the imports below
        # allocate heavily too, and every young pass then is time before the first bind
        gc.set_threshold(100_000, 50, 100)
        from pyvolcano.errors import UserError
        from pyvolcano.kube.leader import LeaderElector
        from pyvolcano.kube.metrics import HealthServer, SchedulerMetrics
        from pyvolcano.kube.scheduler import ConfFile, KubeScheduler, SchedulerOptions, default_identity
        from pyvolcano.kube.why import WhyOptions

        setup_logging(verbose)
        period = parse_duration(schedule_period, "--schedule-period")
        if period <= 0:
            raise UserError("--schedule-period must be positive")
        conf = ConfFile(scheduler_conf)
        api = make_client(kubeconfig, master, context)
        opts = SchedulerOptions(scheduler_name=scheduler_name, period=period, node_selector=_node_selector(
            node_selector), bind_workers=bind_workers, identity=identity or default_identity(),
            default_queue=default_queue, incremental=not full_sessions,
            one_pod_ready_events=podgroup_ready_events == "all",
            write_defer=parse_duration(write_defer, "--write-defer"), why=WhyOptions(cpu=why_pending_cpu))
        if opts.write_defer < 0:
            raise UserError("--write-defer must not be negative")
        opts.watch_timeout = max(1, round(parse_duration(watch_timeout, "--watch-timeout")))
        elector = None
        if leader_elect:
            try:
                elector = LeaderElector(
                    api, lock_object_namespace, leader_elect_resource_name, opts.identity,
                    lease_duration=parse_duration(leader_elect_lease_duration, "--leader-elect-lease-duration"),
                    renew_deadline=parse_duration(leader_elect_renew_deadline, "--leader-elect-renew-deadline"),
                    retry_period=parse_duration(leader_elect_retry_period, "--leader-elect-retry-period"))
            except ValueError as exc:
                raise UserError(str(exc)) from None
        metrics = SchedulerMetrics()
        sched = KubeScheduler(api, conf, opts, metrics, elector)
        stop = threading.Event()
        deposed = threading.Event()

        def on_deposed() -> None:
            deposed.set()
            stop.set()

        sched.on_deposed = on_deposed
        server = None
        if listen_address:
            try:
                server = HealthServer(listen_address, metrics, sched.healthy).start()
            except (OSError, ValueError) as exc:
                raise UserError(f"--listen-address {listen_address}: {exc}") from None
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stop.set())
        try:
            version = api.server_version()
        except Exception as exc:  # the loop below retries; this is only for the log line
            version = f"unreachable ({exc})"
        log.info("pyvolcano scheduler %s: API server %s, scheduler name %r, period %.3gs, conf %s", opts.identity,
                 version, scheduler_name, period, scheduler_conf or "<default>")
        sched.run(stop)
        sched.stop()
        step_down(elector, deposed, server)
