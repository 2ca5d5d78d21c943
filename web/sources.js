// Source cards under an answer (where the source lies, its heading, why it was found, a snippet), and
// the preview that opens one: the passage highlighted among its neighbouring text (drawn by passage.js)
// and a link to the original file at the passage; the span that supports the answer is marked in it.
// Every document string goes in as textContent or through the sanitizer.

import { api } from "./api.js";
import { el } from "./dom.js";
import { t } from "./i18n.js";
import { titleOf } from "./titles.js";
import { markUnknownCitations } from "./markdown.js";
import { readsWhole, showWhole } from "./original.js";
import { markText, renderPassageView } from "./passage.js";
import { supportLevel, supportLine, toUnits } from "./support.js";

const $ = (sel) => document.querySelector(sel);

/** Whether a document is a spreadsheet, by its file's extension: its "pages" are its sheets. */
export const isSheet = (path) => /\.(xlsx|xls|ods)$/i.test(String(path || ""));

export function locationOf(src) {
  if (src.page && isSheet(src.path)) { // the sheet by its name (the heading the parser gave it), else its number
    const sheet = String(src.heading_path || "").split(" › ")[0];
    return sheet ? t("src.sheet", { sheet }) : t("src.sheetN", { n: src.page });
  }
  if (src.page) return t("src.page", { page: src.page });
  if (src.line_start) {
    return src.line_end && src.line_end !== src.line_start
      ? t("src.lines", { a: src.line_start, b: src.line_end }) : t("src.line", { a: src.line_start });
  }
  return "";
}

/** Why retrieval chose a source, as far as its dict says: words of the question in it, a close meaning. */
export function whyFound(src) {
  const why = [];
  if (typeof src.lexical_score === "number" && src.lexical_score > 0) why.push(t("src.whyWords"));
  if (typeof src.dense_rank === "number") why.push(t("src.whyMeaning"));
  return why.length ? t("src.why", { why: why.join(t("src.whySep")) }) : "";
}

/** The file name a path ends with, and the folder above it when there is one: enough to tell two apart. */
const shortPath = (path) => String(path || "").split("/").slice(-2).join("/");

function sourceCard(src, turnId, repeated = false) {
  const card = el("article", "source-card");
  card.id = `src-${turnId}-${src.n}`;
  card.dataset.n = src.n;
  card.dataset.chunk = src.chunk_id;
  card.dataset.chunks = (src.chunk_ids?.length ? src.chunk_ids : [src.chunk_id]).join(" ");
  card.dataset.url = src.url;
  if (src.cited) card.classList.add("cited");
  const level = src.cited ? supportLevel(src.support) : null; // only a citation is judged on the card
  if (level) card.dataset.support = level;

  const head = el("div", "source-head");
  head.append(el("span", "source-n", `[${src.n}]`));
  const title = src.title || src.path;
  // two sources of one title (two files' "Leave types") are told apart by where they lie
  const open = el("button", "source-title", repeated && src.path ? `${title} (${shortPath(src.path)})` : title);
  open.type = "button";
  open.title = src.path && src.path !== title ? `${title} — ${src.path}` : title;
  open.setAttribute("aria-label", `[${src.n}] ${open.title}`);
  open.setAttribute("aria-haspopup", "dialog");
  head.append(open);
  card.append(head);
  const support = src.cited ? supportLine(src.support) : null;
  if (support) card.append(support);

  const where = [src.path, locationOf(src), src.symbol].filter(Boolean).join(" · ");
  card.append(el("p", "source-path", where));
  if (src.heading_path) card.append(el("p", "source-heading", src.heading_path));
  const why = whyFound(src);
  if (why) card.append(el("p", "source-why", why));
  if (src.snippet) card.append(el("p", "source-snippet", src.snippet));
  card.addEventListener("click", () => openPreview(src));
  return card;
}

/**
 * The cards of one turn: the cited sources first, the rest under "also given to the model" (under "closest
 * passages, none cited" when the answer cites none: an answer saying the documents do not hold it). With
 * `pending` (the `retrieved` event: the answer is still being written) none is cited yet, and they are
 * listed quietly as retrieved. Cards drawn before are replaced in their place.
 */
