"""Fixtures for the web page tests: the real server in a subprocess, and headless Chromium.

The server is started exactly as a user would: `assistant ingest` a few Markdown files, then
`assistant serve` with the echo backend, on a free port of 127.0.0.1.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from evals.local_server import free_port

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

DOCS = {
    "sourdough.md": """# Sourdough bread

## Starter
A sourdough starter is a mix of flour and water that wild yeast and lactic bacteria ferment.
Feed the starter every twelve hours with equal weights of flour and water.

## Bulk fermentation
After mixing, the dough ferments for four to six hours at room temperature.
Stretch and fold the dough every thirty minutes during the first two hours.
""",
    "bicycle.md": """# Bicycle maintenance

## Chain
Clean the chain with a dry rag and lubricate it every three hundred kilometres.
A worn chain stretches and wears the cassette; measure it with a chain checker.

## Tyres
Check the tyre pressure every week. Road tyres run at six to eight bar.
""",
    "solar.md": """# Solar panels

## Orientation
In the northern hemisphere, panels facing south at an angle close to the latitude collect the most energy.

## Cleaning
Rinse the panels with water twice a year; dust and pollen reduce their output.
""",
}


ARCHIVE = {
    "minutes.md": """# Meeting minutes

The committee agreed to move the spring fair to the second Saturday of May.
""",
}


def assistant_command() -> list[str]:
    """The `assistant` console script of the running interpreter's environment."""
    script = Path(sys.executable).with_name("assistant")
    if script.exists():
        return [str(script)]
    found = shutil.which("assistant")
    if found is None:
        pytest.skip("the `assistant` command is not installed (pip install -e .)")
    return [found]


@pytest.fixture(scope="session")
def live_server(tmp_path_factory) -> str:
    """Base URL of a real server over two collections: `docs` (three Markdown files) and `archive`."""
    root = tmp_path_factory.mktemp("web")
    data = root / "data"
    env = {
        **os.environ,
        "ASSISTANT_BACKEND": "echo",
        "ASSISTANT_ECHO_DELAY_S": "0.05",  # words arrive one by one, as from a model
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    }
    cmd = assistant_command()
    for collection, files in (("docs", DOCS), ("archive", ARCHIVE)):
        folder = root / collection
        folder.mkdir()
        for name, text in files.items():
            (folder / name).write_text(text, encoding="utf-8")
        ingest = subprocess.run(
            [*cmd, "ingest", str(folder), "--collection", collection, "--data-dir", str(data)],
            env=env, capture_output=True, text=True, timeout=600,
        )
        assert ingest.returncode == 0, f"ingest failed:\n{ingest.stdout}\n{ingest.stderr}"

    port = free_port()
    log = (root / "server.log").open("w")
    proc = subprocess.Popen(
        [*cmd, "serve", "--data-dir", str(data), "--port", str(port)],
        env=env, stdout=log, stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            if proc.poll() is not None:
                pytest.fail(f"the server exited with {proc.returncode}:\n{(root / 'server.log').read_text()}")
            try:
                if httpx.get(f"{base}/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"the server did not become healthy:\n{(root / 'server.log').read_text()}")
            time.sleep(0.3)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


@pytest.fixture(scope="session")
def browser():
    """Debian's Chromium, headless, driven by Playwright without any browser download."""
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing: apt-get install -y chromium")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        yield b
        b.close()


@pytest.fixture
def page(browser, live_server):
    """A fresh browser context (empty localStorage) on the served page; fails on page errors."""
    context = browser.new_context(viewport={"width": 1200, "height": 900}, base_url=live_server)
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.set_default_timeout(15_000)
    yield pg
    context.close()
    assert not errors, f"JavaScript errors on the page: {errors}"
