"""Project-wide rules: the package layers hold, and every setting is documented."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

from assistant.settings import documented_settings
from tests.support.import_graph import cycles, import_graph, module_files

REPO = Path(__file__).resolve().parents[1]


def test_import_layers_hold():
    """evals on top; indexes imports nothing of ours; ingest only indexes; assistant never ingest; the
    GPU tools stand alone (pyproject.toml)."""
    lint = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run([str(lint)], cwd=REPO, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Contracts: 3 kept, 0 broken" in result.stdout


def test_no_module_of_ours_imports_one_that_imports_it_back():
    assert cycles(import_graph(REPO)) == []


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
