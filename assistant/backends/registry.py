"""The backends by name: the one list the settings validator, every `--backend` choice and
`backends/factory.py` read.

Each entry names its factory as "module:function", imported only when that backend is built
(backends/factory.py), so listing the names loads no engine library. A table of names and nothing
else: the settings import it to validate a name, and it imports nothing, so no circle runs through it.
"""

from __future__ import annotations

BACKENDS: dict[str, str] = {
    "llamacpp": "assistant.backends.llamacpp:create_llamacpp",
    "openai": "assistant.backends.openai_compat:create_openai",
    "vllm": "assistant.backends.vllm:create_vllm",
    "llama-server": "assistant.backends.llama_server:create_llama_server",
    "echo": "assistant.backends.echo:create_echo",
}


def backend_names() -> list[str]:
    return list(BACKENDS)
