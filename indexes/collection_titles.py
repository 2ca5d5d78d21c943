"""A collection's display name (its title: any language, spaces included) and the API name made from it.

The name stays the collection's id in URLs, keys' scopes and the CLI, so it keeps its narrow ASCII rule;
the title is what people read. A name made from a title is its readable ASCII part where there is one
(accents dropped), with a short hash of the whole title added when letters were lost (Chinese, say), so
two titles that differ only in those letters get different names; a title with no ASCII letter at all
gets the hash alone. The hash is stable: the same title always gives the same name.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from typing import Callable

TITLE_MAX = 64
NAME_MAX = 64
_READABLE_MAX = 40  # of a name made from a title, before "-<hash>" and "-<n>" are added
_HASH_CHARS = 8
_NOT_NAME = re.compile(r"[^A-Za-z0-9._-]+")


class TitleError(ValueError):
    """A display name that cannot be used; the message says why."""


def check_title(title: str) -> str:
    """The title as kept (spaces around it removed), or TitleError: 1-64 characters, none invisible."""
    if not isinstance(title, str):
        raise TitleError("a collection's display name must be text")
    kept = unicodedata.normalize("NFC", title).strip()
    if not kept:
        raise TitleError("a collection's display name may not be empty")
    if len(kept) > TITLE_MAX:
        raise TitleError(f"a collection's display name has at most {TITLE_MAX} characters ({len(kept)} given)")
    if any(unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp") for ch in kept):
        raise TitleError("a collection's display name may not hold control or invisible characters")
    return kept


def title_hash(title: str) -> str:
    return hashlib.sha256(title.casefold().encode("utf-8")).hexdigest()[:_HASH_CHARS]


def name_for_title(title: str) -> str:
    """The API name a title gives (before making it unique): readable ASCII, a hash where letters were lost."""
    decomposed = unicodedata.normalize("NFKD", title)
    ascii_only = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    readable = _NOT_NAME.sub("-", ascii_only).strip("-._").lower()[:_READABLE_MAX].rstrip("-._")
    lost = any(ch.isalnum() and not ch.isascii() for ch in ascii_only)
    if not readable:
        return title_hash(title)
    return f"{readable}-{title_hash(title)}" if lost else readable


def unique_name(base: str, taken: Callable[[str], bool]) -> str:
    """`base`, else `base-2`, `base-3`…: the first that `taken` says is free."""
    if not taken(base):
        return base
    for n in range(2, 10_000):
        candidate = f"{base[:NAME_MAX - len(str(n)) - 1]}-{n}"
        if not taken(candidate):
            return candidate
    raise TitleError(f"no free name is left for {base!r}")
