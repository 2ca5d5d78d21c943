// Source cards under an answer, and the preview that opens one: the passage highlighted among its
// neighbouring text, with line numbers for code, the heading for wiki pages, the page for PDFs, and
// a link to the original file. Every document string goes in as textContent.

import { api } from "./api.js";
import { t } from "./i18n.js";
import { markUnknownCitations } from "./markdown.js";

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

  const head = el("div", "source-head");
  head.append(el("span", "source-n", `[${src.n}]`));
  const open = el("button", "source-title", src.title || src.path);
  open.type = "button";
  open.setAttribute("aria-haspopup", "dialog");
  head.append(open);
  if (typeof src.score === "number") head.append(el("span", "source-score", src.score.toFixed(3)));
  card.append(head);

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

/** Lines of a code chunk, numbered as in its file; lines an earlier chunk already showed are skipped. */
function codeLines(chunk, shownUpTo) {
  const frag = document.createDocumentFragment();
  chunk.text.split("\n").forEach((line, i) => {
    const number = chunk.line_start + i;
    if (number <= shownUpTo) return;
    const row = el("span", "code-line");
    row.dataset.line = number;
    row.append(el("span", "line-no", number), el("span", "line-text", line || " "));
    frag.append(row);
  });
  return frag;
}

function renderPassage(body, ctx) {
  const doc = ctx.document;
  const target = ctx.chunks.find((c) => c.target) || ctx.chunks[0];
  $("#preview-title").textContent = doc.title || doc.path;
  $("#preview-meta").textContent = [doc.collection, doc.path, target && locationOf(target), target?.symbol]
    .filter(Boolean).join(" · ");
  const link = $("#preview-file");
  link.href = doc.file_url;
  link.hidden = false;

  const isCode = ctx.chunks.every((c) => c.line_start) && !ctx.chunks.some((c) => c.page);
  const out = el(isCode ? "pre" : "div", isCode ? "passage code" : "passage");
  let lastHeading = null;
  let lastPage = null;
  let shownUpTo = 0;
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
      part.append(codeLines(c, shownUpTo));
      shownUpTo = Math.max(shownUpTo, c.line_end || c.line_start);
    } else {
      part.textContent = c.text;
    }
    if (c.target) part.setAttribute("aria-current", "true");
    out.append(part);
  }
  body.replaceChildren(out);
  const first = out.querySelector(".target");
  if (first) body.scrollTop = Math.max(0, first.offsetTop - body.offsetTop - body.clientHeight / 3); // only the preview scrolls
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
    renderPassage(body, await api.chunkContext(chunkId));
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
