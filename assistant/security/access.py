"""Who is asking and what they may do: API keys, their scopes and collections, checked in one guard.

Every door asks `authorize(identity, scope, collections)`, the one access decision: the REST routes and
`/v1` through the app-wide guard `require_access` (each route declares its scope in its `opt`,
`opt={"scope": "read"}`; 401 without a valid key, 403 without the scope) and then `Identity.check_collection`
for each collection the handler touches; every MCP tool through `mcp_api` with the scope of its REST twin
(`search`/`read_source`/`list_collections` = read, `ask` = ask). Lists are filtered with `can_use`. A refusal
never names a collection: a key learns nothing of the collections it may not use, not even that they exist.

Keyless use: while no key exists and the server is bound to a loopback address, every request acts as
the one local user with every scope. Once a key exists, or the server listens on any other address,
each request needs `Authorization: Bearer <key>`. A route without a declared scope needs `admin`.
"""

from __future__ import annotations

import hashlib
import ipaddress
from dataclasses import dataclass
from typing import Any, Iterable

from litestar.connection import ASGIConnection
from litestar.exceptions import NotAuthorizedException, PermissionDeniedException
from litestar.handlers.base import BaseRouteHandler

from indexes.apikeys import ALL_COLLECTIONS, KeyGrant, find_key, active_key_count

from assistant.settings import Settings

SCOPE = "scope"  # the opt key every route handler sets
PUBLIC = "public"  # a route anyone may call: the page itself, its static files, /health, the API schema
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
CREATE_KEY_HINT = "create one with `assistant keys create NAME --scope read --collection NAME`"


def scoped(scope: str) -> dict[str, Any]:
    """A route's opt that says which scope it needs."""
    return {SCOPE: scope}


class AccessDenied(PermissionDeniedException):
    """403: the caller's key lacks a scope or a collection (REST answers it as JSON, MCP as a tool error)."""


@dataclass(frozen=True)
class Identity:
    """The caller: a key (with its scopes and collections), or the keyless local user."""

    key_id: int | None
    name: str
    scopes: frozenset[str]
    collections: frozenset[str]

    @property
    def is_admin(self) -> bool:
        return "admin" in self.scopes

    def has(self, scope: str) -> bool:
        # An answer shows the passages it used, so a key that may ask may also read.
        return self.is_admin or scope in self.scopes or (scope == "read" and "ask" in self.scopes)

    def can_use(self, collection: str) -> bool:
        if collection.startswith("~"):  # a deleted collection waiting for its purge: nobody's
            return False
        return self.is_admin or ALL_COLLECTIONS in self.collections or collection in self.collections

    def check_scope(self, scope: str) -> None:
        if not self.has(scope):
            raise AccessDenied(f"this key lacks the {scope!r} scope")

    def check_collection(self, collection: str) -> None:
        # The name is not repeated: a refusal must not confirm that a collection exists.
        if not self.can_use(collection):
            raise AccessDenied("this key may not use this collection")

    def owns(self, owner_key: int | None) -> bool:
        """Whether a conversation or job made by `owner_key` is this caller's to see."""
        return self.is_admin or owner_key == self.key_id


LOCAL_USER = Identity(None, "local", frozenset({"admin"}), frozenset({ALL_COLLECTIONS}))


def authorize(identity: Identity, scope: str, collections: Iterable[str] = ()) -> None:
    """The one access decision of every door: `scope` held, and every collection touched usable."""
    identity.check_scope(scope)
    for name in collections:
        identity.check_collection(name)


