// The actions under an answer: copy its text (the Markdown as written), thumbs up or down (icons) with an
// optional comment, and on the conversation's last question regenerate and edit-and-resend; ‹ n / N ›
// flips between the answers one question was given. All of it is stored with the turn on the server,
// so a reload draws the same. chat.js draws the turns and hands each one its answers here.

import { api } from "./api.js";
import { t } from "./i18n.js";
import { el, fieldForm } from "./dom.js";

const MAX_COMMENT_CHARS = 2000; // indexes/feedback.py MAX_COMMENT_CHARS
let busy = false; // an answer is streaming: no turn may be answered again meanwhile

function button(className, text, label) {
  const b = el("button", `quiet ${className}`, text);
  b.type = "button";
  if (label) b.setAttribute("aria-label", label);
  return b;
}

/** Copy text to the clipboard (a hidden textarea where the Clipboard API is refused); the button says so. */
export async function copyText(text, target) {
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
  const label = target.textContent;
  target.textContent = t("chat.copied");
  setTimeout(() => { target.textContent = label; }, 1500);
}

/**
 * The action bar of a drawn answer. `variants` are the answers of its question, oldest first, as the
 * conversation lists them (`variants[index]` is the one drawn); an answer not stored (no `id`: stopped or
 * failed while streaming) gets only Copy. `hooks.flip(i)` draws variants[i] in this turn's place;
 * `hooks.resend(question)` asks the question again as a new answer of this turn.
 */
export function answerActions(view, variants, index, hooks = {}) {
  const shown = variants[index];
  view.block.querySelector(".turn-actions")?.remove();
  const bar = el("div", "turn-actions");
  bar.setAttribute("role", "group");
  bar.setAttribute("aria-label", t("actions.label"));
  if (shown.answer) {
    const copy = button("copy-answer", t("chat.copyAnswer"));
    copy.addEventListener("click", () => copyText(shown.answer, copy));
    bar.append(copy);
  }
  if (shown.id && shown.status === "stopped" && !shown.answer) {
    // stopped before a word: nothing to judge, copy or edit; it can only be answered again
    bar.dataset.turnId = shown.id;
    if (variants.length > 1) bar.append(...variantArrows(variants, index, hooks.flip));
    const again = button("regenerate last-only", t("actions.regenerate"), t("actions.regenerateLabel"));
    again.addEventListener("click", () => hooks.resend(shown.question));
    bar.append(again);
  } else if (shown.id) {
    bar.dataset.turnId = shown.id;
    if (variants.length > 1) bar.append(...variantArrows(variants, index, hooks.flip));
    const { thumbs, below } = feedbackControls(shown, hooks.conversationId);
    const again = button("regenerate last-only", t("actions.regenerate"), t("actions.regenerateLabel"));
    again.addEventListener("click", () => hooks.resend(shown.question));
    const edit = button("edit-question last-only", t("actions.edit"), t("actions.editLabel"));
    edit.addEventListener("click", () => editQuestion(view, shown, edit, hooks.resend));
    bar.append(...thumbs, again, edit, ...below);
  }
  if (!bar.childElementCount) return;
  view.answer.after(bar);
  lastTurnActions(view.turn.parentElement);
}

/** ‹ n / N ›: the previous and next answers of the question. */
function variantArrows(variants, index, flip) {
  const prev = button("variant-prev", "‹", t("actions.prev"));
  const next = button("variant-next", "›", t("actions.next"));
  prev.disabled = index === 0;
  next.disabled = index === variants.length - 1;
  prev.addEventListener("click", () => flip(index - 1, "prev"));
  next.addEventListener("click", () => flip(index + 1, "next"));
  const count = el("span", "variant-count", `${index + 1} / ${variants.length}`);
  count.setAttribute("aria-label", t("actions.variant", { n: index + 1, total: variants.length }));
  return [prev, count, next];
}

/** After flipping, the arrow used keeps the focus (or the other one, at the end of the list). */
export function focusArrow(turn, direction) {
  const wanted = turn.querySelector(`.variant-${direction}`);
  const other = turn.querySelector(`.variant-${direction === "prev" ? "next" : "prev"}`);
  (wanted && !wanted.disabled ? wanted : other)?.focus();
}

// A thumb drawn as lines (Lucide's thumbs-up, ISC licence), not an emoji: a machine without an emoji font
// showed empty boxes, and the lines take the text's colour in both themes.
const THUMB = ["M7 10v12", "M15 5.88 14 10h5.83a2 2 0 0 1 1.92 2.56l-2.33 8A2 2 0 0 1 17.5 22H4a2 2 0 0 1-2-2v-8"
  + "a2 2 0 0 1 2-2h2.76a2 2 0 0 0 1.79-1.11L12 2a3.13 3.13 0 0 1 3 3.88Z"];

