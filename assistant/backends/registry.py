"""The backends by name: the one list the settings validator, every `--backend` choice and
`create_backend` read.

Each entry names its factory as "module:function", imported only when that backend is built, so
listing the names loads no engine library (and this module imports nothing of ours: the settings
can validate a name without importing the backends, which read the settings).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from assistant.backends.base import Backend
    from assistant.settings import Settings

BACKENDS: dict[str, str] = {
    "llamacpp": "assistant.backends.llamacpp:create_llamacpp",
    "openai": "assistant.backends.openai_compat:create_openai",
    "vllm": "assistant.backends.vllm:create_vllm",
    "echo": "assistant.backends.echo:create_echo",
}


def backend_names() -> list[str]:
    return list(BACKENDS)


def load_factory(name: str) -> Callable[["Settings"], "Backend"]:
    """The factory of a registered backend; KeyError for an unknown name."""
    module, _, function = BACKENDS[name].partition(":")
    return getattr(importlib.import_module(module), function)
