"""`assistant keys create|list|revoke`: the API keys clients send as `Authorization: Bearer <key>`."""

from __future__ import annotations

import argparse
import json
import sys

from indexes.apikeys import SCOPES, InvalidKeyRequest, create_key, key_dict, list_keys, revoke_key
from indexes.terminal_text import terminal_safe

from assistant.settings import Settings


def register(sub: argparse._SubParsersAction) -> None:
    from assistant.cli import add_common

    p = add_common(sub.add_parser("keys", help="create, list or revoke API keys"))
    keys = p.add_subparsers(dest="keys_command", metavar="ACTION", required=True)
    create = add_common(keys.add_parser("create", help="make a key (it is printed once; only its hash is kept)"))
    create.add_argument("name", help="who or what the key is for")
    create.add_argument("--scope", action="append", choices=SCOPES, required=True,
                        help="what it may do (repeat): read = search and read passages, ask = answers and "
                             "conversations, ingest = add and delete documents, admin = everything, "
                             "metrics = scrape /metrics")
    create.add_argument("--collection", action="append", default=[],
                        help="a collection it may use (repeat); '*' = every collection")
    listing = add_common(keys.add_parser("list", help="the keys (never the keys themselves)"))
    listing.add_argument("--all", action="store_true", help="revoked keys too")
    listing.add_argument("--json", action="store_true", help="JSON instead of a table")
    revoke = add_common(keys.add_parser("revoke", help="revoke a key by id or name (it stops working at once)"))
    revoke.add_argument("key", help="the key's id or name")
    p.set_defaults(func=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    from indexes.db import make_engine

    engine = make_engine(settings.data_dir / "store.db")
    try:
        if args.keys_command == "create":
            row, secret = create_key(engine, args.name, args.scope, args.collection)
            print(f"key {row.id} ({terminal_safe(row.name)}): {secret}")
            print("Keep it now: only its hash is stored. Send it as `Authorization: Bearer <key>`.", file=sys.stderr)
        elif args.keys_command == "list":
            rows = [key_dict(r) for r in list_keys(engine, include_revoked=args.all)]
            if args.json:
                print(json.dumps(rows, indent=2))
            else:
                for r in rows:
                    state = f"revoked {r['revoked_at']}" if r["revoked_at"] else "active"
                    name, collections = terminal_safe(r["name"]), terminal_safe(",".join(r["collections"])) or "-"
                    print(f"{r['id']:>4}  {name:<24} {r['prefix']:<14} {','.join(r['scopes']):<20} "
                          f"{collections:<24} {state}")
                if not rows:
                    print("no keys: the server is keyless on 127.0.0.1 and refuses other addresses")
        else:
            row = revoke_key(engine, args.key)
            if row is None:
                print(f"assistant keys: no active key {args.key!r}", file=sys.stderr)
                return 1
            print(f"revoked key {row.id} ({terminal_safe(row.name)})")
        return 0
    except InvalidKeyRequest as exc:
        print(f"assistant keys: {terminal_safe(str(exc))}", file=sys.stderr)
        return 2
    finally:
        engine.dispose()
