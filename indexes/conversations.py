"""Saved conversations and their turns, kept in the store.

Plain functions over the store's engine: each opens its own short session, so they are safe to call
from worker threads. Deleting a conversation deletes its turns (the foreign key cascades).

A question's answers as one group: the turn first asked, and the turns that regenerated it or sent it
again edited (`Turn.variant_of` names the group's first turn; NULL on the first itself).

A conversation reads as one turn per group, its latest variant: that is what the history of the next
question holds, while the earlier variants stay listed for the reader to flip back to. Groups keep the
order in which they were started (their first turn's id), whatever the order their variants arrived in.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any, Mapping

from sqlalchemy import func, or_
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from indexes.models import Conversation, Turn, saved, utcnow

TITLE_FROM_QUESTION_CHARS = 80  # an untitled conversation is named after its first question, cut here
TURN_STATUSES = ("done", "stopped", "error")  # answered; stopped by the client; ended by a failure


def _session(engine: Engine) -> Session:
    return Session(engine, expire_on_commit=False)


def iso_utc(dt: datetime) -> str:
    """SQLite gives our UTC datetimes back without a zone: say it."""
    return (dt.astimezone(timezone.utc) if dt.tzinfo else dt.replace(tzinfo=timezone.utc)).isoformat()


def create_conversation(
    engine: Engine, title: str = "", collections: list[str] | None = None, owner_key: int | None = None
) -> Conversation:
    with _session(engine) as s:
        conv = Conversation(title=title, collections=json.dumps(list(collections or [])), owner_key=owner_key)
        return saved(s, conv)


def get_conversation(engine: Engine, conversation_id: int) -> Conversation | None:
    with _session(engine) as s:
        return s.get(Conversation, conversation_id)


def list_conversations(
    engine: Engine, *, title_contains: str | None = None, text_contains: str | None = None, limit: int = 50,
    offset: int = 0, owner_key: int | None | bool = False,
) -> tuple[list[Conversation], int]:
    """The conversations most recently used first (a page of them), and how many match in all; only
    those of `owner_key` when it is given (None = those made without a key; False = everyone's), those
    whose title holds `title_contains`, and those whose title, questions or answers hold `text_contains`
    (any case; a conversation is found by what was said in it, not only by its first question)."""
    with _session(engine) as s:
        where = []
        if owner_key is not False:
            where.append(col(Conversation.owner_key).is_(None) if owner_key is None else Conversation.owner_key == owner_key)
        if title_contains:
            where.append(col(Conversation.title).contains(title_contains, autoescape=True))
        if text_contains:
            said = select(Turn.id).where(
                Turn.conversation_id == Conversation.id,
                or_(col(Turn.question).icontains(text_contains, autoescape=True),
                    col(Turn.answer).icontains(text_contains, autoescape=True)),
            )
            where.append(or_(col(Conversation.title).icontains(text_contains, autoescape=True), said.exists()))
        total = s.exec(select(func.count()).select_from(Conversation).where(*where)).one()
        rows = s.exec(
            select(Conversation).where(*where)
            .order_by(col(Conversation.updated_at).desc(), col(Conversation.id).desc())
            .offset(offset).limit(limit)
        ).all()
        return list(rows), int(total)


def rename_conversation(engine: Engine, conversation_id: int, title: str) -> Conversation | None:
    with _session(engine) as s:
        conv = s.get(Conversation, conversation_id)
        if conv is None:
            return None
        conv.title = title
        return saved(s, conv)


def delete_conversation(engine: Engine, conversation_id: int) -> bool:
    """Delete a conversation and its turns; False when there was none."""
    with _session(engine) as s:
        conv = s.get(Conversation, conversation_id)
        if conv is None:
            return False
        s.delete(conv)
        s.commit()
        return True


def list_turns(engine: Engine, conversation_id: int, *, last: int | None = None) -> list[Turn]:
    """The turns of a conversation, oldest first; only the `last` n when given."""
    with _session(engine) as s:
        q = select(Turn).where(Turn.conversation_id == conversation_id).order_by(col(Turn.id).desc())
        if last is not None:
            q = q.limit(last)
        return list(reversed(s.exec(q).all()))


def title_of(question: str) -> str:
    """The title an untitled conversation takes from its first question."""
    return " ".join(question.split())[:TITLE_FROM_QUESTION_CHARS]


def name_untitled(engine: Engine, conversation_id: int, question: str) -> None:
    """Name an untitled conversation after the question just asked, before its answer exists, so that
    lists show it under that title at once; a titled or deleted conversation is left alone."""
    with _session(engine) as s:
        conv = s.get(Conversation, conversation_id)
        if conv is None or conv.title.strip():
            return
        conv.title = title_of(question)
        s.add(conv)
        s.commit()


def add_turn(
    engine: Engine, conversation_id: int, *, question: str, query: str, answer: str, sources: list[dict[str, Any]],
    status: str = "done", variant_of: int | None = None, check: dict[str, Any] | None = None,
    model_answer: str | None = None, document: dict[str, Any] | None = None,
) -> Turn:
    """Append a turn and mark the conversation as just used; an untitled one takes its first question.
    `status` is one of TURN_STATUSES: a stopped or failed turn keeps what had streamed as its answer.
    `variant_of` makes it a new answer of an earlier question: the first turn of that group (below).
    `check` and `model_answer` are `done`'s: a reload shows the same verdicts and the model's own answer;
    `document` the one document the question was about ({id, collection, path, title}): a reload asks there."""
    if status not in TURN_STATUSES:
        raise ValueError(f"a turn's status is one of {', '.join(TURN_STATUSES)}, not {status!r}")
    with _session(engine) as s:
        conv = s.get(Conversation, conversation_id)
        if conv is None:
            raise LookupError(f"no conversation {conversation_id}")
        turn = Turn(
            conversation_id=conversation_id, question=question, query=query, answer=answer,
            sources=json.dumps(sources, ensure_ascii=False, default=str), status=status,
            variant_of=variant_of, answer_check=json.dumps(check, ensure_ascii=False, default=str) if check else "",
            model_answer=model_answer,
            document_scope=json.dumps(document, ensure_ascii=False) if document else None,
        )
        conv.updated_at = utcnow()
        if not conv.title.strip():
            conv.title = title_of(question)
        s.add(turn)
        s.add(conv)
        s.commit()
        s.refresh(turn)
        return turn


def conversation_dict(
    conv: Conversation, turns: list[Turn] | None = None, feedback: Mapping[int, dict[str, Any]] | None = None
) -> dict[str, Any]:
    """A conversation as clients see it; with its turns when given, one per question (its latest answer)
    with the earlier answers to it as `variants`, oldest first, and each turn's `feedback` by turn id."""
    out: dict[str, Any] = {
        "id": conv.id,
        "title": conv.title,
        "collections": json.loads(conv.collections or "[]"),
        "created_at": iso_utc(conv.created_at),
        "updated_at": iso_utc(conv.updated_at),
    }
    if turns is not None:
        out["turns"] = [
            dict(turn_dict(group[-1], feedback), variants=[turn_dict(t, feedback) for t in group[:-1]])
            for group in turn_groups(turns)
        ]
    return out


def turn_dict(turn: Turn, feedback: Mapping[int, dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "id": turn.id,
        "question": turn.question,
        "query": turn.query,
        "answer": turn.answer,
        "sources": json.loads(turn.sources or "[]"),
        "check": json.loads(turn.answer_check) if turn.answer_check else None,
        "model_answer": turn.model_answer,
        "document": json.loads(turn.document_scope) if turn.document_scope else None,
        "status": turn.status,
        "variant_of": turn.variant_of,
        "feedback": (feedback or {}).get(turn.id) if turn.id is not None else None,
        "created_at": iso_utc(turn.created_at),
    }


# The group of a turn row, in SQL: its first turn's id.
GROUP = func.coalesce(col(Turn.variant_of), col(Turn.id))


def group_of(turn: Turn) -> int:
    """The id of the first turn of the turn's group (its own id when it is the first)."""
    assert turn.id is not None
    return turn.variant_of or turn.id


def turn_groups(turns: list[Turn]) -> list[list[Turn]]:
    """Turns (any order) as their groups: groups in the order they were started, each group's variants
    oldest first, so that a group's last turn is its latest."""
    groups: dict[int, list[Turn]] = {}
    for turn in sorted(turns, key=lambda t: t.id or 0):
        groups.setdefault(group_of(turn), []).append(turn)
    return [groups[key] for key in sorted(groups)]


def latest_variants(
    engine: Engine, conversation_id: int, *, last: int | None = None, without_group: int | None = None
) -> list[Turn]:
    """The latest variant of each group of a conversation, oldest group first; only the `last` n groups
    when given; the group `without_group` left out (the one a new variant is about to replace)."""
    where = [Turn.conversation_id == conversation_id]
    if without_group is not None:
        where.append(GROUP != without_group)
    latest = select(func.max(Turn.id)).where(*where).group_by(GROUP)
    q = select(Turn).where(col(Turn.id).in_(latest)).order_by(GROUP.desc())
    if last is not None:
        q = q.limit(last)
    with Session(engine, expire_on_commit=False) as s:
        return list(reversed(s.exec(q).all()))


def last_group(engine: Engine, conversation_id: int) -> int | None:
    """The first turn's id of the conversation's last group (None for a conversation without turns)."""
    with Session(engine) as s:
        return s.exec(select(func.max(GROUP)).where(Turn.conversation_id == conversation_id)).one()


def get_turn(engine: Engine, turn_id: int) -> Turn | None:
    with Session(engine, expire_on_commit=False) as s:
        return s.get(Turn, turn_id)
