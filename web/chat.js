// Asking and the saved conversations: a conversation's turns restored on reload (the sidebar that lists
// them is conversations.js), and the streamed answer with its state, sources, copy and stop; once
// done, how well its sources support it.

import { actionsBusy, answerActions, focusArrow } from "./actions.js";
import { api } from "./api.js";
import { closeDrawer } from "./drawer.js";
import { t } from "./i18n.js";
import { renderMarkdown } from "./markdown.js";
import { choose, chosenCollections, documentScope, fillPicker, wirePicker } from "./picker.js";
import { loadConversations, markCurrentConversation, wireConversations } from "./conversations.js";
import { el } from "./dom.js";
import { restoreScope } from "./ask_about.js";
import { jumpToSource, renderSources } from "./sources.js";
import { readEvents } from "./sse.js";
import { showStart, wireStart } from "./start.js";
import { finishAnswer, markUnfinished, sentencesOf, setState, showCheck, showTimings, stoppedSources } from "./turn_view.js";
import { Wait } from "./wait.js";

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
  const ready = collections.some((c) => c.documents > 0);
  showStart(!ready);
  els.intro.hidden = !ready || Boolean(els.chat.querySelector(".turn"));
  notReady(ready ? "" : t(collections.length ? "chat.notReady.empty" : "chat.notReady.none"));
  if (!collections.length) {
    els.collection.replaceChildren(el("option", "", t("chat.collections.none")));
    els.collection.disabled = true;
    return;
  }
  fillPicker(els.collection, collections);
  els.collection.disabled = Boolean(controller);
  if (els.status.dataset.kind === "info") clearStatus();
}

let askReason = ""; // why Ask is disabled when nothing is busy: no collection holds a document yet

/** Ask is disabled, with its reason under it, until a collection holds documents. */
function notReady(reason) {
  askReason = reason;
  els.askReason.textContent = reason;
  els.askReason.hidden = !reason;
  if (reason) els.ask.setAttribute("aria-describedby", "ask-reason");
  else els.ask.removeAttribute("aria-describedby");
  if (!controller) els.ask.disabled = Boolean(reason);
}

/** A collection made from the start panel is ingested: list it, ask in it. */
async function startedWith(name) {
  await loadCollections();
  if (chooseCollection([name])) els.collection.dispatchEvent(new Event("change", { bubbles: true }));
  els.question.focus();
}

const chooseCollection = (names) => choose(els.collection, names);

function setConversation(id) {
  conversationId = id;
  if (id) localStorage.setItem(CONVERSATION_KEY, String(id));
  else localStorage.removeItem(CONVERSATION_KEY);
  markCurrentConversation(id);
}

export function newConversation() {
  controller?.abort();
  setConversation(null);
  els.chat.querySelectorAll(".turn").forEach((n) => n.remove());
  els.intro.hidden = !$("#start").hidden;
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
  restoreScope(conv.turns.at(-1)?.document);
  els.chat.querySelectorAll(".turn").forEach((n) => n.remove());
  els.intro.hidden = conv.turns.length > 0;
  clearStatus();
  for (const turn of conv.turns) {
    const variants = [...(turn.variants || []), turn];
    drawTurn(variants, variants.length - 1);
  }
  els.chat.lastElementChild?.scrollIntoView({ block: "start" }); // the last question, then its answer
}

// ---------------------------------------------------------------- one turn

/** A saved answer (variants[index] of its question) drawn as a turn with its actions, in `replacing`'s place when given. */
function drawTurn(variants, index, replacing = null) {
  const turn = variants[index];
  const view = newTurn(turn.question);
  renderMarkdown(view.answer, turn.answer, view.id, sentencesOf(turn.answer, turn.check));
  view.answer.setAttribute("aria-busy", "false");
  setState(view, null);
  renderSources(view.block, turn.sources || [], view.id);
  finishAnswer(view, turn.answer);
  showCheck(view, turn.check, turn.sources || [], turn.model_answer);
  markUnfinished(view, turn.status, Boolean(turn.answer));
  replacing?.replaceWith(view.turn);
  withActions(view, variants, index);
  return view;
}

function withActions(view, variants, index) {
  answerActions(view, variants, index, {
    conversationId,
    flip: (i, direction) => focusArrow(drawTurn(variants, i, view.turn).turn, direction),
    resend: (question) => { if (!controller) ask(question, { variants, article: view.turn }); },
  });
}

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

function setBusy(busy) {
  els.ask.disabled = busy || Boolean(askReason);
  els.stop.disabled = !busy;
  els.collection.disabled = busy || !collections.length;
  actionsBusy(els.chat, busy);
}

/** Say once, politely, that an answer ended (the streamed text itself is not read out word by word). */
function announce(message) {
  els.live.textContent = "";
  setTimeout(() => { els.live.textContent = message; }, 50); // a change a screen reader notices
}

function failTurn(view, message) {
  view.block.append(el("p", "turn-error", message));
  showStatus(message);
}

