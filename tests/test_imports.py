"""The package import graph has no cycle (issue 12): ``conf`` sits below ``framework``, the framework imports
neither the simulator nor the Kubernetes mode, and so on.  Checked statically from the source, so a cycle that
Python happens to tolerate at run time (an import inside a function) is caught too; imports under
``if TYPE_CHECKING:`` are annotations only and do not count."""

from __future__ import annotations

import ast
from pathlib import Path

import pyvolcano

SRC = Path(pyvolcano.__file__).parent


#: sub-packages that are nodes of their own: the incremental layer sits beside the session, below the cache
_OWN_NODES = ("framework.incremental",)


def _package(module: str) -> str | None:
    """``pyvolcano.framework.session`` -> ``framework``; ``pyvolcano.framework.incremental.memo`` ->
    ``framework.incremental`` (``_OWN_NODES``); top-level modules (errors, registry) are leaves."""
    parts = module.split(".")
    if parts[0] != "pyvolcano" or len(parts) < 2:
        return None
    for node in _OWN_NODES:
        if ".".join(parts[1:]).startswith(node + ".") or ".".join(parts[1:]) == node:
            return node
    return parts[1] if (SRC / parts[1]).is_dir() else None


def _imports(tree: ast.AST, module: str) -> list[str]:
    out: list[str] = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                for sub in child.orelse:
                    visit(sub)
                continue
            if isinstance(child, ast.Import):
                out.extend(a.name for a in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    base = ".".join(module.split(".")[: -child.level] + ([base] if base else []))
                out.append(base)
                out.extend(f"{base}.{a.name}" for a in child.names)
            visit(child)

    visit(tree)
    return out


def package_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC.parent).with_suffix("")
        module = ".".join(rel.parts).removesuffix(".__init__")
        pkg = _package(module)
        if pkg is None:
            continue
        deps = graph.setdefault(pkg, set())
        for imp in _imports(ast.parse(path.read_text()), module):
            dep = _package(imp)
            if dep is not None and dep != pkg:
                deps.add(dep)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle as a path (first node repeated at the end), or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def dfs(n: str) -> list[str] | None:
        state[n] = 1
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1:
                return [*stack[stack.index(m):], m]
            if m not in state:
                found = dfs(m)
                if found:
                    return found
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state:
            found = dfs(n)
            if found:
                return found
    return None


def test_find_cycle_finds_one() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycle_between_packages() -> None:
    graph = package_graph()
    assert {"conf", "framework", "api", "cache", "kube", "sim"} <= set(graph)
    assert find_cycle(graph) is None, f"import cycle between packages: {' -> '.join(find_cycle(graph) or [])}"


def test_layering() -> None:
    graph = package_graph()
    assert "framework" not in graph["conf"]
    assert not graph["framework"] & {"sim", "kube", "commands", "bench", "controllers"}


def test_incremental_layer_beside_the_flow() -> None:
    """objects -> cache -> snapshot -> session -> result -> applier -> writer, with the incremental layer beside it:
    the cache may hold the layer's objects but imports nothing of the framework's session side, and the layer
    imports neither the cache nor the session, the plugins or the actions (nothing flows back up)."""
    graph = package_graph()
    assert "framework" not in graph["cache"], graph["cache"]
    assert not graph["framework.incremental"] & {"framework", "cache", "plugins", "actions", "sim", "kube",
                                                 "commands", "controllers"}, graph["framework.incremental"]
