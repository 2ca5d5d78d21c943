// The saved conversations in the sidebar: listed by day (today, yesterday, the week, earlier) with their
// full title and date on hover, searched by what was said in them, renamed and deleted in place. chat.js
// says which one is on screen and opens one; this module only lists them.

import { api } from "./api.js";
import { confirmThen, el, fieldForm } from "./dom.js";
import { t } from "./i18n.js";

const $ = (sel) => document.querySelector(sel);
const els = {};
// what chat.js lends: the conversation on screen, opening one, one deleted, a failure to show
let hooks = { current: () => null, open: () => {}, removed: () => {}, fail: () => {} };

let searchTimer = 0;
let listing = 0; // only the latest listing is drawn (an older one may answer last)
let drawn = ""; // the listing on screen: the same one again is not redrawn

/**
 * List the conversations in the sidebar. A listing equal to the one on screen is left alone, so a refresh
 * that changes nothing keeps an armed delete button, an open rename and the keyboard focus; `redraw`
 * draws it anyway (to close a rename, or in another language).
 */
export async function loadConversations({ redraw = false } = {}) {
  const q = els.search.value.trim();
  const mine = ++listing;
  let list;
  try {
    list = (await api.conversations(q)).conversations;
  } catch (err) {
    if (mine === listing) {
      els.list.replaceChildren(el("li", "muted", err.message));
      drawn = "";
    }
    return;
  }
  if (mine !== listing) return;
  const key = JSON.stringify([q, hooks.current(), list]);
  if (key === drawn && !redraw) return;
  drawn = key;
  els.list.replaceChildren();
  if (!list.length) els.list.append(el("li", "muted conv-empty", t(q ? "conv.noMatch" : "conv.none")));
  let day = "";
  for (const c of list) {
    const group = dayGroup(c.updated_at);
    if (group !== day) {
      day = group;
      els.list.append(el("li", "conv-day", t(`conv.day.${group}`)));
    }
    els.list.append(conversationItem(c));
  }
}

/** When a conversation was last used, as the sidebar groups it: today, yesterday, this week, earlier. */
export function dayGroup(iso, now = new Date()) {
  const then = new Date(iso);
  if (Number.isNaN(then.getTime())) return "earlier";
  const midnight = new Date(now.getFullYear(), now.getMonth(), now.getDate()).getTime();
  const day = 24 * 3600 * 1000;
  if (then.getTime() >= midnight) return "today";
  if (then.getTime() >= midnight - day) return "yesterday";
  if (then.getTime() >= midnight - 6 * day) return "week";
  return "earlier";
}

function conversationItem(c) {
  const li = el("li", "conv-item");
  li.dataset.id = c.id;
  const open = el("button", "conv-open", c.title || t("conv.untitled"));
  open.type = "button";
  const used = new Date(c.updated_at);
  open.title = Number.isNaN(used.getTime()) ? open.textContent : `${open.textContent}\n${used.toLocaleString()}`;
  open.addEventListener("click", () => hooks.open(c.id));
  const rename = el("button", "conv-rename quiet icon", "✎");
  rename.type = "button";
  rename.setAttribute("aria-label", `${t("conv.rename")}: ${c.title || t("conv.untitled")}`);
  rename.addEventListener("click", () => startRename(li, c));
  const del = el("button", "conv-delete quiet icon", "×");
  del.type = "button";
  del.setAttribute("aria-label", `${t("conv.delete")}: ${c.title || t("conv.untitled")}`);
  del.addEventListener("click", () => confirmThen(del, t("conv.confirmDelete"), () => removeConversation(c.id)));
  li.append(open, rename, del);
  markCurrent(li, c.id === hooks.current());
  return li;
}

/** The conversation on screen is the current one in the sidebar: its item, and its button for the keyboard. */
function markCurrent(li, current) {
  for (const node of [li, li.querySelector(".conv-open")]) {
    if (!node) continue;
    if (current) node.setAttribute("aria-current", "true");
    else node.removeAttribute("aria-current");
  }
}

function startRename(li, c) {
  const input = el("input");
  input.maxLength = 200;
  const form = fieldForm("conv-rename-form", input, { value: c.title, label: t("conv.renamePrompt"), submit: t("conv.save") });
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    try {
      await api.renameConversation(c.id, input.value);
      loadConversations({ redraw: true });
    } catch (err) {
      hooks.fail(err.message);
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
    hooks.fail(err.message);
    return;
  }
  hooks.removed(id);
  loadConversations();
}

/** Mark the conversation `id` as the one on screen (none when null). */
export function markCurrentConversation(id) {
  els.list?.querySelectorAll(".conv-item").forEach((li) => markCurrent(li, Number(li.dataset.id) === id));
}

/** Wire the sidebar's search; `given` are chat.js's hooks ({current, open, removed, fail}). */
export function wireConversations(given) {
  hooks = given;
  Object.assign(els, { list: $("#conv-list"), search: $("#conv-search") });
  els.search.addEventListener("input", () => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(loadConversations, 200);
  });
}
