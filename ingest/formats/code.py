"""Source code as units of meaning: module docstring, classes, functions and methods, with their lines.

A unit is one definition (decorators, signature, docstring and body, plus the comment lines right
above it) named by its qualified symbol (`Flask.make_response`), or a run of module-level code
between definitions. A class's own unit is its header: everything before its first method. Each
unit is emitted as *tiles*: its header, then one tile per statement of its body (and recursively
inside long compound statements), so a unit longer than a chunk is cut only between statements.

Python is read with `ast`; JS/TS, Go, Rust, Java and C/C++ with tree-sitter grammars
(`ingest.formats.treesitter`); a file neither can parse falls back to blocks separated by blank lines.
"""

from __future__ import annotations

import ast

from ingest.elements import Element
from ingest.formats.text import line_blocks, strip_controls
from ingest.formats.treesitter import treesitter_units
from ingest.formats.units import RECURSE_LINES, Unit, comments_above, to_elements


# --- Python ----------------------------------------------------------------------------------


def python_units(text: str) -> list[Unit] | None:
    """Units of a Python module, or None when it does not parse (another Python version, a template)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    lines = text.splitlines()
    units: list[Unit] = []
    body = tree.body
    if body and _is_docstring(body[0]):
        doc = body[0]
        units.append(Unit("", doc.lineno, doc.end_lineno, [(doc.lineno, doc.end_lineno)]))
        body = body[1:]
    _collect(body, "", lines, units)
    return units


def _is_docstring(node: ast.stmt) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)


def _start(node: ast.stmt) -> int:
    decorators = getattr(node, "decorator_list", None) or []
    return min([node.lineno] + [d.lineno for d in decorators])


DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _collect(stmts: list[ast.stmt], prefix: str, lines: list[str], units: list[Unit]) -> None:
    for node in stmts:
        if not isinstance(node, DEFS):
            continue
        symbol = f"{prefix}{node.name}"
        start = comments_above(lines, _start(node), ("#",))
        if isinstance(node, ast.ClassDef):
            methods = [n for n in node.body if isinstance(n, DEFS)]
            header_end = comments_above(lines, _start(methods[0]), ("#",)) - 1 if methods else node.end_lineno
            units.append(Unit(symbol, start, max(header_end, node.lineno),
                              _tiles(node, start, max(header_end, node.lineno), node.body, skip=DEFS)))
            # statements between or after the methods belong to the class too
            rest = [n for n in node.body if not isinstance(n, DEFS) and n.lineno > header_end]
            for n in rest:
                units.append(Unit(symbol, _start(n), n.end_lineno, _tiles(n, _start(n), n.end_lineno, _children(n))))
            _collect(node.body, symbol + ".", lines, units)
        else:
            units.append(Unit(symbol, start, node.end_lineno, _tiles(node, start, node.end_lineno, node.body)))


def _children(node: ast.AST) -> list[ast.stmt]:
    """The statements nested directly in a compound statement, in line order."""
    kids: list[ast.stmt] = []
    for name in ("body", "orelse", "finalbody"):
        kids.extend(s for s in getattr(node, name, []) or [] if isinstance(s, ast.stmt))
    for handler in getattr(node, "handlers", []) or []:
        kids.append(handler)  # an except clause tiles as one piece
    for case in getattr(node, "cases", []) or []:
        kids.extend(case.body)
    return sorted(kids, key=lambda s: s.lineno)


def _tiles(node: ast.AST, start: int, end: int, body: list, skip: tuple = ()) -> list[tuple[int, int]]:
    """Line ranges covering start..end: the header, then each statement (long ones recursively)."""
    stmts = [s for s in body if not (skip and isinstance(s, skip))]
    if not stmts:
        return [(start, end)]
    first = stmts[0]
    if _is_docstring(first):  # the docstring stays with the signature
        stmts = stmts[1:]
        if not stmts:
            return [(start, end)]
    tiles: list[tuple[int, int]] = []
    cursor = start
    for i, stmt in enumerate(stmts):
        s = _start(stmt) if isinstance(stmt, ast.stmt) else stmt.lineno
        s = max(s, cursor)
        if s > end:
            break
        if s > cursor:
            tiles.append((cursor, s - 1))  # the header, or comments and blank lines before a statement
        stop = min(stmt.end_lineno, end)
        kids = _children(stmt) if isinstance(stmt, ast.stmt) else []
        if kids and stop - s + 1 > RECURSE_LINES:
            tiles.extend(_tiles(stmt, s, stop, kids))
        else:
            tiles.append((s, stop))
        cursor = stop + 1
    if cursor <= end:
        tiles.append((cursor, end))
    return tiles


def code_elements(text: str, suffix: str) -> list[Element] | None:
    """Code elements by symbol for the languages we can parse; None for the blank-line fallback."""
    if suffix in (".py", ".pyi", ".pyw"):
        units = python_units(text)
    else:
        units = treesitter_units(text, suffix)
    if units is None:
        return None
    return to_elements(text, units)


def fallback_elements(text: str) -> list[Element]:
    """Blocks of lines separated by blank lines, verbatim, with their line ranges."""
    return [Element(strip_controls(b.text), "code", None, None, b.line_start, b.line_end) for b in line_blocks(text)]
