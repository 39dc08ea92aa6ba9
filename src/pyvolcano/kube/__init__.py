"""Kubernetes mode: the scheduler and controllers running against a real API server.

The pieces talk to the API server only through ``client.KubeClient`` (or anything with the same methods,
such as the in-memory fake the unit tests use), so every adapter can be tested without a server.
"""
