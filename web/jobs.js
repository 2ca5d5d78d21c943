// What an ingestion job's progress says, apart from the page that shows it: its files by outcome, whether
// they are still being counted, and a time-left estimate that never goes up. No DOM, no requests.

export const FINISHED = ["done", "failed", "cancelled"];

/** A job's files by outcome; `skipped` are the ones left out (an image, an empty file...), not the unchanged. */
export function outcomes(job) {
  const unchanged = job.files_unchanged || 0;
  return {
    ingested: job.files_ingested || 0,
    failed: job.files_failed || 0,
    skipped: Math.max((job.files_skipped || 0) - unchanged, 0),
    unchanged,
  };
}

/**
 * The files being worked on now: `reading` those whose text is being read from images (OCR: a scanned PDF's
 * pages, an image file), `others` the rest (parsed or embedded).
 */
export function currentFiles(job) {
  const reading = job.reading_images || [];
  return { reading, others: (job.current || []).filter((path) => !reading.includes(path)) };
}

/** Whether the job has not counted its files yet: waiting for a worker, or walking its folders. */
export function counting(job) {
  return !FINISHED.includes(job.status) && !(job.files_total > 0);
}

const WEIGHT = 0.3; // of a new estimate against the one shown, counted down since

/**
 * The time left to show after a new estimate from the server: `prev` ({eta, at, samples}, or null) counted
 * down by the time since, blended with `raw`, never higher than that count-down (a stuck file makes the
 * server's estimate jump up; the one shown only stops falling). Shown once two estimates agree on it
 * (`samples` >= 2). `raw` null (no rate yet) keeps what was there. `now` in milliseconds.
 */
export function smoothEta(prev, raw, now) {
  if (raw == null || !Number.isFinite(raw) || raw < 0) return prev;
  if (!prev) return { eta: raw, at: now, samples: 1 };
  const left = Math.max(prev.eta - Math.max(now - prev.at, 0) / 1000, 0);
  const blended = left * (1 - WEIGHT) + raw * WEIGHT;
  return { eta: Math.min(blended, left), at: now, samples: prev.samples + 1 };
}

/** The whole seconds to show of a smoothed estimate, or null while there is none to show yet. */
export function shownSeconds(smoothed) {
  if (!smoothed || smoothed.samples < 2) return null;
  return Math.ceil(smoothed.eta);
}
