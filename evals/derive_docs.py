"""Question sets of what developers ask beside "which symbol": how a documented behaviour works, and
what an error message means. Each question carries its package's split, as the code set does.

- Behaviour: every section of a package's reST documentation (`docs/**/*.rst`) gives at most one
  question, its most distinctive claim (the sentence with the most words rare in the documentation)
  with the heading's words taken out, asked as "What happens …?" (a condition) or "How does it work
  that …?". The answer is the documentation page.
- Error messages: every `raise SomethingError("…")` in a package's source gives the message as a
  developer sees it (the f-string's and `%`'s fields left out) in "I get …: why, and what do I do?";
  the answer is the file that raises it or any documentation page quoting it (`a|b`). A message
  raised from two files has no one answer and is left out.
- Scraped text: the same Markdown with its punctuation, marks and line breaks taken out, as text
  copied from web pages comes, so that questions derived from the punctuated copy can be asked of it.

Everything is deterministic: files in sorted order, ties broken by position.
"""

from __future__ import annotations

import ast
import re
import unicodedata
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from evals.derive_questions import DEFAULT_TUNE_PACKAGES, SKIPPED_DIRS, Derived, find_packages
from evals.derive_sections import EN_STOPWORDS, Rarity, Section, latin_terms

_UNDERLINE = re.compile(r"^([=\-~^\"'*+#`:.])\1{2,}\s*$")
_ROLE = re.compile(r":[\w:.-]+:`~?!?([^`<]*?)\s*(?:<([^>`]*)>)?`")
_LINK = re.compile(r"`([^`<]+?)\s*<[^>`]*>`__?")
_LITERAL = re.compile(r"``([^`]+)``")
_REF = re.compile(r"`([^`]+)`_{0,2}")
_EMPHASIS = re.compile(r"\*\*?([^*]+)\*\*?")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")
_CONDITION = re.compile(r"^(if|when|whenever|once|after|before|unless)\b", re.I)
# Sentences that lean on the one before (a pronoun, an aside) claim nothing on their own.
_DEPENDENT = re.compile(r"^(this|it|its|these|that|those|they|there|here|such|so|also|see|for (example|instance)|"
                        r"unfortunately|however|otherwise|instead|then|now|note)\b", re.I)
SKIPPED_PAGES = {"changes.rst", "license.rst", "contributing.rst", "index.rst", "api.rst"}
MIN_CONTENT_WORDS = 7
MAX_SENTENCE_WORDS = 45


def inline_text(text: str) -> str:
    """A reST paragraph as plain text: roles, links, literals and emphasis reduced to their words."""
    text = _ROLE.sub(lambda m: (m.group(1) or m.group(2) or "").strip().rsplit(".", 1)[-1].rstrip("()")
                     if not m.group(2) else m.group(1).strip(), text)
    text = _LINK.sub(r"\1", text)
    text = _LITERAL.sub(r"\1", text)
    text = _REF.sub(r"\1", text)
    text = _EMPHASIS.sub(r"\1", text)
    return " ".join(text.split())


def rst_sections(text: str, source: str) -> list[Section]:
    """The headed sections of a reST document, each with its paragraphs of prose (directives, code
    blocks and anything indented left out), one paragraph a line."""
    lines = text.splitlines()
    out: list[Section] = []
    heading, body, para = "", [], []

    def end_paragraph() -> None:
        if para:
            joined = inline_text(" ".join(para)).rstrip(":")
            if joined:
                body.append(joined)
            para.clear()

    i = 0
    while i < len(lines):
        line = lines[i]
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if line.strip() and not line[0].isspace() and _UNDERLINE.match(nxt) and len(nxt.strip()) >= len(line.strip()) \
                and not _UNDERLINE.match(line):
            end_paragraph()
            if heading and body:
                out.append(Section(source, heading, tuple(body)))
            heading, body = inline_text(line.strip()), []
            i += 2
            continue
        if not line.strip() or line[0].isspace() or line.startswith("..") or _UNDERLINE.match(line):
            end_paragraph()
        else:
            para.append(re.sub(r"^(?:[-*+]|\d+\.|#\.)\s+", "", line))
            if line.rstrip().endswith("::"):
                end_paragraph()
        i += 1
    end_paragraph()
    if heading and body:
        out.append(Section(source, heading, tuple(body)))
    return out


def _package_trees(root: Path) -> list[tuple[str, Path]]:
    """(package name, its unpacked tree) for each tree under root that holds a Python package."""
    out = []
    for pkg in find_packages(root):
        tree = next((p for p in [pkg.parent, *pkg.parent.parents] if p.parent == root), None)
        if tree is not None and (pkg.name, tree) not in out:
            out.append((pkg.name, tree))
    return out


