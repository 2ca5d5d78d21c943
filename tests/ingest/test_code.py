"""Code split by symbol: Python with ast, other languages with tree-sitter grammars, lines kept."""

from __future__ import annotations

import textwrap

import pytest

from ingest.formats.code import code_elements, python_units
from ingest.split import split

PY = textwrap.dedent('''\
    """Tools for the shop."""

    import os


    # Prices are in cents.
    @dataclass
    class Basket:
        """A basket of items."""

        limit = 10

        def add(self, item):
            """Put an item in."""
            self.items.append(item)

        @property
        def total(self):
            return sum(i.price for i in self.items)


    def checkout(basket):
        return basket.total
    ''')


def units(text: str, suffix: str) -> list[tuple[str, int, int]]:
    """(symbol, first line, last line) of each unit of a file."""
    out: dict[int, list] = {}
    for el in code_elements(text, suffix):
        entry = out.setdefault(el.unit, [el.symbol, el.line_start, el.line_end])
        entry[2] = el.line_end
    return [tuple(v) for v in out.values()]


def test_python_module_docstring_classes_methods_with_decorators_and_comments():
    assert units(PY, ".py") == [
        ("", 1, 1), ("", 3, 3),
        ("Basket", 6, 11),  # the comment above and the decorator belong to the class
        ("Basket.add", 13, 15), ("Basket.total", 17, 19), ("checkout", 22, 23),
    ]
    add = [e for e in code_elements(PY, ".py") if e.symbol == "Basket.add"]
    assert add[0].text.startswith("    def add(self, item):\n        \"\"\"Put an item in.\"\"\"")  # docstring stays with it


def test_python_that_does_not_parse_falls_back():
    assert python_units("def broken(:\n    pass\n") is None
    assert code_elements("def broken(:\n    pass\n", ".py") is None


def test_long_function_is_cut_between_statements(embedder):
    body = "\n".join(f"    value_{i} = compute(value_{i - 1}, 'step number {i}')" for i in range(1, 80))
    text = f"def long_one(value_0):\n    \"\"\"Many steps.\"\"\"\n{body}\n    return value_79\n"
    chunks = split(code_elements(text, ".py"), embedder.count_tokens, chunk_tokens=120, overlap_tokens=20, anchors="lines")
    assert len(chunks) > 3
    lines = text.splitlines()
    for c in chunks:
        assert c.symbol == "long_one" and c.n_tokens <= 120
        assert c.anchor == f"L{c.line_start}-L{c.line_end}"
        # whole statements: the chunk is exactly the source lines of its range
        assert c.text == "\n".join(lines[c.line_start - 1 : c.line_end])
    # no overlap and no gap between consecutive chunks of one unit
    assert [c.line_start for c in chunks[1:]] == [c.line_end + 1 for c in chunks[:-1]]


@pytest.mark.parametrize("suffix, source, expected", [
    (".ts", """\
import { x } from "y";

/** A greeter. */
export class Greeter {
  private name: string;

  constructor(name: string) {
    this.name = name;
  }

  greet(): string {
    return `hi ${this.name}`;
  }
}

export const add = (a: number, b: number): number => a + b;

function helper() {
  return 1;
}
""", [("Greeter", 3, 4), ("Greeter.name", 5, 5), ("Greeter.constructor", 7, 9), ("Greeter.greet", 11, 13),
      ("add", 16, 16), ("helper", 18, 20)]),
    (".go", """\
package main

// Server serves.
type Server struct {
\tport int
}

// Start starts it.
func (s *Server) Start() error {
\treturn nil
}
""", [("Server", 3, 6), ("Server.Start", 8, 11)]),
    (".rs", """\
/// A point.
pub struct Point { x: i32, y: i32 }

impl Point {
    /// Make one.
    pub fn new(x: i32, y: i32) -> Self {
        Point { x, y }
    }
}
""", [("Point", 1, 2), ("Point.new", 5, 8)]),
    (".java", """\
/** Account holder. */
public class Account {
    private int balance;

    /** Deposit money. */
    public void deposit(int amount) {
        balance += amount;
    }
}
""", [("Account", 1, 2), ("Account.balance", 3, 3), ("Account.deposit", 5, 8)]),
    (".c", """\
#include <stdio.h>

/* Add two numbers. */
static int add(int a, int b) {
    return a + b;
}
""", [("add", 3, 6)]),
    (".cpp", """\
namespace shapes {
class Circle {
 public:
  double area() const { return 3.14 * r_ * r_; }
};
}
""", [("shapes.Circle", 2, 3), ("shapes.Circle.area", 4, 4)]),
])
def test_other_languages_by_tree_sitter(suffix, source, expected):
    got = units(source, suffix)
    for unit in expected:
        assert unit in got, (unit, got)


def test_unknown_language_has_no_units():
    assert code_elements("x = 1\n", ".lua") is None
