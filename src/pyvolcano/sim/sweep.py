"""``pyvolcano sweep``: a grid of simulations (confs x knobs x seeds), run in parallel processes or on Ray.

A platform engineer's questions are grids ("binpack weight 1/5/10 x preempt on/off x three arrival rates, five seeds
each"), so a sweep file names one workload and cluster, the confs (files, or a base conf with overrides), knob grids
and seeds; every combination is a *point*, and every point is one ``simulate`` run through the same code path
(``sim/run.py: run_one``).  Results go to ``OUT/points/<point>/`` (the files ``simulate`` writes, plus
``point.json``), so a sweep is resumable: a point whose folder holds a finished run with the same parameters and
the same inputs (:class:`Plan`'s fingerprint) is not run again.  ``OUT/sweep.html`` and ``OUT/summary.csv``
aggregate every metric over the seeds (mean and a bootstrap interval kept within the metric's range), compare
every two confs at the same other knobs seed by seed, and name the best conf for the objective within each setting
of the other knobs (``sim/stats.py``).

Every input file (confs, manifests, CSV, the trace) is read once into a :class:`Bundle` of bytes.  Workers get the
bundle once (a process-pool initializer locally; one object in Ray's object store with ``--ray``) and write it to
a private folder, so a point runs the same on this machine and on a remote Ray worker that has none of the files.
"""

from __future__ import annotations

import csv
import hashlib
import itertools
import json
import math
import os
import random
import re
import shutil
import tempfile
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from pyvolcano import safeyaml
from pyvolcano.api.models import _integer, first_error
from pyvolcano.conf.loader import DEFAULT_CONF, load_conf
from pyvolcano.errors import UserError
from pyvolcano.sim import options as opts
from pyvolcano.sim.metric_registry import METRICS, SWEPT, metric

#: the files one point's run leaves in its folder (``sim/run.py: run_one``)
POINT_FILES = ("summary.json", "jobs.csv", "evictions.csv", "report.html")
#: a sweep larger than this is almost certainly a mistake in the grid (and would take days)
MAX_POINTS = 10_000
#: seconds a node stays down after a generated failure (grid knob ``node_failures``)
FAILURE_DOWNTIME = 1800.0

_Finite = ConfigDict(extra="forbid", allow_inf_nan=False)


# --------------------------------------------------------------------------------------------- the sweep file
class SyntheticWorkload(BaseModel):
    """``simulate --synthetic`` (sim/workload.py: synthetic); each number as the flag takes it (``sim/options.py``)."""

    model_config = _Finite
    jobs: opts.Jobs = 200
    rate: opts.Rate = 0.2
    gang_sizes: list[opts.GangSize] = Field(default_factory=lambda: [1, 1, 2, 4, 8], min_length=1)
    mean_duration: opts.MeanDuration = 600.0
    gpu_fraction: opts.Share = 0.5


class AlibabaWorkload(BaseModel):
    """``simulate --alibaba`` (sim/alibaba.py: AlibabaKnobs); ``trace_dir`` defaults to the bundled trace."""

    model_config = _Finite
    trace_dir: str | None = None
    nodes: opts.AliNodes = 120
    pods: opts.Pods = 1500
    #: the FGD paper's fill protocol (``simulate --fill``): 0 for a normal replay
    fill: opts.Fill = 0.0
    #: the pooled fractional ``nvidia.com/gpu`` mapping (``simulate --gpu-pool``)
    gpu_pool: bool = False
    compress: opts.Factor = 20.0
    duration_scale: opts.Factor = 1.0
    gang_window: opts.Window = 60.0
    max_gang: opts.Nodes = 8


