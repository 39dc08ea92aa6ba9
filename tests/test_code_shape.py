"""The shape issue 27 asked the code to keep: no function in src/ over 120 lines, the session and the Kubernetes
scheduler's loop small enough to read (``framework/session.py`` about 800 lines, ``kube/scheduler.py`` at most 350).
A function that grows past the limit is split where its parts have names of their own (as ``Session.close`` was into
``framework/closing.py``), not by cutting it at arbitrary lines."""

from __future__ import annotations

import ast
from pathlib import Path

import pyvolcano

SRC = Path(pyvolcano.__file__).parent
MAX_FUNCTION_LINES = 120


def test_no_function_in_src_is_over_120_lines() -> None:
    long = []
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long.append(f"{path.relative_to(SRC)}:{node.lineno} {node.name}: {lines} lines")
    assert not long, "functions over 120 lines:\n" + "\n".join(long)


def test_the_session_and_the_scheduler_loop_stay_small() -> None:
    assert len((SRC / "framework" / "session.py").read_text().splitlines()) <= 850
    assert len((SRC / "kube" / "scheduler.py").read_text().splitlines()) <= 350
