"""pyvolcano: a Volcano-compatible batch scheduler for Kubernetes, written in Python."""

__version__ = "0.1.0"
