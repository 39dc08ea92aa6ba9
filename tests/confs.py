"""Scheduler confs shared by tests of several front-ends (the simulator, the fake and the real API server)."""

#: the plugin tiers most test confs share (priority, gang, conformance; drf, predicates, proportion, nodeorder)
TIERS = """tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
"""


def conf(actions: str, more: str = "") -> str:
    """A conf with these actions and :data:`TIERS`, then ``more`` lines (more plugins of the second tier, or
    ``arguments:`` of its last plugin, nodeorder)."""
    return f'actions: "{actions}"\n' + TIERS + more


#: those tiers plus network-topology-aware (the HyperNode tests on the fake and the real API server)
TOPO_CONF = conf("enqueue, allocate, backfill", "  - name: network-topology-aware\n")
#: a conf with preempt (shared by the fake-API and the real-API-server preemption tests)
PREEMPT_CONF = conf("enqueue, allocate, preempt, backfill")


#: the label source of Volcano's docs/user-guide/how_to_use_hypernode_auto_discovery.md (volcano-controller.conf):
#: the HyperNode controller's tests, with and without Volcano's own controller beside it
LABEL_DISCOVERY = """  - source: label
    enabled: true
    config:
      networkTopologyTypes:
        topologyA2:
          - nodeLabel: "volcano.sh/tor"
          - nodeLabel: "kubernetes.io/hostname"
        topologyA3:
          - nodeLabel: "volcano.sh/hypercluster"
          - nodeLabel: "volcano.sh/hypernode"
          - nodeLabel: "kubernetes.io/hostname"
"""
