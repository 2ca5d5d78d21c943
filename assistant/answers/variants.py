"""Another answer to a conversation's last question: regenerated (the same question asked again) or
edited and sent again (its own question text). The new turn joins the question's group
(indexes/conversations.py), every answer of which is kept; the history of later questions holds its latest.
No HTTP in here: `/api/ask` (`regenerate_of`) and the feedback routes ask these checks.
"""

from __future__ import annotations

from sqlalchemy.engine import Engine

from indexes.models import Turn
from indexes.conversations import get_turn, group_of, last_group


class UnknownTurn(LookupError):
    """No turn of this conversation has this id (never made, deleted, or another conversation's)."""

    code = "turn_not_found"


class NotLastQuestion(ValueError):
    """The turn is not of the conversation's last question, which alone may be answered again."""

    code = "turn_not_last"


def require_turn(engine: Engine, conversation_id: int, turn_id: int) -> Turn:
    """The turn `turn_id` of this conversation (UnknownTurn otherwise: another conversation's turn is
    not told apart from none, so that its existence is not confirmed)."""
    turn = get_turn(engine, turn_id)
    if turn is None or turn.conversation_id != conversation_id:
        raise UnknownTurn(f"conversation {conversation_id} has no turn {turn_id}")
    return turn


def replaced_group(engine: Engine, conversation_id: int, turn_id: int) -> int:
    """The group a new answer to the question of turn `turn_id` joins: its first turn's id.

    Only the conversation's last question may be regenerated or edited: every later question was
    rewritten and answered from the history that holds this one's answer, so a new answer to an earlier
    question would leave them answering a conversation that no longer reads that way.
    """
    group = group_of(require_turn(engine, conversation_id, turn_id))
    last = last_group(engine, conversation_id)
    if group != last:
        raise NotLastQuestion(
            f"turn {turn_id} is not of the conversation's last question: only the last question may be "
            f"regenerated or edited, as the later turns were answered from it"
        )
    return group
