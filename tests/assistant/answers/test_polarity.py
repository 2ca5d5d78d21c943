"""Polarity read from what a text says, not from code's values: Python's `None` (`-> None`, `is not None`) is no
"no", while prose's "None of …" and "not" still are."""

from __future__ import annotations

from assistant.answers.support import support
from assistant.answers.text_units import negated

LOADER_CHUNK = ('class DispatchingJinjaLoader(BaseLoader):\n    """A loader that looks for templates in the application and all\n'
                '    the blueprint folders.\n    """\ndef __init__(self, app: App) -> None:\n        self.app = app')


def test_code_s_none_is_a_value_not_a_negation() -> None:
    for code in ("def __init__(self, app: App) -> None", "if loader is not None", "self.x = None", "return None",
                 "value is None", "f(None, 2)"):
        assert not negated(code), code
    for prose in ("None of the rooms are free", "None.", "There is no fee", "The loader is not used"):
        assert negated(prose), prose


def test_a_claim_against_code_that_returns_none_is_not_contradicted() -> None:
    claim = "DispatchingJinjaLoader searches the template folders of the app and its blueprints."
    found = support(claim, LOADER_CHUNK, "templating.py — src/flask/templating.py:53-66\nSymbol: DispatchingJinjaLoader")
    assert not found.contradicted
    # the opposite said in the docstring's prose still is one
    against = support("DispatchingJinjaLoader does not look for templates in the blueprint folders.", LOADER_CHUNK)
    assert against.contradicted and not against.supported
