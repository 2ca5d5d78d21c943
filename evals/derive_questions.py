"""Question sets made by a method, too large to tune by hand, each question carrying its split.

Hand-written sets are small enough to overfit; these are derived from real material and split by
package or by document, so that settings are chosen on the `tune` split and reported on `report`.

- Code: every public function, method or class of a Python package that has a docstring gives one
  question, the first paragraph of its docstring with the symbol's own name taken out; the answer is
  the defining file and the qualified symbol. Split by package (`tune` packages, the rest `report`).
- Sections (evals/derive_sections.py): every headed section (`##`, `###`) of Markdown documents gives
  questions from its most distinctive sentences; the answer is the document and its heading. Split by
  document.

Everything is deterministic: files in sorted order, ties broken by position.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

DEFAULT_TUNE_PACKAGES = ("flask", "click")
SKIPPED_DIRS = {"tests", "test", "docs", "examples", "benchmarks", "scripts", "build", "dist"}
MIN_WORDS = 6
MAX_WORDS = 60


@dataclass(frozen=True)
class Derived:
    """One derived question: what is asked, where the answer is, and which split it belongs to."""

    question: str
    source: str
    split: str
    set: str
    symbol: str = ""
    heading: str = ""
    package: str = ""
    unanswerable: bool = False  # no document states the answer (near misses: `source` is the page asked about)

    def row(self) -> dict:
        """The JSON Lines row `load_questions` reads (empty fields left out)."""
        return {k: v for k, v in asdict(self).items() if v}


# --- code ---------------------------------------------------------------------------------------

_ROLE = re.compile(r":[\w:.-]+:`~?!?([^`<]*?)\s*(?:<([^>`]*)>)?`")
_LITERAL = re.compile(r"``([^`]+)``|`([^`]+)`")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z(\"'`])")
_ONLY_REFERENCE = re.compile(r"^(see|same as|alias (for|of)|an alias (for|of)|shortcut for|deprecated)\b", re.I)
_NOT_A_VERB = {"this", "its", "is", "has", "was", "as", "us", "always", "sometimes", "unless", "thus", "whereas",
               "does", "status", "class", "address", "process", "access", "bytes", "headers", "options"}
_IMPERATIVE = {
    "return", "get", "create", "make", "build", "load", "open", "convert", "check", "register", "add", "remove",
    "set", "call", "parse", "render", "run", "send", "generate", "find", "read", "write", "dispatch", "handle",
    "wrap", "apply", "update", "push", "pop", "raise", "decode", "encode", "escape", "sign", "verify", "validate",
    "join", "split", "test", "iterate", "yield", "format", "dump", "serialize", "compile", "resolve", "match",
    "bind", "start", "stop", "close", "save", "store", "delete", "mark", "emit", "print", "prompt", "show",
    "invoke", "connect", "prepare", "ensure", "attach", "copy", "merge", "extract", "compute", "determine",
    "represent", "implement", "provide", "hold", "indicate", "construct", "initialize", "instantiate", "use",
    "redirect", "abort", "pass", "try", "append", "insert", "clear", "log", "collect", "look", "tell", "turn",
    "give", "produce", "modify", "replace", "strip", "quote", "unquote", "normalize", "install", "unregister",
    "select", "wait", "fetch", "filter", "sort", "group", "map", "test", "define", "declare", "assert", "shut",
    "reset", "unset", "guess", "detect", "infer", "evaluate", "execute", "trigger", "schedule", "consume",
    "dispose", "release", "acquire", "lock", "unlock", "enable", "disable", "configure", "override", "forward",
    "serve", "listen", "accept", "reject", "recognize", "transform", "translate", "unpack", "pack", "parse",
}


@dataclass(frozen=True)
class Symbol:
    """A documented public definition: qualified name, kind and the docstring's first paragraph."""

    qualname: str
    kind: str
    doc: str


