"""A question's answers as one group: the turn first asked, and the turns that regenerated it or sent it
again edited (`Turn.variant_of` names the group's first turn; NULL on the first itself).

A conversation reads as one turn per group, its latest variant: that is what the history of the next
question holds, while the earlier variants stay listed for the reader to flip back to. Groups keep the
order in which they were started (their first turn's id), whatever the order their variants arrived in.
"""

from __future__ import annotations

from sqlalchemy import func
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from indexes.models import Turn

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
