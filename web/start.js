// The chat page before there is anything to ask: a drop zone and file and folder pickers that make a
// collection titled after what was given (in any language), upload it, and say how far its ingestion is; the question box
// opens once the collection holds documents. Also the files of a drop, folders walked (the documents view
// uses it too).

import { api } from "./api.js";
import { t } from "./i18n.js";
import { FINISHED, outcomes } from "./jobs.js";

const $ = (sel) => document.querySelector(sel);
const POLL_MS = 700;

/** The path of each file of a dropped folder (the entry's, from the dropped item), by file. */
const dropPaths = new WeakMap();

/** A file's path as the server names it: inside the picked or dropped folder (`a/index.md`), else its name. */
export function relativePath(file) {
  return (dropPaths.get(file) || file.webkitRelativePath || file.name).replace(/^\/+/, "");
}

/**
 * The names files are uploaded under: their paths, less the one folder they were all picked or dropped in
 * (the collection is titled after it), so that `a/index.md` and `b/index.md` stay two documents.
 */
export function uploadNames(files) {
  const paths = files.map(relativePath);
  const tops = new Set(paths.map((p) => (p.includes("/") ? p.split("/")[0] : "")));
  const [top] = tops;
  return tops.size === 1 && top ? paths.map((p) => p.slice(top.length + 1)) : paths;
}

/** Files of a drop, folders walked (webkitGetAsEntry) so that a dropped folder gives its files, with their paths. */
export async function droppedFiles(transfer) {
  const items = transfer.items?.length ? [...transfer.items] : [];
  const entries = items.map((i) => i.webkitGetAsEntry?.()).filter(Boolean);
  if (!entries.length) return { files: [...transfer.files], folder: "" };
  const files = [];
  const walk = async (entry) => {
    if (entry.isFile) {
      const file = await new Promise((ok, fail) => entry.file(ok, fail));
      dropPaths.set(file, entry.fullPath);
      files.push(file);
    }
    else if (entry.isDirectory) {
      const reader = entry.createReader();
      for (;;) {
        const batch = await new Promise((ok, fail) => reader.readEntries(ok, fail));
        if (!batch.length) break;
        for (const child of batch) await walk(child);
      }
    }
  };
  for (const entry of entries) await walk(entry);
  const folder = entries.length === 1 && entries[0].isDirectory ? entries[0].name : "";
  return { files: files.length ? files : [...transfer.files], folder };
}

const TITLE_MAX = 64; // the server's limit on a collection's display name

const stem = (name) => String(name).replace(/\.[^.]+$/, "");
const cut = (text, max) => [...text].slice(0, max).join("").trim();

/**
 * A collection's display name for what was given, in the files' own language: the folder's name, else the
 * files' names (the first two, and how many more); the server makes the API name from it.
 */
export function collectionTitleFor(files, folder = "") {
  const top = (folder || (files[0]?.webkitRelativePath || "").split("/").slice(0, -1)[0] || "").trim();
  if (top) return cut(top, TITLE_MAX);
  const stems = files.map((f) => stem(f.name).trim()).filter(Boolean);
  if (!stems.length) return t("start.defaultTitle");
  const named = stems.slice(0, 2).join(t("start.titleSeparator"));
  return cut(stems.length > 2 ? t("start.titleMore", { names: named, n: stems.length - 2 }) : named, TITLE_MAX);
}

/** Create a collection titled `title`, or `title 2`, `title 3`… when that title is taken; the one made. */
async function createFresh(title) {
  for (let i = 1; i < 50; i++) {
    const candidate = i === 1 ? title : `${cut(title, TITLE_MAX - 3)} ${i}`;
    try {
      return await api.createCollection(candidate);
    } catch (err) {
      if (err.status !== 409) throw err;
    }
  }
  throw new Error(t("error.collectionExists", { name: title }));
}

function say(message, kind = "info") {
  const box = $("#start-progress");
  box.textContent = message;
  box.dataset.kind = kind;
  box.hidden = !message;
}

/** Wait for the job, saying how many files are done; its outcomes at the end. */
async function follow(jobId) {
  for (;;) {
    const job = await api.job(jobId);
    if (FINISHED.includes(job.status)) return job;
    if (job.files_total) say(t("start.reading", { done: job.files_done || 0, total: job.files_total }));
    await new Promise((ok) => setTimeout(ok, POLL_MS));
  }
}

let busy = false;

/** Make a collection of `files`, upload them, wait for their ingestion, then `ready(name)`. */
async function startWith(files, folder, ready) {
  if (!files.length || busy) return;
  busy = true;
  $("#start").setAttribute("aria-busy", "true");
  try {
    const made = await createFresh(collectionTitleFor(files, folder));
    const { name, title } = made;
    say(t(files.length === 1 ? "start.uploading1" : "start.uploading", { n: files.length, name: title }));
    const res = await api.upload(name, files, uploadNames(files));
    const job = await follow(res.job);
    const n = outcomes(job);
    if (!n.ingested && !n.unchanged) {
      say(t("start.nothing", { name: title }), "error");
      return;
    }
    say(t(n.failed ? "start.readyFailed" : "start.ready", { name: title, n: n.ingested, failed: n.failed }));
    await ready(name);
  } catch (err) {
    say(err.message, "error");
  } finally {
    busy = false;
    $("#start").setAttribute("aria-busy", "false");
  }
}

/** Show the start panel (no collection holds a document yet) or hide it. */
export function showStart(show) {
  $("#start").hidden = !show;
}

/** A drop zone, marked while files are dragged over it; `take({files, folder})` is told what was dropped. */
export function wireDropZone(zone, take) {
  zone.addEventListener("dragover", (ev) => { ev.preventDefault(); zone.classList.add("over"); });
  zone.addEventListener("dragleave", () => zone.classList.remove("over"));
  zone.addEventListener("drop", async (ev) => {
    ev.preventDefault();
    zone.classList.remove("over");
    take(await droppedFiles(ev.dataTransfer));
  });
}

/** Wire the drop zone and the pickers of the start panel; `ready(name)` runs once a collection is ingested. */
export function wireStart(ready) {
  wireDropZone($("#start-drop"), ({ files, folder }) => startWith(files, folder, ready));
  for (const id of ["#start-files", "#start-folder"]) {
    $(id).addEventListener("change", (ev) => {
      const files = [...ev.target.files];
      ev.target.value = "";
      startWith(files, "", ready);
    });
  }
}

