"""A backend built from the settings: the registry's factory for the name they give, imported only now."""

from __future__ import annotations

import importlib
from typing import Callable

from assistant.backends.base import Backend, BackendError
from assistant.backends.registry import BACKENDS, backend_names
from assistant.settings import Settings


def load_factory(name: str) -> Callable[[Settings], Backend]:
    """The factory of a registered backend; KeyError for an unknown name."""
    module, _, function = BACKENDS[name].partition(":")
    return getattr(importlib.import_module(module), function)


def create_backend(settings: Settings) -> Backend:
    """Build the backend the settings name. Heavy libraries are imported by the factory, lazily."""
    try:
        factory = load_factory(settings.backend)
    except KeyError:
        raise BackendError(f"unknown backend {settings.backend!r}; known: {', '.join(backend_names())}") from None
    return factory(settings)
