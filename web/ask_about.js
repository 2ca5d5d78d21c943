// Asking about one document: the button on a document's row and in the passage preview, and the line above
// the question box that says which document the next questions are about (the scope itself: picker.js).

import { onLanguageChange, t } from "./i18n.js";
import { el } from "./dom.js";
import { choose, scopedDocument, setScope } from "./picker.js";

const $ = (sel) => document.querySelector(sel);

/** The next questions are about this document ({id, collection, path, title}): the chat view, its collection chosen. */
export function askAbout(doc) {
  setScope(doc);
  choose($("#collection"), [doc.collection]);
  showScope();
  const focus = () => $("#question").focus();
  if (location.hash === "#chat") focus();
  else {
    window.addEventListener("hashchange", focus, { once: true }); // once the chat view is shown
    location.hash = "#chat";
  }
}

/**
 * A saved conversation opened: its last question's document ({id, collection, path, title}, kept with the
 * turn) is asked about again, or, when it was asked of the collections (null), so are the next questions.
 */
export function restoreScope(doc) {
  setScope(doc || null);
  if (doc) choose($("#collection"), [doc.collection]);
  showScope();
}

export function askButton(doc) {
  const button = el("button", "quiet doc-ask", t("docs.askDocShort"));
  button.type = "button";
  button.setAttribute("aria-label", `${t("docs.askDoc")}: ${doc.path}`);
  button.addEventListener("click", () => askAbout(doc));
  return button;
}

/** Above the question box, while a document is asked about: which one, and a button to ask the collections again. */
function showScope() {
  let line = $("#doc-scope");
  const asked = scopedDocument();
  if (!asked) {
    line?.remove();
    return;
  }
  if (!line) {
    line = el("p", "doc-scope");
    line.id = "doc-scope";
    $("#ask-form").before(line);
  }
  const clear = el("button", "quiet icon", "✕");
  clear.type = "button";
  clear.setAttribute("aria-label", t("docs.askAboutClear"));
  clear.addEventListener("click", () => {
    setScope(null);
    showScope();
    $("#question").focus();
  });
  line.replaceChildren(t("docs.askingAbout", { title: asked.title }), " ", clear);
}

/** The preview's own button, for the document whose passage it shows (sources.js says which, by an event). */
export function wireAskAbout() {
  const dialog = $("#preview");
  const button = el("button", "quiet preview-ask", t("docs.askDoc"));
  button.type = "button";
  button.hidden = true;
  $("#preview-file").after(button);
  document.addEventListener("preview-document", (ev) => {
    const doc = ev.detail;
    button.hidden = false;
    button.onclick = () => {
      dialog.close();
      askAbout({ id: doc.document_id, collection: doc.collection, path: doc.path, title: doc.title });
    };
  });
  dialog.addEventListener("close", () => { button.hidden = true; });
  onLanguageChange(() => {
    button.textContent = t("docs.askDoc");
    showScope();
  });
}
