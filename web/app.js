// The page: three views (chat, documents, status) chosen by the URL hash, the conversations
// sidebar (a drawer on phones: drawer.js), the language switch and the theme (light, dark, the system's). Plain ES modules, no build step.

import { LANGUAGES, language, onLanguageChange, setLanguage, t, translate } from "./i18n.js";
import { loadCollections, openConversation, startChat, wireChat } from "./chat.js";
import { loadConversations } from "./conversations.js";
import { loadDocumentsView, wireDocuments } from "./documents.js";
import { wireDrawer } from "./drawer.js";
import { wirePreview } from "./sources.js";
import { loadHealth, loadStatus, wireStatus } from "./status.js";

const VIEWS = ["chat", "documents", "status"];
const $ = (sel) => document.querySelector(sel);

function showView() {
  const name = VIEWS.includes(location.hash.slice(1)) ? location.hash.slice(1) : "chat";
  document.body.dataset.view = name;
  for (const v of VIEWS) $(`#view-${v}`).hidden = v !== name;
  document.querySelectorAll(".tabs a").forEach((a) => {
    if (a.dataset.view === name) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  });
  if (name === "documents") loadDocumentsView();
  if (name === "status") loadStatus();
}

function wireLanguage() {
  const select = $("#lang");
  for (const [code, label] of Object.entries(LANGUAGES)) {
    const opt = document.createElement("option");
    opt.value = code;
    opt.textContent = label;
    select.append(opt);
  }
  select.value = language();
  select.addEventListener("change", () => setLanguage(select.value));
  onLanguageChange(() => {
    // redraw what the views built with the old strings
    loadCollections();
    loadConversations({ redraw: true });
    const id = Number(localStorage.getItem("rag.conversation"));
    if (id && document.body.dataset.view === "chat") openConversation(id);
    loadHealth();
    showView();
  });
}

const THEME_KEY = "rag.theme";
const THEMES = ["system", "light", "dark"];

/** Light, dark, or the system's: the page's colours (app.css) and the code highlighting's sheet follow. */
function applyTheme(theme) {
  const root = document.documentElement;
  if (theme === "light" || theme === "dark") root.dataset.theme = theme;
  else delete root.dataset.theme;
  document.querySelectorAll("link[data-code-theme]").forEach((link) => {
    const own = link.dataset.codeTheme;
    link.media = theme === "system" || !THEMES.includes(theme) ? `(prefers-color-scheme: ${own})` : theme === own ? "all" : "not all";
  });
}

function wireTheme() {
  const select = $("#theme");
  const fill = () => {
    select.replaceChildren(...THEMES.map((name) => {
      const opt = document.createElement("option");
      opt.value = name;
      opt.textContent = t(`theme.${name}`);
      return opt;
    }));
    select.value = localStorage.getItem(THEME_KEY) || "system";
  };
  fill();
  applyTheme(select.value);
  select.addEventListener("change", () => {
    localStorage.setItem(THEME_KEY, select.value);
    applyTheme(select.value);
  });
  onLanguageChange(fill);
}

translate();
wireTheme();
wireLanguage();
wireDrawer(); // before wireChat: Esc closes an open drawer before it stops an answer
wireChat();
wireDocuments();
wireStatus();
wirePreview();
window.addEventListener("hashchange", showView);
showView();
loadHealth();
startChat();
