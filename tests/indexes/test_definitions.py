"""Where a name the question gives is defined: its definition among the first documents."""

import pytest

from indexes.location import Location
from indexes.retrieval.hits import ChunkMeta
from indexes.retrieval.definitions import definition_by, defines
from indexes.retrieval.retriever import Retriever
from indexes.store import NewChunk, SourceInfo


def test_a_chunk_defines_a_name_by_its_symbol_or_its_last_heading():
    assert defines("Flask.render_template", "", "render_template")
    assert defines("", "Configuration › Builtin Configuration Values › SECRET_KEY", "secret_key")
    assert defines("", "API › url_for(endpoint, **values)", "url_for")
    assert not defines("render_template_string", "Templates › Rendering Templates", "render_template")


def _meta(*docs: tuple[int, int, str, bool]) -> dict[int, ChunkMeta]:
    return {cid: ChunkMeta(doc, 0, path, "", cited) for cid, doc, path, cited in docs}


def test_the_best_definition_moves_up_to_the_last_of_the_first_places():
    meta = _meta((1, 10, "docs/a.rst", False), (2, 11, "docs/b.rst", False), (3, 12, "docs/c.rst", False),
                 (4, 13, "src/templating.py", True), (5, 14, "src/other.py", True))
    assert definition_by([1, 2, 3, 5, 4], meta, [4, 5], 3) == [1, 2, 4, 3, 5]
    assert definition_by([1, 2, 3, 4], meta, [4], 0) == [1, 2, 3, 4]  # off
    assert definition_by([1, 2, 3, 4], meta, [], 3) == [1, 2, 3, 4]  # nothing defines it


def test_nothing_moves_when_a_defining_file_is_already_among_the_first_places():
    meta = {1: ChunkMeta(10, 0, "docs/a.rst", "", False), 2: ChunkMeta(13, 0, "src/templating.py", "", True),
            3: ChunkMeta(13, 5, "src/templating.py", "render_template", True), 4: ChunkMeta(11, 0, "docs/b.rst", "", False)}
    assert definition_by([1, 2, 4, 3], meta, [3], 2) == [1, 2, 4, 3]


def _one_chunk(store, embedder, coll, source: SourceInfo, text: str, location: Location) -> None:
    store.write_document(coll, source, [NewChunk(text=text, location=location)], embedder.embed([text]))


def _eight_pages(store, embedder, name: str, heading: str, text: str):
    """A new collection `code` of eight reST pages `docs/{name}{i}.rst`, each one chunk: `text` with its `{i}`."""
    coll = store.ensure_collection("code", embedder.name, embedder.dim)
    for i in range(8):
        _one_chunk(store, embedder, coll, SourceInfo(path=f"docs/{name}{i}.rst", title=f"{name} {i}", kind="rst"),
                   text.format(i=i), Location(heading_path=heading))
    return coll


def _fill(store, embedder) -> None:
    """Eight pages that use render_template, the function's code (sharing few of a question's words) and a
    reference entry headed by a setting's name."""
    coll = _eight_pages(store, embedder, "page", "Templates", (
        "Templates of blueprints {i}: call render_template with the template's name; a blueprint's "
        "templates folder is searched after the application's, so index.html of the app wins."))
    code = "def render_template(name, **context):\n    return _render(app, env.get_or_select(name), context)"
    _one_chunk(store, embedder, coll, SourceInfo(path="src/templating.py", title="templating.py", kind="py"),
               code, Location(line_start=1, line_end=2, symbol="render_template"))
    entry = "Used by extensions and sessions to sign cookies. Default: None"
    _one_chunk(store, embedder, coll, SourceInfo(path="docs/config.rst", title="Configuration", kind="rst"),
               entry, Location(heading_path="Configuration › SECRET_KEY"))


def use_lexical(store, lexical: str) -> None:
    """The store's own lexical index, or PostgreSQL's full-text search (skipped on SQLite)."""
    if lexical == "postgres":
        if not store.postgres:
            pytest.skip("PostgreSQL's own full-text search needs the store on PostgreSQL")
        store.configure_lexical("postgres")


@pytest.mark.parametrize("lexical", ["own", "postgres"])
def test_a_named_function_and_a_named_setting_are_found_where_they_are_defined(store, embedder, lexical):
    use_lexical(store, lexical)
    _fill(store, embedder)
    question = "If the app and a blueprint both have index.html in their templates folder, which one does render_template load?"

    def first_paths(by: int, q: str, **kwargs) -> list[str]:
        r = Retriever(store, embedder, candidates=4, code_terms=True, definitions_by=by)
        return [h.path for h in r.search(q, "code", k=3, per_document=1, **kwargs)]

    coll = store.get_collection("code")
    assert set(store.lexical.heading_matches([coll.id], "render_template", 10)) == \
        {cid for cid, c in store.chunk_records(list(store.chunk_ids(coll.id))).items() if c.path == "src/templating.py"}
    assert "src/templating.py" not in first_paths(0, question)  # the pages that use the name come first
    assert first_paths(3, question)[2] == "src/templating.py"
    assert first_paths(3, question, filters={"paths": ["docs/*"]})[2] != "src/templating.py"  # outside the filter
    assert "docs/config.rst" in first_paths(2, "What is SECRET_KEY for in a blueprint's templates folder?")


