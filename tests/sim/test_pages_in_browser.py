"""The pages a person opens (simulate's report.html, sweep.html) in a real headless browser (Debian's chromium through
Playwright): they render, every plot decodes, nothing is logged to the console, and no request leaves the page."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from pyvolcano.conf.loader import load_conf_file
from pyvolcano.sim import sweep as sw
from pyvolcano.sim.run import Inputs, load_cluster, load_queues, queue_weights, run_one
from pyvolcano.sim.workload import synthetic

BROWSER = shutil.which("chromium") or shutil.which("chromium-browser")

pytestmark = pytest.mark.skipif(BROWSER is None, reason="no chromium on PATH (Debian: apt-get install chromium; "
                                                        "`make test` installs it when it can)")


def open_page(path: Path, screenshot: Path | None = None) -> dict[str, Any]:
    """Load ``path`` in headless chromium; what the page showed and did.  Every request is intercepted: the page's
    own file is served, anything else is recorded and refused (so a page that fetches nothing loads the same)."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (the test extra has it)")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=BROWSER, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            console: list[str] = []
            requests: list[str] = []
            page.on("console", lambda m: console.append(f"{m.type}: {m.text}"))
            page.on("pageerror", lambda e: console.append(f"pageerror: {e}"))
            page.on("request", lambda r: requests.append(r.url))
            own = path.resolve().as_uri()
            refused: list[str] = []

            def route(r: Any) -> None:
                if r.request.url == own:
                    r.continue_()
                else:
                    refused.append(r.request.url)
                    r.abort()
            page.route("**/*", route)
            page.goto(own, wait_until="load")
            images = page.eval_on_selector_all("img", "els => els.map(e => [e.alt, e.complete, e.naturalWidth])")
            text = page.inner_text("body")
            height = page.evaluate("document.body.scrollHeight")
            if screenshot is not None:
                page.screenshot(path=str(screenshot), full_page=True)
        finally:
            browser.close()
    return {"console": console, "requests": requests, "images": images, "text": text, "height": height,
            "refused": refused}


def check(seen: dict[str, Any], path: Path) -> None:
    assert seen["console"] == [], seen["console"]
    assert seen["requests"] == [path.resolve().as_uri()], f"requests leave the page: {seen['requests']}"
    assert seen["refused"] == [], f"requests leave the page: {seen['refused']}"
    assert seen["images"], "no plot on the page"
    for alt, complete, width in seen["images"]:
        assert complete and width > 0, f"plot {alt!r} did not decode"


def test_simulation_report_renders_offline(tmp_path: Path) -> None:
    wl = synthetic(seed=0, jobs=20, rate=0.5, queues=queue_weights("a:1,b:1"), gang_sizes=(1, 2), mean_duration=60)
    inputs = Inputs(load_cluster("3x{cpu: 8, memory: 32Gi, nvidia.com/gpu: 2}"), load_queues("a:1,b:1", wl), wl)
    run_one(inputs, load_conf_file(None), "default", tmp_path, progress=False)
    page = tmp_path / "report.html"
    seen = open_page(page)
    check(seen, page)
    assert "Utilisation" in seen["text"] or "utilisation" in seen["text"]


def test_sweep_page_renders_offline(tmp_path: Path) -> None:
    spec_file = tmp_path / "s.yaml"
    spec_file.write_text(yaml.safe_dump({
        "workload": {"synthetic": {"jobs": 10, "rate": 0.5, "gang_sizes": [1, 2], "mean_duration": 30}},
        "cluster": "2x{cpu: 8, memory: 32Gi}", "confs": [{"name": "default"}], "grid": {"rate": [0.2, 0.5]},
        "seeds": [0]}))
    pl = sw.plan(sw.load_spec(spec_file))
    sw.run_sweep(pl, tmp_path / "out", workers=1)
    sw.write_summary(pl, tmp_path / "out", sw.aggregate(pl, tmp_path / "out"))
    page = tmp_path / "out" / "sweep.html"
    seen = open_page(page)
    check(seen, page)
    assert "Best for min wait_p95, within each setting of the other knobs" in seen["text"]
    assert "Only one conf per setting: nothing to pair." in seen["text"]
    assert "metrics against rate" in seen["text"]


