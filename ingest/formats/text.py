"""Plain text from bytes, and line-numbered blocks of text and code files."""

from __future__ import annotations

import codecs
import re
import unicodedata
from dataclasses import dataclass

SNIFF_BYTES = 8192
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")


class TextDecodeError(ValueError):
    """Bytes that are not text we can read; the message is the reason shown to the user."""


def looks_binary(data: bytes) -> bool:
    """NUL bytes in the first block mean binary data, unless a UTF-16/32 byte-order mark says text."""
    head = data[:SNIFF_BYTES]
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE, codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):
        return False
    return b"\x00" in head


def decode_text(data: bytes) -> str:
    """Bytes as text (see `decode_text_info`)."""
    return decode_text_info(data)[0]


def decode_text_info(data: bytes) -> tuple[str, str]:
    """Bytes as text, and the encoding that read them ('utf-8' for UTF-8 with or without BOM).

    UTF-8 (with or without BOM), UTF-16/32 by BOM, else a detected legacy charset: files written on
    older systems (Windows-1252, Shift-JIS, EUC-KR, Windows-1251...) are common in document folders.
    charset_normalizer tells scripts apart well (Cyrillic, Greek, CJK) but not the Latin code pages
    from each other on short texts, so Latin-script text is read as Windows-1252, the usual one (and
    the WHATWG default for Western text). A decoding that still holds control characters is refused
    rather than indexed as noise.
    """
    if data.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):
        return data.decode("utf-32"), "utf-32"
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return data.decode("utf-16"), "utf-16"
    try:
        return data.decode("utf-8-sig"), "utf-8"
    except UnicodeDecodeError:
        pass
    from charset_normalizer import from_bytes

    best = from_bytes(data).best()
    if best is None or best.encoding in {"utf_8", "ascii"}:
        raise TextDecodeError("not valid UTF-8 text, and no other text encoding fits")
    text, encoding = str(best), best.encoding
    if _latin_only(text):
        try:
            text, encoding = data.decode("cp1252"), "cp1252"
        except UnicodeDecodeError:
            pass
    if len(_CONTROL.findall(text)) > max(2, len(text) // 1000):
        raise TextDecodeError(f"not valid UTF-8 text (as {best.encoding} it reads as control characters)")
    return text, codecs.lookup(encoding).name


def _latin_only(text: str) -> bool:
    """Whether every non-ASCII letter of text is a Latin letter."""
    return all(unicodedata.name(ch, "").startswith("LATIN") for ch in set(text) if ord(ch) > 127 and ch.isalpha())


def strip_controls(text: str) -> str:
    """Text without NULs and other control characters (tabs and newlines stay)."""
    return _CONTROL.sub("", text)


@dataclass
class Block:
    """A run of lines separated from the next by blank lines; lines are 1-based and inclusive."""

    text: str
    line_start: int
    line_end: int


def line_blocks(text: str) -> list[Block]:
    """Blocks of consecutive non-blank lines with their line ranges; blank lines separate blocks."""
    blocks: list[Block] = []
    current: list[str] = []
    start = 0
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip():
            if not current:
                start = number
            current.append(line.rstrip())
        elif current:
            blocks.append(Block("\n".join(current), start, number - 1))
            current = []
    if current:
        blocks.append(Block("\n".join(current), start, start + len(current) - 1))
    return blocks