def test_a_name_the_question_asks_about_has_its_definition_first(store, embedder):
    """Asked what render_template does, its code comes first; a question that only uses the name keeps
    the definition at the last of the first places."""
    _fill(store, embedder)

    def first_paths(q: str, subject_by: int) -> list[str]:
        r = Retriever(store, embedder, candidates=4, code_terms=True, definitions_by=3,
                      subject_definition_by=subject_by)
        return [h.path for h in r.search(q, "code", k=3, per_document=1)]

    asked = "If the app and a blueprint both have index.html in their templates folder, which one does render_template load?"
    assert first_paths(asked, 1)[0] == "src/templating.py"
    assert first_paths(asked, 0)[2] == "src/templating.py"  # off: as any question naming it
    used = "How do I call render_template with a blueprint's templates folder holding index.html?"
    assert first_paths(used, 1)[0] != "src/templating.py"
    assert "src/templating.py" in first_paths(used, 1)


@pytest.mark.parametrize("lexical", ["own", "postgres"])
def test_an_entry_is_named_by_a_code_name_and_found_by_the_words_of_that_name(store, embedder, lexical):
    from indexes.retrieval.definitions import entry_name, named_entries

    use_lexical(store, lexical)

    assert entry_name("Configuration › Builtin Configuration Values › TRUSTED_HOSTS") == "TRUSTED_HOSTS"
    assert entry_name("API › url_for(endpoint, **values)") == "url_for"
    assert entry_name("Security › Host Header Validation") == ""  # a title in words
    coll = store.ensure_collection("code", embedder.name, embedder.dim)
    for path, heading, text in (
        ("docs/config.rst", "Configuration › TRUSTED_HOSTS", "Validate the request's host against these values."),
        ("docs/config.rst", "Configuration › SESSION_COOKIE_NAME", "The name of the session cookie."),
        ("docs/security.rst", "Security › Host Header Validation", "Check the host of each request."),
    ):
        _one_chunk(store, embedder, coll, SourceInfo(path=path + heading[-4:], title=path, kind="rst"),
                   text, Location(heading_path=heading))
    headings = {cid: c.heading_path for cid, c in store.chunk_records(list(store.chunk_ids(coll.id))).items()}
    assert [headings[c] for c in named_entries(store, [coll.id], ["hosts"])] == ["Configuration › TRUSTED_HOSTS"]
    assert [headings[c] for c in named_entries(store, [coll.id], ["cookie", "reject"])] == \
        ["Configuration › SESSION_COOKIE_NAME"]
    assert named_entries(store, [coll.id], ["validation"]) == []


def test_a_how_do_i_question_sees_the_setting_its_words_name(store, embedder):
    """The entry shares one word with the question, in its name; pages about hosts in other words fill the
    first places. A how-do-I question gets the entry among them; other forms do not."""
    coll = _eight_pages(store, embedder, "deploy", "Deploying", (
        "Deploying {i}: how can I make the app behind a proxy reject a request whose Host header is not "
        "one of my domains? The proxy forwards each request's header and domain to the app."))
    entry = "Validated against these values during routing; otherwise SecurityError. Default: None"
    _one_chunk(store, embedder, coll, SourceInfo(path="docs/config.rst", title="Configuration", kind="rst"),
               entry, Location(heading_path="Configuration › TRUSTED_HOSTS"))

    def first_paths(q: str, by: int, **kwargs) -> list[str]:
        r = Retriever(store, embedder, candidates=4, code_terms=True, definitions_by=3, named_entries_by=by)
        return [h.path for h in r.search(q, "code", k=3, per_document=1, **kwargs)]

    how = "How can I make the app reject a request whose Host header is not one of my domains behind a proxy?"
    assert "docs/config.rst" not in first_paths(how, 0)
    assert first_paths(how, 3)[2] == "docs/config.rst"
    assert "docs/config.rst" not in first_paths(how, 3, filters={"paths": ["docs/deploy*"]})  # outside the filter
    behaves = "What happens to a request whose Host header is not one of the domains behind a proxy?"
    assert "docs/config.rst" not in first_paths(behaves, 3)
