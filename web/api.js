// Every request the page makes goes through here, so headers the server asks of browsers
// (a CSRF header, a stored API key) are added in one place.

import { t } from "./i18n.js";
import { rememberTitles } from "./titles.js";

const KEY_STORAGE = "rag.apiKey";

/** Headers sent with every API request. */
function commonHeaders() {
  // X-Requested-By: the header the server asks of uploads (CSRF_HEADER in assistant/browser_defences.py).
  const headers = { "X-Requested-By": "web" };
  const key = localStorage.getItem(KEY_STORAGE);
  if (key) headers.Authorization = `Bearer ${key}`;
  return headers;
}

/** An HTTP failure turned into one readable sentence (`message`), with its status. */
export class ApiError extends Error {
  constructor(message, status) {
    super(message);
    this.status = status;
  }
}

/**
 * The server's error codes the page says in its own words (assistant/routes/errors.py names them), with
 * the values of the body's `extra`; any other code shows the server's own `detail`.
 */
const OWN_WORDS = {
  collection_exists: "error.collectionExists",
  invalid_collection_name: "docs.nameInvalid",
  invalid_collection_title: "docs.titleInvalid",
  collection_not_found: "error.unknownCollection",
  question_empty: "chat.empty",
  question_too_long: "error.questionTooLong",
  path_not_absolute: "error.pathNotAbsolute",
  path_outside_allowed: "error.pathOutside",
  path_not_found: "error.pathNotFound",
  nothing_to_retry: "error.nothingToRetry",
  turn_not_last: "error.turnNotLast",
  turn_not_found: "error.turnNotFound",
  comment_too_long: "error.commentTooLong",
  upload_name_unusable: "error.uploadUnusable",
  upload_name_folder: "error.uploadFolder",
  upload_name_control: "error.uploadControl",
  upload_name_encoded: "error.uploadEncoded",
  upload_name_hidden: "error.uploadHidden",
  upload_name_spaces: "error.uploadSpaces",
  upload_name_too_long: "error.uploadNameLong",
  upload_name_twice: "error.uploadTwice",
  upload_too_large: "error.uploadTooLarge",
  upload_file_too_large: "error.uploadFileTooLarge",
  upload_no_files: "error.uploadNoFiles",
  no_space: "error.noSpace",
};

/** The codes whose own words say it all: no "Error 400:" before them. */
const PLAIN = new Set(Object.keys(OWN_WORDS));

/** What an error body says: the page's words for a code it knows, else the server's detail and field errors. */
function wordsOf(body, fallback) {
  if (!body || typeof body !== "object") return fallback;
  if (Object.hasOwn(OWN_WORDS, body.code)) {
    const values = body.extra && typeof body.extra === "object" && !Array.isArray(body.extra) ? body.extra : {};
    return t(OWN_WORDS[body.code], values);
  }
  let detail = body.detail ? String(body.detail) : fallback;
  if (Array.isArray(body.extra) && body.extra.length) {
    const parts = body.extra.map((e) => (e && (e.message || e.msg)) || "").filter(Boolean);
    if (parts.length) detail += `: ${parts.join("; ")}`;
  }
  return detail;
}

/** Turn an error response (JSON {status_code, detail, code, extra?}) into one readable sentence. */
async function describe(resp) {
  let detail = resp.statusText || "";
  let code = "";
  try {
    const body = await resp.json();
    code = body?.code || "";
    detail = wordsOf(body, detail);
  } catch { /* not JSON: keep the status text */ }
  if (PLAIN.has(code) && resp.status !== 429) return detail;
  if (resp.status === 429) {
    const wait = resp.headers.get("Retry-After");
    return wait ? t("error.busyWait", { detail, wait }) : t("error.busy", { detail });
  }
  if (resp.status === 401 || resp.status === 403) return t("error.denied", { status: resp.status, detail });
  if (resp.status === 404) return t("error.notFound", { detail });
  return t("error.http", { status: resp.status, detail });
}

/** fetch() with the common headers; a non-2xx answer throws an ApiError, a network failure a readable Error. */
export async function request(path, { method = "GET", json, body, headers = {}, signal } = {}) {
  const init = { method, headers: { ...commonHeaders(), ...headers }, signal };
  if (json !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(json);
  } else if (body !== undefined) {
    init.body = body;
  }
  let resp;
  try {
    resp = await fetch(path, init);
  } catch (err) {
    if (err.name === "AbortError") throw err;
    throw new ApiError(t("error.unreachable"), 0);
  }
  if (!resp.ok) throw new ApiError(await describe(resp), resp.status);
  return resp;
}

export const getJSON = async (path, opts) => (await request(path, opts)).json();
export const sendJSON = async (method, path, json) => (await request(path, { method, json })).json();

export const api = {
  collections: async () => rememberTitles(await getJSON("/api/collections")),
  /** A collection titled `title` (any language); the server makes its name: {name, title, ...}. */
  createCollection: async (title) => rememberTitles([await sendJSON("POST", "/api/collections", { title })])[0],
  deleteCollection: (name) => sendJSON("DELETE", `/api/collections/${encodeURIComponent(name)}`),
  documents: (name) => getJSON(`/api/collections/${encodeURIComponent(name)}/documents`),
  deleteDocument: (name, id) => sendJSON("DELETE", `/api/collections/${encodeURIComponent(name)}/documents/${id}`),
  addSource: (name, path) => sendJSON("POST", `/api/collections/${encodeURIComponent(name)}/sources`, { path }),
  /** Upload files under `names` (their paths inside a folder; their own names by default). */
  upload: async (name, files, names = files.map((f) => f.name)) => {
    const form = new FormData();
    files.forEach((f, i) => form.append("files", f, names[i]));
    return (await request(`/api/collections/${encodeURIComponent(name)}/documents`, { method: "POST", body: form })).json();
  },
  jobs: (collection) => getJSON(`/api/jobs?limit=20${collection ? `&collection=${encodeURIComponent(collection)}` : ""}`),
  job: (id) => getJSON(`/api/jobs/${id}`),
  retryJob: (id) => sendJSON("POST", `/api/jobs/${id}/retry`),
  chunkContext: (id, neighbours = 2, chunks = []) =>
    getJSON(`/api/chunks/${id}/context?neighbours=${neighbours}${chunks.length ? `&chunks=${chunks.join(",")}` : ""}`),
  conversations: (q) => getJSON(`/api/conversations?limit=100${q ? `&q=${encodeURIComponent(q)}` : ""}`),
  conversation: (id) => getJSON(`/api/conversations/${id}`),
  createConversation: (collections) => sendJSON("POST", "/api/conversations", { collections }),
  renameConversation: (id, title) => sendJSON("PATCH", `/api/conversations/${id}`, { title }),
  deleteConversation: (id) => sendJSON("DELETE", `/api/conversations/${id}`),
  judge: (id, turn, rating, comment) =>
    sendJSON("PUT", `/api/conversations/${id}/turns/${turn}/feedback`, { rating, comment }),
  clearJudgement: (id, turn) => sendJSON("DELETE", `/api/conversations/${id}/turns/${turn}/feedback`),
  status: () => getJSON("/api/status"),
  health: async () => {
    // 503 still carries the body that says why
    const resp = await fetch("/health", { headers: commonHeaders() });
    return resp.json();
  },
  /** POST a question; the Response streams Server-Sent Events. */
  ask: (payload, signal) => request("/api/ask", {
    method: "POST", json: payload, headers: { Accept: "text/event-stream" }, signal,
  }),
};
