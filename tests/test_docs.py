"""Every path a doc names exists, and every link into the docs lands on a heading.

The README and docs/*.md are references: a file they name must be there, or a reader follows a dead end (issue
27 item 6). Three kinds of reference are checked:

* repository paths: ``src/...``, ``tests/...``, ``benchmarks/...``, ``examples/...``, ``docs/...``,
  ``scripts/...`` (``tests/x.py::test_name`` counts as ``tests/x.py``; a ``*`` is a glob that must match);
* module paths relative to ``src/pyvolcano`` in this project's package layout, such as ``framework/result.py``
  or ``pyvolcano/framework/points.py``; when written ``file.py: Name`` (or ``file.py`: `Name``), ``Name`` (each
  part of ``Class.member``) must also be defined in that file;
* Markdown links to local files (relative to the doc) and their ``#anchors`` (GitHub's heading slugs).

Volcano's and Kubernetes' own paths (``pkg/scheduler/framework/session.go``, ``cache/cache_mock.go``) name other
projects: a module path only counts when it ends in ``.py`` and is not part of a longer path.
"""

from __future__ import annotations

import glob
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "src" / "pyvolcano"
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

# Not preceded by a character that would make the match the tail of a longer path or word (a URL, ../shared/...).
_START = r"(?<![\w./\-~])"
REPO_PATH = re.compile(_START + r"((?:src|tests|benchmarks|examples|docs|scripts)/[\w./*\-]*)")
PACKAGES = "api|cache|conf|framework|actions|plugins|sim|kube|bench|commands|controllers|deploy"
MODULE_PATH = re.compile(
    _START + r"((?:pyvolcano/)?(?:" + PACKAGES + r")/[\w/]*\w\.py)"
    r"(?:(?::\s+|`:\s+`)([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*))?"
)
LINK = re.compile(r"\]\(([^)\s]+)\)")
CODE_FENCE = re.compile(r"^```")


def _repo_target(raw: str) -> str:
    """The path as a file name: trailing prose punctuation and a pytest node id dropped."""
    path = raw.split("::")[0]
    return path.rstrip(".,;:")


def _exists(path: str) -> bool:
    if "*" in path:
        return bool(glob.glob(str(ROOT / path)))
    return (ROOT / path).exists()


def _defines(source: str, name: str) -> bool:
    """Whether ``name`` is defined in ``source``: a def, a class, an assignment or an annotated attribute."""
    n = re.escape(name)
    return bool(
        re.search(rf"^\s*(?:async\s+)?(?:def|class)\s+{n}\b", source, re.M)
        or re.search(rf"^\s*(?:self\.)?{n}\s*(?::[^=\n]*)?=", source, re.M)
        or re.search(rf"^\s*{n}\s*:", source, re.M)
        or re.search(rf"\bself\.{n}\s*(?::[^=\n]*)?=", source)
    )


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation but hyphens and underscores dropped, spaces to hyphens."""
    text = re.sub(r"`", "", heading.strip()).lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(doc: Path, text: str | None = None) -> set[str]:
    if text is None:
        text = doc.read_text(encoding="utf-8")
    seen: dict[str, int] = {}
    out: set[str] = set()
    fenced = False
    for line in text.splitlines():
        if CODE_FENCE.match(line):
            fenced = not fenced
            continue
        m = re.match(r"^#{1,6}\s+(.*)$", line)
        if fenced or not m:
            continue
        slug = _slug(m.group(1))
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def _problems(doc: Path, text: str | None = None) -> list[str]:
    """What is wrong with the references of ``doc`` (its ``text`` if given, else the file's)."""
    if text is None:
        text = doc.read_text(encoding="utf-8")
    rel = doc.relative_to(ROOT)
    problems: list[str] = []
    for m in REPO_PATH.finditer(text):
        path = _repo_target(m.group(1))
        if not _exists(path):
            problems.append(f"{rel}: {path} does not exist")
    for m in MODULE_PATH.finditer(text):
        module, name = m.group(1), m.group(2)
        target = PACKAGE / module.removeprefix("pyvolcano/")
        if not target.is_file():
            problems.append(f"{rel}: {module} does not exist under src/pyvolcano")
            continue
        if name:
            source = target.read_text(encoding="utf-8")
            for part in name.split("."):
                if not _defines(source, part):
                    problems.append(f"{rel}: {module} defines no {part!r} (named as {name})")
    for m in LINK.finditer(text):
        href = m.group(1)
        if re.match(r"^[a-z]+:", href):
            continue
        file_part, _, anchor = href.partition("#")
        target = (doc.parent / file_part).resolve() if file_part else doc
        if file_part and not target.exists():
            problems.append(f"{rel}: link {href} names a missing file")
            continue
        if not anchor or target.suffix != ".md":
            continue
        if anchor not in _anchors(target, text if target == doc else None):
            problems.append(f"{rel}: link {href} names no heading of {target.name}")
    return problems


@pytest.mark.parametrize("doc", DOCS, ids=[str(d.relative_to(ROOT)) for d in DOCS])
def test_every_path_and_link_a_doc_names_exists(doc: Path) -> None:
    assert _problems(doc) == []


def test_the_checker_flags_what_is_missing_and_leaves_other_projects_alone() -> None:
    """The patterns catch a stale path, a missing definition and a dead anchor, and skip Volcano's Go paths."""
    doc = ROOT / "docs" / "_test_docs_probe.md"
    text = (
        "# A heading\n"
        "`framework/memo.py`, tests/framework/test_carry.py, `framework/result.py: no_such_name`,\n"
        "[x](architecture.md#no-such-heading), [y](#a-heading), `framework/result.py: apply`,\n"
        "pkg/scheduler/framework/session.go, `cache/cache_mock.go`, https://example.com/docs/nothing.md,\n"
        "../shared/tools/volcano/vc-oracle, k8s.io/kubernetes/pkg/scheduler/framework/plugins/x.py\n"
    )
    problems = _problems(doc, text)
    assert problems == [
        "docs/_test_docs_probe.md: tests/framework/test_carry.py does not exist",
        "docs/_test_docs_probe.md: framework/memo.py does not exist under src/pyvolcano",
        "docs/_test_docs_probe.md: framework/result.py defines no 'no_such_name' (named as no_such_name)",
        "docs/_test_docs_probe.md: link architecture.md#no-such-heading names no heading of architecture.md",
    ]
