// Asking and the saved conversations: the sidebar (new, search, rename, delete), a conversation's
// turns restored on reload, and the streamed answer with its state, sources, copy and stop; once
// done, how well its sources support it.

import { api } from "./api.js";
import { closeDrawer } from "./drawer.js";
import { t } from "./i18n.js";
import { decorateCode, markUnknownCitations, renderMarkdown } from "./markdown.js";
import { el, jumpToSource, renderSources } from "./sources.js";
import { readEvents } from "./sse.js";
import { answerNotes, citedSentences, markAnswer, toUnits } from "./support.js";

const COLLECTION_KEY = "rag.collection";
const CONVERSATION_KEY = "rag.conversation";

const $ = (sel) => document.querySelector(sel);
const els = {};

let controller = null; // AbortController of the answer in flight
let conversationId = Number(localStorage.getItem(CONVERSATION_KEY)) || null;
let turnCount = 0;
let collections = [];

// ---------------------------------------------------------------- status line

export function showStatus(message, kind = "error") {
  els.status.textContent = message;
  els.status.dataset.kind = kind;
  els.status.hidden = false;
}

function clearStatus() {
  els.status.hidden = true;
  els.status.textContent = "";
  delete els.status.dataset.kind;
}

// ---------------------------------------------------------------- collections

export async function loadCollections() {
  try {
    collections = await api.collections();
  } catch (err) {
    els.collection.replaceChildren(el("option", "", t("chat.collections.unavailable")));
    showStatus(err.message);
    return;
  }
  const previous = els.collection.value || localStorage.getItem(COLLECTION_KEY);
  els.collection.replaceChildren();
  if (!collections.length) {
    els.collection.append(el("option", "", t("chat.collections.none")));
    els.collection.disabled = true;
    showStatus(t("chat.noCollections"), "info");
    return;
  }
  for (const c of collections) {
    const opt = el("option", "", t("chat.docsCount", { name: c.name, n: c.documents }));
    opt.value = c.name;
    els.collection.append(opt);
  }
  if (previous && collections.some((c) => c.name === previous)) els.collection.value = previous;
  els.collection.disabled = Boolean(controller);
  if (els.status.dataset.kind === "info") clearStatus();
}

function chooseCollection(names) {
  const name = (names || []).find((n) => collections.some((c) => c.name === n));
  if (name) els.collection.value = name;
}

// ---------------------------------------------------------------- the sidebar

let searchTimer = 0;
let listing = 0; // only the latest listing is drawn (an older one may answer last)
let drawn = ""; // the listing on screen: the same one again is not redrawn

/**
 * List the conversations in the sidebar. A listing equal to the one on screen is left alone, so a refresh
 * that changes nothing keeps an armed delete button, an open rename and the keyboard focus; `redraw`
 * draws it anyway (to close a rename, or in another language).
 */
export async function loadConversations({ redraw = false } = {}) {
  const q = els.convSearch.value.trim();
  const mine = ++listing;
  let list;
  try {
    list = (await api.conversations(q)).conversations;
  } catch (err) {
    if (mine === listing) {
      els.convList.replaceChildren(el("li", "muted", err.message));
      drawn = "";
    }
    return;
  }
  if (mine !== listing) return;
  const key = JSON.stringify([q, conversationId, list]);
  if (key === drawn && !redraw) return;
  drawn = key;
  els.convList.replaceChildren();
  if (!list.length) els.convList.append(el("li", "muted conv-empty", t(q ? "conv.noMatch" : "conv.none")));
  for (const c of list) els.convList.append(conversationItem(c));
}

