"""`assistant mcp`: the MCP tools over stdio, for an editor or a coding agent that starts the command.

The tools act with the rights the operator gives the command: every collection and scope by default
(whoever can start it can read the data folder anyway), a key's with `--key`, and only the collections
named with `--collection`. The same access decision as every other door applies to each tool call.

stdout carries the protocol and nothing else: logging goes to stderr, and file descriptor 1 is pointed
at stderr too, so that a native library writing to it cannot corrupt a message; the protocol keeps its
own copy of the original stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import logging
import os
import sys
import threading

from assistant.security.access import LOCAL_USER, Identity, operator_identity
from assistant.backends.registry import backend_names
from assistant.services import Services
from assistant.settings import Settings


def register(sub: argparse._SubParsersAction) -> None:
    from assistant.cli import add_common

    p = sub.add_parser(
        "mcp", help="serve the MCP tools (list_collections, search, ask, read_source) over stdio for editors and agents",
        description="Serve the MCP tools over stdio. The tools act with every right unless narrowed: with "
                    "--key they have that API key's scopes and collections, with --collection only the "
                    "collections named (read and ask).",
    )
    add_common(p)
    p.add_argument("--backend", choices=backend_names(), help="LLM backend for `ask`")
    p.add_argument("--key", help="act with this API key's scopes and collections (see `assistant keys create`)")
    p.add_argument("--collection", action="append", default=[],
                   help="only this collection (repeat for several); with --key, one the key may use")
    p.set_defaults(func=run, overrides=lambda a: {"backend": a.backend} if a.backend else {})


def keep_stdout_for_protocol() -> None:
    """Make sys.stdout the only way to the client's pipe; everything else written to fd 1 goes to stderr."""
    sys.stdout.flush()
    protocol = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = io.TextIOWrapper(os.fdopen(protocol, "wb"), encoding="utf-8", line_buffering=True)


class LazyServices:
    """The services, built on the first tool call: the client's handshake is answered at once instead
    of after the models load (editors give a server a few seconds to start)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.built: Services | None = None
        self.lock = threading.Lock()

    def __call__(self) -> Services:
        with self.lock:
            if self.built is None:
                self.built = Services.build(self.settings)
            return self.built

    def close(self) -> None:
        if self.built is not None:
            asyncio.run(self.built.aclose())


def operator_rights(args: argparse.Namespace, settings: Settings) -> Identity:
    """Whom the tools act as; SystemExit with the reason for an unknown key or a collection it may not use."""
    from indexes.db import make_store_engine

    if args.key is None and not args.collection:
        return LOCAL_USER
    engine = make_store_engine(settings.data_dir, settings.database_url)
    try:
        return operator_identity(engine, args.key, args.collection)
    except ValueError as exc:
        raise SystemExit(f"assistant mcp: {exc}") from None
    finally:
        engine.dispose()


def run(args: argparse.Namespace, settings: Settings) -> int:
    operator_rights(args, settings)  # an unknown key is refused before the protocol starts, on the terminal
    keep_stdout_for_protocol()
    logging.basicConfig(stream=sys.stderr, level=settings.log_level.upper(), format="%(levelname)s %(name)s: %(message)s")
    from assistant.mcp_api.server import build_mcp_server

    services = LazyServices(settings)

    def rights_now() -> Identity:
        """The operator's rights at this call: a key revoked since the start is refused (ValueError)."""
        if args.key is None and not args.collection:
            return LOCAL_USER
        return operator_identity(services().store.engine, args.key, args.collection)

    try:
        build_mcp_server(services, settings, stdio_identity=rights_now).run("stdio")
    finally:
        services.close()
    return 0
