"""The one YAML reader: every file, stdin and ConfigMap text the project reads goes through here.

PyYAML's safe loader is safe against code execution, not against resources or odd scalars:

- an alias bomb ("billion laughs": nine anchors, each aliasing the previous ten times, 661 bytes) builds a
  structure of shared references whose *expanded* size is 10^9 nodes, and anything that walks it (JSON output,
  a deep copy, a resource-name scan) never finishes;
- 30,000 nested ``[`` overflow the C stack of the composer (the interpreter dies with SIGSEGV, exit 139, no
  message), and a structure nested 1,000 deep makes later recursive code raise RecursionError;
- the constructor raises plain Python exceptions, not ``yaml.YAMLError``, for ``2020-13-45`` (ValueError from
  ``datetime``), ``!!float abc``, a 5,000-digit integer (Python's int-string limit), ``!!bool maybe``;
- a file that is not UTF-8 raises UnicodeDecodeError.

So the text is checked first: its size is bounded, then one pass over the parser's events (libyaml's parser is
a state machine, not recursive, so this pass cannot overflow) bounds the nesting depth and the *expanded* node
count, counting an alias as the size of the node it names.  Only then is the text constructed, and every
exception the constructor can raise becomes one ``UserError`` naming the file (and line where PyYAML knows it).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from pyvolcano.errors import UserError, yaml_problem

try:  # the C loader is ~10x faster on large snapshots
    from yaml import CSafeLoader as Loader
except ImportError:  # pragma: no cover
    from yaml import SafeLoader as Loader  # type: ignore[assignment]

#: bytes in one YAML input (a 10,000-node, 100,000-pod snapshot is ~60 MB)
MAX_BYTES = 256 * 2**20
#: nesting of collections; Kubernetes objects nest ~12 deep (pod affinity terms), confs ~6
MAX_DEPTH = 64
#: nodes after expanding every alias; well above the largest real input's node count
MAX_EXPANDED_NODES = 20_000_000
#: expanded nodes per node actually written: an alias-heavy but honest file stays far below this
MAX_ALIAS_RATIO = 100


class YAMLInputError(UserError):
    """A YAML input that cannot be read: not UTF-8, too large, too deep, an alias bomb or a bad scalar."""


def read_text(path: str, what: str = "") -> tuple[str, str]:
    """(text, source name) of ``path``, or of stdin for ``-``; ``what`` says what the file is for errors."""
    label = f"{what} {path}".strip() if what else path
    if path == "-":
        data = sys.stdin.buffer.read(MAX_BYTES + 1) if hasattr(sys.stdin, "buffer") else sys.stdin.read().encode()
        source = "<stdin>"
    else:
        try:
            with open(path, "rb") as f:
                data = f.read(MAX_BYTES + 1)
        except OSError as exc:
            raise UserError(f"cannot read {label}: {exc.strerror or exc}") from None
        source = path
    if len(data) > MAX_BYTES:
        raise YAMLInputError(f"{source}: larger than {MAX_BYTES // 2**20} MiB; refusing to read it")
    try:
        return data.decode("utf-8-sig"), source
    except UnicodeDecodeError as exc:
        raise YAMLInputError(f"{source}: not a text file (byte {exc.start} is not UTF-8)") from None


def check_limits(text: str, source: str) -> None:
    """Raise YAMLInputError when ``text`` is too large, nests too deep, or its aliases expand too far."""
    if len(text) > MAX_BYTES:
        raise YAMLInputError(f"{source}: larger than {MAX_BYTES // 2**20} MiB; refusing to read it")
    if "*" not in text and text.count("[") + text.count("{") < MAX_DEPTH and _indent_bound(text) < MAX_DEPTH:
        return  # no alias, and too few brackets and too little indentation to nest MAX_DEPTH deep
    # one pass over the events: a stack of [anchor, expanded size] per open collection; dispatch on the exact
    # event class (scalars are most events), the pass costs about 40% of constructing the documents
    stack: list[list[Any]] = []
    sizes: dict[str, int] = {}
    written = expanded = 0
    scalar, alias = yaml.ScalarEvent, yaml.AliasEvent
    starts = (yaml.SequenceStartEvent, yaml.MappingStartEvent)
    ends = (yaml.SequenceEndEvent, yaml.MappingEndEvent)
    budget = MAX_ALIAS_RATIO * written + 10_000
    try:
        for event in yaml.parse(text, Loader=Loader):
            ev: Any = event  # scalar/collection/alias events carry .anchor and .start_mark
            cls = type(ev)
            if cls is scalar:
                written += 1
                expanded += 1
                if stack:
                    stack[-1][1] += 1
                if ev.anchor is not None:
                    sizes[ev.anchor] = 1
                continue
            if cls in starts:
                stack.append([ev.anchor, 1])
                written += 1
                expanded += 1
                if len(stack) > MAX_DEPTH:
                    raise YAMLInputError(f"{source}: line {ev.start_mark.line + 1}: nested more than {MAX_DEPTH} "
                                         "levels deep; refusing to read it")
                continue
            if cls in ends:
                anchor, n = stack.pop()
                if anchor is not None:
                    sizes[anchor] = n
                if stack:
                    stack[-1][1] += n
                continue
            if cls is alias:
                n = sizes.get(ev.anchor, 1)
                expanded += n
                if stack:
                    stack[-1][1] += n
                budget = MAX_ALIAS_RATIO * written + 10_000
                if expanded > MAX_EXPANDED_NODES or expanded > budget:
                    raise YAMLInputError(f"{source}: line {ev.start_mark.line + 1}: aliases expand to more than "
                                         f"{min(expanded, MAX_EXPANDED_NODES):,} nodes (an alias bomb?); "
                                         "refusing to read it")
        if expanded > MAX_EXPANDED_NODES:
            raise YAMLInputError(f"{source}: more than {MAX_EXPANDED_NODES:,} YAML nodes; refusing to read it")
    except yaml.YAMLError as exc:
        problem = str(getattr(exc, "problem", "") or "")
        mark = getattr(exc, "problem_mark", None)
        if "nesting depth" in problem and mark is not None:
            # libyaml builds from 0.2.6 on refuse more than 1,000 levels themselves, and their scanner reads
            # up to 1,024 characters ahead of the first event (a flow collection may be a simple key), so a
            # deep one-line `[[[[...` trips libyaml's limit before this pass sees depth MAX_DEPTH: same message
            raise YAMLInputError(f"{source}: line {mark.line + 1}: nested more than {MAX_DEPTH} levels deep; "
                                 "refusing to read it") from None
        raise YAMLInputError(yaml_problem(exc, source)) from None


def _indent_bound(text: str) -> int:
    """An upper bound of the block nesting depth: each block level indents by at least one column, and
    compact ``- - -`` sequences by two per level on one line, so it is at most the longest line's length."""
    return max((len(line) for line in text.splitlines()), default=0)


