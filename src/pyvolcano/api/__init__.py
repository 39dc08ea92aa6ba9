"""Scheduler data model: resources, tasks, jobs, nodes and queues (Volcano's pkg/scheduler/api)."""
