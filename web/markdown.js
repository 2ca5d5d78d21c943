// Model output and document text are untrusted: Markdown is rendered with marked, then sanitized
// with DOMPurify before it reaches the DOM, and [n] marks become links to the source cards.
// Sanitized text may not make the browser fetch anything: only the tags and attributes below
// survive (no images, media, SVG, MathML, styles or forms; no src, background or srcset), and
// links may only point at http(s) or mail addresses. marked and DOMPurify are globals from index.html.

import hljs from "./vendor/highlight.min.js";
import { t } from "./i18n.js";

const PURIFY = {
  ALLOWED_TAGS: [
    "a", "b", "blockquote", "br", "code", "del", "em", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "li",
    "ol", "p", "pre", "s", "span", "strong", "sub", "sup", "table", "tbody", "td", "tfoot", "th", "thead", "tr", "ul",
  ],
  ALLOWED_ATTR: ["href", "title", "class", "align", "start"],
  ALLOWED_URI_REGEXP: /^(?:https?:|mailto:)/i,
  ALLOW_DATA_ATTR: false,
  ALLOW_ARIA_ATTR: false,
};
const LANGUAGE_CLASS = /^language-[\w+-]{1,30}$/;

const escapeHtml = (text) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

// Raw HTML and images in untrusted Markdown are shown as the text they are: they never become
// elements, not even in the sanitizer's inert document (where Chromium still reports the inline
// handlers of a page under a Content-Security-Policy).
window.marked.use({
  renderer: {
    html: (token) => escapeHtml(token.text),
    image: (token) => escapeHtml(token.raw),
  },
});

window.DOMPurify.addHook("afterSanitizeAttributes", (node) => {
  if (node.hasAttribute("class")) {
    // only marked's own `language-x` on code blocks; page classes could be spoofed otherwise
    const keep = node.tagName === "CODE" ? node.className.split(/\s+/).filter((c) => LANGUAGE_CLASS.test(c)) : [];
    if (keep.length) node.className = keep.join(" ");
    else node.removeAttribute("class");
  }
  if (node.tagName === "A" && node.hasAttribute("href")) {
    node.setAttribute("target", "_blank");
    node.setAttribute("rel", "noopener noreferrer nofollow");
  }
});

/** Sanitize an HTML string into a DocumentFragment (never assigned as a string to the live DOM). */
export function sanitize(html) {
  return window.DOMPurify.sanitize(html, { ...PURIFY, RETURN_DOM_FRAGMENT: true });
}

const CITE_RE = /\[(\d{1,3}(?:\s*,\s*\d{1,3})*)\]/g;
const HAS_CITE = /\[\d{1,3}(?:\s*,\s*\d{1,3})*\]/;

function citationLink(num, turnId) {
  const a = document.createElement("a");
  a.className = "citation";
  a.textContent = `[${num}]`;
  a.href = `#src-${turnId}-${num}`;
  a.dataset.n = num;
  a.setAttribute("aria-label", t("src.n", { n: num }));
  return a;
}

/** Replace [n] and [n, m] in text nodes (outside code and links) with citation links. */
function linkCitations(root, turnId) {
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT, {
    acceptNode: (n) => (n.parentElement.closest("code, pre, a") ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT),
  });
  const nodes = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) if (HAS_CITE.test(n.nodeValue)) nodes.push(n);
  for (const node of nodes) {
    const frag = document.createDocumentFragment();
    const text = node.nodeValue;
    let last = 0;
    CITE_RE.lastIndex = 0;
    for (let m = CITE_RE.exec(text); m; m = CITE_RE.exec(text)) {
      frag.append(text.slice(last, m.index));
      m[1].split(",").map((s) => s.trim()).forEach((num, i) => {
        if (i) frag.append(" ");
        frag.append(citationLink(num, turnId));
      });
      last = m.index + m[0].length;
    }
    frag.append(text.slice(last));
    node.replaceWith(frag);
  }
}

/** Render untrusted Markdown into target, sanitized, with citation links for turn turnId. */
export function renderMarkdown(target, text, turnId) {
  const html = window.marked.parse(text, { gfm: true, async: false });
  target.replaceChildren(sanitize(html));
  linkCitations(target, turnId);
}

/** Highlight the code blocks under root and give each a copy button. */
export function decorateCode(root, copy) {
  root.querySelectorAll("pre > code").forEach((code) => {
    const pre = code.parentElement;
    if (pre.dataset.decorated) return;
    pre.dataset.decorated = "1";
    const lang = [...code.classList].find((c) => c.startsWith("language-"))?.slice(9);
    if (lang && !hljs.getLanguage(lang)) code.classList.remove(`language-${lang}`);
    hljs.highlightElement(code);
    const button = document.createElement("button");
    button.type = "button";
    button.className = "copy-code quiet";
    button.textContent = t("chat.copy");
    button.addEventListener("click", () => copy(code.textContent, button));
    pre.append(button);
  });
}

/** Flag citations that point at no source card of their turn. */
export function markUnknownCitations(block) {
  const known = new Set([...block.querySelectorAll(".source-card")].map((c) => c.dataset.n));
  block.querySelectorAll(".answer .citation").forEach((a) => {
    const unknown = !known.has(a.dataset.n);
    a.classList.toggle("unknown", unknown);
    if (unknown) a.title = t("src.unknown");
    else a.removeAttribute("title");
  });
}
