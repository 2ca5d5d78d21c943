"""The best page and the best source file both among the first places of a code collection's results."""

from indexes.retrieval.hits import ChunkMeta
from indexes.retrieval.ranking import PathPrior, each_kind_by

PRIOR = PathPrior(source=0.3)


def _meta(*specs: tuple[int, str, bool]) -> dict[int, ChunkMeta]:
    return {cid: ChunkMeta(cid, 0, path, "", cited) for cid, (path, cited) in
            ((cid, (path, cited)) for cid, path, cited in specs)}


def test_a_page_is_moved_up_when_source_files_fill_the_first_places():
    meta = _meta((1, "src/app.py", True), (2, "src/cli.py", True), (3, "src/ctx.py", True),
                 (4, "tests/test_app.py", True), (5, "docs/config.rst", False))
    assert each_kind_by([1, 2, 3, 4, 5], meta, PRIOR.is_source, 3) == [1, 2, 5, 3, 4]


def test_a_source_file_is_moved_up_when_pages_fill_the_first_places():
    meta = _meta((1, "docs/a.rst", False), (2, "docs/b.rst", False), (3, "src/app.py", True))
    assert each_kind_by([1, 2, 3], meta, PRIOR.is_source, 2) == [1, 3, 2]


def test_nothing_moves_when_both_kinds_are_there_or_one_is_missing_or_off():
    mixed = _meta((1, "src/app.py", True), (2, "docs/a.rst", False), (3, "src/cli.py", True))
    assert each_kind_by([1, 2, 3], mixed, PRIOR.is_source, 2) == [1, 2, 3]
    pages = _meta((1, "a.md", False), (2, "b.md", False), (3, "c.md", False))
    assert each_kind_by([1, 2, 3], pages, PRIOR.is_source, 2) == [1, 2, 3]
    code = _meta((1, "src/app.py", True), (2, "src/cli.py", True), (3, "docs/a.rst", False))
    assert each_kind_by([1, 2, 3], code, PRIOR.is_source, 0) == [1, 2, 3]


def test_chunks_of_one_document_count_as_one_place():
    meta = {1: ChunkMeta(10, 0, "src/app.py", "", True), 2: ChunkMeta(10, 1, "src/app.py", "", True),
            3: ChunkMeta(11, 0, "src/cli.py", "", True), 4: ChunkMeta(12, 0, "docs/a.rst", "", False)}
    assert each_kind_by([1, 2, 3, 4], meta, PRIOR.is_source, 2) == [1, 2, 4, 3]
