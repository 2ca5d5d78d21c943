"""Saved conversations: list, create, read (with turns), rename, delete.

A conversation is started with POST /api/conversations; its id then goes with each question to
/api/ask (`conversation_id`), which takes the history from the stored turns and appends the new one.
"""

from __future__ import annotations

from typing import Annotated

from anyio import to_thread
from litestar import Controller, delete, get, patch, post
from litestar.exceptions import NotFoundException, PermissionDeniedException, ValidationException
from litestar.params import Parameter
from pydantic import BaseModel, Field

from indexes.conversations import (
    conversation_dict,
    create_conversation,
    delete_conversation,
    get_conversation,
    list_conversations,
    list_turns,
    rename_conversation,
)
from indexes.feedback import feedback_by_turn

from assistant.security.access import Identity, authorize, scoped
from assistant.routes.deps import RowId, require_collection
from assistant.services import Services

class NewConversation(BaseModel):
    title: str = Field("", description="empty = named after its first question")
    collections: list[str] = Field(default_factory=list, max_length=16, description="what its questions search by default")


class Rename(BaseModel):
    title: str


def checked_title(services: Services, title: str, *, required: bool) -> str:
    title = " ".join(title.split())
    limit = services.settings.conversations.max_title_chars
    if required and not title:
        raise ValidationException("the title is empty")
    if len(title) > limit:
        raise ValidationException(f"the title is too long: {len(title)} characters, at most {limit}")
    return title


def require_own_conversation(services: Services, identity: Identity, conversation_id: int) -> None:
    """404 for no such conversation, 403 for another key's or one over a collection this key may not use."""
    conv = get_conversation(services.store.engine, conversation_id)
    if conv is None:
        raise NotFoundException(f"unknown conversation: {conversation_id}")
    if not identity.owns(conv.owner_key):
        raise PermissionDeniedException("this conversation belongs to another key")
    authorize(identity, "ask", conversation_dict(conv)["collections"])


class ConversationController(Controller):
    path = "/api/conversations"
    tags = ["conversations"]
    opt = scoped("ask")

    @get("/")
    async def list_all(
        self, services: Services, identity: Identity,
        q: Annotated[str | None, Parameter(description="only those whose title, questions or answers hold this",
                                           max_length=200)] = None,
        offset: Annotated[int, Parameter(ge=0, le=2**31)] = 0,
        limit: Annotated[int, Parameter(ge=1, le=200)] = 50,
    ) -> dict:
        """The conversations most recently used first."""
        rows, total = await to_thread.run_sync(
            lambda: list_conversations(services.store.engine, text_contains=q, limit=limit, offset=offset,
                                      owner_key=False if identity.is_admin else identity.key_id)
        )
        return {"conversations": [conversation_dict(c) for c in rows], "total": total, "offset": offset, "limit": limit}

    @post("/", status_code=201)
    async def create(self, services: Services, identity: Identity, data: NewConversation) -> dict:
        title = checked_title(services, data.title, required=False)
        collections = list(dict.fromkeys(data.collections))
        for name in collections:
            require_collection(services, name, identity)
        conv = await to_thread.run_sync(lambda: create_conversation(services.store.engine, title, collections, identity.key_id))
        return conversation_dict(conv, [])

    @get("/{conversation_id:int}")
    async def read(self, services: Services, identity: Identity, conversation_id: RowId) -> dict:
        """The conversation with every turn: question, search query, answer and sources, the feedback on it,
        and the earlier answers to the same question (`variants`)."""
        await to_thread.run_sync(require_own_conversation, services, identity, conversation_id)

        def run() -> dict | None:
            engine = services.store.engine
            conv = get_conversation(engine, conversation_id)
            if conv is None:
                return None
            turns = list_turns(engine, conversation_id)
            return conversation_dict(conv, turns, feedback_by_turn(engine, [t.id for t in turns if t.id is not None]))

        out = await to_thread.run_sync(run)
        if out is None:
            raise NotFoundException(f"unknown conversation: {conversation_id}")
        return out

    @patch("/{conversation_id:int}")
    async def rename(self, services: Services, identity: Identity, conversation_id: RowId, data: Rename) -> dict:
        await to_thread.run_sync(require_own_conversation, services, identity, conversation_id)
        title = checked_title(services, data.title, required=True)
        conv = await to_thread.run_sync(lambda: rename_conversation(services.store.engine, conversation_id, title))
        if conv is None:
            raise NotFoundException(f"unknown conversation: {conversation_id}")
        return conversation_dict(conv)

    @delete("/{conversation_id:int}", status_code=200)
    async def remove(self, services: Services, identity: Identity, conversation_id: RowId) -> dict:
        """Delete a conversation and its turns."""
        await to_thread.run_sync(require_own_conversation, services, identity, conversation_id)
        if not await to_thread.run_sync(delete_conversation, services.store.engine, conversation_id):
            raise NotFoundException(f"unknown conversation: {conversation_id}")
        return {"deleted": conversation_id}
