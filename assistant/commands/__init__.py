"""The `assistant` command's commands, one module each; each registers its parser and the function it runs."""

from __future__ import annotations

import sys

from indexes.terminal_text import terminal_safe


def fail(message: str, command: str = "assistant") -> int:
    """A command's error on stderr, made safe for a terminal (messages carry file names and users' text); the exit
    status of a failed command."""
    print(f"{command}: {terminal_safe(message, multiline=True)}", file=sys.stderr)
    return 2
