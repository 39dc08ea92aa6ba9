"""Trace-driven simulation: a simulated cluster, job controller and kubelet around the real scheduler."""
