"""The enable flags a plugin's entry in the conf may carry.

Volcano declares them as the ``Enabled*`` fields of ``PluginOption`` (``pkg/scheduler/conf/scheduler_conf.go``);
``framework/points.py`` names, for each extension point, the flag that switches it, and checks at import that
every such flag is listed here.  They live in ``conf`` because the conf loader validates them and ``conf`` sits
below ``framework`` in the package graph (``tests/test_imports.py``).
"""

from __future__ import annotations

#: every flag a PluginOption may carry (Volcano's yaml names)
FLAGS: list[str] = sorted({
    "enableBestNode", "enableClusterOrder", "enableHierarchy", "enableJobEnqueueable", "enableJobEnqueued",
    "enableJobOrder", "enableJobPipelined", "enableJobReady", "enableJobStarving", "enableNamespaceOrder",
    "enableNodeOrder", "enablePredicate", "enablePreemptable", "enablePreemptive", "enableQueueOrder",
    "enableReclaimable", "enableReservedNodes", "enableTargetJob", "enableTaskOrder", "enabledAllocatable",
    "enabledHyperNodeGradient", "enabledHyperNodeOrder", "enabledOverused", "enabledSubJobOrder",
    "enabledSubJobPipelined", "enabledSubJobReady", "enabledVictim",
})
#: spellings Volcano users write, mapped to the flag they mean
FLAG_ALIASES: dict[str, str] = {
    "enableJobEnqueueable": "enableJobEnqueued", "EnabledClusterOrder": "enableClusterOrder",
    "enabledPredicate": "enablePredicate", "enabledNodeOrder": "enableNodeOrder"}
