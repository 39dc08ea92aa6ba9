"""Conf reload, metrics and /healthz, background writer, the scheduler command's argument handling."""

from __future__ import annotations

import threading
import urllib.request

import pytest
from click.testing import CliRunner

from pyvolcano.cli import main
from pyvolcano.commands._kube import parse_duration
from pyvolcano.commands.scheduler import _node_selector
from pyvolcano.errors import ConfigError, UserError
from pyvolcano.kube.metrics import HealthServer, SchedulerMetrics
from pyvolcano.kube.resources import NODE, POD, PODGROUP, QUEUE
from pyvolcano.kube.scheduler import ConfFile, KubeScheduler, SchedulerOptions
from pyvolcano.kube.writer import Writer
from tests.kube.fakeapi import FakeApi
from tests.kube.helpers import node, pod, podgroup, queue

CONF_A = 'actions: "enqueue, allocate"\ntiers:\n- plugins:\n  - name: gang\n'
CONF_B = 'actions: "enqueue, allocate, backfill"\ntiers:\n- plugins:\n  - name: gang\n  - name: priority\n'


def test_conf_file_reloads_on_change_and_keeps_the_last_good_one(tmp_path) -> None:
    p = tmp_path / "volcano-scheduler.conf"
    p.write_text(CONF_A)
    cf = ConfFile(str(p))
    assert cf.conf.actions == ["enqueue", "allocate"]
    assert not cf.poll()
    p.write_text(CONF_B)
    assert cf.poll() and cf.conf.actions == ["enqueue", "allocate", "backfill"] and cf.reloads == 1
    p.write_text('actions: "enqueue, nosuchaction"\n')
    assert not cf.poll() and cf.conf.actions == ["enqueue", "allocate", "backfill"]
    assert not cf.poll()  # the broken version is reported once, not every period
    # a ConfigMap update: the mounted file is a symlink that gets swapped
    target = tmp_path / "v2.conf"
    target.write_text(CONF_A)
    p.unlink()
    p.symlink_to(target)
    assert cf.poll() and cf.conf.actions == ["enqueue", "allocate"]


def test_conf_file_must_be_valid_at_start(tmp_path) -> None:
    p = tmp_path / "c.conf"
    p.write_text("actions: [1, 2")
    with pytest.raises(ConfigError):
        ConfFile(str(p))


def test_metrics_and_healthz_endpoints() -> None:
    api = FakeApi()
    api.create(QUEUE, queue("default"))
    api.create(NODE, node("n1", cpu="1"))
    api.create(PODGROUP, podgroup("g", min_member=2))
    for i in range(2):
        api.create(POD, pod(f"g-{i}", "g"))
    m = SchedulerMetrics()
    s = KubeScheduler(api, ConfFile(None), SchedulerOptions(period=0.05), m)
    assert s.start_informers(5)
    try:
        s.run_once()
        srv = HealthServer("127.0.0.1:0", m, s.healthy).start()
        try:
            base = f"http://127.0.0.1:{srv.port}"
            assert urllib.request.urlopen(base + "/healthz").read() == b"ok"
            text = urllib.request.urlopen(base + "/metrics").read().decode()
        finally:
            srv.stop()
        assert "volcano_e2e_scheduling_latency_milliseconds_count 1.0" in text
        assert 'volcano_action_scheduling_latency_milliseconds_count{action="allocate"} 1.0' in text
        assert 'volcano_plugin_scheduling_latency_milliseconds_count{OnSession="OnSessionOpen",plugin="gang"}' in text
        assert 'volcano_unschedule_task_count{job_id="ns/g"} 2.0' in text
        assert "volcano_unschedule_job_count 1.0" in text
        s.heartbeat -= 1000
        ok, why = s.healthy()
        assert not ok and "stalled" in why
    finally:
        s.stop()


def test_writer_coalesces_and_orders_writes_per_key() -> None:
    w = Writer(2)
    gate, started = threading.Event(), threading.Event()
    done: list[str] = []
    w.submit("k", lambda: (started.set(), gate.wait(5), done.append("first")))
    assert started.wait(5)
    w.submit("k", lambda: done.append("stale"))  # replaced by the next one before it could start
    w.submit("k", lambda: done.append("latest"))
    w.submit("other", lambda: done.append("other"))
    gate.set()
    assert w.flush(5)
    assert done.index("first") < done.index("latest") and "stale" not in done and "other" in done
    w.submit("boom", lambda: 1 / 0)
    assert w.flush(5) and w.failures == 1
    w.shutdown()


def test_durations_and_node_selectors() -> None:
    assert parse_duration("1s") == 1 and parse_duration("500ms") == 0.5 and parse_duration("1m30s") == 90
    assert parse_duration("2") == 2
    with pytest.raises(UserError):
        parse_duration("soon", "--schedule-period")
    assert _node_selector(("volcano.sh/role:train", "zone=a,gpu")) == "volcano.sh/role=train,zone=a,gpu"


def test_scheduler_command_reports_bad_input_without_a_traceback(tmp_path) -> None:
    r = CliRunner().invoke(main, ["scheduler", "--schedule-period", "often", "--listen-address", ""])
    assert r.exit_code == 2 and "--schedule-period" in r.output and "Traceback" not in r.output
    bad = tmp_path / "k.yaml"
    bad.write_text("not: a kubeconfig")
    r = CliRunner().invoke(main, ["scheduler", "--kubeconfig", str(bad), "--listen-address", ""])
    assert r.exit_code == 2 and "cannot load kubeconfig" in r.output
