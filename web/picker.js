// The collections a question is asked in: a list beside the question box in which several can be chosen
// at once. A click adds a collection to the choice or takes it out, with no modifier key to know about;
// the keyboard keeps the list's own keys. The choice is remembered between visits. A question may also be
// scoped to one document of a collection (asked about from the documents view or a preview): that scope
// lives here too, beside the choice it narrows.

import { t } from "./i18n.js";

const STORAGE_KEY = "rag.collection"; // the chosen names joined by "," (a collection name holds no comma)
const MAX_ROWS = 4;

/** The chosen collections' names, in the list's order. */
export const chosenCollections = (select) => [...select.selectedOptions].map((o) => o.value).filter(Boolean);

/** Choose exactly those of `names` the list holds; false (and the choice left alone) when it holds none. */
export function choose(select, names) {
  const wanted = new Set(names || []);
  const options = [...select.options];
  if (!options.some((o) => o.value && wanted.has(o.value))) return false;
  for (const o of options) o.selected = wanted.has(o.value);
  markSelected(select);
  return true;
}

/**
 * List `collections` ({name, title, documents}) by title; the choice kept is the one on screen, else the one saved, else
 * the first collection.
 */
export function fillPicker(select, collections) {
  const before = chosenCollections(select);
  const saved = (localStorage.getItem(STORAGE_KEY) || "").split(",").filter(Boolean);
  select.replaceChildren();
  for (const c of collections) {
    const option = document.createElement("option");
    option.value = c.name;
    option.textContent = t(c.documents === 1 ? "chat.docsCount1" : "chat.docsCount", { name: c.title || c.name, n: c.documents });
    select.append(option);
  }
  select.size = Math.min(Math.max(collections.length, 2), MAX_ROWS);
  if (!choose(select, before) && !choose(select, saved) && select.options.length) select.options[0].selected = true;
  markSelected(select);
}

/** Each option says whether it is chosen through aria-selected (a screen reader's word, not a glyph). */
function markSelected(select) {
  for (const o of select.options) o.setAttribute("aria-selected", String(o.selected));
}

/** A click on a collection toggles it (a list would otherwise keep only the one clicked); the choice is saved. */
export function wirePicker(select) {
  select.addEventListener("mousedown", (ev) => {
    const option = ev.target.closest?.("option");
    if (!option || !option.value || select.disabled || ev.button !== 0 || ev.shiftKey) return;
    ev.preventDefault();
    option.selected = !option.selected;
    select.focus();
    select.dispatchEvent(new Event("input", { bubbles: true }));
    select.dispatchEvent(new Event("change", { bubbles: true }));
  });
  select.addEventListener("change", () => {
    markSelected(select);
    localStorage.setItem(STORAGE_KEY, chosenCollections(select).join(","));
  });
}

let scoped = null; // the document the next questions are about: {id, collection, path, title}

/** The document the next questions are about, or null. */
export const scopedDocument = () => scoped;

/** Ask the next questions about `doc` ({id, collection, path, title}) alone, or (null) about the chosen collections. */
export function setScope(doc) {
  scoped = doc ? { id: doc.id, collection: doc.collection, path: doc.path, title: doc.title || doc.path } : null;
}

/** What /api/ask gets for the document being asked about ({} when none). */
export function documentScope() {
  return scoped ? { document: scoped.id, collections: [scoped.collection] } : {};
}
