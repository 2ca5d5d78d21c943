// The passage a source card opens, drawn from the server's one text of it (assistant/answers/
// passage_view.py), where every line or sentence appears once: a Markdown file's own lines rendered as
// answers are (marked -> DOMPurify), code and plain text as numbered monospace lines, other documents
// as their chunks' merged text. The chunks the source stands for are highlighted together, and the
// span that supports the answer is marked inside them. Document text only ever goes in as textContent
// or through the sanitizer.

import { t } from "./i18n.js";
import { markdownBlocks } from "./markdown.js";
import { toUnits } from "./support.js";

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

/** A run of the passage: highlighted (and announced as the current part) when it is the source's. */
function section(tag, target) {
  const part = el(tag, `passage-chunk${target ? " target" : ""}`);
  if (target) part.setAttribute("aria-current", "true");
  return part;
}

/** Items split into the runs before, inside and after the target (whose `inside(item)` says). */
function runs(items, inside) {
  const out = [];
  for (const item of items) {
    const target = inside(item);
    if (!out.length || out[out.length - 1].target !== target) out.push({ target, items: [] });
    out[out.length - 1].items.push(item);
  }
  return out;
}

const within = (range, first, last) => Boolean(range) && first <= range[1] && last >= range[0];

function markdownPassage(view) {
  const out = el("div", "passage markdown");
  const blocks = markdownBlocks(view.text, view.line_start);
  for (const run of runs(blocks, (b) => within(view.target_lines, b.first, b.last))) {
    const part = section("div", run.target);
    part.dataset.lines = `${run.items[0].first}-${run.items[run.items.length - 1].last}`;
    part.append(...run.items.map((b) => b.node));
    out.append(part);
  }
  return out;
}

function linesPassage(view) {
  const out = el("pre", "passage code");
  const numbered = view.text.split("\n").map((line, i) => ({ line, number: view.line_start + i }));
  for (const run of runs(numbered, (l) => within(view.target_lines, l.number, l.number))) {
    const part = section("span", run.target);
    for (const { line, number } of run.items) {
      const row = el("span", "code-line");
      row.dataset.line = number;
      row.append(el("span", "line-no", number), el("span", "line-text", line || " "));
      part.append(row);
    }
    out.append(part);
  }
  return out;
}

// A Markdown table's rule line (|---|:--:|): the parsers write tables so (ingest/tables.py, pdf_tables.py)
const TABLE_RULE = /^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$/m;

/** A part's text in its element: as written, or, when it holds a table the parser kept, rendered (sanitized). */
function fillPart(part, text) {
  if (!TABLE_RULE.test(text)) {
    part.textContent = text;
    return;
  }
  part.classList.add("has-table");
  for (const block of markdownBlocks(text, 1)) part.append(block.node);
}

function textPassage(view, { sheets = false } = {}) {
  const out = el("div", "passage");
  const unit = toUnits(view.text);
  let lastHeading = null;
  let lastPage = null;
  for (const p of view.parts) {
    if (p.page && p.page !== lastPage && !sheets) { // a spreadsheet's "page" is its sheet, named by its heading
      out.append(el("p", "passage-page", t("src.page", { page: p.page })));
      lastPage = p.page;
    }
    if (p.heading_path && p.heading_path !== lastHeading) {
      out.append(el("p", "passage-heading", p.heading_path)); // where in the page: a breadcrumb
      lastHeading = p.heading_path;
    }
    const part = section("div", p.target);
    part.dataset.chunk = p.chunk_id;
    fillPart(part, view.text.slice(unit(p.start), unit(p.end)));
    out.append(part);
  }
  return out;
}

/** The passage view as an element: .passage, its source's part(s) in .passage-chunk.target. */
export function renderPassageView(view, options = {}) {
  if (view.format === "markdown") return markdownPassage(view);
  if (view.format === "lines") return linesPassage(view);
  return textPassage(view, options);
}

/** The text nodes under root that hold document text (line numbers are not). */
function textNodes(root) {
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT, {
    acceptNode: (n) => (n.parentElement.closest(".line-no") ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT),
  });
  const nodes = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) nodes.push(n);
  return nodes;
}

const SPACE = /\s/;

/**
 * Mark the first place of needle in the text under the roots, whitespace aside (a rendered table or a
 * numbered line breaks the text where the chunk's words ran on): one <mark> per text node it covers.
 * Returns the marks, in order.
 */
export function markText(roots, needle) {
  const wanted = [...(needle || "")].filter((c) => !SPACE.test(c)).join("");
  if (!wanted) return [];
  const at = []; // [node, offset] of each character of `seen`
  let seen = "";
  for (const node of roots.flatMap(textNodes)) {
    const text = node.nodeValue;
    for (let i = 0; i < text.length; i++) {
      if (SPACE.test(text[i])) continue;
      seen += text[i];
      at.push([node, i]);
    }
  }
  const found = seen.indexOf(wanted);
  if (found < 0) return [];
  const spans = new Map(); // node -> [from, to)
  for (const [node, i] of at.slice(found, found + wanted.length)) {
    const span = spans.get(node);
    spans.set(node, span ? [span[0], i + 1] : [i, i + 1]);
  }
  const marks = [];
  for (const [node, [from, to]] of spans) {
    const middle = node.splitText(from);
    middle.splitText(to - from);
    const mark = el("mark", "support-span");
    mark.title = t("preview.supporting");
    middle.replaceWith(mark);
    mark.append(middle);
    marks.push(mark);
  }
  return marks;
}