def _split_of(package: str, tune: tuple[str, ...]) -> str:
    return "tune" if package.lower() in {t.lower() for t in tune} else "report"


def rst_pages(root: Path, skipped: set[str]) -> Iterator[tuple[str, str, str]]:
    """(package, source relative to root, text) of every package's docs/**/*.rst under root, but the
    pages named in skipped and those in hidden or private folders."""
    for package, tree in _package_trees(root):
        for path in sorted((tree / "docs").rglob("*.rst")):
            rel = path.relative_to(tree / "docs")
            if path.name in skipped or any(p.startswith(("_", ".")) for p in rel.parts):
                continue
            yield package, path.relative_to(root).as_posix(), path.read_text(encoding="utf-8", errors="replace")


def package_docs(root: Path) -> list[tuple[str, Section]]:
    """(package, section) for every section of every package's docs/**/*.rst under root, sources
    relative to root; change logs, licences, indexes and API listings left out."""
    return [(package, s) for package, source, text in rst_pages(root, SKIPPED_PAGES)
            for s in rst_sections(text, source)]


def _content_words(sentence: str, drop: set[str]) -> list[str]:
    return [w for w in latin_terms(sentence) if len(w) > 2 and w.lower() not in EN_STOPWORDS and w.lower() not in drop]


def without_words(sentence: str, words: set[str]) -> str:
    """sentence with these words (whole, any case, a plural `s` too) taken out."""
    for w in sorted(words, key=len, reverse=True):
        sentence = re.sub(rf"(?<![\w.-]){re.escape(w)}s?(?![\w-])", "", sentence, flags=re.I)
    sentence = re.sub(r"\s+([,.;:)?])", r"\1", sentence)
    return " ".join(sentence.split()).strip(" ,;:")


def behaviour_question(sentence: str) -> str:
    """The claim as a question a developer would ask."""
    s = sentence.rstrip(" .:;!")
    first = s.split(" ", 1)[0]
    lead = s[0].lower() + s[1:] if first[1:] == first[1:].lower() else s  # "If" -> "if", not "URL" or "MethodView"
    if _CONDITION.match(s):
        return f"What happens {lead}?"
    return f"How does it work that {lead}?"


def behaviour_questions(root: Path, tune: tuple[str, ...] = DEFAULT_TUNE_PACKAGES) -> list[Derived]:
    """At most one question per documentation section: its most distinctive sentence (at least
    MIN_CONTENT_WORDS content words besides the heading's, two of them rare in the docs) with the
    heading's words removed. A sentence found in two sections is left out."""
    docs = package_docs(root)
    rarity = Rarity([s for _, s in docs])
    seen = Counter(sent.lower() for _, s in docs for line in s.lines for sent in _SENTENCE_END.split(line))
    rows: list[Derived] = []
    for package, sec in docs:
        head = {w.lower() for w in latin_terms(sec.heading) if w.lower() not in EN_STOPWORDS and len(w) > 2}
        best: tuple[int, int, str] | None = None
        for pos, sent in enumerate(s for line in sec.lines for s in _SENTENCE_END.split(line)):
            if seen[sent.lower()] > 1 or len(sent.split()) > MAX_SENTENCE_WORDS or not sent.rstrip().endswith(".") \
                    or _DEPENDENT.match(sent):
                continue
            words = _content_words(sent, head)
            distinctive = sum(1 for w in words if rarity.rare(w))
            if len(words) >= MIN_CONTENT_WORDS and distinctive >= 2:
                if best is None or (-distinctive, pos) < best[:2]:
                    best = (-distinctive, pos, sent)
        if best is not None:
            q = behaviour_question(without_words(best[2], head))
            rows.append(Derived(q, sec.source, _split_of(package, tune), "behaviour", heading=sec.heading, package=package))
    counts = Counter(r.question.lower() for r in rows)
    return [r for r in rows if counts[r.question.lower()] == 1]


# --- error messages ----------------------------------------------------------------------------

_ERROR_NAME = re.compile(r"(Error|Exception|Warning|Exit|Abort)$")


def _message(node: ast.AST) -> str | None:
    """The text of an exception's message argument with its fields left out; None when it is not text."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else " " for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        left = _message(node.left)
        return None if left is None else re.sub(r"%(\([^)]*\))?[-#0 +]*\d*(\.\d+)?[sdrifx]", " ", left)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        parts = [_message(node.left), _message(node.right)]
        return " ".join(p if p is not None else " " for p in parts) if any(p for p in parts) else None
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "format":
            base = _message(func.value)
            return None if base is None else re.sub(r"\{[^{}]*\}", " ", base)
        if isinstance(func, ast.Name) and func.id in ("_", "gettext", "ngettext") and node.args:
            return _message(node.args[0])
    return None


def clean_message(text: str) -> str:
    """A message as one line: fields' leftover quotes and empty brackets dropped."""
    text = re.sub(r"(['\"`])\s*\1", " ", text)
    text = re.sub(r"\(\s*\)|\[\s*\]|\{\s*\}", " ", text)
    text = " ".join(text.split()).strip(" :,;")
    return re.sub(r"\s+([,.;:)])", r"\1", text)


