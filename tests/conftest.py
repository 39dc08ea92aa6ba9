"""Test-suite wide settings."""

from pyvolcano.framework.incremental import deltas

# every map a session moves by deltas (settled and parked jobs, their sums, the jobs handed over again) is compared
# with the one computed afresh, in every session of every test (``framework/incremental/deltas.py``)
deltas.CHECK = True
