"""Why a file was not ingested, as a stable code and its values, beside the reason's English words.

Ingestion writes each failed or left-out file's reason as a sentence (ingest/, stored with the job's file
and the document); a client that speaks another language says the code in its own words with the values
(sizes, limits, names, commands), and shows the sentence itself for a reason no code names. The codes are
read from the sentences, so reasons stored before codes existed get theirs too; a test runs every reason
ingestion writes through here.
"""

from __future__ import annotations

import re
from typing import Any

_NUMBER = r"[0-9]+(?:\.[0-9]+)?"

# (code, pattern over the whole reason): the first that matches names it; named groups are its values.
REASON_CODES: tuple[tuple[str, re.Pattern[str]], ...] = tuple((code, re.compile(pattern, re.DOTALL)) for code, pattern in (
    ("unchanged", r"unchanged"),
    ("empty_file", r"empty file"),
    ("whitespace_file", r"file holds only whitespace"),
    ("file_too_large", rf"file too large \((?P<size_mb>{_NUMBER}) MB; the limit is (?P<limit_mb>{_NUMBER}) MB\)"),
    ("pdf_encrypted", r"password-protected or encrypted PDF"),
    ("pdf_no_text", r"PDF has .*; OCR found no text either"),
    ("pdf_damaged", r"damaged or invalid PDF \(.*\)"),
    ("not_text", r"not valid UTF-8 text(?:, and no other text encoding fits| \(as \S+ it reads as control characters\))"),
    ("binary_file", r"binary file(?: \(unsupported type (?P<type>[^)]+)\))?"),
    ("image_not_read", r"image file: text is read from PNG, JPEG and TIFF images only"),
    ("image_no_text", r"image file: OCR found no text in it"),
    ("image_damaged", r"image file: damaged or unreadable \(.*\)"),
    ("unsupported_type", r"unsupported file type: .*\(needs (?P<tool>LibreOffice|pandoc)(?:; save as (?P<instead>\.\w+))?\)"),
    ("not_accepted_type", r"type (?P<type>\S+) is not in the accepted file types"),
    ("no_text", r"no text found in the file"),
    ("generated_file", r"generated file \(marked so in its first lines\)"),
    ("link_outside", r"link to a file outside the folder \(not followed\)"),
    ("link_folder", r"link to a folder \(not followed\)"),
    ("link_loop", r"symbolic link loop"),
    ("link_broken", r"broken symbolic link \(its target does not exist\)"),
    ("not_a_file", r"not a regular file \((?P<what>[^)]+)\)"),
    ("unreadable", r"cannot read the file \((?P<why>.*)\)"),
    ("parser_timeout", rf"the parser took longer than (?P<limit_s>{_NUMBER}) s on this file \(stopped\).*"),
    ("parser_crashed", r"the parser crashed on this file \(its process died twice\)"),
    ("parser_memory", rf"the parser needed more than its memory limit \((?P<limit_mb>{_NUMBER}) MB\) for this file"),
    ("parser_error", r"parser error: .*"),
    ("zip_damaged", r"damaged zip container \(.*\)|damaged or unsupported zip \(.*\)"),
    ("zip_bomb", r"(?:compressed file expands to|the archive unpacks to) .*\(a zip bomb\?\)"),
    ("zip_encrypted", r"the archive member (?P<name>'.*'|\".*\") is encrypted: export it without a password"),
    ("zip_link", r"the archive member (?P<name>'.*'|\".*\") is a symbolic link: .*"),
    ("zip_outside", r"the archive member (?P<name>'.*'|\".*\") (?:leads outside the archive|has an absolute path).*"),
    ("zip_too_many", r"the archive holds (?P<n>[0-9]+) members; at most (?P<limit>[0-9]+) are unpacked"),
    ("ocr_missing", r"OCR is not installed: (?P<command>.+?)(?: \(ingest\.ocr_command .* was not found\))?"
                    r"(?: \(this PDF has .*\))?"),
    ("ocr_languages_missing", r"OCR languages (?P<languages>\S+) are not installed: (?P<command>.+?)(?: \(this PDF has .*\))?"),
    ("same_path", r"same path as a file under .*; ingest the two folders into different collections"),
    ("no_space", r"no space left on the server's disk: free some, then retry the job"),
    ("gone", r"gone from the source"),
))


def reason_code(reason: str | None) -> tuple[str, dict[str, Any]]:
    """The code of a reason and its values (("other", {}) for words no code names)."""
    text = (reason or "").strip()
    for code, pattern in REASON_CODES:
        if match := pattern.fullmatch(text):
            values = {k: v.strip("'\"") if k == "name" else v for k, v in match.groupdict().items() if v is not None}
            return code, values
    return "other", {}


def with_code(entry: dict[str, Any], reason: str | None) -> dict[str, Any]:
    """`entry` (a file as the API lists it) with its reason's `code` and `values`."""
    code, values = reason_code(reason)
    return {**entry, "code": code, "values": values}
