"""Analyses above the scheduling framework: what-if re-runs of sessions (``whatif.py``: why a job waits and the
smallest changes that would let it run).  They use the framework as a front-end does (``framework/cycle.py``) and
are not part of it, so they may name actions and plugins when they build a conf to try."""