function conversationItem(c) {
  const li = el("li", "conv-item");
  li.dataset.id = c.id;
  if (c.id === conversationId) li.setAttribute("aria-current", "true");
  const open = el("button", "conv-open", c.title || t("conv.untitled"));
  open.type = "button";
  open.addEventListener("click", () => {
    openConversation(c.id);
    closeDrawer();
  });
  const rename = el("button", "conv-rename quiet icon", "✎");
  rename.type = "button";
  rename.setAttribute("aria-label", `${t("conv.rename")}: ${c.title || t("conv.untitled")}`);
  rename.addEventListener("click", () => startRename(li, c));
  const del = el("button", "conv-delete quiet icon", "×");
  del.type = "button";
  del.setAttribute("aria-label", `${t("conv.delete")}: ${c.title || t("conv.untitled")}`);
  del.addEventListener("click", () => confirmThen(del, t("conv.confirmDelete"), () => removeConversation(c.id)));
  li.append(open, rename, del);
  return li;
}

/** A destructive button asks once more in place (no window.confirm) before it acts. */
export function confirmThen(button, question, action) {
  if (button.dataset.armed) {
    action();
    return;
  }
  const label = button.textContent;
  button.dataset.armed = "1";
  button.textContent = question;
  button.classList.add("armed");
  setTimeout(() => {
    delete button.dataset.armed;
    button.textContent = label;
    button.classList.remove("armed");
  }, 4000);
}

function startRename(li, c) {
  const form = el("form", "conv-rename-form");
  const input = el("input");
  input.value = c.title;
  input.maxLength = 200;
  input.setAttribute("aria-label", t("conv.renamePrompt"));
  const save = el("button", "", t("conv.save"));
  save.type = "submit";
  form.append(input, save);
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    try {
      await api.renameConversation(c.id, input.value);
      loadConversations({ redraw: true });
    } catch (err) {
      showStatus(err.message);
    }
  });
  input.addEventListener("keydown", (ev) => {
    if (ev.key !== "Escape") return;
    ev.stopPropagation(); // Esc ends the rename, not the drawer it is in
    loadConversations({ redraw: true });
  });
  li.replaceChildren(form);
  input.focus();
  input.select();
}

async function removeConversation(id) {
  try {
    await api.deleteConversation(id);
  } catch (err) {
    showStatus(err.message);
    return;
  }
  if (id === conversationId) newConversation();
  loadConversations();
}

function setConversation(id) {
  conversationId = id;
  if (id) localStorage.setItem(CONVERSATION_KEY, String(id));
  else localStorage.removeItem(CONVERSATION_KEY);
  els.convList.querySelectorAll(".conv-item").forEach((li) => {
    if (Number(li.dataset.id) === id) li.setAttribute("aria-current", "true");
    else li.removeAttribute("aria-current");
  });
}

export function newConversation() {
  controller?.abort();
  setConversation(null);
  els.chat.querySelectorAll(".turn").forEach((n) => n.remove());
  els.intro.hidden = false;
  clearStatus();
  els.question.focus();
}

/** Show a saved conversation: every turn with its answer and sources. */
export async function openConversation(id) {
  controller?.abort();
  let conv;
  try {
    conv = await api.conversation(id);
  } catch (err) {
    if (err.status === 404) {
      setConversation(null);
      return;
    }
    showStatus(t("chat.loadFailed", { message: err.message }));
    return;
  }
  setConversation(conv.id);
  chooseCollection(conv.collections);
  els.chat.querySelectorAll(".turn").forEach((n) => n.remove());
  els.intro.hidden = conv.turns.length > 0;
  clearStatus();
  for (const turn of conv.turns) {
    const view = newTurn(turn.question);
    renderMarkdown(view.answer, turn.answer, view.id, sentencesOf(turn.answer, turn.check));
    view.answer.setAttribute("aria-busy", "false");
    setState(view, null);
    renderSources(view.block, turn.sources || [], view.id);
    finishAnswer(view, turn.answer);
    showCheck(view, turn.check, turn.sources || [], turn.model_answer);
  }
  els.chat.lastElementChild?.scrollIntoView({ block: "start" }); // the last question, then its answer
}

// ---------------------------------------------------------------- one turn

