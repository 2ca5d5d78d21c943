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

// Where a checked sentence starts and ends, marked in the Markdown before it is parsed. Punctuation
// characters, so that emphasis next to them parses as it would without them, and so rare in answers
// that an answer holding one is simply not marked.
const OPEN = "\u2E30";
const CLOSE = "\u2E31";
const LEAD = /^(?:\s|#{1,6}(?=\s)|>|[-*+](?=\s)|\d{1,9}[.)](?=\s))*/; // block syntax a mark may not precede
const BLOCKS = "p, li, h1, h2, h3, h4, h5, h6, td, th, blockquote, pre, div";

/** text with OPEN/CLOSE around each sentence ({start, end} offsets in text); and which sentences got them. */
function withMarks(text, sentences) {
  if (!sentences.length || text.includes(OPEN) || text.includes(CLOSE)) return { marked: text, order: [] };
  const spots = [];
  const order = [];
  let after = 0;
  for (const s of [...sentences].sort((a, b) => a.start - b.start)) {
    let start = Math.max(s.start, after);
    let end = Math.min(s.end, text.length);
    const body = text.slice(start, end);
    if (/```|~~~|^\s*\|/m.test(body)) continue; // code fences and table rows keep their syntax
    start += body.match(LEAD)[0].length;
    end = start + text.slice(start, end).trimEnd().length;
    if (end <= start) continue;
    spots.push(start, end);
    order.push(s.index);
    after = end;
  }
  let marked = "";
  let last = 0;
  spots.forEach((at, i) => {
    marked += text.slice(last, at) + (i % 2 ? CLOSE : OPEN);
    last = at;
  });
  return { marked: marked + text.slice(last), order };
}

/** Turn the marks into span.sentence[data-sentence] around the text between them (never across blocks). */
function wrapSentences(root, order) {
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const nodes = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) nodes.push(n);
  let open = -1;
  let opened = 0;
  let block = null;
  for (const node of nodes) {
    const here = node.parentElement.closest(BLOCKS);
    if (open >= 0 && here !== block) open = -1; // a lost end mark: the sentence ends with its block
    const text = node.nodeValue;
    if (open < 0 && !text.includes(OPEN) && !text.includes(CLOSE)) continue;
    const inCode = Boolean(node.parentElement.closest("pre"));
    const frag = document.createDocumentFragment();
    let run = "";
    const flush = () => {
      if (!run) return;
      if (open >= 0 && !inCode && order[open] !== undefined) {
        const span = document.createElement("span");
        span.className = "sentence";
        span.dataset.sentence = order[open];
        span.textContent = run;
        frag.append(span);
      } else frag.append(run);
      run = "";
    };
    for (const ch of text) {
      if (ch === OPEN) {
        flush();
        open = opened++;
        block = here;
      } else if (ch === CLOSE) {
        flush();
        open = -1;
      } else run += ch;
    }
    flush();
    node.replaceWith(frag);
  }
}

/**
 * Render untrusted Markdown into target, sanitized, with citation links for turn turnId. Each of
 * `sentences` ({index, start, end}: offsets in text) is wrapped in span.sentence[data-sentence=index].
 */
export function renderMarkdown(target, text, turnId, sentences = []) {
  const { marked, order } = withMarks(text, sentences);
  const html = window.marked.parse(marked, { gfm: true, async: false });
  target.replaceChildren(sanitize(html));
  if (order.length) wrapSentences(target, order);
  linkCitations(target, turnId);
}

/**
 * Untrusted Markdown (a document's own lines) rendered block by block, with the same renderer and
 * sanitizer as answers and its code blocks highlighted; each block with the lines it was written on,
 * counting the text's first line as firstLine: [{node, first, last}].
 */
export function markdownBlocks(text, firstLine) {
  // marked's defaults, not options of our own: options given here would replace them, renderer included
  const tokens = window.marked.lexer(text);
  const blocks = [];
  let line = firstLine;
  for (const token of tokens) {
    const breaks = (token.raw.match(/\n/g) || []).length;
    if (token.type !== "space") {
      const one = Object.assign([token], { links: tokens.links });
      const node = document.createElement("div");
      node.className = "md-block";
      node.append(sanitize(window.marked.parser(one)));
      node.querySelectorAll("pre > code").forEach(highlightCode);
      const trailing = token.raw.length - token.raw.replace(/\n+$/, "").length;
      blocks.push({ node, first: line, last: line + breaks - trailing });
    }
    line += breaks;
  }
  return blocks;
}

/** Highlight one code element (a language highlight.js does not know is dropped, not guessed at). */
function highlightCode(code) {
  const lang = [...code.classList].find((c) => c.startsWith("language-"))?.slice(9);
  if (lang && !hljs.getLanguage(lang)) code.classList.remove(`language-${lang}`);
  hljs.highlightElement(code);
}

/** Highlight the code blocks under root and give each a copy button. */
export function decorateCode(root, copy) {
  root.querySelectorAll("pre > code").forEach((code) => {
    const pre = code.parentElement;
    if (pre.dataset.decorated) return;
    pre.dataset.decorated = "1";
    highlightCode(code);
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
    else if (a.title === t("src.unknown")) a.removeAttribute("title"); // a support title stays
  });
}
