"""Repeated warnings said once: lines that differ only in the object they name and its numbers become one line
with a count and, where the cause is known, what to do.

A workload of 2,000 jobs on a ``--cluster '10x{cpu: 4}'`` without memory printed 2,000 lines ("Job default/syn-
000006: task worker: requests memory 4Gi per pod, a resource no node has; job skipped"), burying the one thing
to fix.  ``collapse`` works on any list of warning lines (a workload's problems, a cache's skipped objects, a
session's warnings), so every front-end can pass its own through it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

#: an object reference (``Kind ns/name``, ``ns/name``) and numbers with their units: what varies between lines
_REF = re.compile(r"\b(?:[A-Z][A-Za-z]+ )?[a-z0-9][\w.-]*/[\w.-]+")
_NUM = re.compile(r"\b\d+(?:\.\d+)?[A-Za-z]*\b")
#: a known cause (a substring of the line) -> what to do
HINTS = {
    "a resource no node has": "the nodes lack that resource: give it to them, e.g. --cluster "
                              "'10x{cpu: 4, memory: 16Gi}'",
    "more than the largest node has": "no node is large enough: add larger nodes or lower the requests",
}
#: a group of at least this many lines is collapsed
AT_LEAST = 3


def _shape(line: str) -> str:
    return _NUM.sub("#", _REF.sub("@", line))


def collapse(lines: Iterable[str], at_least: int = AT_LEAST) -> list[str]:
    """``lines`` in their order, each group of ``at_least`` or more lines of the same shape (the same text
    but for the object named and its numbers) replaced, where its first line was, by that first line with how
    many more there are and the hint for its cause."""
    lines = list(lines)
    groups: dict[str, list[str]] = {}
    for line in lines:
        groups.setdefault(_shape(line), []).append(line)
    out: list[str] = []
    done: set[str] = set()
    for line in lines:
        key = _shape(line)
        group = groups[key]
        if len(group) < at_least:
            out.append(line)
            continue
        if key in done:
            continue
        done.add(key)
        hint = next((h for cause, h in HINTS.items() if cause in line), "")
        out.append(f"{line} (and {len(group) - 1} more like it" + (f"; {hint})" if hint else ")"))
    return out
