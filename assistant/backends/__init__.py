"""LLM backends: the protocol (base.py), the registry of names (registry.py) and the built-in backends,
each importing its heavy library only when built."""

from assistant.backends.base import Backend, BackendError, BackendHealth, GenParams, Message, create_backend
from assistant.backends.registry import BACKENDS, backend_names

__all__ = ["BACKENDS", "Backend", "BackendError", "BackendHealth", "GenParams", "Message", "backend_names", "create_backend"]
