"""Search filters: which documents a query may return, applied inside retrieval.

The same filter becomes an SQL condition over the `document` table, used two ways: as a sub-select that
restricts FTS5 candidates, and to list the allowed chunk ids that a FAISS ID selector admits. Nothing is
over-fetched and dropped afterwards, so a narrow filter still returns k hits when k exist.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any


def _timestamp(value: float | int | str | datetime | None) -> float | None:
    """Seconds since the epoch from a number, an ISO-8601 string or a datetime."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return value.timestamp()
    if isinstance(value, (int, float)):
        return float(value)
    return datetime.fromisoformat(str(value)).timestamp()


_REGEX_SPECIAL = set(".^$*+?()[]{}|\\")


def glob_regex(pattern: str) -> str:
    """A SQLite GLOB pattern (`*` crosses `/`, `?`, `[a-z]`, `[^x]`; case-sensitive) as an anchored
    POSIX regular expression with the same matches, for PostgreSQL's `~`."""
    out, i = ["^"], 0
    while i < len(pattern):
        ch = pattern[i]
        end = pattern.find("]", i + 2) if ch == "[" else -1
        if ch == "*":
            out.append(".*")
        elif ch == "?":
            out.append(".")
        elif end > 0:
            body = pattern[i + 1 : end]
            out.append("[" + body.replace("\\", "\\\\") + "]")
            i = end
        else:
            out.append("\\" + ch if ch in _REGEX_SPECIAL else ch)
        i += 1
    return "".join(out) + "$"


def literal_glob(path: str) -> str:
    """A glob that matches this path and no other: its `*`, `?` and `[` each inside a class of its own."""
    return "".join(f"[{ch}]" if ch in "*?[" else ch for ch in path)


@dataclass(frozen=True)
class SearchFilters:
    """Restrict a search to some documents; every given condition must hold (empty = no condition).

    - `paths`: glob patterns on the document path (SQLite GLOB: `*` also crosses `/`); any may match.
    - `kinds`: file types as recorded at ingestion (`md`, `py`, `pdf`, ...); any may match.
    - `modified_after` / `modified_before`: bounds on the file's modification time (epoch seconds,
      ISO-8601 string or datetime), inclusive.
    """

    paths: tuple[str, ...] = field(default_factory=tuple)
    kinds: tuple[str, ...] = field(default_factory=tuple)
    modified_after: float | None = None
    modified_before: float | None = None

    def __post_init__(self) -> None:
        # Accept lists and single strings; store tuples so a filter is hashable (cacheable).
        for name in ("paths", "kinds"):
            value = getattr(self, name)
            if isinstance(value, str):
                value = (value,)
            object.__setattr__(self, name, tuple(v for v in (value or ()) if v))
        object.__setattr__(self, "kinds", tuple(k.lower().lstrip(".") for k in self.kinds))
        object.__setattr__(self, "modified_after", _timestamp(self.modified_after))
        object.__setattr__(self, "modified_before", _timestamp(self.modified_before))

    @classmethod
    def check_keys(cls, value: dict[str, Any]) -> None:
        """A ValueError naming the known filters when a key is not one: a misspelt filter would otherwise
        widen the search without a word."""
        unknown = [key for key in value if key not in FILTER_NAMES]
        if unknown:
            shown = ", ".join(repr(str(key)[:40]) for key in unknown[:3]) + (", ..." if len(unknown) > 3 else "")
            raise ValueError(f"unknown filter {shown}: the filters are {', '.join(FILTER_NAMES)}")

    @classmethod
    def coerce(cls, value: "SearchFilters | dict[str, Any] | None") -> "SearchFilters | None":
        """A filter from a dict (as an API would pass it) or None; an empty filter becomes None."""
        if value is None:
            return None
        if isinstance(value, SearchFilters):
            flt = value
        else:
            cls.check_keys(value)
            flt = cls(**value)
        return None if flt.is_empty else flt

    @property
    def is_empty(self) -> bool:
        return not (self.paths or self.kinds or self.modified_after is not None or self.modified_before is not None)

    def document_condition(self, alias: str = "d", *, postgres: bool = False) -> tuple[str, dict[str, Any]]:
        """An SQL boolean expression over the document table (aliased) with its named parameters
        (on PostgreSQL, which has no GLOB, the path globs become anchored regular expressions)."""
        parts: list[str] = []
        params: dict[str, Any] = {}
        if self.paths:
            names = []
            for i, pattern in enumerate(self.paths):
                params[f"f_path{i}"] = glob_regex(pattern) if postgres else pattern
                names.append(f"{alias}.path {'~' if postgres else 'GLOB'} :f_path{i}")
            parts.append("(" + " OR ".join(names) + ")")
        if self.kinds:
            marks = []
            for i, kind in enumerate(self.kinds):
                params[f"f_kind{i}"] = kind
                marks.append(f":f_kind{i}")
            parts.append(f"lower({alias}.kind) IN ({', '.join(marks)})")
        if self.modified_after is not None:
            params["f_after"] = self.modified_after
            parts.append(f"{alias}.mtime >= :f_after")
        if self.modified_before is not None:
            params["f_before"] = self.modified_before
            parts.append(f"{alias}.mtime <= :f_before")
        return (" AND ".join(parts) or ("TRUE" if postgres else "1")), params

    def chunk_subquery(self, collection_ids: list[int], *, postgres: bool = False) -> tuple[str, dict[str, Any]]:
        """`SELECT chunk ids` of the allowed documents in these collections, for `rowid IN (...)`."""
        cond, params = self.document_condition("d", postgres=postgres)
        marks = ",".join(str(int(c)) for c in collection_ids) or "NULL"
        sql = (
            "SELECT c.id FROM chunk c JOIN document d ON d.id = c.document_id "
            f"WHERE d.collection_id IN ({marks}) AND {cond}"
        )
        return sql, params


FILTER_NAMES = tuple(f.name for f in fields(SearchFilters))