/** Ask a question; with `again` ({variants, article}), as a new answer of that turn (regenerate, edit). */
async function ask(question, again = null) {
  const chosen = chosenCollections(els.collection);
  if (!question) {
    els.question.setAttribute("aria-invalid", "true");
    showStatus(t("chat.empty"));
    els.question.focus();
    return;
  }
  if (!chosen.length || !collections.length) {
    showStatus(t("chat.chooseCollection"));
    return;
  }
  els.question.removeAttribute("aria-invalid");
  clearStatus();
  controller = new AbortController();
  setBusy(true);
  if (again) again.article.hidden = true;
  const view = newTurn(question);
  const wait = new Wait(view.state); // searching, reading the sources, the seconds gone
  if (!again) els.question.value = "";

  let text = "";
  let finished = false;
  let frame = 0;
  let sources = [];
  let check = null;
  let modelAnswer = null;
  let stopped = false;
  let turnId = null;
  const paint = () => { frame = 0; renderMarkdown(view.answer, text, view.id, sentencesOf(text, check)); };
  try {
    if (!conversationId) {
      const conv = await api.createConversation(chosen);
      setConversation(conv.id);
    }
    const variantOf = again ? { regenerate_of: again.variants.at(-1).id } : {};
    const resp = await api.ask({ question, collections: chosen, conversation_id: conversationId, ...variantOf,
      ...documentScope() }, controller.signal);
    wait.thinking();
    await readEvents(resp, (name, data) => {
      if (name === "progress" && !text) wait.progress(data);
      else if (name === "retrieved") {
        sources = data.sources || [];
        renderSources(view.block, sources, view.id, { pending: true });
        loadConversations(); // a new conversation is listed, under its question, while the answer is written
      } else if (name === "token") {
        if (!text) { wait.answered(); setState(view, "answering"); }
        text += data.text;
        if (!frame) frame = requestAnimationFrame(paint);
      } else if (name === "sources") {
        sources = data.sources || [];
        renderSources(view.block, sources, view.id);
      } else if (name === "done") {
        finished = true;
        turnId = data.turn_id ?? null;
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
    if (err.name === "AbortError") stopped = true;
    else {
      failTurn(view, err.message);
      if (!els.question.value.trim()) els.question.value = question; // give a rejected question back
    }
  } finally {
    if (frame) cancelAnimationFrame(frame);
    if (text) paint();
    wait.stop();
    setState(view, null);
    view.answer.setAttribute("aria-busy", "false");
    if (stopped) {
      sources = stoppedSources(view, sources);
      if (sources.length) renderSources(view.block, sources, view.id);
      markUnfinished(view, "stopped", Boolean(text));
    }
    announce(t(finished ? "chat.done" : stopped ? (text ? "chat.stopped" : "chat.stoppedEmpty") : "chat.ended"));
    finishAnswer(view, finished ? text : "");
    if (finished) showCheck(view, check, sources, modelAnswer);
    const answered = { id: finished ? turnId : null, question, answer: text, sources, check, model_answer: modelAnswer,
      status: finished ? "done" : stopped ? "stopped" : "error" };
    const variants = answered.id ? [...(again?.variants || []), answered] : [answered];
    if (answered.id) again?.article.remove();
    else if (again) again.article.hidden = false;
    withActions(view, variants, variants.length - 1);
    if (stopped && conversationId) adoptStoppedTurn(view, question, conversationId, again);
    controller = null;
    setBusy(false);
    els.question.focus();
    loadConversations();
  }
}

/**
 * A stopped answer is stored by the server once its stream has closed, and no `done` says under which id:
 * take it from the conversation, so that the answer can be regenerated and judged without a reload.
 */
async function adoptStoppedTurn(view, question, id, again) {
  for (let attempt = 0; attempt < 10; attempt++) {
    await new Promise((resolve) => setTimeout(resolve, 300));
    if (conversationId !== id || !view.turn.isConnected || controller) return;
    let conv;
    try {
      conv = await api.conversation(id);
    } catch {
      return;
    }
    const last = conv.turns.at(-1);
    if (last?.question === question && last.status === "stopped") {
      again?.article.remove(); // the question is listed once, with this answer as its latest
      const variants = [...(last.variants || []), last];
      withActions(view, variants, variants.length - 1);
      return;
    }
  }
}

export const stopAnswer = () => controller?.abort();
export const answering = () => Boolean(controller);

// ---------------------------------------------------------------- wiring

export function wireChat() {
  Object.assign(els, {
    collection: $("#collection"), chat: $("#chat"), intro: $("#intro"), status: $("#status"),
    form: $("#ask-form"), question: $("#question"), ask: $("#ask"), stop: $("#stop"),
    newChat: $("#new-chat"), askReason: $("#ask-reason"),
    live: $("#answer-live"),
  });
  wireStart(startedWith);
  els.form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    if (!controller && !askReason) ask(els.question.value.trim());
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
  wireConversations({
    current: () => conversationId,
    open: (id) => {
      openConversation(id);
      closeDrawer();
    },
    removed: (id) => { if (id === conversationId) newConversation(); },
    fail: showStatus,
  });
  wirePicker(els.collection);
  els.chat.addEventListener("click", (ev) => {
    const link = ev.target.closest("a.citation");
    if (!link) return;
    ev.preventDefault();
    jumpToSource(link);
  });
}

/**
 * Reopen the conversation the last visit ended on, unless the person has moved on while the lists loaded
 * (a new chat, another conversation, a question already asked): opening it then would stop their answer.
 */
export async function startChat() {
  const saved = conversationId;
  await loadCollections();
  await loadConversations();
  if (saved && conversationId === saved && !controller && !els.chat.querySelector(".turn")) await openConversation(saved);
  if (!controller) els.question.focus();
}
