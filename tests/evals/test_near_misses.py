"""Near misses derived from parallel pages: a heading one page has and its parallel page lacks."""

import json

from assistant.cli import main
from evals.near_misses import asked, near_miss_questions, page_headings

SF = """---
title: San Francisco
---
## Getting around
### Parking
Park at 355 McAllister Street, $4.50 an hour.
## How do I...?
### Connect to the Wi-Fi
Use GSA Guest.
### Book rooms for meetings?
Use BookIt.
## Where are the...?
### Lockers
In the basement locker rooms.
### Printers
Near the kitchen.
### From SFO airport
Take BART.
"""

CHICAGO = """---
title: Chicago
---
## Getting around
### Parking
Paid parking only.
## How do I...?
### Connect to the Wi-Fi
See Logging in.
## Where are the...?
### Printers
On the 35th floor, near the printer room.
"""

LEAVE = """# Leave
## Parking
Not about offices.
"""


def write(root, files):
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def test_headings_with_their_stem_and_the_title():
    title, headings = page_headings(SF)
    assert title == "San Francisco"
    assert ("How do I...?", "Connect to the Wi-Fi") in headings and ("", "Getting around") in headings
    assert asked("Where are the...?", "Lockers", "Chicago") == "Where are the lockers in Chicago?"
    assert asked("How do I...?", "Book rooms for meetings?", "Chicago") == "How do I book rooms for meetings in Chicago?"
    assert asked("", "Who can I contact?", "Chicago") == "Who can I contact in Chicago?"
    assert asked("Getting around", "Parking", "Chicago") is None, "a topic alone asks nothing"


def test_a_heading_the_parallel_page_lacks_is_asked_of_it(tmp_path):
    write(tmp_path, {"offices/sf.md": SF, "offices/chicago.md": CHICAGO, "policies/leave.md": LEAVE})
    rows = near_miss_questions(tmp_path)
    asked_of = {(r.question, r.source) for r in rows}
    assert ("Where are the lockers in Chicago?", "offices/chicago.md") in asked_of
    assert ("How do I book rooms for meetings in Chicago?", "offices/chicago.md") in asked_of
    questions = {q for q, _ in asked_of}
    assert not any("Wi-Fi" in q or "printers" in q for q in questions), "a heading both pages have is no near miss"
    assert not any("SFO" in q for q in questions), "a name the other page never uses names the wrong subject"
    assert not any("San Francisco" in q for q in questions), "Chicago's page has no heading San Francisco's lacks"
    assert not any("Leave" in q for q in questions), "pages of other folders, or sharing too few headings, are not parallel"
    assert all(r.unanswerable and r.split in ("tune", "report") for r in rows)


def test_the_derive_command_writes_them_unanswerable(tmp_path, capsys):
    write(tmp_path / "docs", {"offices/sf.md": SF, "offices/chicago.md": CHICAGO})
    out = tmp_path / "near.jsonl"
    assert main(["eval", "derive", "near-misses", str(tmp_path / "docs"), "--out", str(out)]) == 0
    summary = json.loads(capsys.readouterr().out)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert summary["questions"] == len(rows) == 2
    assert all(r["unanswerable"] is True and r["set"] == "near-misses" for r in rows)


def test_the_split_is_the_one_of_eval_answers():
    from evals.eval_answers import split_of as answers_split
    from evals.near_misses import split_of

    for q in ("Where are the lockers in Chicago?", "How do I book rooms for meetings in Chicago?", "x", "中文问题"):
        assert split_of(q) == answers_split(q)