/** A thumb up (or, turned over, down) as an inline SVG hidden from screen readers: the button names it. */
function thumbIcon(down = false) {
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  for (const [k, v] of Object.entries({ viewBox: "0 0 24 24", width: "16", height: "16", fill: "none",
    stroke: "currentColor", "stroke-width": "2", "stroke-linecap": "round", "stroke-linejoin": "round",
    "aria-hidden": "true", focusable: "false", class: "thumb" })) svg.setAttribute(k, v);
  const g = document.createElementNS(ns, "g");
  if (down) g.setAttribute("transform", "rotate(180 12 12)");
  for (const d of THUMB) {
    const path = document.createElementNS(ns, "path");
    path.setAttribute("d", d);
    g.append(path);
  }
  svg.append(g);
  return svg;
}

/**
 * Thumbs up / down (good / bad) (pressed = the stored rating; pressed again = withdrawn), and below them the
 * comment box of a rated answer and a line that says what became of the last change.
 */
function feedbackControls(turn, conversationId) {
  const up = button("feedback-up", "", t("actions.good"));
  const down = button("feedback-down", "", t("actions.bad"));
  up.append(thumbIcon());
  down.append(thumbIcon(true));
  up.title = t("actions.good");
  down.title = t("actions.bad");
  const box = el("details", "feedback-comment");
  const summary = el("summary", "", t("actions.comment"));
  const field = el("textarea");
  field.rows = 2;
  field.maxLength = MAX_COMMENT_CHARS;
  field.placeholder = t("actions.commentPlaceholder");
  const form = fieldForm("", field, { label: t("actions.commentLabel"), submit: t("actions.commentSave") });
  const note = el("p", "feedback-note");
  note.setAttribute("role", "status");
  box.append(summary, form);

  const show = (feedback) => {
    turn.feedback = feedback;
    up.setAttribute("aria-pressed", String(feedback?.rating === 1));
    down.setAttribute("aria-pressed", String(feedback?.rating === -1));
    box.hidden = !feedback;
    field.value = feedback?.comment || "";
  };
  const send = async (rating, comment) => {
    try {
      const out = rating ? await api.judge(conversationId, turn.id, rating, comment)
        : await api.clearJudgement(conversationId, turn.id);
      show(out.feedback);
      note.textContent = t(rating ? "actions.saved" : "actions.cleared");
      return true;
    } catch (err) {
      note.textContent = err.message;
      return false;
    }
  };
  for (const [thumb, rating] of [[up, 1], [down, -1]]) {
    thumb.addEventListener("click", async () => {
      const withdraw = turn.feedback?.rating === rating;
      if (await send(withdraw ? 0 : rating, field.value) && !withdraw) box.open = true;
    });
  }
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    if (turn.feedback) send(turn.feedback.rating, field.value);
  });
  show(turn.feedback || null);
  return { thumbs: [up, down], below: [box, note] };
}

/** The question turned into a field in place: Enter (or Send) asks it again, Esc (or Cancel) leaves it. */
function editQuestion(view, turn, opener, resend) {
  const question = view.turn.querySelector(".question");
  if (!question || view.turn.querySelector(".edit-form")) return;
  const field = el("textarea");
  field.rows = 2;
  const form = fieldForm("edit-form", field, {
    value: turn.question, label: t("actions.editField"), submit: t("actions.editSend"), submitClass: "primary",
  });
  const cancel = el("button", "", t("actions.editCancel"));
  cancel.type = "button";
  form.append(cancel);
  const close = () => {
    form.remove();
    question.hidden = false;
  };
  cancel.addEventListener("click", () => { close(); opener.focus(); });
  field.addEventListener("keydown", (ev) => {
    if (ev.key === "Escape") {
      ev.stopPropagation();
      close();
      opener.focus();
    } else if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) {
      ev.preventDefault();
      form.requestSubmit();
    }
  });
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const text = field.value.trim();
    if (!text) {
      field.setAttribute("aria-invalid", "true");
      return;
    }
    close();
    resend(text);
  });
  question.hidden = true;
  question.after(form);
  field.focus();
  field.select();
}

/**
 * Regenerate and Edit only on the conversation's last question, and only when it is stored and nothing
 * is streaming: the server refuses any other (later questions were answered from it).
 */
export function lastTurnActions(chat) {
  if (!chat) return;
  const turns = [...chat.querySelectorAll(".turn:not([hidden])")];
  const last = turns.at(-1)?.querySelector(".turn-actions[data-turn-id]");
  chat.querySelectorAll(".turn-actions .last-only").forEach((b) => {
    b.hidden = busy || !last || !last.contains(b);
  });
}

/** An answer started (true) or ended (false). */
export function actionsBusy(chat, value) {
  busy = value;
  lastTurnActions(chat);
}
