"""Readers' judgements of answers (thumbs up or down, an optional comment), one per turn, and the
judged answers exported for the people who look after the documents and the prompts.

A judgement is replaced, never added to: the row of a turn holds the reader's latest opinion. Deleting
a turn (or its conversation) deletes its judgement (the foreign key cascades).
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from indexes.conversations import iso_utc
from indexes.models import Feedback, Turn, saved, utcnow

RATINGS = (1, -1)  # thumbs up, thumbs down
MAX_COMMENT_CHARS = 2000


class InvalidFeedback(ValueError):
    """A rating or comment the store refuses; `code` names which, `extra` the values the message names."""

    def __init__(self, message: str, code: str, extra: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.extra = extra or {}


def checked_comment(rating: int, comment: str) -> str:
    """The comment to store (trimmed), once the rating and the comment are known to be acceptable."""
    if isinstance(rating, bool) or rating not in RATINGS:
        raise InvalidFeedback(f"the rating is 1 (thumbs up) or -1 (thumbs down), not {rating!r}", "invalid_rating")
    comment = comment.strip()
    if len(comment) > MAX_COMMENT_CHARS:
        raise InvalidFeedback(f"the comment is too long: {len(comment)} characters, at most {MAX_COMMENT_CHARS}",
                              "comment_too_long", {"length": len(comment), "limit": MAX_COMMENT_CHARS})
    return comment


def set_feedback(engine: Engine, turn_id: int, rating: int, comment: str = "") -> Feedback:
    """Judge a turn's answer, replacing an earlier judgement of it (InvalidFeedback when refused)."""
    comment = checked_comment(rating, comment)
    with Session(engine, expire_on_commit=False) as s:
        row = s.exec(select(Feedback).where(Feedback.turn_id == turn_id)).first()
        if row is None:
            row = Feedback(turn_id=turn_id, rating=rating, comment=comment)
        else:
            row.rating, row.comment, row.created_at = rating, comment, utcnow()
        return saved(s, row)


def clear_feedback(engine: Engine, turn_id: int) -> bool:
    """Withdraw the judgement of a turn; False when there was none."""
    with Session(engine) as s:
        row = s.exec(select(Feedback).where(Feedback.turn_id == turn_id)).first()
        if row is None:
            return False
        s.delete(row)
        s.commit()
        return True


def feedback_dict(row: Feedback) -> dict[str, Any]:
    return {"rating": row.rating, "comment": row.comment, "created_at": iso_utc(row.created_at)}


def feedback_by_turn(engine: Engine, turn_ids: list[int]) -> dict[int, dict[str, Any]]:
    """The judgement of each of these turns that has one, by turn id."""
    if not turn_ids:
        return {}
    with Session(engine) as s:
        rows = s.exec(select(Feedback).where(col(Feedback.turn_id).in_(turn_ids))).all()
        return {row.turn_id: feedback_dict(row) for row in rows}


def export_source(source: dict[str, Any]) -> dict[str, Any]:
    """A stored source as the export gives it: where it is (path, heading, lines or page) and whether the
    answer cited it."""
    return {"n": source.get("n"), "path": source.get("path", ""), "heading": source.get("heading_path", ""),
            "line_start": source.get("line_start"), "line_end": source.get("line_end"),
            "page": source.get("page"), "cited": bool(source.get("cited"))}


def as_utc(moment: datetime) -> datetime:
    return moment.astimezone(timezone.utc) if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def judged_answers(engine: Engine, *, rating: int | None = None, since: datetime | None = None) -> list[dict[str, Any]]:
    """Every judged answer, the latest judgement first: its conversation, question, answer, status and
    sources, with the rating and comment; only those of `rating`, or judged at or after `since`, when given
    (a `since` without a zone is UTC)."""
    q = select(Feedback, Turn).join(Turn, col(Turn.id) == Feedback.turn_id)
    if rating is not None:
        q = q.where(Feedback.rating == rating)
    if since is not None:
        q = q.where(Feedback.created_at >= as_utc(since))
    q = q.order_by(col(Feedback.created_at).desc(), col(Feedback.id).desc())
    with Session(engine) as s:
        return [
            {"conversation_id": turn.conversation_id, "turn_id": turn.id, "question": turn.question,
             "answer": turn.answer, "status": turn.status,
             "sources": [export_source(src) for src in json.loads(turn.sources or "[]")],
             **feedback_dict(fb)}
            for fb, turn in s.exec(q).all()
        ]
