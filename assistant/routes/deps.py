"""Dependencies shared by the controllers."""

from __future__ import annotations

from typing import Annotated

from litestar import Request
from litestar.datastructures import State
from litestar.exceptions import HTTPException, NotFoundException, ValidationException
from litestar.params import Parameter
from sqlmodel import col, select

from indexes.models import Collection
from indexes.collection_titles import TITLE_MAX, TitleError, check_title, name_for_title, unique_name
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


def new_name_and_title(services: Services, name: str | None, title: str | None) -> tuple[str, str]:
    """A new collection's API name and display name: either may be left out (not both). A title is checked
    (400 `invalid_collection_title`) and may not be another collection's (409 `collection_exists`); a name
    made from it is unique."""
    if name is None and title is None:
        raise coded(ValidationException("give the collection a name or a title"), "invalid_collection_name")
    if name is not None:
        check_name(name)
    if title is None:
        return name, name
    try:
        title = check_title(title)
    except TitleError as err:
        raise coded(ValidationException(str(err), extra={"limit": TITLE_MAX}), "invalid_collection_title") from None
    folded = title.casefold()
    # the titles alone, not list_collections' counts of every collection's chunks; a deleted collection
    # ('~deleted-<id>' until purged) has given its title up, and an untitled row reads as its name
    with services.store.session() as s:
        rows = s.exec(select(Collection.name, Collection.title).where(~col(Collection.name).startswith("~"))).all()
    if any((t or n).casefold() == folded for n, t in rows):
        raise coded(HTTPException(status_code=409, detail=f"a collection titled {title!r} already exists",
                                  extra={"name": title}), "collection_exists")
    if name is None:
        name = unique_name(name_for_title(title), lambda n: services.store.get_collection(n) is not None)
    return name, title
