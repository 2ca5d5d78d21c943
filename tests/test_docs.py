"""The docs name what exists: every module is in the map of docs/architecture.md and every module the map
names exists; every CLI command, route and MCP tool is named in docs/usage.md. A module, command, route or
tool added without a word in the docs fails here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.support.import_graph import PACKAGES

MODULE = re.compile(r"[\w/]+\.py\b")


def code_modules(repo: Path) -> set[str]:
    """Every module of our packages as `package/path.py`; a package's __init__ and the migration revisions
    (data for Alembic, named together as `migrations/versions/`) left out."""
    out = set()
    for package in PACKAGES:
        for path in (repo / package).rglob("*.py"):
            rel = path.relative_to(repo).as_posix()
            if path.name != "__init__.py" and "/migrations/versions/" not in rel:
                out.add(rel)
    return out


def mapped_modules(text: str) -> set[str]:
    """The modules the map names. A line at column 0 opens a package (`assistant/ ...`); a line indented
    by two that starts with a folder (`  answers/ ...`) opens that folder for the lines indented deeper
    below it; `x.py` tokens on a line name modules of the package (and folder) in force."""
    block = text.split("## Map", 1)[1].split("```", 2)[1]
    package, folder = None, None
    out = set()
    for line in block.splitlines():
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip(" "))
        first = line.split()[0]
        if indent == 0:
            package, folder = first.rstrip("/"), None
            continue
        if indent == 2:
            folder = first.rstrip("/") if first.endswith("/") else None
        if package not in PACKAGES:
            continue
        prefix = f"{package}/" + (f"{folder}/" if folder else "")
        out |= {prefix + token for token in MODULE.findall(line)}
    return out


def test_every_module_is_in_the_map_and_every_mapped_module_exists():
    mapped = mapped_modules((REPO / "docs" / "architecture.md").read_text())
    modules = code_modules(REPO)
    assert not modules - mapped, f"modules missing from the map in docs/architecture.md: {sorted(modules - mapped)}"
    assert not mapped - modules, f"modules the map names that do not exist: {sorted(mapped - modules)}"


def test_the_map_check_notices_a_missing_line():
    text = (REPO / "docs" / "architecture.md").read_text()
    without = text.replace("    access.py            API keys", "    (removed)            API keys", 1)
    assert without != text and "assistant/security/access.py" not in mapped_modules(without)


def cli_commands() -> set[str]:
    """Every `assistant` command and subcommand, as `assistant NAME [SUB]`."""
    import argparse

    from assistant.cli import build_parser

    def walk(parser: argparse.ArgumentParser, words: tuple[str, ...]) -> set[str]:
        found = set()
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    found.add(" ".join((*words, name)))
                    found |= walk(sub, (*words, name))
        return found

    return walk(build_parser(), ("assistant",))


def test_every_command_route_and_mcp_tool_is_named_in_usage(settings_factory):
    from assistant.app import create_app
    from assistant.mcp_api.tools import TOOL_SCOPES

    usage = (REPO / "docs" / "usage.md").read_text()
    missing = [c for c in sorted(cli_commands()) if c not in usage]
    app = create_app(settings_factory())
    # Path parameters as the docs write them: `/api/jobs/{id}` names `/api/jobs/{job_id:int}`.
    paths = {re.sub(r"\{[^}]*\}", "{}", route.path) for route in app.routes}
    usage_paths = re.sub(r"\{[^}]*\}", "{}", usage)
    hidden = {"/", "/static", "/api/docs"}  # the page, its files and the API schema's own pages
    missing += [p for p in sorted(paths) if not any(p == h or p.startswith(h + "/") for h in hidden)
                and p not in usage_paths]
    missing += [f"MCP tool {t}" for t in TOOL_SCOPES if f"`{t}`" not in usage]
    assert not missing, f"not named in docs/usage.md: {missing}"


@pytest.mark.parametrize("name", ["README.md"])
def test_the_readme_names_every_mcp_tool(name):
    from assistant.mcp_api.tools import TOOL_SCOPES

    text = (REPO / name).read_text()
    assert all(f"`{t}`" in text for t in TOOL_SCOPES), "README lists the MCP tools"


def test_every_error_code_of_asking_is_in_the_usage_table():
    """The codes the ask use case answers with, each in docs/usage.md's table with the status every HTTP door
    sends (a code added to error_codes.STATUS without its line fails here)."""
    from assistant.security.error_codes import STATUS

    usage = (REPO / "docs" / "usage.md").read_text(encoding="utf-8")
    table = usage[usage.index("### Error codes of asking"):]
    rows = dict(re.findall(r"^\| `([a-z_]+)` \| (\d{3}) \|", table, re.M))
    assert {code: int(status) for code, status in rows.items()} == STATUS


# A model name as the examples give it: `model="..."` (Python), `"model": "..."` (JSON), `model: ...` on
# a YAML line of its own, and the embedder's name in backticks.
DOC_MODELS = re.compile(r"""\bmodel(?:_name)?="([^"<]+)"|"model":\s*"([^"<]+)"|^\s*-?\s*model(?:_name)?:\s*([^\s<]+)$|`(gt_[\w-]+)`""",
                        re.MULTILINE)


async def test_the_model_names_in_usage_are_the_ones_the_server_takes(settings_factory, make_services, embedder):
    """Every model name docs/usage.md gives a client works against the server: `rag:` names in a chat,
    the others (the embedder) in /v1/embeddings."""
    from litestar.testing import AsyncTestClient

    from assistant.app import create_app
    from tests.support.stores import write_pages

    usage = (REPO / "docs" / "usage.md").read_text()
    names = {next(g for g in groups if g) for groups in DOC_MODELS.findall(usage)}
    assert any(n.startswith("rag:") for n in names) and any(not n.startswith("rag:") for n in names), names
    pages = {"travel.md": ("Travel", "Book flights through the travel desk at least 14 days before departure.")}
    collections = {c for n in names if n.startswith("rag:") for c in n[4:].removesuffix("+sources").split(",")}
    services = make_services(settings_factory(), lambda store: [write_pages(store, embedder, c, pages) for c in collections])
    failed = []
    async with AsyncTestClient(app=create_app(services.settings, services)) as client:
        for name in sorted(names):
            if name.startswith("rag:"):
                r = await client.post("/v1/chat/completions", json={
                    "model": name, "messages": [{"role": "user", "content": "How early are flights booked?"}]})
            else:
                r = await client.post("/v1/embeddings", json={"model": name, "input": "travel policy"})
            if r.status_code != 200:
                failed.append(f"{name}: {r.status_code} {r.text[:200]}")
    assert not failed, failed
