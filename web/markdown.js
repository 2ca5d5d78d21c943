// Model output and document text are untrusted: Markdown is rendered with marked, then sanitized
// with DOMPurify before it reaches the DOM, and [n] marks become links to the source cards.
// marked and DOMPurify are loaded as globals by index.html.

const PURIFY = {
  // Untrusted text must not fetch or post anything: no images, media, styles or forms.
  FORBID_TAGS: ["img", "style", "form", "input", "button", "textarea", "select", "video", "audio", "picture", "source"],
  FORBID_ATTR: ["style"],
};

window.DOMPurify.addHook("afterSanitizeAttributes", (node) => {
  if (node.tagName === "A" && node.hasAttribute("href")) {
    node.setAttribute("target", "_blank");
    node.setAttribute("rel", "noopener noreferrer");
  }
});

const CITE_RE = /\[(\d{1,3}(?:\s*,\s*\d{1,3})*)\]/g;
const HAS_CITE = /\[\d{1,3}(?:\s*,\s*\d{1,3})*\]/;

function citationLink(num, turnId) {
  const a = document.createElement("a");
  a.className = "citation";
  a.textContent = `[${num}]`;
  a.href = `#src-${turnId}-${num}`;
  a.dataset.n = num;
  a.setAttribute("aria-label", `Source ${num}`);
  return a;
}

/** Replace [n] and [n, m] in text nodes (outside code and links) with citation links. */
function linkCitations(root, turnId) {
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT, {
    acceptNode: (n) => (n.parentElement.closest("code, pre, a") ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT),
  });
  const nodes = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) if (HAS_CITE.test(n.nodeValue)) nodes.push(n);
  for (const node of nodes) {
    const frag = document.createDocumentFragment();
    const text = node.nodeValue;
    let last = 0;
    CITE_RE.lastIndex = 0;
    for (let m = CITE_RE.exec(text); m; m = CITE_RE.exec(text)) {
      frag.append(text.slice(last, m.index));
      m[1].split(",").map((s) => s.trim()).forEach((num, i) => {
        if (i) frag.append(" ");
        frag.append(citationLink(num, turnId));
      });
      last = m.index + m[0].length;
    }
    frag.append(text.slice(last));
    node.replaceWith(frag);
  }
}

/** Render untrusted Markdown into target, sanitized, with citation links for turn turnId. */
export function renderMarkdown(target, text, turnId) {
  const html = window.marked.parse(text, { gfm: true, async: false });
  target.innerHTML = window.DOMPurify.sanitize(html, PURIFY);
  linkCitations(target, turnId);
}

/** Flag citations that point at no source card of their turn. */
export function markUnknownCitations(block) {
  const known = new Set([...block.querySelectorAll(".source-card")].map((c) => c.dataset.n));
  block.querySelectorAll(".answer .citation").forEach((a) => {
    const unknown = !known.has(a.dataset.n);
    a.classList.toggle("unknown", unknown);
    if (unknown) a.title = "No source with this number";
    else a.removeAttribute("title");
  });
}
