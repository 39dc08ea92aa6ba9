"""The plugin/action registry loads once even when several threads ask at the same time (a regression: the first
thread marked it loaded before importing, so the others saw an empty registry and "unknown action")."""

from __future__ import annotations

import subprocess
import sys


def test_concurrent_first_lookups_all_succeed() -> None:
    code = """
import threading
from pyvolcano import registry
errors = []
barrier = threading.Barrier(8)
def look():
    barrier.wait()
    try:
        registry.action_class("allocate"); registry.plugin_class("gang"); registry.plugin_class("proportion")
    except Exception as exc:
        errors.append(repr(exc))
threads = [threading.Thread(target=look) for _ in range(8)]
for t in threads: t.start()
for t in threads: t.join()
print(errors)
assert not errors
"""
    # a fresh interpreter, so the registry is not loaded yet
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stdout + out.stderr
