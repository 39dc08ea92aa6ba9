"""Regular expressions that come from input (a HyperNode's ``regexMatch``), compiled with RE2.

Volcano matches them with Go's ``regexp`` (``pkg/util/hypernode/member_selector.go: GetMembers`` calls
``regexp.Compile`` then ``MatchString``), which implements RE2: matching is linear in the text, and patterns that
need backtracking (backreferences, lookaround, possessive quantifiers) do not compile.  Python's ``re`` backtracks,
so a pattern such as ``(a+)+$`` against a long node name runs for hours; the ``google-re2`` binding gives the same
language and the same linear guarantee as Go.  A pattern RE2 refuses is an error at the boundary, naming the object
and the field, as the API server's CRD validation or the controller would log it.
"""

from __future__ import annotations

from typing import Any

import re2

#: compiled programs may use this many bytes (RE2's own default is 8 MiB); a 1,024-character pattern that needs
#: more is refused (``a{1000}{1000}`` is already refused for its repeat count)
MAX_PROGRAM_BYTES = 8 << 20


def compile_input(pattern: str) -> Any:
    """``pattern`` compiled with RE2 (Go's syntax and semantics); ValueError saying why when RE2 refuses it."""
    options = re2.Options()
    options.max_mem = MAX_PROGRAM_BYTES
    options.log_errors = False
    try:
        return re2.compile(pattern, options)
    except re2.error as exc:
        why = exc.args[0] if exc.args else exc
        text = why.decode("utf-8", "replace") if isinstance(why, bytes) else str(why)
        raise ValueError(f"not a valid RE2 regular expression (the syntax of Go's regexp): {text}") from None
