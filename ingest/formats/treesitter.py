"""Definitions in JS/TS, Go, Rust, Java and C/C++ with tree-sitter grammars from PyPI wheels.

Each language lists its definition node types (named by a field or a declarator) and its containers
(classes, impl blocks, namespaces), whose members become units of their own, qualified by the
container's name. A definition's doc comments directly above it belong to it. A grammar that is not
installed, or a file it cannot parse cleanly, returns None and the caller falls back to blank lines.
"""

from __future__ import annotations

import importlib
import threading
from dataclasses import dataclass
from typing import Any

from ingest.formats.units import RECURSE_LINES, Unit

# suffix -> (module, function returning the language pointer)
GRAMMARS: dict[str, tuple[str, str]] = {
    ".js": ("tree_sitter_javascript", "language"), ".mjs": ("tree_sitter_javascript", "language"),
    ".cjs": ("tree_sitter_javascript", "language"), ".jsx": ("tree_sitter_javascript", "language"),
    ".ts": ("tree_sitter_typescript", "language_typescript"), ".mts": ("tree_sitter_typescript", "language_typescript"),
    ".tsx": ("tree_sitter_typescript", "language_tsx"),
    ".go": ("tree_sitter_go", "language"),
    ".rs": ("tree_sitter_rust", "language"),
    ".java": ("tree_sitter_java", "language"),
    ".c": ("tree_sitter_c", "language"), ".h": ("tree_sitter_cpp", "language"),
    ".cc": ("tree_sitter_cpp", "language"), ".cpp": ("tree_sitter_cpp", "language"),
    ".cxx": ("tree_sitter_cpp", "language"), ".hpp": ("tree_sitter_cpp", "language"),
    ".hh": ("tree_sitter_cpp", "language"), ".hxx": ("tree_sitter_cpp", "language"),
}


@dataclass(frozen=True)
class Spec:
    """Node types of one language family."""

    defs: frozenset[str]  # a definition: one unit
    containers: frozenset[str]  # a definition whose members are units too
    wrappers: frozenset[str] = frozenset()  # export/template wrappers around a definition


JS = Spec(
    frozenset({"function_declaration", "generator_function_declaration", "method_definition", "lexical_declaration",
               "variable_declaration", "interface_declaration", "type_alias_declaration", "enum_declaration",
               "public_field_definition", "abstract_method_signature", "function_signature"}),
    frozenset({"class_declaration", "abstract_class_declaration", "class", "internal_module", "module"}),
    frozenset({"export_statement", "ambient_declaration"}),
)
SPECS: dict[str, Spec] = {
    "tree_sitter_javascript": JS,
    "tree_sitter_typescript": JS,
    "tree_sitter_go": Spec(frozenset({"function_declaration", "method_declaration", "type_declaration",
                                      "const_declaration", "var_declaration"}), frozenset()),
    "tree_sitter_rust": Spec(
        frozenset({"function_item", "struct_item", "enum_item", "union_item", "type_item", "const_item", "static_item",
                   "macro_definition", "function_signature_item"}),
        frozenset({"impl_item", "trait_item", "mod_item"}),
    ),
    "tree_sitter_java": Spec(
        frozenset({"method_declaration", "constructor_declaration", "field_declaration", "annotation_type_declaration"}),
        frozenset({"class_declaration", "interface_declaration", "enum_declaration", "record_declaration"}),
    ),
    "tree_sitter_c": Spec(frozenset({"function_definition", "struct_specifier", "enum_specifier", "type_definition",
                                     "preproc_function_def"}), frozenset()),
    "tree_sitter_cpp": Spec(
        frozenset({"function_definition", "enum_specifier", "type_definition", "preproc_function_def", "alias_declaration"}),
        frozenset({"class_specifier", "struct_specifier", "namespace_definition"}),
        frozenset({"template_declaration"}),
    ),
}
BODY_FIELDS = ("body",)
MEMBER_LISTS = {"class_body", "declaration_list", "field_declaration_list", "interface_body", "enum_body",
                "statement_block", "enum_class_body"}
NAME_TYPES = {"identifier", "field_identifier", "type_identifier", "property_identifier", "qualified_identifier",
              "destructor_name", "operator_name", "namespace_identifier", "scoped_identifier",
              "private_property_identifier"}
COMMENT_TYPES = {"comment", "line_comment", "block_comment"}

_parsers: dict[str, Any] = {}
_lock = threading.Lock()


def _parser(suffix: str):
    """A tree-sitter parser for the suffix (cached per thread-safe module), or None without the grammar."""
    if suffix not in GRAMMARS:
        return None, None
    module_name, fn = GRAMMARS[suffix]
    key = f"{module_name}.{fn}"
    with _lock:
        if key not in _parsers:
            try:
                import tree_sitter

                module = importlib.import_module(module_name)
                _parsers[key] = tree_sitter.Language(getattr(module, fn)())
            except (ImportError, AttributeError, ValueError):
                _parsers[key] = None
        language = _parsers[key]
    if language is None:
        return None, None
    import tree_sitter

    return tree_sitter.Parser(language), SPECS[module_name]


def _text(node) -> str:
    return node.text.decode("utf-8", "replace") if node is not None and node.text is not None else ""


