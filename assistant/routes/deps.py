"""Dependencies shared by the controllers."""

from __future__ import annotations

from typing import Annotated

from litestar import Request
from litestar.datastructures import State
from litestar.exceptions import NotFoundException, ValidationException
from litestar.params import Parameter

from indexes.models import Collection
from indexes.store import COLLECTION_NAME

from assistant.routes.errors import coded
from assistant.security.access import Identity, identity_of
from assistant.services import Services


# Ids are SQLite integers: a larger number in a path is a 400, never an overflow inside the store.
MAX_ROW_ID = 2**63 - 1
RowId = Annotated[int, Parameter(ge=1, le=MAX_ROW_ID)]


def provide_services(state: State) -> Services:
    return state.services


def provide_identity(request: Request) -> Identity:
    return identity_of(request)


def require_collection(services: Services, name: str, identity: Identity) -> Collection:
    """The collection called `name`: 403 when the caller may not use it, 404 when there is none."""
    identity.check_collection(name)
    coll = services.store.get_collection(name)
    if coll is None:
        raise coded(NotFoundException(f"unknown collection: {name!r}"), "collection_not_found")
    return coll


def check_name(name: str) -> None:
    """400 for a collection name the store would refuse, with the rule."""
    if not COLLECTION_NAME.match(name):
        raise coded(ValidationException(f"invalid collection name {name!r}: use 1-64 letters, digits, '.', '_' or "
                                        "'-', starting with a letter or digit"), "invalid_collection_name")