def operator_identity(engine, key: str | None, collections: Iterable[str] = ()) -> Identity:
    """Whom a command acts as, by the operator's choice (`assistant mcp --key/--collection`): the key's
    rights, narrowed to `collections` when given; the local user with every right when neither is given.
    ValueError for an unknown or revoked key."""
    names = frozenset(collections)
    if key is not None:
        grant = find_key(engine, key)
        if grant is None:
            raise ValueError("unknown or revoked API key")
        identity = Identity(grant.key_id, grant.name, grant.scopes, grant.collections)
    else:
        identity = LOCAL_USER
    if not names:
        return identity
    if refused := sorted(n for n in names if not identity.can_use(n)):
        raise ValueError(f"the key may not use the collection {refused[0]!r}")
    # Narrowed to some collections, an admin acts as a reader and asker of those only (admin passes every check).
    scopes = frozenset({"read", "ask"}) if identity.is_admin else identity.scopes
    return Identity(identity.key_id, identity.name, scopes, names)


def is_loopback(host: str) -> bool:
    host = host.strip("[]")
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def keyless_allowed(settings: Settings, engine) -> bool:
    """True while nobody needs a key: no key exists and only this machine can connect."""
    return is_loopback(settings.server.host) and active_key_count(engine) == 0


def check_bind(settings: Settings, engine) -> None:
    """Refuse to serve an address other machines can reach while no key exists."""
    if not is_loopback(settings.server.host) and active_key_count(engine) == 0:
        raise SystemExit(
            f"assistant serve: refusing to listen on {settings.server.host} without API keys, as anyone who can "
            f"reach it could read and change every collection; {CREATE_KEY_HINT} (see docs/usage.md), "
            "or bind 127.0.0.1"
        )


def bearer_token(connection: ASGIConnection) -> str | None:
    value = connection.headers.get("authorization", "")
    scheme, _, token = value.partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def key_grant(connection: ASGIConnection, token: str) -> KeyGrant | None:
    """The grant of the key sent, looked up once per request (the rate limit and the guard both ask)."""
    cached = connection.scope.get("key_grant")
    if cached is not None and cached[0] == token:
        return cached[1]
    grant = find_key(connection.app.state.services.store.engine, token)
    connection.scope["key_grant"] = (token, grant)  # type: ignore[typeddict-unknown-key]
    return grant


def rate_limit_identifier(connection: ASGIConnection) -> str:
    """Whom a rate limit counts: a valid key (hashed, never kept), else the client address. A token that
    is no active key counts against the address it came from, so that a fresh invalid token per request
    does not get a fresh allowance each time."""
    token = bearer_token(connection)
    if token and key_grant(connection, token) is not None:
        return "key:" + hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return "addr:" + (connection.client.host if connection.client else "unknown")


def resolve_identity(connection: ASGIConnection) -> Identity:
    """The caller of this request; 401 when a key is needed and none (or an unknown one) was sent."""
    services = connection.app.state.services
    engine = services.store.engine
    token = bearer_token(connection)
    # Keyless local use ignores whatever key a client sends: the openai package and editor plugins
    # always send one (often a placeholder) and must work against a server that has no keys yet.
    if keyless_allowed(services.settings, engine):
        return LOCAL_USER
    if token is None:
        raise NotAuthorizedException(
            "an API key is needed: send `Authorization: Bearer <key>`" + ("" if active_key_count(engine) else
                                                                          f"; {CREATE_KEY_HINT}"),
            headers={"WWW-Authenticate": "Bearer"},
        )
    grant = key_grant(connection, token)
    if grant is None:
        raise NotAuthorizedException("unknown or revoked API key", headers={"WWW-Authenticate": "Bearer"})
    return Identity(grant.key_id, grant.name, grant.scopes, grant.collections)


def require_access(connection: ASGIConnection, handler: BaseRouteHandler) -> None:
    """The one guard of every route: a valid key (or keyless local use) holding the route's scope."""
    needed = handler.opt.get(SCOPE, "admin")
    if needed == PUBLIC or connection.scope.get("method") == "OPTIONS":  # an OPTIONS answer carries no data
        return
    identity = resolve_identity(connection)
    authorize(identity, needed)
    connection.scope["user"] = identity


def identity_of(connection: ASGIConnection) -> Identity:
    """The identity the guard left on the connection (a route that reaches here passed it)."""
    identity = connection.scope.get("user")
    if not isinstance(identity, Identity):
        raise NotAuthorizedException("no identity on this request")
    return identity
