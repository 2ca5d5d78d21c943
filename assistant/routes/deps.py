"""Dependencies shared by the controllers."""

from __future__ import annotations

from litestar.datastructures import State
from litestar.exceptions import NotFoundException

from indexes.models import Collection

from assistant.services import Services


def provide_services(state: State) -> Services:
    return state.services


def require_collection(services: Services, name: str) -> Collection:
    coll = services.store.get_collection(name)
    if coll is None:
        raise NotFoundException(f"unknown collection: {name!r}")
    return coll
