"""Project-wide rules: the package layers hold, and every setting is documented."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from assistant.settings import documented_settings

REPO = Path(__file__).resolve().parents[1]


def test_import_layers_hold():
    """indexes imports nothing of ours; ingest only indexes; assistant never ingest (pyproject.toml)."""
    lint = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run([str(lint)], cwd=REPO, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Contracts: 2 kept, 0 broken" in result.stdout


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
