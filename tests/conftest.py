"""Test-suite wide settings."""

from pyvolcano.cache import deltas

# every map a session moves by deltas (settled and parked jobs, their sums, the jobs handed over again) is compared
# with the one computed afresh, in every session of every test (``cache/deltas.py``)
deltas.CHECK = True
