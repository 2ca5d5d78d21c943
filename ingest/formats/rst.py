"""reStructuredText to HTML with docutils, quietly, so the HTML partitioner sees real headings.

Sphinx projects use directives docutils does not know (`versionadded`, `autofunction`, ...). Their
content is kept as plain paragraphs instead of vanishing, and no error text is written into the output.
"""

from __future__ import annotations

from docutils import nodes
from docutils.core import publish_parts
from docutils.parsers.rst import Directive, directives

# Sphinx directives whose body is prose worth indexing.
SPHINX_PROSE = (
    "versionadded", "versionchanged", "deprecated", "seealso", "glossary", "centered", "hlist",
    "only", "tabs", "tab", "group-tab", "literalinclude", "autoclass", "autofunction", "automodule",
    "automethod", "autodata", "autoattribute", "function", "class", "method", "attribute", "data",
    "module", "currentmodule", "index", "toctree", "py:function", "py:class", "py:method", "confval",
)


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


class _AnyOptions(dict):
    """An option spec that takes every option as a plain string."""

    def __missing__(self, key: str):
        return directives.unchanged


_ProseDirective.option_spec = _AnyOptions()
for _name in SPHINX_PROSE:
    directives.register_directive(_name, _ProseDirective)

SETTINGS = {
    "report_level": 5,  # write no warnings or errors into the document
    "halt_level": 5,
    "raw_enabled": False,  # never pass raw HTML through
    "file_insertion_enabled": False,  # never read other files (include, csv-table :file:)
    "syntax_highlight": "none",
    "warning_stream": False,
    "doctitle_xform": True,
}


def rst_to_html(text: str) -> str:
    """The HTML body of a reST document; headings become h1..h6 by nesting."""
    return publish_parts(text, writer="html5", settings_overrides=SETTINGS)["html_body"]
