// A turn's answer drawn: its state line, the code and citations of its text, how well its sources support
// it (marks, notes, the model's own answer behind a toggle when it was replaced), the mark of an answer that
// ended unfinished, and its timings. Pure drawing on a turn's view ({id, turn, block, answer, state});
// chat.js owns the turns and the stream.

import { copyText } from "./actions.js";
import { el } from "./dom.js";
import { t } from "./i18n.js";
import { decorateCode, markUnknownCitations, renderMarkdown } from "./markdown.js";
import { answerNotes, citedSentences, markAnswer, toUnits } from "./support.js";

/** answering, or null when done (before it: the Wait of wait.js). */
export function setState(view, key) {
  view.state.hidden = !key;
  view.state.dataset.state = key || "";
  view.state.textContent = key ? t(`chat.${key}`) : "";
}

export function finishAnswer(view, text) {
  decorateCode(view.answer, copyText);
  markUnknownCitations(view.block);
}

// ---------------------------------------------------------------- how well the sources support it

/** The cited sentences of a check, their offsets turned into the page's string units. */
export function sentencesOf(text, check) {
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
export function showCheck(view, check, sources, modelAnswer) {
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

/** The sources of an answer stopped half-way: cited when its text cites them, cited first (as the server keeps them). */
export function stoppedSources(view, sources) {
  const cited = new Set([...view.answer.querySelectorAll(".citation")].map((a) => Number(a.dataset.n)));
  return sources.map((s) => ({ ...s, cited: cited.has(s.n) })).sort((a, b) => b.cited - a.cited || a.n - b.n);
}

/** Under the text of an answer that ended before it was complete: stopped, or failed (a saved one). */
export function markUnfinished(view, status, said = true) {
  if (status !== "stopped" && status !== "error") return;
  const note = status === "stopped"
    ? el("p", "turn-note stopped-mark", t(said ? "chat.stopped" : "chat.stoppedEmpty"))
    : el("p", "turn-error", t("chat.failedSaved"));
  note.dataset.status = status;
  view.answer.after(note);
}

export function showTimings(block, done) {
  const parts = [];
  if (done.model) parts.push(done.model);
  if (Number.isFinite(done.completion_tokens)) parts.push(t("status.tokens", { n: done.completion_tokens }));
  const total = done.timings?.total_ms;
  if (typeof total === "number") parts.push(`${(total / 1000).toFixed(1)} s`);
  if (parts.length) block.append(el("p", "timings", parts.join(" · ")));
}
