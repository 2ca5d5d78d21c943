"""The import graph of our packages, read from the source with `ast`: every import statement counts,
at module level, inside a function, or under `if TYPE_CHECKING:` (a type-only import is a dependency a
reader follows too, and a circle through one is a circle all the same); and the page's, read from its
modules' `import ... from "./x.js"`."""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGES = ("indexes", "ingest", "assistant", "evals")


def module_files(repo: Path) -> dict[str, Path]:
    out = {}
    for package in PACKAGES:
        for path in sorted((repo / package).rglob("*.py")):
            parts = list(path.relative_to(repo).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


def import_graph(repo: Path) -> dict[str, set[str]]:
    """module -> the modules of ours it imports (a package's own __init__ left out)."""
    files = module_files(repo)

    def resolve(name: str) -> str | None:
        while name and name not in files:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
            else:
                continue
            for name in names:
                target = resolve(name) if name.split(".")[0] in PACKAGES else None
                if target and target != module and not module.startswith(target + "."):
                    deps.add(target)
        graph[module] = deps
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


JS_IMPORT = re.compile(r"""(?:^|\n)\s*(?:import|export)\b[^;]*?\bfrom\s*["']\./([\w./-]+\.js)["']|import\(\s*["']\./([\w./-]+\.js)["']""")


def web_graph(folder: Path) -> dict[str, set[str]]:
    """Which of the page's modules (web/*.js, not vendor/) imports which, by `import ... from "./x.js"`
    (and `import("./x.js")`)."""
    graph: dict[str, set[str]] = {}
    for path in sorted(folder.glob("*.js")):
        text = path.read_text(encoding="utf-8")
        graph[path.name] = {a or b for a, b in JS_IMPORT.findall(text)}
    return graph
