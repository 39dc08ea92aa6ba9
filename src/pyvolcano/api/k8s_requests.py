"""What a pod requests as Kubernetes' scores count it: missing container requests filled with the scheduler's
defaults (``k8s.io/kubernetes/pkg/scheduler/util: DefaultMilliCPURequest, DefaultMemoryRequest``, applied by
``resourcehelper.PodRequests`` with ``NonMissingContainerRequests``).  Computed once per pod when the cache reads
it (``TaskInfo.nonzero``), since every session adds it up for every pod on every node."""

from __future__ import annotations

from typing import Any

import numpy as np

from pyvolcano.api.quantity import to_milli, to_units
from pyvolcano.errors import QuantityError

GPU = "nvidia.com/gpu"
#: 100m cpu and 200 MiB memory for a container that states no request of that resource
DEFAULT_MILLI_CPU = 100.0
DEFAULT_MEMORY = 200.0 * 1024 * 1024


def _container_nonzero(c: Any) -> tuple[float, float]:
    reqs = ((c or {}).get("resources") or {}).get("requests") or {}
    try:
        cpu = to_milli(reqs["cpu"]) if "cpu" in reqs else DEFAULT_MILLI_CPU
        mem = to_units(reqs["memory"]) if "memory" in reqs else DEFAULT_MEMORY
    except QuantityError:  # the cache has already rejected such a pod; count it as stated nothing
        cpu, mem = DEFAULT_MILLI_CPU, DEFAULT_MEMORY
    return cpu, mem


def _states_cpu_and_memory(spec: dict[str, Any]) -> bool:
    for key in ("containers", "initContainers"):
        for c in spec.get(key) or []:
            reqs = ((c or {}).get("resources") or {}).get("requests") or {}
            if "cpu" not in reqs or "memory" not in reqs:
                return False
    return True


def nonzero_requests_or(pod: dict[str, Any], stated: tuple[float, float]) -> tuple[float, float]:
    """``nonzero_requests``, or ``stated`` (the pod's own cpu and memory request, already parsed) when every
    container states both, which is then the same thing: parsing a session's running pods again costs."""
    spec = pod.get("spec") or {}
    return stated if _states_cpu_and_memory(spec) else nonzero_requests(pod)


def nonzero_requests(pod: dict[str, Any]) -> tuple[float, float]:
    """(cpu millicores, memory bytes) the pod asks for as Kubernetes' scores count it: a container that states
    no cpu or memory request counts the default for it (``resourcehelper.PodRequests`` with
    ``NonMissingContainerRequests``, as ``noderesources`` and ``NodeInfo.NonZeroRequested`` use), containers
    summed (restartable init containers, sidecars, with them), the largest init step (an init container plus the
    sidecars started before it) if larger, plus the pod overhead (``k8s.io/component-helpers/resource:
    PodRequests``)."""
    spec = pod.get("spec") or {}
    cpu = mem = 0.0
    for c in spec.get("containers") or []:
        a, b = _container_nonzero(c)
        cpu += a
        mem += b
    side_cpu = side_mem = init_cpu = init_mem = 0.0
    for c in spec.get("initContainers") or []:
        a, b = _container_nonzero(c)
        if (c or {}).get("restartPolicy") == "Always":  # a sidecar: runs beside everything after it
            cpu, mem = cpu + a, mem + b
            side_cpu, side_mem = side_cpu + a, side_mem + b
            a, b = side_cpu, side_mem
        else:
            a, b = a + side_cpu, b + side_mem
        init_cpu, init_mem = max(init_cpu, a), max(init_mem, b)
    cpu, mem = max(cpu, init_cpu), max(mem, init_mem)
    over = spec.get("overhead") or {}
    try:
        cpu += to_milli(over["cpu"]) if "cpu" in over else 0.0
        mem += to_units(over["memory"]) if "memory" in over else 0.0
    except QuantityError:
        pass
    return cpu, mem


K8sExtra = tuple[float, float, float, float, float]


def k8s_extra(pod: dict[str, Any], pos: dict[str, int], resreq: np.ndarray, init_resreq: np.ndarray
              ) -> K8sExtra | None:
    """How Kubernetes' view of the pod differs from ``resreq`` (what pyvolcano's node accounting adds up):
    (cpu, memory, GPU of ``PodRequests``, which counts init containers, minus ``resreq``; cpu and memory with the
    non-zero defaults minus ``resreq``), or None when it does not differ, as for most pods, so that a session
    can start from the node accounting and correct only for the few pods that differ."""
    c, m = pos["cpu"], pos["memory"]
    g = pos.get(GPU)
    nz = nonzero_requests_or(pod, (float(init_resreq[c]), float(init_resreq[m])))
    extra = (float(init_resreq[c] - resreq[c]), float(init_resreq[m] - resreq[m]),
             float(init_resreq[g] - resreq[g]) if g is not None else 0.0,
             nz[0] - float(resreq[c]), nz[1] - float(resreq[m]))
    return extra if any(extra) else None
