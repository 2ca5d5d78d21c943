// The wait before an answer's first words: how far the model has read the sources (the stream's `progress`
// events, where the backend can tell), the seconds gone, and the wait the last answers took (the median of
// the last ten, kept in this browser).

import { el } from "./dom.js";
import { t } from "./i18n.js";

const WAITS_KEY = "rag.waits";
const KEPT = 10;

/** The waits for a first word that this browser saw last (ms), oldest first. */
function waits() {
  try {
    const kept = JSON.parse(localStorage.getItem(WAITS_KEY) || "[]");
    return Array.isArray(kept) ? kept.filter((ms) => Number.isFinite(ms) && ms > 0) : [];
  } catch {
    return [];
  }
}

/** The usual wait in whole seconds (the median of the last ten), or null before any answer. */
export function usualWait() {
  const sorted = waits().sort((a, b) => a - b);
  if (!sorted.length) return null;
  const mid = sorted.length >> 1;
  const median = sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
  return Math.max(1, Math.round(median / 1000));
}

function keepWait(ms) {
  localStorage.setItem(WAITS_KEY, JSON.stringify([...waits(), Math.round(ms)].slice(-KEPT)));
}

/**
 * The state line of one answer while it is awaited. Its words (a polite status) change only with the phase
 * and with the share read in steps of ten: the seconds tick beside them, hidden from screen readers.
 */
export class Wait {
  constructor(state) {
    this.state = state;
    this.started = performance.now();
    this.usual = usualWait();
    this.phase = "retrieving";
    this.share = null; // percent of the prompt read, once the backend says
    this.words = el("span", "wait-words");
    this.clock = el("span", "wait-clock");
    this.clock.setAttribute("aria-hidden", "true");
    this.timer = setInterval(() => this.tick(), 1000);
    this.draw();
  }

  /** Searching → the model's turn (the stream is open). */
  thinking() {
    this.phase = "thinking";
    this.draw();
  }

  /** The `progress` event: `done` of `total` prompt tokens read. */
  progress({ done, total }) {
    if (!(total > 0) || !(done >= 0)) return;
    const share = Math.min(100, Math.floor((100 * done) / total / 10) * 10);
    if (share === this.share && this.phase === "reading") return;
    this.phase = "reading";
    this.share = share;
    this.draw();
  }

  /** The first words came: this wait is kept for the next ones' estimate. */
  answered() {
    keepWait(performance.now() - this.started);
    this.stop();
  }

  stop() {
    clearInterval(this.timer);
    this.timer = null;
  }

  seconds() {
    return Math.floor((performance.now() - this.started) / 1000);
  }

  tick() {
    if (!this.state.isConnected || this.state.dataset.state !== this.phase) return this.stop();
    this.clock.textContent = this.seconds() ? ` · ${t("wait.elapsed", { s: this.seconds() })}` : "";
  }

  draw() {
    let words = this.phase === "reading" ? t("wait.reading", { pct: this.share }) : t(`chat.${this.phase}`);
    if (this.phase !== "retrieving" && this.usual) words += ` ${t("wait.usual", { s: this.usual })}`;
    this.words.textContent = words;
    this.state.hidden = false;
    this.state.dataset.state = this.phase;
    this.state.replaceChildren(this.words, this.clock);
    this.tick();
  }
}
