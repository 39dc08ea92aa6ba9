"""A waiting job's PodGroup status carried between sessions (``Session.close``'s "waiting-status" and gang's
"gang-unschedulable" in ``JobInfo.derived``, and the statuses of parked and blocked jobs left alone) is exact:
every status a session hands over again is checked, field for field and transition id included, against the
status built afresh from that session's job and conditions, and every carried gang condition against the message
gang would write, through contended simulations with enqueue refusals, fit errors, preemption, reclaim and a node
failure."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from pyvolcano.conf.loader import load_conf_file
from pyvolcano.framework import closing
from pyvolcano.framework.incremental.plan import Plan
from pyvolcano.framework.incremental.records import CloseCounts
from pyvolcano.framework.result import PodGroupStatus, SessionResult
from pyvolcano.framework.session import UNSCHEDULABLE, Session
from pyvolcano.sim.cluster import parse_cluster_spec
from pyvolcano.sim.engine import Simulator
from pyvolcano.sim.workload import synthetic

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def checked(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    seen: Counter[str] = Counter()
    handed: dict[str, PodGroupStatus] = {}
    orig = Session.close

    def checked_close(self: Session) -> SessionResult:
        parked = set(self.plan.parked)  # close moves the map on to the next session's parked jobs, in place
        blocked = set(self.plan.blocked)
        out = orig(self)
        for uid, st in out.podgroups.items():
            job = self.jobs[uid]
            if uid in parked or uid in blocked:
                # parked (Pending, refused by enqueue under the same epoch) or blocked (admitted, its allocate turn
                # skipped by the memo): gang did not look at it, and close hands over last session's object, whose
                # condition is the one gang would write now but for the transition id of the session that last
                # looked at the job (writers compare statuses without it)
                assert handed.get(uid) is st, uid
                (cond,) = st.conditions
                unready = max(job.min_available - job.ready_task_num(), 0)
                msg = f"{unready}/{len(job.tasks)} tasks in gang unschedulable: {job.fit_error()}"
                if uid in parked:
                    msg += f"; not enqueued: {job.enqueue_reason}"
                else:
                    assert not job.enqueue_reason and job.nodes_fit_errors, uid
                assert {k: v for k, v in cond.items() if k != "transitionID"} == {
                    "type": UNSCHEDULABLE, "status": "True", "reason": "NotEnoughResources", "message": msg}
                fresh = SessionResult()
                want, _ = closing.podgroup_status(self, fresh, job, CloseCounts(job), {UNSCHEDULABLE: cond})
                assert st == want, uid
                assert out.unschedulable.get(uid) == fresh.unschedulable.get(uid)
                seen["parked" if uid in parked else "blocked"] += 1
                continue
            conds = self.pg_conditions.get(uid, {})
            cond = conds.get(UNSCHEDULABLE)
            if cond is not None:  # gang's condition, carried or not, is the one it would build now
                unready = max(job.min_available - job.ready_task_num(), 0)
                msg = f"{unready}/{len(job.tasks)} tasks in gang unschedulable: {job.fit_error()}"
                if job.enqueue_reason:
                    msg += f"; not enqueued: {job.enqueue_reason}"
                assert cond == {"type": UNSCHEDULABLE, "status": "True", "transitionID": self.uid,
                                "reason": "NotEnoughResources", "message": msg}
                assert job.job_fit_errors == msg
                seen["gang"] += 1
            last = job.derived.get("waiting-status")
            if handed.get(uid) is st and last is not None and last[1][0] is st:
                fresh = SessionResult()
                want, _ = closing.podgroup_status(self, fresh, job, CloseCounts(job), conds)
                assert st == want, uid
                assert out.unschedulable.get(uid) == fresh.unschedulable.get(uid)
                assert not st.nominated
                seen["carried"] += 1
            handed[uid] = st
        return out

    monkeypatch.setattr(Session, "close", checked_close)
    real_release = Plan.release

    def release(self: Plan, uids: list[str]) -> None:  # blocked jobs preempt's or reclaim's turns look at
        seen["released"] += len(uids)
        real_release(self, uids)
    monkeypatch.setattr(Plan, "release", release)
    return seen


@pytest.mark.parametrize("conf_file", [None, "examples/confs/reclaim-preempt.conf"], ids=["default", "reclaim-preempt"])
def test_carried_waiting_statuses_equal_fresh_ones(checked: Counter[str], conf_file: str | None) -> None:
    sconf = load_conf_file(str(ROOT / conf_file) if conf_file else None)
    queues = [{"kind": "Queue", "metadata": {"name": q}, "spec": {"weight": w, "reclaimable": True}}
              for q, w in (("a", 1), ("b", 2))]
    wl = synthetic(seed=5, jobs=80, rate=2.0, queues={"a": 1, "b": 2}, gang_sizes=(1, 1, 2, 4), mean_duration=90,
                   gpu_fraction=0.5)
    sim = Simulator(parse_cluster_spec("3x{cpu: 8, memory: 32Gi, nvidia.com/gpu: 2}"), queues, wl, sconf,
                    node_failures=[(20.0, "node-0001", 30.0)])
    sim.run()
    # the checks must have had work: waiting statuses handed over again, and gang conditions checked
    assert checked["carried"] > 50 and checked["gang"] > checked["carried"] and checked["parked"] > 20
    # blocked jobs are left alone under enqueue, allocate and backfill; preempt and reclaim leave them alone only in
    # sessions whose turns are all proved idle, which this contended workload of two queues hardly has: nearly all
    # are looked at again before the turns (``Plan.release``), and their statuses are then built as any job's
    if conf_file is None:
        assert checked["blocked"] > 100 and not checked["released"]
    else:
        assert checked["released"] > 20
