"""`assistant config`: the settings in force (file < environment < flags), or the reference of all settings."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from pydantic import BaseModel

from assistant.settings import Settings, documented_settings


def register(sub: argparse._SubParsersAction) -> None:
    from assistant.cli import add_common

    p = add_common(sub.add_parser("config", help="show the settings in force, or the reference of every setting"))
    p.add_argument("--reference", action="store_true", help="print every setting as a Markdown table")
    p.set_defaults(func=run)


def reference_markdown() -> str:
    """The table in docs/configuration.md: environment variable, default, description."""
    defaults = Settings.model_construct()
    rows = ["| environment variable | default | description |", "|---|---|---|"]
    for env, description in documented_settings().items():
        value = defaults
        for part in setting_path(env):
            value = getattr(value, part, None)
        shown = "" if value is None else json.dumps(value, default=str) if not isinstance(value, BaseModel) else ""
        shown = shown.replace(str(Path.home()), "~")  # the same table on every machine
        rows.append(f"| `{env}` | `{shown}` | {description.replace('|', '/')} |")
    return "\n".join(rows) + "\n"


def setting_path(env: str) -> list[str]:
    """`ASSISTANT_OPENAI_BASE_URL` -> ["openai", "base_url"] (nested groups take one `_`)."""
    name = env.removeprefix("ASSISTANT_").lower()
    for group, field in Settings.model_fields.items():
        ann = field.annotation
        if isinstance(ann, type) and issubclass(ann, BaseModel) and name.startswith(group + "_"):
            return [group, name[len(group) + 1 :]]
    return [name]


def run(args: argparse.Namespace, settings: Settings) -> int:
    if args.reference:
        print(reference_markdown(), end="")
    else:
        from assistant.security.redaction import redact_settings

        print(json.dumps(redact_settings(settings.model_dump(mode="json")), indent=2))
    return 0
