// Source cards under an answer, and the preview that opens one: the passage highlighted among its
// neighbouring text, with line numbers for code, the heading for wiki pages, the page for PDFs, and
// a link to the original file; the span that supports the answer is marked in it. Every document string
// goes in as textContent.

import { api } from "./api.js";
import { t } from "./i18n.js";
import { markUnknownCitations } from "./markdown.js";
import { supportLevel, supportLine, toUnits } from "./support.js";

const $ = (sel) => document.querySelector(sel);

export function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

export function locationOf(src) {
  if (src.page) return t("src.page", { page: src.page });
  if (src.line_start) {
    return src.line_end && src.line_end !== src.line_start
      ? t("src.lines", { a: src.line_start, b: src.line_end }) : t("src.line", { a: src.line_start });
  }
  return "";
}

function sourceCard(src, turnId) {
  const card = el("article", "source-card");
  card.id = `src-${turnId}-${src.n}`;
  card.dataset.n = src.n;
  card.dataset.chunk = src.chunk_id;
  card.dataset.url = src.url;
  if (src.cited) card.classList.add("cited");
  const level = supportLevel(src.support);
  if (level) card.dataset.support = level;

  const head = el("div", "source-head");
  head.append(el("span", "source-n", `[${src.n}]`));
  const open = el("button", "source-title", src.title || src.path);
  open.type = "button";
  open.setAttribute("aria-haspopup", "dialog");
  head.append(open);
  if (typeof src.score === "number") head.append(el("span", "source-score", src.score.toFixed(3)));
  card.append(head);
  const support = supportLine(src.support);
  if (support) card.append(support);

  const where = [src.path, locationOf(src), src.symbol].filter(Boolean).join(" · ");
  card.append(el("p", "source-path", where));
  if (src.heading_path) card.append(el("p", "source-heading", src.heading_path));
  if (src.snippet) card.append(el("p", "source-snippet", src.snippet));
  card.addEventListener("click", () => openPreview(src));
  return card;
}

/** The cards of one turn: the cited sources first, the rest under "also given to the model". */
export function renderSources(block, sources, turnId) {
  block.querySelector(".sources")?.remove();
  const wrap = el("section", "sources");
  wrap.setAttribute("aria-label", t("src.label"));
  const cited = sources.filter((s) => s.cited);
  const others = sources.filter((s) => !s.cited);
  for (const [key, group, cls] of [["src.cited", cited, "cited-group"], ["src.others", others, "others-group"]]) {
    if (!group.length) continue;
    wrap.append(el("h3", `sources-title ${cls}`, t(key)));
    const list = el("div", "source-list");
    group.forEach((s) => list.append(sourceCard(s, turnId)));
    wrap.append(list);
  }
  if (!sources.length) wrap.append(el("p", "sources-none", t("src.none")));
  block.append(wrap);
  markUnknownCitations(block);
}

/** A citation was clicked: highlight its card and open the passage it stands for. */
export function jumpToSource(link) {
  const card = document.getElementById(link.getAttribute("href").slice(1));
  if (!card) return;
  card.scrollIntoView({ behavior: "smooth", block: "center" });
  card.classList.remove("highlight");
  void card.offsetWidth; // restart the highlight animation
  card.classList.add("highlight");
  card.click();
}

// ---------------------------------------------------------------- the preview

const viewer = () => $("#preview");

/** text with [from, to) inside a <mark> (the supporting span), as nodes; plain text when there is none. */
function withMark(text, range) {
  if (!range) return [text];
  const mark = el("mark", "support-span", text.slice(range[0], range[1]));
  mark.title = t("preview.supporting");
  return [text.slice(0, range[0]), mark, text.slice(range[1])].filter((n) => n !== "");
}

/**
 * Lines of a code chunk, numbered as in its file; lines an earlier chunk already showed are skipped.
 * `marks` maps a line number to the columns of the supporting span on it.
 */
function codeLines(chunk, shownUpTo, marks) {
  const frag = document.createDocumentFragment();
  chunk.text.split("\n").forEach((line, i) => {
    const number = chunk.line_start + i;
    if (number <= shownUpTo) return;
    const row = el("span", "code-line");
    row.dataset.line = number;
    const text = el("span", "line-text");
    text.append(...(line ? withMark(line, marks.get(number)) : [" "]));
    row.append(el("span", "line-no", number), text);
    frag.append(row);
  });
  return frag;
}

/** The longest suffix of left that is a prefix of right (at least 20 characters), as indexes/diversity.py finds it. */
function overlapOf(left, right, longest = 4000, shortest = 20) {
  if (left.length < shortest || right.length < shortest) return 0;
  const tail = left.slice(-longest);
  const head = right.slice(0, shortest);
  for (let start = tail.indexOf(head); start !== -1; start = tail.indexOf(head, start + 1)) {
    const n = tail.length - start;
    if (n <= right.length && right.startsWith(tail.slice(start))) return n;
  }
  return 0;
}

/**
 * A source is one chunk or adjacent chunks merged into one text (merge_texts in indexes/diversity.py):
 * rebuild that text, and map its [start, end) span back onto each chunk's own text.
 * Returns Map chunk id -> [from, to) within that chunk's text (UTF-16 units, as the page counts).
 */
