"""Synthetic clusters and backlogs for ``pyvolcano bench`` and the scale benchmarks."""
