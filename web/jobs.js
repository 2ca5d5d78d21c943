// What an ingestion job's progress says, apart from the page that shows it: its files by outcome, whether
// they are still being counted, and a time left from the files done (still while a file is stuck). No DOM, no requests.

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

/**
 * The time left after a new look at the job, from its files done: the files done since it was first seen over
 * the time they took, the rest at that rate. `prev` ({firstDone, firstAt, done, eta}, or null) is what the last
 * look gave; it changes only when another file is done, so a job stuck on one file keeps its time left instead
 * of counting down to nothing. `now` in milliseconds; `eta` null until a file was done while watched.
 */
export function timeLeft(prev, job, now) {
  const done = job.files_done || 0;
  const total = job.files_total || 0;
  if (!prev || done < prev.done) return { firstDone: done, firstAt: now, done, eta: null };
  if (done === prev.done) return prev;
  const seconds = Math.max(now - prev.firstAt, 1) / 1000;
  const rate = (done - prev.firstDone) / seconds;
  return { ...prev, done, eta: rate > 0 ? Math.max(total - done, 0) / rate : null };
}

/** The whole seconds to show of an estimate, or null while there is none. */
export function shownSeconds(left) {
  return left && left.eta != null ? Math.ceil(left.eta) : null;
}
