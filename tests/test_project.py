"""Project-wide rules: the package layers hold, every setting is documented, and the tests wait on events."""

from __future__ import annotations

import ast
import io
import subprocess
import sys
import tokenize
import tomllib
from pathlib import Path

from assistant.settings import documented_settings
from tests.support.import_graph import cycles, import_graph, module_files, web_graph
from tests.support.wait import wait_until

REPO = Path(__file__).resolve().parents[1]


def test_import_layers_hold():
    """evals on top; indexes imports nothing of ours; ingest only indexes; assistant never ingest; the
    GPU tools stand alone (pyproject.toml)."""
    lint = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run([str(lint)], cwd=REPO, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Contracts: 4 kept, 0 broken" in result.stdout


def test_no_module_of_ours_imports_one_that_imports_it_back():
    assert cycles(import_graph(REPO)) == []


def test_no_module_of_the_page_imports_one_that_imports_it_back(tmp_path):
    graph = web_graph(REPO / "web")
    assert graph["app.js"], "the reader finds the page's imports"
    assert cycles(graph) == []
    (tmp_path / "a.js").write_text('import { b } from "./b.js";\n')
    (tmp_path / "b.js").write_text('export const b = 1;\nconst later = () => import("./a.js");\n')
    assert cycles(web_graph(tmp_path)) == [["a.js", "b.js"]]


def test_the_circle_check_sees_imports_inside_functions(tmp_path):
    for name, body in {"a": "def f():\n    from indexes import b\n", "b": "from indexes.a import f\n"}.items():
        (tmp_path / "indexes").mkdir(exist_ok=True)
        (tmp_path / "indexes" / f"{name}.py").write_text(body)
    assert cycles(import_graph(tmp_path)) == [["indexes.a", "indexes.b"]]


def test_the_circle_check_sees_type_only_imports(tmp_path):
    bodies = {"a": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from indexes.b import B\n",
              "b": "from indexes.a import f\n"}
    for name, body in bodies.items():
        (tmp_path / "indexes").mkdir(exist_ok=True)
        (tmp_path / "indexes" / f"{name}.py").write_text(body)
    assert cycles(import_graph(tmp_path)) == [["indexes.a", "indexes.b"]]


def test_the_gpu_contract_names_every_other_module_of_the_server():
    """A new module in assistant/ must be added to the GPU tools' forbidden list (or it could slip in)."""
    contract = next(c for c in tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
                    if c.get("source_modules") == ["assistant.gpu"])
    top = {m.split(".")[1] for m in module_files(REPO) if m.startswith("assistant.") and m != "assistant.gpu"}
    named = {m.split(".")[1] for m in contract["forbidden_modules"] if m.startswith("assistant.")}
    assert top - {"gpu"} == named
    assert {"indexes", "ingest", "evals"} <= set(contract["forbidden_modules"])


def test_every_setting_is_documented():
    doc = (REPO / "docs" / "configuration.md").read_text()
    missing = [name for name in documented_settings() if f"`{name}`" not in doc]
    assert not missing, f"settings missing from docs/configuration.md: {missing} (regenerate: assistant config --reference)"


def test_every_setting_has_a_description():
    assert not [name for name, text in documented_settings().items() if not text.strip()]


def test_readme_opens_with_the_two_commands():
    lines = [ln for ln in (REPO / "README.md").read_text().splitlines() if ln.strip()]
    fence = lines.index("```bash")
    assert lines[fence + 1].startswith("scripts/up.sh") and lines[fence + 2].startswith("scripts/test.sh")
    assert lines[fence + 3] == "```"
    ci = (REPO / ".ci" / "run").read_text()
    assert "scripts/test.sh" in ci


# Calls that pause for a fixed time, with the factor that turns their argument into seconds.
SLEEPS = {"sleep": 1.0, "wait_for_timeout": 0.001}
SLEEP_MODULES = {"time", "asyncio", "anyio", "trio"}


def fixed_sleeps(root: Path, longer_than_s: float = 0.2) -> list[str]:
    """`file:line` of each sleep for a constant longer than longer_than_s in root's Python files, but in
    the wait helper and on a line whose comment says that time is the subject."""
    found = []
    for path in sorted(root.rglob("*.py")):
        if path.relative_to(root).parts[-2:] == ("support", "wait.py"):
            continue
        source = path.read_text(encoding="utf-8")
        comments = {tok.start[0]: tok.string for tok in tokenize.generate_tokens(io.StringIO(source).readline)
                    if tok.type == tokenize.COMMENT}
        for node in ast.walk(ast.parse(source)):
            if not (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)):
                continue
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr == "sleep" and not (
                    isinstance(func.value, ast.Name) and func.value.id in SLEEP_MODULES):
                continue
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            value = node.args[0].value
            if name not in SLEEPS or not isinstance(value, (int, float)) or value * SLEEPS[name] <= longer_than_s:
                continue
            lines = range(node.lineno, (node.end_lineno or node.lineno) + 1)
            if not any("time is the subject" in comments.get(n, "") for n in lines):
                found.append((str(path.relative_to(root)), node.lineno))
    return [f"{path}:{line}" for path, line in sorted(found)]


def test_no_test_sleeps_a_fixed_time_in_place_of_waiting_for_what_it_waits_for():
    """A fixed sleep is too short on a loaded machine and too long on an idle one: wait on the event
    (tests/support/wait.py), or say on the line that time itself is what the test is about."""
    assert fixed_sleeps(REPO / "tests") == []


def test_the_sleep_scan_finds_a_planted_fixed_sleep(tmp_path):
    (tmp_path / "support").mkdir()
    (tmp_path / "support" / "wait.py").write_text("import time\ntime.sleep(1)\n")
    (tmp_path / "test_planted.py").write_text(
        "import asyncio, time\nfrom time import sleep\n"
        "time.sleep(0.5)\n"
        "async def f(page):\n    await asyncio.sleep(2)\n    page.wait_for_timeout(300)\n    sleep(1)\n"
        "time.sleep(0.2)\npage.wait_for_timeout(200)\nevent.sleep(5)\ntime.sleep(delay)\n"
        "time.sleep(3)  # time is the subject: a lease must run out\n"
        "x = 'time.sleep(60)'\n")
    assert fixed_sleeps(tmp_path) == ["test_planted.py:3", "test_planted.py:5", "test_planted.py:6", "test_planted.py:7"]


def test_a_wait_that_never_ends_says_what_did_not_happen_and_what_it_saw():
    seen = iter(range(100))
    assert wait_until(lambda: next(seen), accept=lambda n: n == 3, timeout=5, interval=0) == 3
    try:
        wait_until(lambda: "still starting", accept=lambda s: s == "ready", timeout=0.1, what="the server getting ready")
    except AssertionError as exc:
        assert "the server getting ready: did not happen within 0.1 s" in str(exc) and "'still starting'" in str(exc)
    else:
        raise AssertionError("the wait did not fail")


def test_every_room_of_the_server_says_its_job_in_one_line():
    """Each folder of assistant/ has a docstring of one line, and the top holds at most six modules."""
    import ast

    rooms = sorted(p for p in (REPO / "assistant").iterdir() if (p / "__init__.py").is_file())
    assert {r.name for r in rooms} >= {"answers", "backends", "commands", "gpu", "mcp_api", "openai_api", "routes", "security"}
    for room in rooms:
        doc = ast.get_docstring(ast.parse((room / "__init__.py").read_text()))
        assert doc and "\n" not in doc.strip(), f"assistant/{room.name}/__init__.py: a one-line docstring saying its job"
    assert len(list((REPO / "assistant").glob("*.py"))) <= 6
