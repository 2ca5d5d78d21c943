"""reStructuredText to HTML with docutils, quietly, so the HTML partitioner sees real headings.

Sphinx projects use directives docutils does not know (`versionadded`, `autofunction`, `py:data`,
`click:example`, ...). None of their text may vanish:
- prose directives keep their body as plain paragraphs;
- an object's description with a body (`.. py:data:: TRUSTED_HOSTS`, `.. attribute:: Flask.config`, ...)
  becomes a section headed by the object's name, so a reference page of many entries (one per config
  key) is split per entry and each entry's chunk carries its name as its heading;
- any other directive docutils does not know keeps its body as written (a literal block), since it may
  be code (`click:example`) as well as prose;
and no error text is written into the output.
"""

from __future__ import annotations

import re

from docutils import nodes
from docutils.core import publish_parts
from docutils.frontend import get_default_settings
from docutils.parsers.rst import Directive, Parser, directives
from docutils.parsers.rst.languages import en
from docutils.utils import new_document

# Sphinx directives whose body is prose worth indexing.
SPHINX_PROSE = (
    "versionadded", "versionchanged", "versionremoved", "deprecated", "seealso", "glossary", "centered", "hlist",
    "only", "tabs", "tab", "group-tab", "literalinclude", "automodule", "module", "currentmodule", "py:module",
    "py:currentmodule", "index", "toctree", "highlight",
)
# Sphinx object descriptions (Python and standard domains, and autodoc's): a name, then what it is.
OBJECT_KINDS = (
    "function", "class", "method", "classmethod", "staticmethod", "attribute", "property", "data", "exception",
    "decorator", "decoratormethod", "type",
)
SPHINX_OBJECTS = (
    *OBJECT_KINDS, *(f"py:{k}" for k in OBJECT_KINDS), *(f"auto{k}" for k in OBJECT_KINDS),
    "confval", "envvar", "option", "cmdoption", "describe", "object", "program",
)
_DIRECTIVE = re.compile(r"^[ \t]*\.\.[ \t]+([\w.:+-]+?)::", re.M)


class _ProseDirective(Directive):
    """Any directive rendered as its argument line followed by its body, parsed as reST."""

    optional_arguments = 10
    final_argument_whitespace = True
    has_content = True
    option_spec = None  # accept and ignore any options

    def run(self) -> list[nodes.Node]:
        out: list[nodes.Node] = []
        if self.arguments:
            out.append(nodes.paragraph(text=" ".join(self.arguments)))
        if self.content:
            box = nodes.container()
            self.state.nested_parse(self.content, self.content_offset, box)
            out.append(box)
        return out


class _ObjectDirective(_ProseDirective):
    """An object's description: with a body, a section titled by the object's name (its signature);
    without one (autodoc's, whose text lives in the code), the name as a paragraph."""

    def run(self) -> list[nodes.Node]:
        name = " ".join(" ".join(self.arguments).split())
        if not (name and self.content):
            return super().run()
        section = nodes.section()
        anchor = nodes.make_id(name.split("(", 1)[0])
        if anchor and anchor not in self.state.document.ids:
            section["ids"].append(anchor)
            self.state.document.ids[anchor] = section
        section += nodes.title(text=name)
        self.state.nested_parse(self.content, self.content_offset, section)
        return [section]


class _VerbatimDirective(_ProseDirective):
    """A directive docutils does not know: its argument line, then its body as written."""

    def run(self) -> list[nodes.Node]:
        out: list[nodes.Node] = []
        if self.arguments:
            out.append(nodes.paragraph(text=" ".join(self.arguments)))
        body = "\n".join(self.content).strip("\n")
        if body:
            out.append(nodes.literal_block(body, body))
        return out


class _AnyOptions(dict):
    """An option spec that takes every option as a plain string."""

    def __missing__(self, key: str):
        return directives.unchanged


_ProseDirective.option_spec = _AnyOptions()
for _name in SPHINX_PROSE:
    directives.register_directive(_name, _ProseDirective)
for _name in SPHINX_OBJECTS:
    directives.register_directive(_name, _ObjectDirective)

SETTINGS = {
    "report_level": 5,  # write no warnings or errors into the document
    "halt_level": 5,
    "raw_enabled": False,  # never pass raw HTML through
    "file_insertion_enabled": False,  # never read other files (include, csv-table :file:)
    "syntax_highlight": "none",
    "warning_stream": False,
    "doctitle_xform": True,
}
_probe = new_document("<probe>", get_default_settings(Parser))
_probe.reporter.stream = False  # lookups of unknown names report nothing


def keep_unknown_directives(text: str) -> None:
    """Register every directive the text uses that docutils does not know as verbatim, so its body is
    kept instead of being replaced by an error."""
    for name in set(_DIRECTIVE.findall(text)):
        if directives.directive(name, en, _probe)[0] is None:
            directives.register_directive(name, _VerbatimDirective)


def rst_to_html(text: str) -> str:
    """The HTML body of a reST document; headings become h1..h6 by nesting."""
    keep_unknown_directives(text)
    return publish_parts(text, writer="html5", settings_overrides=SETTINGS)["html_body"]
