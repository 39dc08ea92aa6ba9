"""A mutator over the scenario files and confs, and an in-process runner of the CLI with time and memory guards.

Used by ``test_fuzz.py``: a bounded number of hypothesis examples in ``make test`` and many more under the
``slow`` marker in ``make bench``.  A mutation is either structural (replace one value somewhere in the parsed
document with a wrong type, a non-finite or huge number, a null inside a list, deep nesting) or textual (aliases,
garbage bytes, bad YAML scalars, deep brackets).
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import subprocess
import sys
import traceback
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner
from hypothesis import strategies as st

from pyvolcano.cli import main

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = sorted((ROOT / "tests" / "scenarios" / "core").glob("*.yaml")) + sorted(
    (ROOT / "tests" / "scenarios" / "queues").glob("*.yaml")) + [ROOT / "examples" / "snapshot.yaml"]
CONFS = sorted((ROOT / "examples" / "confs").glob("*.conf"))

#: replacements for one value: wrong types, non-finite and huge numbers, negative quantities, odd strings
BAD_VALUES: list[Any] = [
    None, 5, -8, 0, 1e30, -1e30, 10**40, float("nan"), float("inf"), float("-inf"), True, "abc", "", "-8",
    "²", "nan", "1e400", "-1Gi", [], {}, [None], [5], {"a": None}, {"x": [None, 5]}, "2020-13-45", 3.5,
    "9" * 5000, "\u0663", "1_0", 1e12, -1e12, 1e8, "1e8", "(a+)+$", "(?=a)", "\\1",
]

#: scalars the YAML constructor raises plain Python exceptions for
BAD_SCALARS = [b"2020-13-45", b"!!bool maybe", b"!!float abc", b"9" * 5000, b"!!int 0x", b"!!timestamp x"]

#: whole texts or fragments that the YAML layer must refuse with one clear line
BAD_TEXTS: list[bytes] = [
    b"a: 2020-13-45\n",
    b"a: !!bool maybe\n",
    b"a: !!float abc\n",
    b"a: " + b"9" * 5000 + b"\n",
    b"[" * 30000,
    b"\xff\xfe\x00garbage\x80\x81",
    b"a: &a [1,2,3,4,5,6,7,8,9]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
    b"d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
    b"g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\nh: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]\ni: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]\n",
    b"- 1\n- [2\n",
    b"!!python/object:os.system {}\n",
]


def deep(n: int) -> Any:
    v: Any = "x"
    for _ in range(n):
        v = [v]
    return v


def paths(doc: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every path (keys and indexes) to a value in ``doc``."""
    yield prefix
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from paths(v, (*prefix, i))


def replace(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(doc, dict):
        out = dict(doc)
        out[head] = replace(doc[head], rest, value)
        return out
    out_l = list(doc)
    out_l[head] = replace(doc[head], rest, value)
    return out_l


def dump(doc: Any) -> bytes:
    """The mutated documents as a YAML stream (or one document if the mutation replaced the whole list)."""
    if isinstance(doc, list):
        return yaml.safe_dump_all(doc, sort_keys=False, allow_unicode=True).encode()
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True).encode()


@st.composite
def mutated(draw: st.DrawFn, seed_text: bytes) -> bytes:
    """One mutation of ``seed_text`` (a YAML document)."""
    kind = draw(st.sampled_from(("value", "value", "value", "value", "nest", "text", "splice", "bytes")))
    if kind == "text":
        return draw(st.sampled_from(BAD_TEXTS))
    if kind == "bytes":
        pos = draw(st.integers(0, len(seed_text)))
        junk = draw(st.binary(min_size=1, max_size=8))
        return seed_text[:pos] + junk + seed_text[pos:]
    doc: Any = list(yaml.safe_load_all(seed_text))  # the documents of the stream, mutated as one list
    all_paths = list(paths(doc))
    n = draw(st.integers(1, 3))
    for _ in range(n):
        p = draw(st.sampled_from(all_paths))
        try:
            if kind == "nest":
                doc = replace(doc, p, deep(draw(st.integers(10, 400))))
            elif kind == "splice":  # a scalar the YAML constructor itself chokes on, spliced in as text
                doc = replace(doc, p, "SPLICE_ME")
            else:
                doc = replace(doc, p, draw(st.sampled_from(BAD_VALUES)))
        except (KeyError, IndexError, TypeError):
            continue
        if kind == "nest":
            break  # the paths of a deep list are not worth walking
        all_paths = list(paths(doc))
    try:
        text = dump(doc)
    except (yaml.YAMLError, RecursionError, ValueError):
        return seed_text
    return text.replace(b"SPLICE_ME", draw(st.sampled_from(BAD_SCALARS)))


@dataclass
class Outcome:
    exit_code: int
    output: str
    error: str | None  # the traceback of an exception that escaped the CLI, if any


class TimeLimit(Exception):
    pass


@contextlib.contextmanager
def guards(seconds: int = 20, extra_bytes: int = 1500 * 2**20) -> Iterator[None]:
    """Fail an example that runs longer than ``seconds`` (SIGALRM) or grows the address space by more than
    ``extra_bytes`` (RLIMIT_AS: the allocation fails with MemoryError, which the runner reports)."""
    def on_alarm(signum: int, frame: Any) -> None:
        raise TimeLimit(f"took more than {seconds} s")

    old_handler = signal.signal(signal.SIGALRM, on_alarm)
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/statm") as f:
        vm = int(f.read().split()[0]) * resource.getpagesize()
    limit = vm + extra_bytes
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old_handler)
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def invoke(args: list[str], stdin: bytes | None = None, seconds: int = 20) -> Outcome:
    """``pyvolcano ARGS`` in-process under ``guards``."""
    runner = CliRunner()
    with guards(seconds):
        try:
            r = runner.invoke(main, args, input=stdin, catch_exceptions=True)
        except TimeLimit as exc:  # raised outside click's own handler
            return Outcome(-1, "", f"TimeLimit: {exc}")
    err = None
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        err = "".join(traceback.format_exception(r.exception))
    return Outcome(r.exit_code, r.output, err)


def check(out: Outcome, what: str) -> None:
    assert out.error is None, f"{what}: exception escaped:\n{out.error}"
    assert out.exit_code in (0, 2), f"{what}: exit {out.exit_code}\n{out.output[-2000:]}"
    assert "Traceback" not in out.output, f"{what}:\n{out.output[-2000:]}"


def run_guarded(args: list[str], seconds: int = 90, address_space: int = 3 * 2**30) -> Outcome:
    """``pyvolcano ARGS`` in a child process (and its own session, so that a sweep's workers go with it) with
    RLIMIT_AS at ``address_space`` bytes (an allocation beyond it is a MemoryError, reported as a traceback) and a
    wall-clock bound: past ``seconds`` the whole process group is killed and the outcome is a time limit.  For
    commands that start worker processes, which an in-process SIGALRM would leave behind."""
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))

    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    proc = subprocess.Popen([sys.executable, "-m", "pyvolcano.cli", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, preexec_fn=limit, start_new_session=True, env=env)
    try:
        out, _ = proc.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return Outcome(-1, "", f"TimeLimit: took more than {seconds} s")
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # no worker outlives the command
    text = out.decode("utf-8", "replace")
    return Outcome(proc.returncode, text, text if "Traceback (most recent call last)" in text else None)
