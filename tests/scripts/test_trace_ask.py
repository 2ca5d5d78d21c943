"""scripts/trace_ask.py: how one question's walk is counted (files in order of first visit, returns to a
file already left), and that the walk of a real question starts at the route and reaches the stream."""

from __future__ import annotations

import asyncio
import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "trace_ask.py"


def load():
    spec = importlib.util.spec_from_file_location("trace_ask", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_return_is_a_call_into_a_file_already_left():
    walk = load().Walk(start_code=None)
    walk.files = ["a.py", "a.py", "b.py", "c.py", "b.py", "b.py", "a.py", "c.py", "c.py"]
    walk.fresh = [True, False, True, True, False, True, False, True, True]  # the others: coroutines resumed
    summary = walk.summary()
    assert summary["files_in_order_of_first_visit"] == ["a.py", "b.py", "c.py"]
    assert (summary["files"], summary["returns"], summary["call_events"]) == (3, 3, 9)
    assert (summary["calls"], summary["returns_by_calls"]) == (6, 2)  # a b c b c c


def test_the_walk_of_one_question_runs_from_the_route_to_the_stream():
    summary = asyncio.run(load().walk_one_question())
    order = summary["files_in_order_of_first_visit"]
    assert order[0] == "assistant/routes/ask.py", "recording starts at the route handler"
    assert "assistant/backends/echo.py" in order and "assistant/routes/sse.py" in order, "and ends after the stream"
    assert not any(path.startswith("assistant/security/browser_defences") for path in order), "the gates left out"
    assert summary["files"] == len(order) and summary["returns"] < summary["call_events"]


def test_by_pair_says_which_transitions_return_and_which_functions_each_file_enters():
    walk = load().Walk(start_code=None)
    walk.files = ["a.py", "b.py", "a.py", "b.py", "a.py"]
    walk.functions = ["ask", "get", "loop", "get", "loop"]
    walk.fresh = [True, True, True, True, False]  # the last: a coroutine resumed
    detail = walk.by_pair()
    assert detail["returns_by_pair"] == {"b.py -> a.py": 1, "a.py -> b.py": 1}
    assert detail["functions_by_file"] == {"a.py": {"ask": 1, "loop": 1}, "b.py": {"get": 2}}
