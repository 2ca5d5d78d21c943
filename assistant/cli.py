"""The `assistant` command: subcommands are registered by small modules, each owning its commands.

Commands of other packages arrive through the `assistant.commands` entry-point group (ingestion:
`ingest`, `worker`, `jobs`; measurement: `bench`, `eval`), so the server package never imports the
ingestion worker or the benchmarks.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from importlib.metadata import entry_points

from pydantic import ValidationError

from assistant.settings import load_settings

BUILTIN = [
    "assistant.commands.serve",
    "assistant.commands.query",
    "assistant.commands.chat",
    "assistant.commands.mcp",
    "assistant.commands.config",
    "assistant.commands.gpu",
    "assistant.commands.summarize",
    "assistant.commands.batch",
    "assistant.commands.keys",
    "assistant.commands.feedback",
    "assistant.commands.db",
    "assistant.commands.engine",
]


def add_common(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Options every command accepts: where the data lives and which config file to read. The parser given
    back, so that a command's parser is made with them in one expression."""
    parser.add_argument("--data-dir", help="data directory (store, indexes); env ASSISTANT_DATA_DIR")
    parser.add_argument("--config", help="TOML config file; env ASSISTANT_CONFIG")
    return parser


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="assistant", description="Ask your own documents, with sources.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in BUILTIN:
        importlib.import_module(name).register(sub)
    for ep in sorted(entry_points(group="assistant.commands"), key=lambda e: e.name):
        ep.load()(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Parse, build the one Settings object (file < env < flags), and run the command with it.

    A command module sets `func(args, settings) -> int` and may set `overrides(args) -> dict` to turn
    its flags into settings (nested dicts for nested settings).
    """
    from assistant.security.redaction import redact_logs

    redact_logs()  # no key, token or URL password in any log line of any command
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        overrides = args.overrides(args) if hasattr(args, "overrides") else {}
        settings = load_settings(
            data_dir=getattr(args, "data_dir", None), config=getattr(args, "config", None), **overrides
        )
        return int(args.func(args, settings) or 0)
    except ValidationError as exc:
        print(f"assistant: invalid settings:\n{exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