def first_paragraph(doc: str) -> str:
    """The first sentence of the docstring (with the next ones while under 12 words), as one line,
    reST roles and literals reduced to their text, at most MAX_WORDS words."""
    para = doc.strip().split("\n\n", 1)[0]
    if para.lstrip().startswith(("..", ":")):
        return ""

    def role(m: re.Match) -> str:
        target = (m.group(2) or m.group(1) or "").strip()
        return target.rsplit(".", 1)[-1].rstrip("()") if not m.group(2) else (m.group(1) or target).strip()

    text = _ROLE.sub(role, para)
    text = _LITERAL.sub(lambda m: m.group(1) or m.group(2), text)
    text = re.sub(r"\*\*?([^*]+)\*\*?", r"\1", text)
    text = " ".join(text.split())
    parts = _SENTENCE_END.split(text)
    text = parts[0]
    for more in parts[1:]:  # the first sentence, and the next ones while it is short
        if len(text.split()) >= 12:
            break
        text = f"{text} {more}"
    words = text.split()
    if len(words) > MAX_WORDS:
        text = " ".join(words[:MAX_WORDS])
    return text


def name_variants(qualname: str) -> list[str]:
    """The spellings of a symbol that would give it away: the qualified and bare name, and the bare
    name's words (`url_for` -> `url for`, `SecureCookieSession` -> `secure cookie session`)."""
    name = qualname.rsplit(".", 1)[-1]
    words = [w for w in re.split(r"_+|(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", name) if w]
    out = [qualname, name]
    if len(words) > 1:
        out.append(" ".join(words))
    return sorted(dict.fromkeys(out), key=len, reverse=True)


def strip_name(text: str, qualname: str) -> str:
    """text without the symbol's own name in any of its obvious spellings (whole words, any case);
    a leading verb that happens to be the name (`remove`: "Remove a header") stays, being the question."""
    first, _, rest = text.partition(" ")
    if first.lower() == qualname.rsplit(".", 1)[-1].lower() and first.lower() in _IMPERATIVE:
        return f"{first} {strip_name(rest, qualname)}"
    for variant in name_variants(qualname):
        pattern = r"(?<![\w.])" + r"[\s_-]+".join(re.escape(w) for w in variant.split()) + r"(?:\(\))?(?![\w])"
        text = re.sub(pattern, "", text, flags=re.I)
    text = re.sub(r"\s+([,.;:)])", r"\1", text)
    text = re.sub(r"\(\s*\)", "", text)
    return " ".join(text.split())


def third_person(verb: str) -> str:
    """'return' -> 'returns', 'match' -> 'matches', 'apply' -> 'applies'."""
    if verb.endswith(("s", "x", "z", "ch", "sh")):
        return verb + "es"
    if verb.endswith("y") and verb[-2:-1] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


def phrase(kind: str, text: str) -> str:
    """A question around a docstring sentence: 'Which function returns …?' when it opens with a verb,
    else 'Which class is described as: …?'."""
    text = text.rstrip(" .:;")
    first, _, rest = text.partition(" ")
    low = first.lower()
    if low in _IMPERATIVE and rest:
        return f"Which {kind} {third_person(low)} {rest}?"
    base = low[:-3] + "y" if low.endswith("ies") else low[:-2] if low.endswith("es") and low[:-2] in _IMPERATIVE else low[:-1]
    if low.endswith("s") and low not in _NOT_A_VERB and base in _IMPERATIVE and rest:
        return f"Which {kind} {low} {rest}?"
    return f"Which {kind} is described as: {text}?"


def _is_public(name: str) -> bool:
    return not name.startswith("_")


def _kind_of(node: ast.AST, in_class: bool) -> str:
    if isinstance(node, ast.ClassDef):
        return "class"
    if not in_class:
        return "function"
    names = {d.id if isinstance(d, ast.Name) else d.attr if isinstance(d, ast.Attribute) else "" for d in node.decorator_list}
    return "property" if names & {"property", "cached_property"} else "method"