def test_comparison_page_renders_offline(tmp_path: Path) -> None:
    """The --compare / demo page: two confs on one contended workload (preempt+reclaim evicts), rendered in
    chromium with every request intercepted; the screenshot is kept for a person to look at
    (``PYVOLCANO_SCREENSHOT=path`` copies it there)."""
    import os

    from pyvolcano.sim.run import Run, common_window, compare_page

    wl = synthetic(seed=3, jobs=30, rate=0.5, queues=queue_weights("a:1,b:2"), gang_sizes=(1, 2, 4),
                   mean_duration=200)
    inputs = Inputs(load_cluster("4x{cpu: 8, memory: 32Gi, nvidia.com/gpu: 2}"), load_queues("a:1,b:2", wl), wl,
                    settings={"workload": "synthetic, 30 jobs"})
    runs: list[Run] = []
    root = Path(__file__).resolve().parents[2]
    for name, conf in (("default", None), ("reclaim-preempt", str(root / "examples/confs/reclaim-preempt.conf"))):
        run_one(inputs, load_conf_file(conf), name, tmp_path / name, progress=False, keep=runs)
    page = compare_page(runs, common_window(runs), tmp_path / "compare.html", "compare", ["default", "reclaim-preempt"])
    assert runs[1].result.eviction_log, "the workload must make preempt+reclaim evict"
    shot = tmp_path / "compare.png"
    seen = open_page(page, shot)
    check(seen, page)
    assert [alt for alt, _, _ in seen["images"]] == ["utilisation", "queues", "wait_cdf", "throughput", "wait_stages",
                                                     "evictions"]
    for words in ("At a glance: p95 wait per queue, and what it cost", "Conf diff: default", "GPU-hours thrown away",
                  "Evictions: who displaced whom", "reclaim-preempt vs default, all 30 jobs: wait mean",
                  "mean wait, job by job: ", "p95 wait: "):
        assert words in seen["text"], words
    assert shot.stat().st_size > 50_000 and seen["height"] > 3000
    if os.environ.get("PYVOLCANO_SCREENSHOT"):
        shutil.copy(shot, os.environ["PYVOLCANO_SCREENSHOT"])


def test_topology_comparison_renders_offline(tmp_path: Path) -> None:
    """The spread-vs-wait section of a comparison with and without a hard topology constraint (issue 14 item 9;
    the constrained run's gangs also cut into partitions with a hard constraint of their own): rendered in
    chromium, its plot decodes, and the tables name every LCA tier and the sub-groups' spread;
    ``PYVOLCANO_TOPO_SCREENSHOT=path`` keeps the screenshot for a person to look at."""
    import dataclasses
    import os

    from pyvolcano.sim import topology as st
    from pyvolcano.sim.run import Run, common_window, compare_page

    root = Path(__file__).resolve().parents[2]
    conf = load_conf_file(str(root / "examples/confs/network-topology.conf"))
    wl = synthetic(seed=2, jobs=24, rate=0.3, gang_sizes=(2, 4), mean_duration=120, gpu_fraction=0)
    nodes = load_cluster("8x{cpu: 4, memory: 16Gi}")
    base = Inputs(nodes, load_queues(None, wl), wl, settings={"workload": "synthetic, 24 gangs"},
                  hypernodes=st.spec_hypernodes("leaf=2,spine=2", [n["metadata"]["name"] for n in nodes]))
    runs: list[Run] = []
    for c in ("none", "hard:1"):
        jobs = st.with_constraint(wl.jobs, st.parse_constraint(c))
        if c == "hard:1":  # with sub-groups too: partitions of 2 pods, each in a leaf
            jobs, _ = st.with_partitions(jobs, st.parse_partitions("2:hard:leaf"))
        inputs = dataclasses.replace(base, workload=dataclasses.replace(wl, jobs=jobs))
        run_one(inputs, conf, c, tmp_path / c.replace(":", "-"), progress=False, keep=runs)
    page = compare_page(runs, common_window(runs), tmp_path / "compare.html", "topology", ["none", "hard:1"])
    shot = tmp_path / "compare.png"
    seen = open_page(page, shot)
    check(seen, page)
    assert "spread_wait" in [alt for alt, _, _ in seen["images"]]
    for words in ("Network topology: spread vs wait", "tier 0 (one node)", "tier 1 (leaf)", "tier 2 (spine)",
                  "tier 3 (above all)", "By constraint", "hard constraint broken", "Sub-groups (partitions)",
                  "no sub-groups", "partition hard constraint broken"):
        assert words in seen["text"], words
    if os.environ.get("PYVOLCANO_TOPO_SCREENSHOT"):
        shutil.copy(shot, os.environ["PYVOLCANO_TOPO_SCREENSHOT"])