def _construct(gen: Iterator[Any], source: str) -> list[Any]:
    try:
        return list(gen)
    except yaml.YAMLError as exc:
        raise YAMLInputError(yaml_problem(exc, source)) from None
    except (ValueError, TypeError, KeyError, AttributeError, IndexError, OverflowError, RecursionError,
            MemoryError) as exc:
        # the constructor's own exceptions: 2020-13-45 as a date, !!float abc, a 5,000-digit integer
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise YAMLInputError(f"{source}: YAML value cannot be read: {msg[:200]}") from None


def load_all(text: str, source: str) -> list[Any]:
    """Every document of ``text`` (a multi-document stream), within the limits."""
    check_limits(text, source)
    return _construct(yaml.load_all(text, Loader=Loader), source)


def load(text: str, source: str) -> Any:
    """The single document of ``text`` (None when empty), within the limits."""
    docs = load_all(text, source)
    if len(docs) > 1:
        raise YAMLInputError(f"{source}: expected one YAML document, found {len(docs)}")
    return docs[0] if docs else None


def compose(text: str, source: str) -> yaml.Node | None:
    """The node tree of ``text`` (for line numbers in errors); call after ``load`` checked the limits."""
    try:
        return yaml.compose(text, Loader=Loader)
    except yaml.YAMLError as exc:
        raise YAMLInputError(yaml_problem(exc, source)) from None


def load_file(path: str | Path, what: str = "") -> tuple[Any, str]:
    """(the one document of the file, its source name); ``-`` reads stdin."""
    text, source = read_text(str(path), what)
    return load(text, source), source
