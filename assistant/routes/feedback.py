"""Feedback on answers: a conversation's owner judges a turn's answer (thumbs up or down, a comment), and
an admin exports the judged answers with their sources for whoever improves the documents and prompts.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from anyio import to_thread
from litestar import Controller, delete, get, put
from litestar.exceptions import NotFoundException, ValidationException
from litestar.params import Parameter
from pydantic import BaseModel, Field, field_validator

from indexes.feedback import RATINGS, InvalidFeedback, clear_feedback, feedback_dict, judged_answers, set_feedback

from assistant.answers.variants import UnknownTurn, require_turn
from assistant.routes.conversations import require_own_conversation
from assistant.routes.deps import RowId
from assistant.routes.errors import coded
from assistant.security.access import Identity, scoped
from assistant.services import Services


class Judgement(BaseModel):
    rating: int = Field(description="1 (thumbs up) or -1 (thumbs down)")
    comment: str = Field("", description="why, in at most 2,000 characters")

    @field_validator("rating", mode="before")
    @classmethod
    def a_whole_number(cls, value: Any) -> Any:
        """`true` or `"1"` is not taken for 1: a client that sends them has its fields wrong."""
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"the rating is 1 (thumbs up) or -1 (thumbs down), not {value!r}")
        return value


def require_own_turn(services: Services, identity: Identity, conversation_id: int, turn_id: int) -> None:
    """404/403 as for the conversation; 404 `turn_not_found` for a turn that is not one of its turns."""
    require_own_conversation(services, identity, conversation_id)
    try:
        require_turn(services.store.engine, conversation_id, turn_id)
    except UnknownTurn as exc:
        raise coded(NotFoundException(str(exc)), exc.code) from None


def judge(services: Services, turn_id: int, data: Judgement) -> dict[str, Any]:
    try:
        row = set_feedback(services.store.engine, turn_id, data.rating, data.comment)
    except InvalidFeedback as exc:
        raise coded(ValidationException(str(exc), extra=exc.extra or None), exc.code) from None
    return {"turn_id": turn_id, "feedback": feedback_dict(row)}


class TurnFeedbackController(Controller):
    path = "/api/conversations/{conversation_id:int}/turns/{turn_id:int}/feedback"
    tags = ["conversations"]
    opt = scoped("ask")

    @put("/")
    async def put_feedback(
        self, services: Services, identity: Identity, conversation_id: RowId, turn_id: RowId, data: Judgement
    ) -> dict:
        """Judge the answer of a turn, replacing an earlier judgement of it."""
        await to_thread.run_sync(require_own_turn, services, identity, conversation_id, turn_id)
        return await to_thread.run_sync(judge, services, turn_id, data)

    @delete("/", status_code=200)
    async def delete_feedback(self, services: Services, identity: Identity, conversation_id: RowId, turn_id: RowId) -> dict:
        """Withdraw the judgement of a turn's answer (`cleared` false when there was none)."""
        await to_thread.run_sync(require_own_turn, services, identity, conversation_id, turn_id)
        cleared = await to_thread.run_sync(clear_feedback, services.store.engine, turn_id)
        return {"turn_id": turn_id, "feedback": None, "cleared": cleared}


def parse_since(since: str | None) -> datetime | None:
    if since is None:
        return None
    try:
        return datetime.fromisoformat(since)
    except ValueError:
        raise ValidationException(f"`since` is an ISO-8601 date or time (2026-12-01, 2026-12-01T09:30Z), not {since!r}") from None


@get("/api/feedback", tags=["conversations"], opt=scoped("admin"))
async def export_feedback(
    services: Services,
    rating: Annotated[int | None, Parameter(description="only this rating: 1 or -1")] = None,
    since: Annotated[str | None, Parameter(description="only judged at or after this ISO-8601 time (UTC without a zone)", max_length=64)] = None,
) -> list[dict]:
    """Every judged answer, latest judgement first, with its question, answer, status and sources."""
    if rating is not None and rating not in RATINGS:
        raise coded(ValidationException(f"`rating` is 1 or -1, not {rating}"), "invalid_rating")
    moment = parse_since(since)
    return await to_thread.run_sync(lambda: judged_answers(services.store.engine, rating=rating, since=moment))