class WorkloadSpec(BaseModel):
    """Exactly one workload source, as ``simulate`` takes them."""

    model_config = _Finite
    synthetic: SyntheticWorkload | None = None
    alibaba: AlibabaWorkload | None = None
    manifests: str | None = None
    csv: str | None = None

    @model_validator(mode="after")
    def _one(self) -> WorkloadSpec:
        given = [k for k in ("synthetic", "alibaba", "manifests", "csv") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(f"give exactly one of synthetic, alibaba, manifests, csv (got {given or 'none'})")
        return self

    @property
    def kind(self) -> str:
        return next(k for k in ("synthetic", "alibaba", "manifests", "csv") if getattr(self, k) is not None)


class ConfSpec(BaseModel):
    """One scheduler conf: a file (default: Volcano's default conf), with optional overrides (see :func:`override`)."""

    model_config = _Finite
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")
    file: str | None = None
    set: dict[str, Any] = Field(default_factory=dict)


class SimSettings(BaseModel):
    """``simulate``'s timing flags, with their bounds (``sim/options.py``)."""

    model_config = _Finite
    period: opts.Period = 1.0
    start_latency: opts.Delay = 1.0
    grace: opts.Delay = 5.0
    until: opts.Until | None = None


class Objective(BaseModel):
    model_config = _Finite
    metric: str = "wait_p95"
    goal: Literal["min", "max"] = "min"


Scalar = bool | int | float | str


class SweepSpec(BaseModel):
    """The sweep file (YAML); docs/simulator.md "Sweeps" documents every field."""

    model_config = _Finite
    name: str = "sweep"
    workload: WorkloadSpec
    cluster: str | None = None
    queues: str | None = None
    #: the cluster's network topology: a compact spec (``leaf=16,spine=8``, as ``simulate --topology``) or a file
    #: of HyperNode manifests (as ``--hypernodes``), not both
    topology: str | None = None
    hypernodes: str | None = None
    confs: list[ConfSpec] = Field(default_factory=lambda: [ConfSpec(name="default")], min_length=1)
    grid: dict[str, list[Scalar]] = Field(default_factory=dict)
    seeds: list[Annotated[int, _integer(0, 2**31 - 1)]] = Field(default_factory=lambda: [0], min_length=1)
    simulate: SimSettings = Field(default_factory=lambda: SimSettings())
    objective: Objective = Field(default_factory=lambda: Objective())

    @model_validator(mode="after")
    def _check(self) -> SweepSpec:
        names = [c.name for c in self.confs]
        if len(set(names)) != len(names):
            raise ValueError(f"confs: names must be unique, got {names}")
        if len(set(self.seeds)) != len(self.seeds) or min(self.seeds) < 0:
            raise ValueError("seeds: must be distinct integers >= 0")
        allowed = knob_names(self.workload.kind)
        if self.topology is not None and self.hypernodes is not None:
            raise ValueError("give topology (a compact spec) or hypernodes (a file), not both")
        if self.topology is not None:
            from pyvolcano.sim.topology import parse_topology_spec

            try:
                parse_topology_spec(self.topology)
            except UserError as exc:
                raise ValueError(str(exc).replace("--topology", "topology")) from None
        for v in self.grid.get("network_topology", []):
            from pyvolcano.sim.topology import parse_constraint

            try:
                c = parse_constraint(str(v))
            except UserError as exc:
                raise ValueError(str(exc).replace("--network-topology", "grid.network_topology")) from None
            if c.mode is not None and self.topology is None and self.hypernodes is None:
                raise ValueError(f"grid.network_topology: {v!r} needs a topology (topology: leaf=16,spine=8, or "
                                 "hypernodes: FILE)")
        for v in self.grid.get("partitions", []):
            from pyvolcano.sim.topology import parse_partitions

            if str(v).strip() == "none":
                continue
            try:
                pc = parse_partitions(str(v)).constraint
            except UserError as exc:
                raise ValueError(str(exc).replace("--partitions", "grid.partitions")) from None
            if pc.mode is not None and self.topology is None and self.hypernodes is None:
                raise ValueError(f"grid.partitions: {v!r} needs a topology (topology: leaf=16,spine=8, or "
                                 "hypernodes: FILE)")
        for k, values in self.grid.items():
            field = "nodes" if k == "cluster_size" and self.workload.kind == "alibaba" else k
            if field in opts.FIELDS:  # the bounds of the simulate option the knob sets
                for i, v in enumerate(values):
                    try:
                        values[i] = opts.check(field, v)
                    except ValueError as exc:
                        raise ValueError(f"grid.{k}: {exc} (as simulate {opts.flag(field)} takes it)") from None
            if not values:
                raise ValueError(f"grid.{k}: give at least one value")
            if len({json.dumps(v) for v in values}) != len(values):
                raise ValueError(f"grid.{k}: values must be distinct")
            if not (k.startswith("conf.") or k in allowed):
                raise ValueError(f"grid.{k}: unknown knob; for a {self.workload.kind} workload the knobs are "
                                 f"{', '.join(sorted(allowed))}, or conf.<override> (e.g. conf.actions)")
            if k == "cluster_size" and self.workload.kind != "alibaba" and not _compact_count(self.cluster):
                raise ValueError("grid.cluster_size: needs a compact --cluster spec such as '100x{cpu: 32}'")
        if self.workload.kind != "alibaba" and not self.cluster:
            raise ValueError("cluster: required (a Node YAML file or a spec like '10x{cpu: 32, memory: 128Gi}')")
        n = len(self.confs) * len(self.seeds) * math.prod(len(v) for v in self.grid.values())
        if n > MAX_POINTS:
            raise ValueError(f"the grid has {n} points, more than {MAX_POINTS}: narrow it")
        return self


def knob_names(kind: str) -> set[str]:
    """The grid knobs a workload kind understands (besides ``conf.<override>``)."""
    common = {"node_failures", "period", "grace", "network_topology", "network_topology_fraction", "partitions"}
    if kind == "synthetic":
        return common | {"jobs", "rate", "mean_duration", "gpu_fraction", "cluster_size"}
    if kind == "alibaba":
        return common | {"pods", "compress", "duration_scale", "gang_window", "max_gang", "cluster_size"}
    return common | {"cluster_size"}


def _compact_count(cluster: str | None) -> int | None:
    m = re.match(r"^\s*(\d+)\s*x", cluster or "", re.ASCII)
    return int(m.group(1)) if m and not Path(cluster or "").is_file() else None


def load_spec(path: str | Path) -> SweepSpec:
    """Read and validate a sweep file; every mistake is one UserError naming the file and field."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"cannot read sweep file {path}: {exc}") from None
    if len(text) > 1_000_000:
        raise UserError(f"{path}: a sweep file of {len(text)} bytes is too large (limit 1 MB)")
    data = safeyaml.load(text, str(path))  # bounded aliases, depth and size: a YAMLInputError names the file
    if not isinstance(data, dict):
        raise UserError(f"{path}: expected a mapping with workload, confs, grid, seeds")
    try:
        spec = SweepSpec.model_validate(data)
    except ValidationError as exc:
        where, msg = first_error(exc)
        if not where and ": " in msg and " " not in msg.split(": ", 1)[0]:  # a file-level check names its field
            where, msg = msg.split(": ", 1)
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise UserError(f"{path}: field {where or '(top)'}: {msg}{more}") from None
    return _relative_to(spec, p.resolve().parent)


def _relative_to(spec: SweepSpec, base: Path) -> SweepSpec:
    """Relative file names in a sweep file mean files next to it (as in a kustomization or compose file), so a
    sweep runs the same from any directory; a compact cluster spec such as ``10x{cpu: 8}`` is not a file."""

    def fix(name: str | None, must_exist: bool = True) -> str | None:
        if name is None or Path(name).is_absolute():
            return name
        cand = base / name
        return str(cand) if (cand.exists() or must_exist) else name

    for c in spec.confs:
        c.file = fix(c.file)
    w = spec.workload
    w.manifests, w.csv = fix(w.manifests), fix(w.csv)
    if w.alibaba is not None:
        w.alibaba.trace_dir = fix(w.alibaba.trace_dir)
    spec.cluster, spec.queues = fix(spec.cluster, False), fix(spec.queues, False)
    spec.hypernodes = fix(spec.hypernodes)
    return spec


# ------------------------------------------------------------------------------------------------- the points
@dataclass(frozen=True)
class Point:
    """One simulation of the sweep: a conf, one value of every grid knob, a seed."""

    conf: str
    params: tuple[tuple[str, Scalar], ...]
    seed: int

    @property
    def group(self) -> tuple[str, tuple[tuple[str, Scalar], ...]]:
        """What the seeds are averaged over."""
        return self.conf, self.params

    @property
    def folder(self) -> str:
        parts = [self.conf, *(f"{k}={v}" for k, v in self.params), f"seed={self.seed}"]
        name = "__".join(re.sub(r"[^A-Za-z0-9._=-]+", "-", str(p)) for p in parts)
        if len(name) > 150:  # long override values: keep the folder name short and unique
            name = name[:120] + "-" + hashlib.sha256(name.encode()).hexdigest()[:12]
        return name

    def as_json(self) -> dict[str, Any]:
        return {"conf": self.conf, "params": dict(self.params), "seed": self.seed}


def points(spec: SweepSpec) -> list[Point]:
    """Every combination, conf-major, in the grid's order, seeds last (so partial results fill groups)."""
    keys = list(spec.grid)
    out = []
    for conf in spec.confs:
        for values in itertools.product(*(spec.grid[k] for k in keys)):
            for seed in spec.seeds:
                out.append(Point(conf.name, tuple(zip(keys, values, strict=True)), seed))
    return out


# ------------------------------------------------------------------------------------------ confs and overrides
def override(conf_yaml: str, settings: dict[str, Any], source: str) -> str:
    """Apply overrides to a volcano-scheduler.conf text: ``actions: "enqueue, allocate, preempt"`` replaces the
    actions string; ``plugins.NAME.KEY: value`` sets a plugin's enable flag (``enable...``) or argument (anything
    else, e.g. ``plugins.binpack.binpack.weight: 5``) in every tier that has plugin NAME."""
    data = yaml.safe_load(conf_yaml)
    if not isinstance(data, dict):
        raise UserError(f"{source}: the base conf is not a mapping")
    for key, value in settings.items():
        if key == "actions":
            if not isinstance(value, str):
                raise UserError(f"{source}: set actions: expected a string such as 'enqueue, allocate'")
            data["actions"] = value
            continue
        parts = key.split(".", 2)
        if len(parts) != 3 or parts[0] != "plugins" or not parts[1] or not parts[2]:
            raise UserError(f"{source}: set {key}: expected 'actions' or 'plugins.NAME.KEY'")
        _, plugin, arg = parts
        found = False
        for tier in data.get("tiers") or []:
            for opt in (tier or {}).get("plugins") or []:
                if isinstance(opt, dict) and opt.get("name") == plugin:
                    found = True
                    if arg.startswith("enable"):
                        opt[arg] = value
                    else:
                        opt.setdefault("arguments", {})[arg] = value
        if not found:
            raise UserError(f"{source}: set {key}: the conf has no plugin {plugin!r}")
    return yaml.safe_dump(data, sort_keys=False)


def conf_text(spec: SweepSpec, conf: ConfSpec, point: Point, files: Bundle | None) -> str:
    """The conf a point runs with: its file (or Volcano's default), its own overrides, then the grid's
    ``conf.*`` knobs; validated by the project's conf loader."""
    ali = spec.workload.alibaba
    default = DEFAULT_CONF
    if ali is not None and not ali.gpu_pool:  # as simulate --alibaba: deviceshare places the per-device GPUs
        from pyvolcano.sim.alibaba import DEVICE_CONF

        default = DEVICE_CONF
    base = files.text(conf.file) if files is not None and conf.file else (
        Path(conf.file).read_text() if conf.file else default)
    settings = dict(conf.set)
    settings.update({k[5:]: v for k, v in point.params if k.startswith("conf.")})
    text = override(base, settings, f"sweep conf {conf.name}") if settings else base
    load_conf(text, f"sweep conf {conf.name}")
    return text


# ------------------------------------------------------------------------------------------------- the bundle
@dataclass
class Bundle:
    """Every input file of a sweep, as bytes, keyed by the path the sweep file gives (directories by file)."""

    files: dict[str, bytes] = field(default_factory=dict)

    @property
    def digest(self) -> str:
        h = hashlib.sha256()
        for k in sorted(self.files):
            h.update(k.encode())
            h.update(hashlib.sha256(self.files[k]).digest())
        return h.hexdigest()[:16]

    def add(self, path: str) -> None:
        p = Path(path)
        if p.is_dir():
            for f in sorted(p.iterdir()):
                if f.is_file():
                    self.files[str(Path(path) / f.name)] = f.read_bytes()
        elif p.is_file():
            self.files[path] = p.read_bytes()
        else:
            raise UserError(f"sweep input {path}: no such file or directory")

    def text(self, path: str) -> str:
        return self.files[path].decode()

    def materialise(self, root: Path) -> dict[str, str]:
        """Write the files under ``root``; the map from each original path to its copy (directories too)."""
        where: dict[str, str] = {}
        for i, (key, data) in enumerate(sorted(self.files.items())):
            parent = str(Path(key).parent)
            d = Path(where.setdefault(f"dir:{parent}", str(root / f"d{i}")))
            d.mkdir(parents=True, exist_ok=True)
            (d / Path(key).name).write_bytes(data)
            where[key] = str(d / Path(key).name)
            where[parent] = str(d)
        return where


def bundle_for(spec: SweepSpec) -> Bundle:
    b = Bundle()
    for c in spec.confs:
        if c.file:
            b.add(c.file)
    w = spec.workload
    for path in (w.manifests, w.csv):
        if path:
            b.add(path)
    if w.alibaba is not None:
        from pyvolcano.sim import alibaba

        d = w.alibaba.trace_dir or str(alibaba.default_dir())
        b.add(d)
    for path in (spec.cluster, spec.queues, spec.hypernodes):
        if path and Path(path).is_file():
            b.add(path)
    return b


# ------------------------------------------------------------------------------------------------ one point
_worker: dict[str, Any] = {}


def _init_worker(bundle: Bundle, spec_json: str) -> None:
    """Process-pool initializer: the bundle once per worker process, written to a private folder."""
    root = Path(tempfile.mkdtemp(prefix="pyvolcano-sweep-"))
    _worker.update(bundle=bundle, spec=SweepSpec.model_validate_json(spec_json), paths=bundle.materialise(root))


def _local(path: str | None, paths: dict[str, str]) -> str | None:
    return paths.get(path, path) if path else path


def run_point(bundle: Bundle, spec: SweepSpec, paths: dict[str, str], point: Point) -> dict[str, bytes]:
    """One ``simulate`` run of ``point`` into a scratch folder; the files it wrote, as bytes."""
    from pyvolcano.sim import alibaba
    from pyvolcano.sim.run import Inputs, load_cluster, load_queues, queue_weights, run_one
    from pyvolcano.sim.workload import from_manifests, load_csv, synthetic

    knobs = dict(point.params)
    w = spec.workload
    cluster = _local(spec.cluster, paths)
    if "cluster_size" in knobs and w.alibaba is None and cluster:
        cluster = re.sub(r"^\s*\d+", str(int(knobs["cluster_size"])), cluster, count=1, flags=re.ASCII)
    queues = _local(spec.queues, paths)
    if w.synthetic is not None:
        s = w.synthetic.model_copy(update={k: knobs[k] for k in ("jobs", "rate", "mean_duration", "gpu_fraction")
                                           if k in knobs})
        wl = synthetic(seed=point.seed, jobs=int(s.jobs), rate=float(s.rate), queues=queue_weights(queues),
                       gang_sizes=tuple(s.gang_sizes), mean_duration=float(s.mean_duration),
                       gpu_fraction=float(s.gpu_fraction))
        inputs = Inputs(load_cluster(str(cluster)), load_queues(queues, wl), wl)
    elif w.alibaba is not None:
        a = w.alibaba
        d = _local(a.trace_dir or str(alibaba.default_dir()), paths)
        nodes = int(knobs.get("cluster_size", a.nodes))
        k = alibaba.AlibabaKnobs(nodes=nodes, pods=int(knobs.get("pods", a.pods)),
                                 compress=float(knobs.get("compress", a.compress)),
                                 duration_scale=float(knobs.get("duration_scale", a.duration_scale)),
                                 gang_window=float(knobs.get("gang_window", a.gang_window)),
                                 max_gang=int(knobs.get("max_gang", a.max_gang)), seed=point.seed,
                                 fill=float(knobs.get("fill", a.fill)), gpu_pool=a.gpu_pool)
        from pyvolcano.sim.run import alibaba_inputs

        inputs = alibaba_inputs(d, k, cluster)
    else:
        from pyvolcano.cache.manifests import load_objects

        wl = from_manifests(load_objects(str(_local(w.manifests, paths)))) if w.manifests else \
            load_csv(str(_local(w.csv, paths)))
        inputs = Inputs(load_cluster(str(cluster)), load_queues(queues, wl), wl)
    inputs.node_failures = node_failures(inputs, int(knobs.get("node_failures", 0)), point.seed)
    if str(knobs.get("partitions", "none")).strip() != "none":  # sub-groups on the full gangs, as --partitions
        from pyvolcano.sim import topology as st

        inputs.workload.jobs, _ = st.with_partitions(inputs.workload.jobs, st.parse_partitions(str(knobs["partitions"])))
    if spec.topology or spec.hypernodes:
        from pyvolcano.sim import topology as st

        inputs.hypernodes, _ = st.load_or_build(_local(spec.hypernodes, paths), spec.topology, inputs.nodes)
        if "network_topology" in knobs:  # the same gangs for every constraint of the grid (seeded by the point)
            c = st.parse_constraint(str(knobs["network_topology"]))
            inputs.workload.jobs = st.with_constraint(inputs.workload.jobs, c,
                                                      float(knobs.get("network_topology_fraction", 1.0)),
                                                      point.seed)
    conf_spec = next(c for c in spec.confs if c.name == point.conf)
    text = conf_text(spec, conf_spec, point, bundle)
    sim = spec.simulate
    with tempfile.TemporaryDirectory(prefix="pyvolcano-point-") as tmp:
        out = Path(tmp)
        run_one(inputs, load_conf(text, f"sweep conf {point.conf}"), point.conf, out,
                period=float(knobs.get("period", sim.period)), start_latency=sim.start_latency,
                grace=float(knobs.get("grace", sim.grace)), until=sim.until, progress=False,
                title=f"{spec.name}: {point.folder}")
        files = {name: (out / name).read_bytes() for name in POINT_FILES if (out / name).is_file()}
    files["conf.yaml"] = text.encode()
    return files


def node_failures(inputs: Any, count: int, seed: int) -> list[tuple[float, str, float]]:
    """``count`` node failures drawn with ``seed``: distinct nodes, each at a uniform time within the workload's
    arrival window, down for FAILURE_DOWNTIME seconds."""
    if count <= 0:
        return list(inputs.node_failures)
    names = [n["metadata"]["name"] for n in inputs.nodes]
    if count > len(names):
        raise UserError(f"grid node_failures={count}: the cluster has only {len(names)} nodes")
    rnd = random.Random(seed * 7919 + count)
    last = max((t for t, _ in inputs.workload.jobs), default=0.0)
    return sorted((rnd.uniform(0, max(last, 1.0)), n, FAILURE_DOWNTIME) for n in rnd.sample(names, count))


def _pool_task(point: Point) -> tuple[Point, dict[str, bytes] | str]:
    try:
        return point, run_point(_worker["bundle"], _worker["spec"], _worker["paths"], point)
    except UserError as exc:
        return point, str(exc)


# ------------------------------------------------------------------------------------------------ the runner
@dataclass
class SweepRun:
    spec: SweepSpec
    out: Path
    done: list[Point] = field(default_factory=list)
    skipped: list[Point] = field(default_factory=list)
    failed: dict[Point, str] = field(default_factory=dict)


@dataclass
class Plan:
    """A sweep ready to run: its points, its input bundle, and each point's fingerprint: a digest of everything
    its result depends on besides its parameters (the conf text it runs, the workload, cluster and simulation
    settings, the input files' contents), so editing a conf file or a setting reruns exactly the points it
    touches."""

    spec: SweepSpec
    bundle: Bundle
    points: list[Point]
    fingerprints: dict[Point, str]

    def record(self, point: Point) -> dict[str, Any]:
        return {**point.as_json(), "fingerprint": self.fingerprints[point]}

    def finished(self, out: Path, point: Point) -> bool:
        """The point's folder has a summary, and its record matches (same parameters and fingerprint)."""
        d = out / "points" / point.folder
        try:
            return (d / "summary.json").is_file() and json.loads((d / "point.json").read_text()) == self.record(point)
        except (OSError, ValueError):
            return False


def plan(spec: SweepSpec) -> Plan:
    """Read the inputs and check every conf with its overrides (a bad one is refused before anything runs)."""
    bundle = bundle_for(spec)
    inputs = {"workload", "cluster", "queues", "simulate"}
    if spec.topology is not None or spec.hypernodes is not None:  # only then, so older sweeps keep their digests
        inputs |= {"topology", "hypernodes"}
    settings = json.dumps([spec.model_dump(mode="json", include=inputs), bundle.digest], sort_keys=True)
    texts: dict[tuple[str, tuple[tuple[str, Scalar], ...]], str] = {}
    fps = {}
    pts = points(spec)
    for p in pts:
        key = (p.conf, tuple(kv for kv in p.params if kv[0].startswith("conf.")))
        if key not in texts:
            texts[key] = conf_text(spec, next(c for c in spec.confs if c.name == p.conf), p, bundle)
        fps[p] = hashlib.sha256((texts[key] + settings).encode()).hexdigest()[:16]
    return Plan(spec, bundle, pts, fps)


def _store(out: Path, record: dict[str, Any], folder: str, files: dict[str, bytes]) -> None:
    d = out / "points" / folder
    tmp = d.with_name(d.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for name, data in files.items():
        (tmp / name).write_bytes(data)
    (tmp / "point.json").write_text(json.dumps(record, indent=2))
    shutil.rmtree(d, ignore_errors=True)
    tmp.rename(d)  # a point folder appears whole or not at all, so an interrupted sweep resumes cleanly


def run_sweep(spec: SweepSpec | Plan, out: Path, *, workers: int | None = None, ray_address: str | None = None,
              progress: Callable[[int, int], None] | None = None) -> SweepRun:
    """Run every unfinished point (locally in ``workers`` processes, or as Ray tasks) and store its files."""
    pl = spec if isinstance(spec, Plan) else plan(spec)
    out.mkdir(parents=True, exist_ok=True)
    run = SweepRun(pl.spec, out)
    todo: list[Point] = []
    for p in pl.points:
        (run.skipped if pl.finished(out, p) else todo).append(p)
    total = len(todo)
    if progress is not None:
        progress(0, total)
    results = _ray_results(pl.bundle, pl.spec, todo, ray_address) if ray_address is not None else \
        _pool_results(pl.bundle, pl.spec, todo, workers)
    for n, (point, files) in enumerate(results, 1):
        if isinstance(files, str):
            run.failed[point] = files
        else:
            _store(out, pl.record(point), point.folder, files)
            run.done.append(point)
        if progress is not None:
            progress(n, total)
    return run


def _pool_results(bundle: Bundle, spec: SweepSpec, todo: list[Point],
                  workers: int | None) -> Iterable[tuple[Point, dict[str, bytes] | str]]:
    if not todo:
        return
    workers = max(1, min(workers or os.cpu_count() or 1, len(todo)))
    with ProcessPoolExecutor(workers, initializer=_init_worker, initargs=(bundle, spec.model_dump_json())) as pool:
        futures = [pool.submit(_pool_task, p) for p in todo]
        for f in as_completed(futures):
            yield f.result()


def _ray_results(bundle: Bundle, spec: SweepSpec, todo: list[Point],
                 address: str) -> Iterable[tuple[Point, dict[str, bytes] | str]]:
    """Each point a Ray task; the bundle is put in the object store once and every task gets its reference."""
    try:
        import ray
    except ImportError:
        raise UserError("--ray needs Ray: pip install 'pyvolcano[ray]'") from None
    if not ray.is_initialized():
        ray.init(address=address or None, log_to_driver=False)
    if not todo:
        return
    bundle_ref = ray.put(bundle)
    spec_json = spec.model_dump_json()
    task = ray.remote(_ray_point)
    pending = {task.remote(bundle_ref, spec_json, p): p for p in todo}
    while pending:
        ready, _ = ray.wait(list(pending), num_returns=1)
        for ref in ready:
            point = pending.pop(ref)
            yield point, ray.get(ref)


def _ray_point(bundle: Bundle, spec_json: str, point: Point) -> dict[str, bytes] | str:
    """A Ray task: materialise the bundle once per worker process (keyed by its digest), run the point."""
    key = bundle.digest
    if _worker.get("digest") != key:
        _init_worker(bundle, spec_json)
        _worker["digest"] = key
    try:
        return run_point(_worker["bundle"], SweepSpec.model_validate_json(spec_json), _worker["paths"], point)
    except UserError as exc:
        return str(exc)


# ------------------------------------------------------------------------------------------- aggregate metrics
def point_metrics(summary: dict[str, Any]) -> dict[str, float | None]:
    """The flat metrics of one run: the swept metrics of the registry (``metric_registry.SWEPT``), then for every
    queue those the registry has per queue (``wait_p50[q]``, ``wait_p95[q]``)."""
    swept = [METRICS[name] for name in SWEPT]
    out: dict[str, float | None] = {m.name: m.value(summary) for m in swept}
    for q, qs in sorted((summary.get("per_queue") or {}).items()):
        for m in swept:
            if m.queue_path is not None:
                out[f"{m.name}[{q}]"] = m.queue_value(qs or {})
    return out


def conf_side(params: dict[str, Scalar]) -> dict[str, Scalar]:
    """The knobs that change the conf (``conf.*``): with the conf's name they say *what* is compared."""
    return {k: v for k, v in params.items() if k.startswith("conf.")}


def setting(params: dict[str, Scalar]) -> dict[str, Scalar]:
    """The other knobs (load, cluster, workload, timing): the *situation* confs are compared in.  A best point
    and a paired comparison are only ever within one setting: a conf is not better for being run at a lower
    load."""
    return {k: v for k, v in params.items() if not k.startswith("conf.")}


@dataclass
class Row:
    """One group of points (a conf and knob values) aggregated over its seeds: per metric its mean and the
    bootstrap interval of the mean, clipped to the metric's range (``sim/stats.py: interval``)."""

    conf: str
    params: dict[str, Scalar]
    seeds: list[int]
    metrics: dict[str, tuple[float, float, float] | None]
    #: every seed's own metrics (what the paired comparisons pair)
    per_seed: dict[int, dict[str, float | None]] = field(default_factory=dict)

    @property
    def variant(self) -> str:
        """The conf as compared: its name, with its ``conf.*`` knob values when the grid has any."""
        c = conf_side(self.params)
        return f"{self.conf} ({describe(c)})" if c else self.conf

    @property
    def setting_key(self) -> str:
        return json.dumps(setting(self.params), sort_keys=True)

    def as_json(self) -> dict[str, Any]:
        return {"conf": self.conf, "params": self.params, "seeds": self.seeds,
                "metrics": {k: (None if v is None else {"mean": round(v[0], 4), "ci": [round(v[1], 4),
                                                                                          round(v[2], 4)]})
                            for k, v in self.metrics.items()}}


def aggregate(pl: Plan, out: Path) -> list[Row]:
    """Every group with at least one finished point, in the sweep's order."""
    from pyvolcano.sim.stats import interval

    groups: dict[tuple[str, tuple[tuple[str, Scalar], ...]], list[tuple[int, dict[str, float | None]]]] = {}
    for p in pl.points:
        f = out / "points" / p.folder / "summary.json"
        if pl.finished(out, p):
            groups.setdefault(p.group, []).append((p.seed, point_metrics(json.loads(f.read_text()))))
    rows = []
    for (conf, params), runs in groups.items():
        names = list(dict.fromkeys(k for _, m in runs for k in m))
        metrics: dict[str, tuple[float, float, float] | None] = {}
        for name in names:
            vals = [float(v) for _, m in runs if (v := m.get(name)) is not None]
            metrics[name] = interval(vals, metric(name)) if vals else None
        rows.append(Row(conf, dict(params), [s for s, _ in runs], metrics, dict(runs)))
    return rows


def best(rows: list[Row], objective: Objective) -> Row | None:
    """The row with the best mean of the objective metric (rows without it are never best); give it the rows
    of one setting (:func:`best_per_setting`)."""
    scored = [(r.metrics[objective.metric][0], i, r) for i, r in enumerate(rows)  # type: ignore[index]
              if r.metrics.get(objective.metric) is not None]
    if not scored:
        return None
    return (min(scored) if objective.goal == "min" else max(scored, key=lambda x: (x[0], -x[1])))[2]


def by_setting(rows: list[Row]) -> dict[str, list[Row]]:
    """The rows grouped by the setting of the other knobs (:func:`setting`), in the sweep's order."""
    out: dict[str, list[Row]] = {}
    for r in rows:
        out.setdefault(r.setting_key, []).append(r)
    return out


def best_per_setting(rows: list[Row], objective: Objective) -> list[Row]:
    """The best conf within each setting of the other knobs (none for a setting where no row has the metric)."""
    return [b for group in by_setting(rows).values() if (b := best(group, objective)) is not None]


def best_note(top: Row, pairs: list[dict[str, Any]], objective: str) -> str:
    """Whether the best conf of a setting is clearly better (``paired_comparisons``' verdicts on the objective)
    than every other conf there: "clearly better than every other conf", or which ones it is not clearly better
    than ("" without others to compare)."""
    knobs = setting(top.params)
    unclear = []
    mine = [p for p in pairs if p["metric"] == objective and p["knobs"] == knobs and top.variant in (p["a"], p["b"])]
    for p in mine:
        other, won = (p["a"], p["verdict"].startswith("better")) if p["b"] == top.variant else \
            (p["b"], p["verdict"].startswith("worse"))
        if not won:
            unclear.append(other)
    if not mine:
        return ""
    return "clearly better than every other conf" if not unclear else \
        "not clearly better than " + ", ".join(unclear)


def paired_comparisons(rows: list[Row], metrics: Sequence[str] = SWEPT) -> list[dict[str, Any]]:
    """For every two confs (``a`` before ``b`` in the sweep's order) at the same other knobs, and every metric
    both have: the per-seed differences ``b - a`` on their common seeds (``sim/stats.py: paired``)."""
    from pyvolcano.sim.stats import paired

    out = []
    for group in by_setting(rows).values():
        for i, ra in enumerate(group):
            for rb in group[i + 1:]:
                for name in metrics:
                    if ra.metrics.get(name) is None or rb.metrics.get(name) is None:
                        continue
                    p = paired(METRICS[name], {s: m.get(name) for s, m in ra.per_seed.items()},
                               {s: m.get(name) for s, m in rb.per_seed.items()})
                    if p.n:
                        out.append({"metric": name, "a": ra.variant, "b": rb.variant, "knobs": setting(ra.params),
                                    **{k: v for k, v in p.as_json().items() if k != "metric"}})
    return out


def write_summary(pl: Plan, out: Path, rows: list[Row]) -> dict[str, Any]:
    """summary.csv (one row per group: per metric its mean and interval ``_lo``/``_hi``), results.csv (one row per
    finished point), sweep.json (everything, for programs: the rows with ``ci: [lo, hi]``, the best conf per
    setting of the other knobs, the ``paired`` comparisons) and sweep.html."""
    spec = pl.spec
    tops = best_per_setting(rows, spec.objective)
    metric_names = list(dict.fromkeys(k for r in rows for k in r.metrics))
    knob_names_ = list(spec.grid)
    with (out / "summary.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["conf", *knob_names_, "seeds", *(f"{m}{s}" for m in metric_names for s in ("", "_lo", "_hi"))])
        for r in rows:
            cells: list[Any] = [r.conf, *(r.params.get(k) for k in knob_names_), len(r.seeds)]
            for m in metric_names:
                v = r.metrics.get(m)
                cells += ["", "", ""] if v is None else [round(x, 4) for x in v]
            w.writerow(cells)
    with (out / "results.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["conf", *knob_names_, "seed", *metric_names])
        for p in pl.points:
            if pl.finished(out, p):
                pm = point_metrics(json.loads((out / "points" / p.folder / "summary.json").read_text()))
                w.writerow([p.conf, *(dict(p.params).get(k) for k in knob_names_), p.seed,
                            *("" if pm.get(x) is None else round(pm[x] or 0.0, 4) for x in metric_names)])
    pairs = paired_comparisons(rows)
    doc = {"name": spec.name, "objective": spec.objective.model_dump(), "points": len(pl.points),
           "rows": [r.as_json() for r in rows],
           "best": [{"knobs": setting(t.params), **t.as_json()} for t in tops],
           "paired": pairs, "spec": json.loads(spec.model_dump_json())}
    (out / "sweep.json").write_text(json.dumps(doc, indent=2))
    from pyvolcano.sim.sweep_report import write_page

    write_page(out / "sweep.html", spec, rows, tops, pairs)
    return doc


def label(knob: str) -> str:
    """A knob's short name for tables and plots: ``conf.plugins.binpack.binpack.weight`` -> ``binpack.weight``,
    ``conf.actions`` -> ``actions``."""
    parts = knob.split(".", 3)
    if parts[0] == "conf" and len(parts) == 4 and parts[1] == "plugins":
        return parts[3]
    return knob[5:] if knob.startswith("conf.") else knob


def describe(params: dict[str, Scalar]) -> str:
    return ", ".join(f"{label(k)}={v}" for k, v in params.items()) or "-"


def num(v: float | None) -> str:
    """A number in few characters: whole from 100 up, three significant digits below ("-" for none)."""
    if v is None:
        return "-"
    return f"{v:.0f}" if abs(v) >= 100 else f"{v:.3g}"


def fmt(v: tuple[float, float, float] | None) -> str:
    """``mean [lo, hi]`` (just the mean when the interval is a point: one seed, or every seed the same)."""
    if v is None:
        return "-"
    return f"{num(v[0])} [{num(v[1])}, {num(v[2])}]" if v[1] != v[2] else num(v[0])
