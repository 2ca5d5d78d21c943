"""HTML pages from wiki and documentation exports: the content without the site around it.

Exported pages (Confluence, MediaWiki, Sphinx, static site generators) wrap each page in navigation,
headers, sidebars, breadcrumbs and footers that repeat on every page and would drown the content in
search. The main content element is taken when the page marks one (`<main>`, `role="main"`,
`<article>`, the usual content ids); site chrome is removed by element, ARIA role and class/id words.
The ids headings carry (or their enclosing sections carry) are kept, so chunks link to the page's
own anchors.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

REMOVE_TAGS = ("script", "style", "noscript", "template", "svg", "iframe", "button", "select", "input", "textarea",
               "nav", "aside")
CHROME_ROLES = {"navigation", "banner", "contentinfo", "complementary", "search", "menu", "menubar", "toolbar"}
# class or id words that mark site chrome (matched as whole words of the attribute)
CHROME_WORDS = re.compile(
    r"(?:^|[\s_-])(nav|navbar|navigation|menu|sidebar|sidenav|breadcrumbs?|breadcrumb-section|footer|masthead|"
    r"skip-link|cookie|cookies|social|share|sharing|pagination|pager|sphinxsidebar|related|mw-navigation|mw-panel|"
    r"mw-head|printfooter|catlinks|mw-editsection|editsection|headerlink|toc|page-metadata|likes-and-labels|"
    r"comment-container|footer-body)(?:$|[\s_-])",
    re.I,
)
MAIN_SELECTORS = (
    "//main", "//*[@role='main']", "//article", "//*[@id='main-content']", "//*[@id='content']",
    "//*[@id='main']", "//*[contains(concat(' ', normalize-space(@class), ' '), ' document ')]",
)
_XML_DECL = re.compile(r"^\s*<\?xml[^>]*\?>", re.I)
_SPACES = re.compile(r"\s+")


@dataclass
class CleanPage:
    """Cleaned HTML, the page's <title>, and the ids of its headings in document order."""

    html: str
    title: str
    heading_ids: list[tuple[str, str]] = field(default_factory=list)  # (heading text, id)


def norm(text: str) -> str:
    return _SPACES.sub(" ", text).strip().rstrip("¶#").strip().lower()


def _is_chrome(el) -> bool:
    if el.get("role", "").lower() in CHROME_ROLES:
        return True
    if el.get("aria-hidden") == "true":
        return True
    attrs = " ".join(filter(None, (el.get("class"), el.get("id"))))
    return bool(attrs and CHROME_WORDS.search(attrs))


def _text_len(el) -> int:
    return len(_SPACES.sub("", el.text_content() or ""))


def clean_html(text: str) -> CleanPage:
    """The page's main content as HTML, without scripts, navigation, headers, footers and sidebars."""
    import lxml.html
    from lxml import etree

    text = _XML_DECL.sub("", text, count=1)
    try:
        doc = lxml.html.document_fromstring(text)
    except (etree.ParserError, ValueError):
        return CleanPage(text, "")
    title_el = doc.find(".//title")
    title = _SPACES.sub(" ", title_el.text_content()).strip() if title_el is not None else ""
    for el in list(doc.iter(etree.Comment)):
        el.drop_tree()
    for el in list(doc.iter(*REMOVE_TAGS)):
        el.drop_tree()
    body = doc.body if doc.find("body") is not None else doc
    total = _text_len(body) or 1
    root = body
    for selector in MAIN_SELECTORS:
        found = [el for el in body.xpath(selector) if _text_len(el) >= 0.1 * total]
        if found:
            root = max(found, key=_text_len) if selector == "//article" else found[0]
            break
    for el in list(root.iter("header", "footer")):
        # an article's own header holds its title; every other header or footer is site chrome
        keeps_title = el.tag == "header" and el.xpath(".//h1|.//h2") and el.xpath("ancestor::article|ancestor::main")
        if el is not root and not keeps_title:
            el.drop_tree()
    for el in list(root.iter()):
        if el is root or not isinstance(el.tag, str) or el.getparent() is None:
            continue
        if _is_chrome(el) and not (el.tag in ("h1", "h2", "h3", "h4", "h5", "h6")):
            el.drop_tree()
    heading_ids: list[tuple[str, str]] = []
    for h in root.iter("h1", "h2", "h3", "h4", "h5", "h6"):
        ident = h.get("id") or ""
        if not ident:
            named = h.xpath(".//a[@id or @name]")
            if named:
                ident = named[0].get("id") or named[0].get("name") or ""
        if not ident:
            parent = h.getparent()
            if parent is not None and parent.tag in ("section", "div") and parent.get("id"):
                first = next((c for c in parent if isinstance(c.tag, str)), None)
                if first is h:
                    ident = parent.get("id")
        if ident:
            heading_ids.append((norm(h.text_content()), ident))
    html = lxml.html.tostring(root, encoding="unicode", method="html")
    return CleanPage(html, title, heading_ids)


def assign_anchors(elements, heading_ids: list[tuple[str, str]]) -> None:
    """Give heading elements the id their HTML heading had, matching by text in document order."""
    pending = list(heading_ids)
    for el in elements:
        if el.kind != "title" or el.heading_level is None:
            continue
        key = norm(el.text)
        for i, (text, ident) in enumerate(pending):
            if text == key:
                el.anchor = ident
                del pending[: i + 1]
                break