def documented_symbols(source: str) -> list[Symbol]:
    """The public functions, classes and methods (of public classes) of a module that have a
    docstring, in the order they are defined."""
    out: list[Symbol] = []

    def visit(body: list[ast.stmt], prefix: str, in_class: bool) -> None:
        for node in body:
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) or not _is_public(node.name):
                continue
            qualname = f"{prefix}{node.name}"
            doc = ast.get_docstring(node)
            if doc:
                out.append(Symbol(qualname, _kind_of(node, in_class), doc))
            if isinstance(node, ast.ClassDef):
                visit(node.body, qualname + ".", True)

    visit(ast.parse(source).body, "", False)
    return out


def find_packages(root: Path) -> list[Path]:
    """Top-level Python packages under root (a folder with `__init__.py` whose parent has none),
    outside tests, docs, examples and hidden folders, in path order."""
    found = []
    for init in sorted(root.rglob("__init__.py")):
        pkg = init.parent
        rel = pkg.relative_to(root).parts
        if any(p.startswith(".") or p in SKIPPED_DIRS for p in rel):
            continue
        if not (pkg.parent / "__init__.py").is_file():
            found.append(pkg)
    return found


def question_for(symbol: Symbol) -> str | None:
    """The question a symbol gives, or None when its docstring is too short or only a reference."""
    text = first_paragraph(symbol.doc)
    if not text or text.lower().startswith("deprecated") or _ONLY_REFERENCE.match(text) and len(text.split()) < 12:
        return None
    text = strip_name(text, symbol.qualname)
    if len(text.split()) < MIN_WORDS:
        return None
    return phrase(symbol.kind, text)


def code_questions(root: Path, packages: list[str] | None = None,
                   tune: tuple[str, ...] = DEFAULT_TUNE_PACKAGES) -> list[Derived]:
    """One question per documented public symbol of the packages under root (all found, or those
    named); the split is `tune` for the tune packages and `report` for the others. A docstring that
    occurs twice (copied between packages or overloads) is left out everywhere: it has no one answer."""
    root = root.resolve()
    pkgs = find_packages(root)
    if packages:
        wanted = {p.lower() for p in packages}
        missing = wanted - {p.name.lower() for p in pkgs}
        if missing:
            raise ValueError(f"no package named {', '.join(sorted(missing))} under {root}")
        pkgs = [p for p in pkgs if p.name.lower() in wanted]
    tune_names = {t.lower() for t in tune}
    rows: list[Derived] = []
    sentences_of: list[str] = []  # the docstring sentence of each row, before the name was taken out
    for pkg in pkgs:
        split = "tune" if pkg.name.lower() in tune_names else "report"
        for path in sorted(pkg.rglob("*.py")):
            rel = path.relative_to(pkg).parts
            if any(p in SKIPPED_DIRS or p.startswith(".") for p in rel[:-1]):
                continue
            if any(p.startswith("_") for p in rel[:-1]) or (rel[-1].startswith("_") and rel[-1] != "__init__.py"):
                continue  # private modules (_internal.py, _compat.py)
            try:
                symbols = documented_symbols(path.read_text(encoding="utf-8"))
            except (SyntaxError, UnicodeDecodeError):
                continue
            source = path.relative_to(root).as_posix()
            for sym in symbols:
                q = question_for(sym)
                if q:
                    rows.append(Derived(q, source, split, "code", symbol=sym.qualname, package=pkg.name))
                    sentences_of.append(first_paragraph(sym.doc).lower())
    copies = Counter(sentences_of)
    return unique_questions([r for r, sent in zip(rows, sentences_of) if copies[sent] == 1])


def unique_questions(rows: list[Derived]) -> list[Derived]:
    counts = Counter(r.question.lower() for r in rows)
    return [r for r in rows if counts[r.question.lower()] == 1]