def node_name(node) -> str:
    """The name a definition declares: its `name` field, its declarator's name, or its type (impl)."""
    name = node.child_by_field_name("name")
    if name is not None:
        if node.type == "method_declaration" and node.child_by_field_name("receiver") is not None:
            receiver = node.child_by_field_name("receiver")
            types = [c for c in _walk(receiver) if c.type == "type_identifier"]
            if types:
                return f"{_text(types[0])}.{_text(name)}"
        return _text(name)
    if node.type == "impl_item":
        typ, trait = node.child_by_field_name("type"), node.child_by_field_name("trait")
        return _text(typ) if trait is None else f"{_text(typ)} ({_text(trait)})"
    declarator = node.child_by_field_name("declarator")
    while declarator is not None:
        if declarator.type in NAME_TYPES:
            return _text(declarator)
        inner = declarator.child_by_field_name("declarator") or declarator.child_by_field_name("name")
        if inner is None:
            names = [c for c in declarator.named_children if c.type in NAME_TYPES]
            return _text(names[0]) if names else ""
        declarator = inner
    for child in node.named_children:  # lexical_declaration, type_declaration, field_declaration...
        if child.type in ("variable_declarator", "type_spec", "const_spec", "var_spec"):
            return node_name(child)
        if child.type in NAME_TYPES:
            return _text(child)
    return ""


def _walk(node):
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(n.named_children))


def _unwrap(node, spec: Spec):
    """The definition inside an export/template wrapper (the wrapper's lines still count)."""
    inner = node
    while inner.type in spec.wrappers:
        decl = inner.child_by_field_name("declaration")
        kids = [c for c in inner.named_children if c.type in spec.defs | spec.containers | spec.wrappers]
        inner = decl if decl is not None else (kids[-1] if kids else None)
        if inner is None:
            return None
    return inner


def _members(node):
    """The member list of a container (class body, impl block, namespace body)."""
    body = node.child_by_field_name("body")
    if body is not None:
        return body
    for child in node.named_children:
        if child.type in MEMBER_LISTS:
            return child
    return None


def _doc_start(node) -> int:
    """First row of the definition including the comments directly above it (0-based)."""
    row = node.start_point.row
    prev = node.prev_named_sibling
    while prev is not None and prev.type in COMMENT_TYPES and prev.end_point.row >= row - 1:
        row = prev.start_point.row
        prev = prev.prev_named_sibling
    return row


def _tiles(node, start: int, end: int) -> list[tuple[int, int]]:
    """Header, then one tile per statement of the body (1-based lines; long statements recursively)."""
    body = node.child_by_field_name("body")
    stmts = [c for c in body.named_children] if body is not None else []
    if not stmts:
        return [(start, end)]
    tiles, cursor = [], start
    for stmt in stmts:
        s, e = stmt.start_point.row + 1, min(stmt.end_point.row + 1, end)
        if s < cursor or s > end:
            continue
        if s > cursor:
            tiles.append((cursor, s - 1))
        inner = stmt.child_by_field_name("body") or stmt.child_by_field_name("consequence")
        if inner is not None and e - s + 1 > RECURSE_LINES and inner.named_child_count:
            target = stmt if stmt.child_by_field_name("body") is not None else _as_body(stmt, inner)
            tiles.extend(_tiles(target, s, e))
        else:
            tiles.append((s, e))
        cursor = e + 1
    if cursor <= end:
        tiles.append((cursor, end))
    return tiles


class _as_body:
    """A node seen through another child as its body (an if-statement's consequence block)."""

    def __init__(self, node, body) -> None:
        self._node, self._body = node, body

    def child_by_field_name(self, name: str):
        return self._body if name == "body" else self._node.child_by_field_name(name)


def _collect(parent, spec: Spec, prefix: str, units: list[Unit]) -> None:
    for child in parent.named_children:
        node = _unwrap(child, spec)
        if node is None or node.type not in spec.defs | spec.containers:
            continue
        name = node_name(node)
        if node.type in ("lexical_declaration", "variable_declaration") and not _declares_code(node):
            continue
        symbol = f"{prefix}{name}" if name else prefix.rstrip(".")
        start = _doc_start(child) + 1
        end = child.end_point.row + 1
        members = _members(node) if node.type in spec.containers else None
        if members is not None:
            defs = [m for m in members.named_children if (_unwrap(m, spec) or m).type in spec.defs | spec.containers]
            header_end = _doc_start(defs[0]) if defs else end
            units.append(Unit(symbol, start, max(header_end, start)))
            _collect(members, spec, f"{symbol}.", units)
            last = defs[-1].end_point.row + 1 if defs else end
            if defs and last < end:
                units.append(Unit(symbol, last + 1, end))  # closing brace and trailing members
        else:
            units.append(Unit(symbol, start, end, _tiles(node, start, end)))


def _declares_code(node) -> bool:
    """`const f = () => ...` or `const C = class ...`: a definition; `const x = 1` is not."""
    for declarator in node.named_children:
        value = declarator.child_by_field_name("value")
        if value is not None and value.type in ("arrow_function", "function_expression", "function", "class",
                                                "generator_function"):
            return True
    return False


def treesitter_units(text: str, suffix: str) -> list[Unit] | None:
    """Units of a source file, or None when there is no grammar or the parse has errors throughout."""
    parser, spec = _parser(suffix)
    if parser is None:
        return None
    data = text.encode("utf-8")
    tree = parser.parse(data)
    root = tree.root_node
    if root.has_error:
        bad = sum(1 for c in root.named_children if c.type == "ERROR" or c.has_error)
        if bad > max(2, len(root.named_children) // 4):
            return None
    units: list[Unit] = []
    _collect(root, spec, "", units)
    # units must not overlap: keep the outer one when a grammar nests definitions unexpectedly
    units.sort(key=lambda u: (u.start, -u.end))
    clean: list[Unit] = []
    for u in units:
        if clean and u.start <= clean[-1].end and u.end <= clean[-1].end and clean[-1].tiles:
            continue
        if clean and u.start <= clean[-1].end:
            u = Unit(u.symbol, clean[-1].end + 1, u.end, [t for t in u.tiles if t[0] > clean[-1].end])
            if u.start > u.end:
                continue
        clean.append(u)
    return clean