export function renderSources(block, sources, turnId, { pending = false } = {}) {
  const drawn = block.querySelector(".sources");
  const wrap = el("section", pending ? "sources pending" : "sources");
  wrap.setAttribute("aria-label", t("src.label"));
  const paths = new Map(); // a title -> the paths of the sources under it
  for (const s of sources) paths.set(s.title || s.path, (paths.get(s.title || s.path) || new Set()).add(s.path));
  const repeated = (s) => paths.get(s.title || s.path).size > 1;
  const cited = sources.filter((s) => s.cited);
  const others = sources.filter((s) => !s.cited);
  // An answer that cites nothing (one that says the documents do not hold it) lists the closest passages.
  const othersKey = pending ? "src.retrieved" : cited.length ? "src.others" : "src.closest";
  for (const [key, group, cls] of [["src.cited", cited, "cited-group"], [othersKey, others, "others-group"]]) {
    if (!group.length) continue;
    wrap.append(el("h3", `sources-title ${cls}`, t(key)));
    const list = el("div", "source-list");
    group.forEach((s) => list.append(sourceCard(s, turnId, repeated(s))));
    wrap.append(list);
  }
  if (!sources.length) wrap.append(el("p", "sources-none", t("src.none")));
  if (drawn) drawn.replaceWith(wrap);
  else block.append(wrap);
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

/** A source's chunks as the one text the server merged them into (merge_texts in indexes/diversity.py). */
function mergedText(chunks) {
  let merged = chunks.length ? chunks[0].text || "" : "";
  for (const c of chunks.slice(1)) {
    const text = c.text || "";
    const overlap = overlapOf(merged, text);
    merged = overlap ? merged + text.slice(overlap) : `${merged.trimEnd()}\n${text.trimStart()}`;
  }
  return merged;
}

/**
 * The text of the source's supporting span: its [char_start, char_end) counts code points of the
 * source's merged text, as Python does (an emoji is one); "" when there is none.
 */
export function supportText(chunks, span) {
  if (!chunks.length || !span || !(span.char_end > span.char_start) || span.char_start < 0) return "";
  const merged = mergedText(chunks);
  const unit = toUnits(merged);
  return merged.slice(unit(span.char_start), unit(span.char_end));
}

/** The ids of the chunks a source stands for (its merged chunks, else its one chunk). */
const chunkIdsOf = (src) => (src?.chunk_ids?.length ? src.chunk_ids : [src?.chunk_id]).filter((id) => id != null).map(Number);

/** The chunks the source's text was made of, in reading order: its merged chunks, else the target. */
function sourceChunks(ctx, src) {
  const ids = new Set(chunkIdsOf(src));
  const mine = ctx.chunks.filter((c) => ids.has(Number(c.chunk_id)));
  if (mine.length === ids.size) return mine;
  return ctx.chunks.filter((c) => c.target).slice(0, 1);
}

/** The place of the passage in words: the source's own when it has one (all its chunks), else the target chunk's. */
function placeOf(ctx, src) {
  const target = ctx.chunks.find((c) => c.target) || ctx.chunks[0];
  const place = src && (src.line_start || src.page) ? src : target;
  // a text whose lines run for pages is shown in parts: where the part lies says more than "line 1"
  const inParts = ctx.passage?.format === "text" && !place?.page && place?.line_start && place.line_start === place.line_end
    && ctx.document.chunks > 1 && Number.isInteger(target?.ordinal);
  const where = inParts ? t("src.part", { n: target.ordinal + 1, total: ctx.document.chunks })
    : place && locationOf({ ...place, path: ctx.document.path });
  return [titleOf(ctx.document.collection), ctx.document.path, where, place?.symbol || src?.symbol].filter(Boolean).join(" · ");
}

function renderPassage(body, ctx, src) {
  const doc = ctx.document;
  $("#preview-title").textContent = doc.title || doc.path;
  $("#preview-meta").textContent = placeOf(ctx, src);
  const link = $("#preview-file");
  link.href = doc.file_url;
  link.hidden = false;
  const whole = $("#preview-whole");
  whole.hidden = !readsWhole(doc);
  whole.onclick = () => showWhole(body, doc);
  document.dispatchEvent(new CustomEvent("preview-document", { detail: doc })); // ask_about.js: ask about it

  const out = renderPassageView(ctx.passage, { sheets: isSheet(doc.path) });
  body.replaceChildren(out);
  const targets = [...out.querySelectorAll(".passage-chunk.target")];
  const marks = markText(targets, supportText(sourceChunks(ctx, src), src?.support?.span));
  // the first highlight in view: the span that supports the answer, else the start of the source's part,
  // a few lines under the top for context; only the preview scrolls, not the page under it
  const first = marks[0] || targets[0];
  if (first) {
    const top = first.getBoundingClientRect().top - body.getBoundingClientRect().top + body.scrollTop;
    body.scrollTop = Math.max(0, top - (marks.length ? Math.min(body.clientHeight / 4, 120) : 8));
  }
}

export async function openPreview(src) {
  const dlg = viewer();
  const body = $("#preview-body");
  $("#preview-title").textContent = src.title || src.path;
  $("#preview-meta").textContent = [titleOf(src.collection), src.path, locationOf(src)].filter(Boolean).join(" · ");
  $("#preview-file").hidden = true;
  $("#preview-whole").hidden = true;
  body.replaceChildren(el("p", "muted", t("preview.loading")));
  if (!dlg.open) dlg.showModal();
  const chunkId = src.chunk_id ?? Number(String(src.url).split("/").pop());
  const others = chunkIdsOf(src).filter((id) => id !== Number(chunkId)).slice(0, 10);
  try {
    renderPassage(body, await api.chunkContext(chunkId, 2, others), src);
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