def raised_messages(source: str) -> list[tuple[str, str]]:
    """(exception name, message) of every `raise Name("…")` of a module whose name ends in Error,
    Exception, Warning, Exit or Abort, in order."""
    out = []
    for node in sorted((n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Raise)), key=lambda n: (n.lineno, n.col_offset)):
        if not isinstance(node.exc, ast.Call) or not node.exc.args:
            continue
        func = node.exc.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        if not _ERROR_NAME.search(name):
            continue
        msg = _message(node.exc.args[0])
        if msg:
            out.append((name, clean_message(msg)))
    return out


def _flat(text: str) -> str:
    return " ".join(re.sub(r"[`*]", "", text).lower().split())


def error_questions(root: Path, tune: tuple[str, ...] = DEFAULT_TUNE_PACKAGES, min_words: int = 4) -> list[Derived]:
    """One question per distinct error message raised in the packages under root (at least min_words
    words of text): the raising file, or a documentation page of its package that quotes the message."""
    found: dict[str, list[tuple[str, str, str]]] = {}  # message -> [(package, exception, source)]
    pages: dict[str, list[tuple[str, str]]] = {}  # package -> [(source, flat text)]
    for package, tree in _package_trees(root):
        pages[package] = [(p.relative_to(root).as_posix(), _flat(p.read_text(encoding="utf-8", errors="replace")))
                          for p in sorted((tree / "docs").rglob("*.rst")) if p.name not in SKIPPED_PAGES]
    for pkg in find_packages(root):
        tree = next(p for p in [pkg.parent, *pkg.parent.parents] if p.parent == root)
        package = pkg.name
        for path in sorted(pkg.rglob("*.py")):
            if any(p in SKIPPED_DIRS or p.startswith(".") for p in path.relative_to(pkg).parts[:-1]):
                continue
            try:
                messages = raised_messages(path.read_text(encoding="utf-8"))
            except (SyntaxError, UnicodeDecodeError):
                continue
            for exc, msg in messages:
                if len(re.findall(r"[A-Za-z]{2,}", msg)) >= min_words:
                    found.setdefault(msg, []).append((package, exc, path.relative_to(root).as_posix()))
        del tree
    rows: list[Derived] = []
    for msg, places in found.items():
        files = {src for _, _, src in places}
        if len(files) != 1:
            continue
        package, exc, source = places[0]
        flat = _flat(msg)
        quoting = [src for src, text in pages.get(package, []) if flat in text]
        answer = "|".join([source, *quoting])
        question = f'I get "{exc}: {msg.rstrip(".")}". Why, and what do I do about it?'
        rows.append(Derived(question, answer, _split_of(package, tune), "errors", package=package))
    rows.sort(key=lambda r: (r.source, r.question))
    counts = Counter(r.question.lower() for r in rows)
    return [r for r in rows if counts[r.question.lower()] == 1]


# --- scraped text ------------------------------------------------------------------------------

def scraped(text: str) -> str:
    """Markdown as scraped text: headings' and lists' marks, punctuation (CJK and full-width, and ASCII
    punctuation between CJK characters or at a line's end) and line breaks taken out."""
    lines = [re.sub(r"^\s*(?:#{1,6}|[-*+]|\d+[.)])\s+", "", line) for line in text.splitlines()]
    out = []
    for line in lines:
        line = "".join(" " if unicodedata.category(ch).startswith("P") and (ord(ch) > 0x2000) else ch for ch in line)
        line = re.sub(r"[,.;:!?()\"']+(?=\s|$)", " ", line)
        out.append(" ".join(line.split()))
    joined = "".join(out)
    # the spaces left by CJK punctuation between two CJK characters go: the text runs on
    return re.sub(r"(?<=[\u3400-\u9fff]) +(?=[\u3400-\u9fff])", "", joined)


def write_scraped(src: Path, dest: Path, suffix: str = ".txt") -> list[Path]:
    """Each Markdown file under src written as scraped text under dest (same name, `suffix`)."""
    written = []
    for path in sorted(src.rglob("*.md")):
        out = dest / path.relative_to(src).with_suffix(suffix)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(scraped(path.read_text(encoding="utf-8")) + "\n", encoding="utf-8")
        written.append(out)
    return written