function newTurn(question) {
  els.intro.hidden = true;
  const id = ++turnCount;
  const turn = el("article", "turn");
  turn.dataset.turn = id;
  turn.append(el("p", "question", question));
  const block = el("div", "answer-block");
  const state = el("p", "answer-state");
  state.setAttribute("role", "status");
  const answer = el("div", "answer");
  answer.setAttribute("aria-busy", "true");
  block.append(state, answer);
  turn.append(block);
  els.chat.append(turn);
  turn.scrollIntoView({ block: "start" });
  return { id, turn, block, answer, state };
}

/** retrieving → thinking → answering; null when done. */
function setState(view, key) {
  view.state.hidden = !key;
  view.state.dataset.state = key || "";
  view.state.textContent = key ? t(`chat.${key}`) : "";
}

async function copyText(text, button) {
  try {
    await navigator.clipboard.writeText(text);
  } catch {
    const area = el("textarea", "visually-hidden");
    area.value = text;
    document.body.append(area);
    area.select();
    document.execCommand("copy");
    area.remove();
  }
  const label = button.textContent;
  button.textContent = t("chat.copied");
  setTimeout(() => { button.textContent = label; }, 1500);
}

function finishAnswer(view, text) {
  decorateCode(view.answer, copyText);
  markUnknownCitations(view.block);
  if (!text || view.block.querySelector(".copy-answer")) return;
  const copy = el("button", "copy-answer quiet", t("chat.copyAnswer"));
  copy.type = "button";
  copy.addEventListener("click", () => copyText(text, copy));
  view.answer.after(copy);
}

// ---------------------------------------------------------------- how well the sources support it

/** The cited sentences of a check, their offsets turned into the page's string units. */
function sentencesOf(text, check) {
  if (!check || check.replaced) return [];
  const unit = toUnits(text);
  return citedSentences(check).map((s) => ({ index: s.index, start: unit(s.start), end: unit(s.end) }));
}

/** The model's own answer, behind a toggle: it was replaced because its sources do not support it. */
function modelAnswerToggle(view, check, sources, modelAnswer) {
  const box = el("div", "model-answer");
  box.id = `model-answer-${view.id}`;
  box.hidden = true;
  box.append(el("p", "model-answer-title", t("support.modelAnswer")));
  const body = el("div", "answer");
  renderMarkdown(body, modelAnswer, view.id, sentencesOf(modelAnswer, { ...check, replaced: false }));
  box.append(body);
  const toggle = el("button", "show-model-answer quiet", t("support.showModel"));
  toggle.type = "button";
  toggle.setAttribute("aria-expanded", "false");
  toggle.setAttribute("aria-controls", box.id);
  toggle.addEventListener("click", () => {
    box.hidden = !box.hidden;
    toggle.setAttribute("aria-expanded", String(!box.hidden));
    toggle.textContent = t(box.hidden ? "support.showModel" : "support.hideModel");
  });
  return { toggle, box, body };
}

/** Mark the answer's citations and unsupported sentences, and note what holds for the answer as a whole. */
function showCheck(view, check, sources, modelAnswer) {
  view.block.querySelector(".answer-checks")?.remove();
  markAnswer(view.answer, check?.replaced ? null : check, sources);
  const notes = answerNotes(check);
  const wrap = el("div", "answer-checks");
  wrap.append(...notes);
  if (check?.replaced && typeof modelAnswer === "string" && modelAnswer) {
    const { toggle, box, body } = modelAnswerToggle(view, check, sources, modelAnswer);
    wrap.append(toggle, box);
    markUnknownCitations(view.block);
    markAnswer(body, check, sources);
  }
  if (wrap.childElementCount) view.answer.after(wrap);
}

function setBusy(busy) {
  els.ask.disabled = busy;
  els.stop.disabled = !busy;
  els.collection.disabled = busy || !collections.length;
}

function failTurn(view, message) {
  view.block.append(el("p", "turn-error", message));
  showStatus(message);
}

