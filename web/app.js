// The chat page: pick a collection, ask, stream the answer, show and open its sources.
// Plain ES modules, no build step.

import { markUnknownCitations, renderMarkdown } from "./markdown.js";
import { readEvents } from "./sse.js";

const HISTORY_MESSAGES = 6; // the last three question/answer pairs go with a follow-up
const STORAGE_KEY = "rag.collection";

const $ = (sel) => document.querySelector(sel);
const els = {
  collection: $("#collection"),
  chat: $("#chat"),
  intro: $("#intro"),
  status: $("#status"),
  form: $("#ask-form"),
  question: $("#question"),
  ask: $("#ask"),
  stop: $("#stop"),
  newChat: $("#new-chat"),
  health: $("#health"),
  viewer: $("#chunk-viewer"),
  viewerTitle: $("#chunk-title"),
  viewerMeta: $("#chunk-meta"),
  viewerText: $("#chunk-text"),
  viewerClose: $("#chunk-close"),
};

let history = []; // [{role, content}] of finished turns
let controller = null; // AbortController of the request in flight
let turnCount = 0;

/** Create an element with a class and optional text (always as textContent). */
function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

// ---------------------------------------------------------------- status line

function showStatus(message, kind = "error") {
  els.status.textContent = message;
  els.status.dataset.kind = kind;
  els.status.hidden = false;
}

function clearStatus() {
  els.status.hidden = true;
  els.status.textContent = "";
  delete els.status.dataset.kind;
}

/** Turn an HTTP error response (JSON {status_code, detail, extra?}) into one readable sentence. */
async function describeHttpError(resp) {
  let detail = resp.statusText || "request failed";
  try {
    const body = await resp.json();
    if (body && body.detail) detail = String(body.detail);
    if (body && Array.isArray(body.extra) && body.extra.length) {
      const parts = body.extra.map((e) => (e && (e.message || e.msg)) || "").filter(Boolean);
      if (parts.length) detail += `: ${parts.join("; ")}`;
    }
  } catch { /* not JSON: keep the status text */ }
  if (resp.status === 429) {
    const wait = resp.headers.get("Retry-After");
    return `The server is busy (${detail}).${wait ? ` Try again in ${wait} s.` : " Try again shortly."}`;
  }
  return `Error ${resp.status}: ${detail}`;
}

// ---------------------------------------------------------------- collections and health

async function loadCollections() {
  let list;
  try {
    const resp = await fetch("/api/collections");
    if (!resp.ok) throw new Error(await describeHttpError(resp));
    list = await resp.json();
  } catch (err) {
    els.collection.replaceChildren(el("option", "", "unavailable"));
    showStatus(`Could not load collections. ${err.message}`);
    return;
  }
  els.collection.replaceChildren();
  if (!list.length) {
    els.collection.append(el("option", "", "no collections"));
    showStatus("There are no collections yet. Ingest documents first: assistant ingest <folder> --collection <name>", "info");
    return;
  }
  for (const c of list) {
    const opt = el("option", "", `${c.name} (${c.documents} docs)`);
    opt.value = c.name;
    opt.title = `${c.chunks} chunks${c.failed ? `, ${c.failed} failed` : ""} · ${c.embedder}`;
    els.collection.append(opt);
  }
  const saved = localStorage.getItem(STORAGE_KEY);
  if (saved && list.some((c) => c.name === saved)) els.collection.value = saved;
  els.collection.disabled = false;
}

async function loadHealth() {
  try {
    const resp = await fetch("/health");
    const body = await resp.json();
    const backend = body.backend || {};
    const label = [...new Set([backend.name, backend.model].filter(Boolean))].join(" · ");
    els.health.textContent = body.status === "ok" ? `● ${label || "ready"}` : `● degraded${backend.detail ? `: ${backend.detail}` : ""}`;
    els.health.dataset.state = body.status === "ok" ? "ok" : "degraded";
  } catch {
    els.health.textContent = "● server unreachable";
    els.health.dataset.state = "down";
  }
}

