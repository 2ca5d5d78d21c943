"""How a retrieved chunk is shown to clients: the source dict of search results and answers, an answer's
sources in the order clients show them, and how well an answer's citation of each is supported (the span
mapped to the chunk's lines and page)."""

from __future__ import annotations

from indexes.location import flat_dicts
from indexes.retrieval.retriever import Hit

from assistant.answers.support import AnswerCheck, Support


def hit_sources(hits: list[Hit]) -> list[dict]:
    """Hits without their full text, each with a URL the UI can open to read the chunk."""
    return [dict(data, url=f"/api/chunks/{data['chunk_id']}") for data in flat_dicts(hits, leave_out="text")]


def support_dict(hit: Hit, support: Support) -> dict:
    """A citation's support as clients see it: score, verdict, and the supporting span of the chunk.

    The span's lines are the chunk's first line plus the line breaks of its text before each end
    (kept within the chunk's range); None when the chunk has no line range or there is no span.
    """
    place = hit.location
    span: dict = {"char_start": support.char_start, "char_end": support.char_end,
                  "line_start": None, "line_end": None, "page": place.page}
    if support.char_start >= 0 and place.line_start is not None:
        last_line = place.line_end if place.line_end is not None else place.line_start + hit.text.count("\n")
        span["line_start"] = min(place.line_start + hit.text.count("\n", 0, support.char_start), last_line)
        span["line_end"] = min(place.line_start + hit.text.count("\n", 0, support.char_end), last_line)
    out = {"score": support.score, "supported": support.supported, "span": span}
    if support.contradicted:
        out["contradicted"] = True
    return out


def source_dicts(sources: list[Hit], cited: list[int], check: AnswerCheck | None = None,
                 shown: list[dict] | None = None) -> list[dict]:
    """The prompt's sources as shown to clients: the cited ones first (by number), then the others;
    with each one's `support` when the answer was checked. `shown`: the dicts of these sources made
    already, in prompt order (the `retrieved` event's), copied rather than made again."""
    best = check.best_supports() if check is not None else {}
    made = shown if shown is not None else hit_sources(sources)
    out = [dict(source, n=n, cited=n in cited) for n, source in enumerate(made, start=1)]
    if check is not None:
        for s, h in zip(out, sources):
            s["support"] = support_dict(h, best[s["n"]]) if s["n"] in best else None
    return sorted(out, key=lambda s: (not s["cited"], s["n"]))
