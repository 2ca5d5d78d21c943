"""An OpenAI-compatible server that does not report its context window: probed where the server has a
way to say it, else the configured window is assumed and a warning says so, once."""

from __future__ import annotations

import logging

import pytest

from assistant.backends.openai_compat import OpenAIBackend
from assistant.settings import OpenAISettings


@pytest.mark.slow
async def test_an_unreported_context_window_is_assumed_with_one_warning(llama_server, caplog):
    backend = OpenAIBackend(OpenAISettings(base_url=llama_server, context_window=3072, prompt_style="completion"))
    try:
        with caplog.at_level(logging.WARNING, logger="assistant.backends.openai_server"):
            assert backend.context_window == 3072
            await backend.health()  # lists the models again
            assert backend.context_window == 3072
        warnings = [r for r in caplog.records if "does not report its context window" in r.getMessage()]
        assert len(warnings) == 1 and "3072" in warnings[0].getMessage()
        assert llama_server.removesuffix("/v1") in warnings[0].getMessage()
    finally:
        await backend.aclose()