// ---------------------------------------------------------------- source cards and the chunk viewer

function locationOf(src) {
  if (src.page) return `page ${src.page}`;
  if (src.line_start) return src.line_end && src.line_end !== src.line_start ? `lines ${src.line_start}–${src.line_end}` : `line ${src.line_start}`;
  return "";
}

function sourceCard(src, turnId) {
  const card = el("article", "source-card");
  card.id = `src-${turnId}-${src.n}`;
  card.dataset.n = src.n;
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
  card.addEventListener("click", () => openChunk(src));
  return card;
}

function renderSources(block, sources, turnId) {
  const wrap = el("section", "sources");
  wrap.setAttribute("aria-label", "Sources");
  const cited = sources.filter((s) => s.cited);
  const others = sources.filter((s) => !s.cited);
  for (const [title, group] of [["Sources cited", cited], ["Also retrieved", others]]) {
    if (!group.length) continue;
    wrap.append(el("h3", "sources-title", title));
    const list = el("div", "source-list");
    group.forEach((s) => list.append(sourceCard(s, turnId)));
    wrap.append(list);
  }
  if (!sources.length) wrap.append(el("p", "sources-none", "No sources were retrieved for this question."));
  block.append(wrap);
  markUnknownCitations(block);
}

async function openChunk(src) {
  els.viewerTitle.textContent = src.title || src.path;
  els.viewerMeta.textContent = [src.collection, src.path, locationOf(src), src.heading_path].filter(Boolean).join(" · ");
  els.viewerText.textContent = "Loading…";
  if (!els.viewer.open) els.viewer.showModal();
  try {
    const resp = await fetch(src.url);
    if (!resp.ok) throw new Error(await describeHttpError(resp));
    const chunk = await resp.json();
    els.viewerText.textContent = chunk.text;
  } catch (err) {
    els.viewerText.textContent = `Could not load this passage. ${err.message}`;
  }
}

function jumpToSource(link) {
  const card = document.getElementById(link.getAttribute("href").slice(1));
  if (!card) return;
  card.scrollIntoView({ behavior: "smooth", block: "center" });
  card.classList.remove("highlight");
  void card.offsetWidth; // restart the highlight animation
  card.classList.add("highlight");
  card.querySelector(".source-title")?.focus({ preventScroll: true });
}

// ---------------------------------------------------------------- asking

function newTurn(question) {
  els.intro.hidden = true;
  const id = ++turnCount;
  const turn = el("article", "turn");
  turn.dataset.turn = id;
  turn.append(el("p", "question", question));
  const block = el("div", "answer-block");
  const answer = el("div", "answer");
  answer.setAttribute("aria-live", "polite");
  answer.setAttribute("aria-busy", "true");
  answer.append(el("span", "thinking", "Searching the collection…"));
  block.append(answer);
  turn.append(block);
  els.chat.append(turn);
  turn.scrollIntoView({ block: "start" });
  return { id, turn, block, answer };
}

function setBusy(busy) {
  els.ask.disabled = busy;
  els.stop.disabled = !busy;
  els.collection.disabled = busy || !els.collection.value;
}

/** Give a rejected question back to the composer, unless something new was typed meanwhile. */
function restoreQuestion(question) {
  if (!els.question.value.trim()) els.question.value = question;
}

function failTurn(t, message) {
  t.block.append(el("p", "turn-error", message));
  showStatus(message);
}