export function spanInChunks(chunks, span) {
  const ranges = new Map();
  if (!chunks.length || !span || !(span.char_end > span.char_start) || span.char_start < 0) return ranges;
  let merged = "";
  const parts = []; // {id, at: where in merged, from: where in the chunk's text, length}
  for (const c of chunks) {
    const text = c.text || "";
    if (!parts.length) {
      merged = text;
      parts.push({ id: c.chunk_id, at: 0, from: 0, length: text.length });
      continue;
    }
    const overlap = overlapOf(merged, text);
    if (overlap) {
      parts.push({ id: c.chunk_id, at: merged.length, from: overlap, length: text.length - overlap });
      merged += text.slice(overlap);
    } else {
      merged = merged.trimEnd();
      parts.forEach((p) => { p.length = Math.max(0, Math.min(p.length, merged.length - p.at)); });
      merged += "\n";
      const lead = text.length - text.trimStart().length;
      parts.push({ id: c.chunk_id, at: merged.length, from: lead, length: text.length - lead });
      merged += text.slice(lead);
    }
  }
  const unit = toUnits(merged);
  const start = unit(span.char_start);
  const end = unit(span.char_end);
  for (const p of parts) {
    const a = Math.max(start, p.at);
    const b = Math.min(end, p.at + p.length);
    if (b > a) ranges.set(p.id, [p.from + a - p.at, p.from + b - p.at]);
  }
  return ranges;
}

/** Line number -> [from, to) columns of a code chunk's part of the span. */
function lineMarks(chunk, range, into) {
  if (!range) return;
  let at = 0;
  chunk.text.split("\n").forEach((line, i) => {
    const a = Math.max(range[0], at);
    const b = Math.min(range[1], at + line.length);
    if (b > a) into.set(chunk.line_start + i, [a - at, b - at]);
    at += line.length + 1;
  });
}

/** The chunks the source's text was made of, in reading order: its merged chunks, else the target. */
function sourceChunks(ctx, src) {
  const ids = new Set((src?.chunk_ids?.length ? src.chunk_ids : [src?.chunk_id]).map(Number));
  const mine = ctx.chunks.filter((c) => ids.has(Number(c.chunk_id)));
  if (mine.length === ids.size) return mine;
  return ctx.chunks.filter((c) => c.target).slice(0, 1);
}

function renderPassage(body, ctx, src) {
  const doc = ctx.document;
  const target = ctx.chunks.find((c) => c.target) || ctx.chunks[0];
  $("#preview-title").textContent = doc.title || doc.path;
  $("#preview-meta").textContent = [doc.collection, doc.path, target && locationOf(target), target?.symbol]
    .filter(Boolean).join(" · ");
  const link = $("#preview-file");
  link.href = doc.file_url;
  link.hidden = false;

  const isCode = ctx.document.numbered_lines ?? (ctx.chunks.every((c) => c.line_start) && !ctx.chunks.some((c) => c.page));
  const out = el(isCode ? "pre" : "div", isCode ? "passage code" : "passage");
  let lastHeading = null;
  let lastPage = null;
  let shownUpTo = 0;
  const ranges = spanInChunks(sourceChunks(ctx, src), src?.support?.span);
  const marks = new Map();
  if (isCode) ctx.chunks.forEach((c) => lineMarks(c, ranges.get(c.chunk_id), marks));
  for (const c of ctx.chunks) {
    if (!isCode && c.page && c.page !== lastPage) {
      out.append(el("p", "passage-page", t("src.page", { page: c.page })));
      lastPage = c.page;
    }
    if (!isCode && c.heading_path && c.heading_path !== lastHeading) {
      out.append(el("p", "passage-heading", c.heading_path)); // where in the page: a breadcrumb
      lastHeading = c.heading_path;
    }
    const part = el(isCode ? "span" : "div", `passage-chunk${c.target ? " target" : ""}`);
    part.dataset.chunk = c.chunk_id;
    if (isCode) {
      if (c.symbol) part.dataset.symbol = c.symbol;
      part.append(codeLines(c, shownUpTo, marks));
      shownUpTo = Math.max(shownUpTo, c.line_end || c.line_start);
    } else {
      part.append(...withMark(c.text, ranges.get(c.chunk_id)));
    }
    if (c.target) part.setAttribute("aria-current", "true");
    out.append(part);
  }
  body.replaceChildren(out);
  const first = out.querySelector("mark.support-span") || out.querySelector(".target");
  if (first) { // only the preview scrolls, not the page under it
    const top = first.getBoundingClientRect().top - body.getBoundingClientRect().top + body.scrollTop;
    body.scrollTop = Math.max(0, top - body.clientHeight / 3);
  }
}

export async function openPreview(src) {
  const dlg = viewer();
  const body = $("#preview-body");
  $("#preview-title").textContent = src.title || src.path;
  $("#preview-meta").textContent = [src.collection, src.path, locationOf(src)].filter(Boolean).join(" · ");
  $("#preview-file").hidden = true;
  body.replaceChildren(el("p", "muted", t("preview.loading")));
  if (!dlg.open) dlg.showModal();
  const chunkId = src.chunk_id ?? Number(String(src.url).split("/").pop());
  try {
    renderPassage(body, await api.chunkContext(chunkId), src);
  } catch (err) {
    body.replaceChildren(el("p", "turn-error", t("preview.failed", { message: err.message })));
  }
}

export function wirePreview() {
  const dlg = viewer();
  $("#preview-close").addEventListener("click", () => dlg.close());
  dlg.addEventListener("click", (ev) => {
    if (ev.target === dlg) dlg.close(); // a click on the backdrop
  });
}
