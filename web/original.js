// A Markdown document read whole inside the preview: its file rendered (wrapped, in the page's theme,
// through the same sanitizer as answers), opened at the passage's lines, and its raw text on request.

import { request } from "./api.js";
import { el } from "./dom.js";
import { t } from "./i18n.js";
import { markdownBlocks } from "./markdown.js";

const MARKDOWN = new Set(["md", "markdown"]);

/** Whether a document of this kind can be read whole, rendered, in the preview. */
export const readsWhole = (doc) => MARKDOWN.has(String(doc.kind || "").toLowerCase());

/** The file's URL without the numbered view's lines (the raw file), and the lines a-b it was opened at. */
function rawUrl(fileUrl) {
  const url = new URL(fileUrl, location.href);
  const lines = (url.searchParams.get("lines") || "").split("-").map(Number).filter(Number.isFinite);
  url.search = "";
  url.hash = "";
  return { url: url.pathname, first: lines[0] || 0, last: lines[1] || lines[0] || 0 };
}

/** The whole document rendered into `body`, the blocks of the passage's lines marked and scrolled to. */
export async function showWhole(body, doc) {
  const { url, first, last } = rawUrl(doc.file_url);
  body.replaceChildren(el("p", "muted", t("preview.loading")));
  let text;
  try {
    text = await (await request(url)).text();
  } catch (err) {
    body.replaceChildren(el("p", "turn-error", t("preview.failed", { message: err.message })));
    return;
  }
  const rendered = el("div", "passage markdown whole-file");
  let start = null;
  for (const block of markdownBlocks(text, 1)) {
    if (first && block.last >= first && block.first <= last) {
      block.node.classList.add("passage-chunk", "target");
      start ??= block.node;
    }
    rendered.append(block.node);
  }
  const raw = el("pre", "raw-file", text);
  raw.hidden = true;
  const toggle = el("button", "quiet raw-toggle", t("preview.showRaw"));
  toggle.type = "button";
  toggle.setAttribute("aria-pressed", "false");
  toggle.addEventListener("click", () => {
    raw.hidden = !raw.hidden;
    rendered.hidden = !raw.hidden;
    toggle.setAttribute("aria-pressed", String(!raw.hidden));
  });
  body.replaceChildren(toggle, rendered, raw);
  if (start) body.scrollTop = Math.max(0, start.offsetTop - body.offsetTop - 8);
}
