// Why a file was not ingested, in the page's language: the server names each reason by a code and its
// values (indexes/reasons.py); a reason no code names is shown in the server's own words.

import { has, t } from "./i18n.js";

/** The page's words for a file's reason ({reason, code, values}, or a document's error_code/error_values). */
export function reasonText({ reason, error, code, values, error_code: errorCode, error_values: errorValues }) {
  const key = `reason.${code || errorCode}`;
  if ((code || errorCode) && has(key)) return t(key, values || errorValues || {});
  return reason || error || "";
}

/** Whether the page says this reason in its own words (else the server's are shown, with their kind). */
export const saidInOwnWords = (entry) => has(`reason.${entry.code || entry.error_code}`);