async function ask(question) {
  const collection = els.collection.value;
  if (!question) {
    els.question.setAttribute("aria-invalid", "true");
    showStatus("Type a question first.", "error");
    els.question.focus();
    return;
  }
  if (!collection) {
    showStatus("Choose a collection first.", "error");
    return;
  }
  els.question.removeAttribute("aria-invalid");
  clearStatus();
  const t = newTurn(question);
  const payload = { question, collection, history: history.slice(-HISTORY_MESSAGES) };
  controller = new AbortController();
  setBusy(true);
  els.question.value = "";

  let text = "";
  let finished = false;
  let frame = 0;
  const paint = () => { frame = 0; renderMarkdown(t.answer, text, t.id); };
  try {
    const resp = await fetch("/api/ask", {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
      body: JSON.stringify(payload),
      signal: controller.signal,
    });
    if (!resp.ok) {
      t.answer.replaceChildren();
      failTurn(t, await describeHttpError(resp));
      restoreQuestion(question);
      return;
    }
    await readEvents(resp, (name, data) => {
      if (name === "token") {
        text += data.text;
        if (!frame) frame = requestAnimationFrame(paint);
      } else if (name === "sources") {
        renderSources(t.block, data.sources || [], t.id);
      } else if (name === "done") {
        finished = true;
        if (typeof data.answer === "string") text = data.answer;
        showTimings(t.block, data);
      } else if (name === "error") {
        const retry = data.retry_after ? ` Try again in ${data.retry_after} s.` : "";
        failTurn(t, `The answer failed: ${data.message}${data.code ? ` (${data.code})` : ""}.${retry}`);
      }
    });
    if (!finished && !t.block.querySelector(".turn-error")) failTurn(t, "The connection closed before the answer was complete.");
  } catch (err) {
    if (err.name === "AbortError") t.block.append(el("p", "turn-note", "Stopped."));
    else {
      failTurn(t, `Could not reach the server: ${err.message}`);
      restoreQuestion(question);
    }
  } finally {
    if (frame) cancelAnimationFrame(frame);
    if (text) paint();
    else if (t.answer.querySelector(".thinking")) t.answer.replaceChildren();
    markUnknownCitations(t.block); // paint() rebuilt the links; flag those without a card
    t.answer.setAttribute("aria-busy", "false");
    if (finished) history.push({ role: "user", content: question }, { role: "assistant", content: text });
    controller = null;
    setBusy(false);
    els.question.focus();
  }
}

function showTimings(block, done) {
  const parts = [];
  if (done.model) parts.push(done.model);
  if (Number.isFinite(done.prompt_tokens)) parts.push(`${done.prompt_tokens} prompt tokens`);
  if (Number.isFinite(done.completion_tokens)) parts.push(`${done.completion_tokens} answer tokens`);
  for (const [key, val] of Object.entries(done.timings || {})) {
    if (typeof val !== "number") continue;
    const [, name, unit] = key.match(/^(.*?)(?:_(s|ms))?$/);
    parts.push(`${name.replace(/_/g, " ")} ${val < 10 ? val.toFixed(2) : Math.round(val)}${unit ? ` ${unit}` : ""}`);
  }
  if (parts.length) block.append(el("p", "timings", parts.join(" · ")));
}

// ---------------------------------------------------------------- wiring

els.form.addEventListener("submit", (ev) => {
  ev.preventDefault();
  if (!controller) ask(els.question.value.trim());
});

els.question.addEventListener("keydown", (ev) => {
  if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) {
    ev.preventDefault();
    els.form.requestSubmit();
  }
});

els.question.addEventListener("input", () => {
  if (els.question.value.trim()) els.question.removeAttribute("aria-invalid");
});

els.stop.addEventListener("click", () => controller?.abort());

els.newChat.addEventListener("click", () => {
  controller?.abort();
  history = [];
  els.chat.querySelectorAll(".turn").forEach((n) => n.remove());
  els.intro.hidden = false;
  clearStatus();
  els.question.focus();
});

els.collection.addEventListener("change", () => localStorage.setItem(STORAGE_KEY, els.collection.value));

els.chat.addEventListener("click", (ev) => {
  const link = ev.target.closest("a.citation");
  if (!link) return;
  ev.preventDefault();
  jumpToSource(link);
});

els.viewerClose.addEventListener("click", () => els.viewer.close());
els.viewer.addEventListener("click", (ev) => {
  if (ev.target === els.viewer) els.viewer.close(); // a click on the backdrop
});

loadCollections();
loadHealth();
els.question.focus();