async function ask(question) {
  const collection = els.collection.value;
  if (!question) {
    els.question.setAttribute("aria-invalid", "true");
    showStatus(t("chat.empty"));
    els.question.focus();
    return;
  }
  if (!collection || !collections.length) {
    showStatus(t("chat.chooseCollection"));
    return;
  }
  els.question.removeAttribute("aria-invalid");
  clearStatus();
  controller = new AbortController();
  setBusy(true);
  const view = newTurn(question);
  setState(view, "retrieving");
  els.question.value = "";

  let text = "";
  let finished = false;
  let frame = 0;
  let sources = [];
  let check = null;
  let modelAnswer = null;
  const paint = () => { frame = 0; renderMarkdown(view.answer, text, view.id, sentencesOf(text, check)); };
  try {
    if (!conversationId) {
      const conv = await api.createConversation([collection]);
      setConversation(conv.id);
    }
    const resp = await api.ask({ question, collection, conversation_id: conversationId }, controller.signal);
    setState(view, "thinking");
    await readEvents(resp, (name, data) => {
      if (name === "token") {
        if (!text) setState(view, "answering");
        text += data.text;
        if (!frame) frame = requestAnimationFrame(paint);
      } else if (name === "sources") {
        sources = data.sources || [];
        renderSources(view.block, sources, view.id);
      } else if (name === "done") {
        finished = true;
        if (typeof data.answer === "string") text = data.answer;
        check = data.check || null;
        modelAnswer = typeof data.model_answer === "string" ? data.model_answer : null;
        showTimings(view.block, data);
      } else if (name === "error") {
        const retry = data.retry_after ? ` ${t("error.busyWait", { detail: data.code || "", wait: data.retry_after })}` : "";
        failTurn(view, t("chat.failed", { message: data.message }) + retry);
      }
    });
    if (!finished && !view.block.querySelector(".turn-error")) failTurn(view, t("chat.incomplete"));
  } catch (err) {
    if (err.name === "AbortError") view.block.append(el("p", "turn-note", t("chat.stopped")));
    else {
      failTurn(view, err.message);
      if (!els.question.value.trim()) els.question.value = question; // give a rejected question back
    }
  } finally {
    if (frame) cancelAnimationFrame(frame);
    if (text) paint();
    setState(view, null);
    view.answer.setAttribute("aria-busy", "false");
    finishAnswer(view, finished ? text : "");
    if (finished) showCheck(view, check, sources, modelAnswer);
    controller = null;
    setBusy(false);
    els.question.focus();
    loadConversations();
  }
}

function showTimings(block, done) {
  const parts = [];
  if (done.model) parts.push(done.model);
  if (Number.isFinite(done.completion_tokens)) parts.push(t("status.tokens", { n: done.completion_tokens }));
  const total = done.timings?.total_ms;
  if (typeof total === "number") parts.push(`${(total / 1000).toFixed(1)} s`);
  if (parts.length) block.append(el("p", "timings", parts.join(" · ")));
}

export const stopAnswer = () => controller?.abort();
export const answering = () => Boolean(controller);

// ---------------------------------------------------------------- wiring

export function wireChat() {
  Object.assign(els, {
    collection: $("#collection"), chat: $("#chat"), intro: $("#intro"), status: $("#status"),
    form: $("#ask-form"), question: $("#question"), ask: $("#ask"), stop: $("#stop"),
    newChat: $("#new-chat"), convList: $("#conv-list"), convSearch: $("#conv-search"),
  });
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
  document.addEventListener("keydown", (ev) => {
    if (ev.key === "Escape" && controller && !document.querySelector("dialog[open]")) stopAnswer();
  });
  els.stop.addEventListener("click", stopAnswer);
  els.newChat.addEventListener("click", () => {
    newConversation();
    closeDrawer();
  });
  els.convSearch.addEventListener("input", () => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(loadConversations, 200);
  });
  els.collection.addEventListener("change", () => localStorage.setItem(COLLECTION_KEY, els.collection.value));
  els.chat.addEventListener("click", (ev) => {
    const link = ev.target.closest("a.citation");
    if (!link) return;
    ev.preventDefault();
    jumpToSource(link);
  });
}

export async function startChat() {
  await loadCollections();
  await loadConversations();
  if (conversationId) await openConversation(conversationId);
  els.question.focus();
}
