"""API keys kept in the store: made, listed, revoked, and looked up by the hash of what a client sends.

A key is 32 random bytes (URL-safe base64) behind a fixed prefix. Only its sha256 is stored, so a copy
of the database does not hand out working keys; a random key of that length needs no slow hash.
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
from dataclasses import dataclass

from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from indexes.db import read_rows
from indexes.models import ApiKey, saved, utcnow

KEY_PREFIX = "rag_"
SCOPES = ("read", "ask", "ingest", "admin", "metrics")
ALL_COLLECTIONS = "*"
KEY_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._ -]{0,63}")
COLLECTION_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


class InvalidKeyRequest(ValueError):
    """A key that cannot be made as asked; the message says why."""


@dataclass(frozen=True)
class KeyGrant:
    """What an active key may do, read from its row."""

    key_id: int
    name: str
    scopes: frozenset[str]
    collections: frozenset[str]  # {"*"} = every collection


def hash_key(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


def _checked(name: str, scopes: list[str], collections: list[str]) -> tuple[str, list[str], list[str]]:
    if not KEY_NAME.fullmatch(name or ""):
        raise InvalidKeyRequest(f"invalid key name {name!r}: 1-64 letters, digits, '.', '_', '-' or spaces")
    scopes = list(dict.fromkeys(s.strip() for s in scopes if s.strip()))
    unknown = [s for s in scopes if s not in SCOPES]
    if unknown or not scopes:
        raise InvalidKeyRequest(f"scopes must be some of {', '.join(SCOPES)} (got {', '.join(unknown) or 'none'})")
    collections = list(dict.fromkeys(c.strip() for c in collections if c.strip()))
    for c in collections:
        if c != ALL_COLLECTIONS and not COLLECTION_PATTERN.fullmatch(c):
            raise InvalidKeyRequest(f"invalid collection name {c!r}")
    if not collections and not {"admin", "metrics"} >= set(scopes):
        raise InvalidKeyRequest("name the collections the key may use (or '*' for every collection)")
    return name, scopes, collections


def create_key(engine: Engine, name: str, scopes: list[str], collections: list[str]) -> tuple[ApiKey, str]:
    """A new key row and the key itself (shown once: only its hash is kept)."""
    name, scopes, collections = _checked(name, scopes, collections)
    secret = KEY_PREFIX + secrets.token_urlsafe(32)
    row = ApiKey(name=name, key_hash=hash_key(secret), prefix=secret[:10], scopes=",".join(scopes),
                 collections=json.dumps(collections))
    with Session(engine, expire_on_commit=False) as s:
        s.add(row)
        s.commit()
        s.refresh(row)
    return row, secret


def list_keys(engine: Engine, *, include_revoked: bool = False) -> list[ApiKey]:
    with Session(engine, expire_on_commit=False) as s:
        q = select(ApiKey).order_by(col(ApiKey.id))
        if not include_revoked:
            q = q.where(col(ApiKey.revoked_at).is_(None))
        return list(s.exec(q).all())


def revoke_key(engine: Engine, key: str) -> ApiKey | None:
    """Revoke the active key with this id or name (None when there is none)."""
    with Session(engine, expire_on_commit=False) as s:
        q = select(ApiKey).where(col(ApiKey.revoked_at).is_(None))
        q = q.where(ApiKey.id == int(key)) if key.isdigit() else q.where(ApiKey.name == key)
        rows = s.exec(q).all()
        if len(rows) != 1:
            if len(rows) > 1:
                raise InvalidKeyRequest(f"{len(rows)} keys are called {key!r}: revoke one by its id")
            return None
        row = rows[0]
        row.revoked_at = utcnow()
        return saved(s, row)


def active_key_count(engine: Engine) -> int:
    return int(read_rows(engine, "SELECT count(*) FROM apikey WHERE revoked_at IS NULL")[0][0])


def find_key(engine: Engine, secret: str) -> KeyGrant | None:
    """The grant of the active key `secret`, or None (unknown, revoked, or not a key at all)."""
    if not secret.startswith(KEY_PREFIX) or len(secret) > 128:
        return None
    rows = read_rows(engine, "SELECT id, name, scopes, collections FROM apikey WHERE key_hash = ? AND revoked_at IS NULL",
                     (hash_key(secret),))
    if not rows:
        return None
    key_id, name, scopes, collections = rows[0]
    return KeyGrant(key_id, name, frozenset(filter(None, scopes.split(","))), frozenset(json.loads(collections or "[]")))


def key_dict(row: ApiKey) -> dict:
    """A key as lists show it: never the key, only its first characters."""
    return {"id": row.id, "name": row.name, "prefix": row.prefix + "…", "scopes": row.scopes.split(","),
            "collections": json.loads(row.collections or "[]"), "created_at": row.created_at.isoformat(),
            "revoked_at": row.revoked_at.isoformat() if row.revoked_at else None}
