"""Built-in backends, registered by name. Each module imports its heavy library only when built."""

from assistant.backends import echo, llamacpp, openai_compat, vllm  # noqa: F401
from assistant.backends.base import BACKENDS, Backend, BackendError, BackendHealth, GenParams, Message, create_backend

__all__ = ["BACKENDS", "Backend", "BackendError", "BackendHealth", "GenParams", "Message", "create_backend"]
