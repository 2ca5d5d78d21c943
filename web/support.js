// How well the sources back an answer, as the server checked it: each citation and source card says
// whether its source supports the claim (with the share of the claim the source holds, in words), a
// sentence whose citations do not back it is underlined and flagged, and the answer as a whole carries a
// note when it cites nothing, abstained, or was replaced by the documents-do-not-say statement (none for an
// empty answer: the sentence that replaced it says so).

import { t } from "./i18n.js";

/** "supported" or "weak" for a {score, supported} pair; null when there is nothing to say. */
export function supportLevel(support) {
  if (!support || typeof support.supported !== "boolean") return null;
  return support.supported ? "supported" : "weak";
}

const percent = (score) => Math.round(Math.max(0, Math.min(1, Number(score) || 0)) * 100);

/** One sentence a reader understands: what the score means, never a bare number. */
export function supportExplanation(support) {
  if (!support || typeof support.score !== "number") return "";
  return t("support.share", { pct: percent(support.score) });
}

/** A short line for a source card: "✓ Supported · the source holds 85% of the claim". */
export function supportLine(support) {
  const level = supportLevel(support);
  if (!level) return null;
  const line = document.createElement("p");
  line.className = `source-support ${level}`;
  const icon = document.createElement("span");
  icon.className = "support-icon";
  icon.setAttribute("aria-hidden", "true");
  icon.textContent = level === "supported" ? "✓" : "!";
  const label = document.createElement("span");
  label.className = "support-label";
  label.textContent = t(`support.${level}`);
  line.append(icon, label);
  const why = supportExplanation(support);
  if (why) {
    const small = document.createElement("span");
    small.className = "support-score";
    small.textContent = why;
    line.append(" · ", small);
    line.title = why;
  }
  return line;
}

/** Mark a citation link with the support of its source for the claim it stands after. */
function markChip(chip, support) {
  const level = supportLevel(support);
  chip.classList.remove("supported", "weak");
  if (!level) return;
  chip.classList.add(level);
  chip.dataset.support = level;
  const text = `${t("src.n", { n: chip.dataset.n })}: ${t(`support.${level}`)}`;
  const why = supportExplanation(support);
  chip.setAttribute("aria-label", why ? `${text} (${why})` : text);
  chip.title = why ? `${t(`support.${level}`)} · ${why}` : t(`support.${level}`);
}

/** The sentences of an answer worth wrapping: those that cite a source (their offsets in the answer). */
export function citedSentences(check) {
  return (check?.sentences || [])
    .map((s, index) => ({ ...s, index }))
    .filter((s) => Array.isArray(s.cited) && s.cited.length && Number.isInteger(s.start) && Number.isInteger(s.end));
}

/**
 * Show the check on a rendered answer: sentences (already wrapped as span[data-sentence] by
 * renderMarkdown) that their citations do not support are underlined and flagged; each citation link
 * says whether its source supports the claim. `sources` are the turn's source dicts (with `support`).
 */
export function markAnswer(answer, check, sources) {
  const bySource = new Map((sources || []).map((s) => [String(s.n), s.support]));
  const sentences = check?.sentences || [];
  for (const [i, s] of sentences.entries()) {
    const parts = [...answer.querySelectorAll(`.sentence[data-sentence="${i}"]`)];
    if (!parts.length) continue;
    const unsupported = s.supported === false;
    parts.forEach((p) => p.classList.toggle("unsupported", unsupported));
    if (unsupported) {
      const why = supportExplanation({ score: s.score ?? 0 });
      const flag = document.createElement("span");
      flag.className = "claim-flag";
      flag.setAttribute("role", "img");
      flag.setAttribute("aria-label", why ? `${t("support.sentence")} (${why})` : t("support.sentence"));
      flag.title = flag.getAttribute("aria-label");
      flag.textContent = "⚠";
      parts[parts.length - 1].after(flag);
    }
  }
  const chips = [...answer.querySelectorAll(".citation:not(.unknown)")];
  const uses = new Map();
  chips.forEach((chip) => uses.set(chip.dataset.n, (uses.get(chip.dataset.n) || 0) + 1));
  for (const chip of chips) {
    const holder = chip.closest(".sentence[data-sentence]");
    const s = holder ? sentences[Number(holder.dataset.sentence)] : null;
    const own = bySource.get(chip.dataset.n);
    if (s && s.supported === false) markChip(chip, { supported: false, score: s.score ?? 0 });
    // A source's support is that of the best sentence citing it: without the sentences' check (a
    // saved turn), it speaks for a citation only when the answer cites that source once.
    else if (own && (s || check || uses.get(chip.dataset.n) === 1)) markChip(chip, own);
  }
}

function note(kind, text) {
  const p = document.createElement("p");
  p.className = `answer-check ${kind}`;
  p.setAttribute("role", "note");
  const icon = document.createElement("span");
  icon.className = "support-icon";
  icon.setAttribute("aria-hidden", "true");
  icon.textContent = kind === "abstained" ? "∅" : "⚠";
  p.append(icon, " ", text);
  return p;
}

/**
 * The notes about the answer as a whole (abstained, no citation, nothing supported), in order. An
 * answer that cites nothing is flagged even when the check found no claim in it: a short "Yes." needs
 * a source as much as a long sentence does.
 */
export function answerNotes(check) {
  if (!check) return [];
  const sentences = check.sentences || [];
  const cites = sentences.some((s) => Array.isArray(s.cited) && s.cited.length);
  if (check.empty) return []; // the answer shown says the model gave none
  if (check.replaced) return [note("replaced", t("support.replaced"))];
  if (check.abstained) return [note("abstained", t("support.abstained"))];
  if (sentences.length && !cites) return [note("uncited", t("support.uncited"))];
  if (check.unsupported) return [note("unsupported", t("support.unsupportedAnswer"))];
  return [];
}

/** Python counts characters by code point, JavaScript strings by UTF-16 unit: offset i of text, in units. */
export function toUnits(text) {
  if (!/[\uD800-\uDFFF]/.test(text)) return (i) => i;
  const units = [];
  let u = 0;
  for (const ch of text) {
    units.push(u);
    u += ch.length;
  }
  units.push(u);
  return (i) => units[Math.max(0, Math.min(i, units.length - 1))];
}
