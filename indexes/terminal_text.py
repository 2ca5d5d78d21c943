"""Text from files and users made safe to print on a terminal.

A file name, a title or a passage may hold escape sequences (which recolour, move the cursor, set the
window title or write to the clipboard) and bidi controls (U+202E before `fdp.exe` makes a file name
read as if it ended in `.pdf`). Printed as they are, the terminal obeys them; shown by `terminal_safe`,
they are visible escapes (`\\x1b`, `\\u202e`) and the text around them is printed as it is. Both the
server's commands and the ingestion commands print such text, so the function lives here, below both.
"""

from __future__ import annotations

import re

# C0 controls, DEL and C1 controls; the bidi embeddings, overrides, isolates and marks (and the
# deprecated format controls after the isolates); the line and paragraph separators.
UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u206f]")
UNSAFE_KEEPING_LINES = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u206f]")


def escaped(char: str) -> str:
    """`\\x1b` for a control of one byte, `\\u202e` for the others: as Python writes them."""
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal_safe(text: str, *, multiline: bool = False, markup: bool = False) -> str:
    """The text with every control and bidi character shown as an escape instead of acting.

    `multiline` keeps newlines and tabs (a passage, an answer); elsewhere they are escaped too, so that a
    name stays on its line. `markup` also escapes rich markup (`[bold]`) for text printed through rich as
    a markup string; text passed as `rich.text.Text` needs no such escape.
    """
    safe = (UNSAFE_KEEPING_LINES if multiline else UNSAFE).sub(lambda m: escaped(m[0]), text)
    if markup:
        from rich.markup import escape

        safe = escape(safe)
    return safe
