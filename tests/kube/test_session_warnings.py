"""The Kubernetes scheduler logs a session's warnings (input a plugin left out) when they appear."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from pyvolcano.kube.conf_watch import ConfFile
from pyvolcano.kube.resources import NODE, POD, PODGROUP
from pyvolcano.kube.resources import QUEUE as QUEUE_RES
from tests.kube.fakeapi import FakeApi
from tests.kube.helpers import node, pod, podgroup, queue
from tests.kube.test_scheduler import Harness

TOPOLOGY_CONF = """\
actions: "enqueue, allocate"
tiers:
- plugins:
  - name: gang
  - name: predicates
  - name: task-topology
"""


def test_a_session_warning_is_logged_when_it_appears(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A task-topology annotation naming a task the job does not have is logged once when it appears, not every
    session it stays; the job is scheduled."""
    api = FakeApi()
    api.create(QUEUE_RES, queue("default"))
    api.create(NODE, node("n1", cpu="8"))
    (tmp_path / "conf.yaml").write_text(TOPOLOGY_CONF)
    h = Harness(api, ConfFile(str(tmp_path / "conf.yaml")))
    try:
        pg = podgroup("a", "ns", 1)
        pg["metadata"]["annotations"] = {"volcano.sh/task-topology-affinity": "ghost"}
        api.create(PODGROUP, pg)
        api.create(POD, pod("a-0", "a", "ns"), "ns")
        h.settle(lambda: "ns/a-0" in h.s.cache.tasks)
        with caplog.at_level(logging.WARNING, logger="pyvolcano.kube.scheduler"):
            for _ in range(3):
                h.session()
        said = [r.getMessage() for r in caplog.records if "task-topology-affinity" in r.getMessage()]
        assert said == ["PodGroup ns/a: metadata.annotations.volcano.sh/task-topology-affinity: task ghost does not "
                        "exist in job ns/a; task-topology ignores the job's annotations"]
        assert "a-0" in h.bound()
    finally:
        h.stop()


def test_a_reloaded_conf_whose_plugin_cannot_open_is_dropped_for_the_previous(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A reloaded conf that loads but whose plugin refuses its arguments when it opens (a usage threshold that is
    no integer) is dropped for the conf before it, once, as a conf that does not load is."""
    from pyvolcano.cache.cache import SchedulerCache
    from pyvolcano.errors import ConfigError
    from pyvolcano.framework.cycle import run_session

    path = tmp_path / "conf.yaml"
    path.write_text(TOPOLOGY_CONF)
    cf = ConfFile(str(path))
    good = cf.conf
    path.write_text(TOPOLOGY_CONF + "  - name: usage\n    arguments: {thresholds: {cpu: abc}}\n")
    assert cf.poll() and cf.conf is not good
    cache = SchedulerCache.from_objects([node("n1")])
    with pytest.raises(ConfigError, match=r"line 7: plugin usage: argument thresholds\.cpu") as exc:
        run_session(cache, cf.conf)
    with caplog.at_level(logging.ERROR, logger="pyvolcano.kube.conf_watch"):
        cf.reject(exc.value)
        assert cf.conf is good and not cf.poll()  # the bad version is not loaded again
    assert [r.getMessage().split(": line")[0] for r in caplog.records] == [
        f"scheduler conf {path} changed but is invalid, keeping the previous conf: {path}"]
    run_session(cache, cf.conf)
