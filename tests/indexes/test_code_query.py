"""Identifiers in questions, and the prior that puts source files before their docs and tests."""

from indexes.retrieval.hits import ChunkMeta
from indexes.retrieval.question_form import expand_terms, identifiers, is_code_question
from indexes.retrieval.ranking import PathPrior


def test_identifiers_of_every_style_are_found():
    q = "Where is make_response implemented, and how do SESSION_COOKIE_NAME, FlaskGroup and app.url_for() relate?"
    assert identifiers(q) == ["app.url_for", "make_response", "SESSION_COOKIE_NAME", "url_for", "FlaskGroup"]


def test_words_that_only_look_like_code_are_not_identifiers():
    assert identifiers("Does mRNA vaccination raise IL-6? e.g. in mice. The end.") == []


def test_terms_keep_the_whole_name_and_add_its_parts():
    terms = expand_terms(["where", "flaskgroup", "defined"], "Where is FlaskGroup defined?")
    assert terms[:3] == ["where", "flaskgroup", "defined"]
    assert {"flask", "group"} <= set(terms)
    assert expand_terms(["vacation"], "How much vacation do I get?") == ["vacation"]


def test_code_questions_are_told_from_others():
    assert is_code_question("Where is the session interface implemented?")
    assert is_code_question("What does has_request_context check?")
    assert is_code_question("会话是在哪个文件实现的？")
    assert not is_code_question("How many weeks of parental leave do I get?")


def _meta():
    return {
        1: ChunkMeta(10, 0, "docs/api.rst", "", line_cited=False),
        2: ChunkMeta(11, 3, "tests/test_basic.py", "test_make_response", line_cited=True),
        3: ChunkMeta(12, 7, "src/flask/app.py", "Flask.make_response", line_cited=True),
    }


def test_prior_lifts_source_over_docs_and_tests():
    scores = {1: 0.9, 2: 0.85, 3: 0.7}
    out = PathPrior(source=0.3, symbol=0.1).apply("Where is make_response implemented?", scores, _meta())
    assert max(out, key=out.get) == 3
    assert out[1] == 0.9 and out[2] == 0.85  # docs unchanged; tests get no source bonus
    assert round(out[3], 6) == 1.1


def test_code_questions_scope_leaves_other_questions_alone():
    scores = {1: 0.9, 2: 0.85, 3: 0.7}
    prior = PathPrior(source=0.3, scope="code-questions")
    assert prior.apply("How do I configure the app for production?", scores, _meta()) == scores
    assert PathPrior().apply("Where is make_response implemented?", scores, _meta()) == scores  # all zero: off


def test_by_form_scope_leaves_out_questions_on_how_the_user_does_something():
    scores = {1: 0.9, 2: 0.85, 3: 0.7}
    prior = PathPrior(source=0.3, scope="by-form")
    assert prior.apply("How do I make the app reject unknown hosts?", scores, _meta()) == scores
    assert prior.apply("If I return a tuple of four, which shapes does it accept?", scores, _meta()) == scores
    lifted = prior.apply("What happens if my view returns a tuple of four?", scores, _meta())
    assert max(lifted, key=lifted.get) == 3
    assert PathPrior(source=0.3).scope == "by-form"


def test_a_behaviour_question_a_page_states_in_its_words_goes_without_the_source_bonus():
    scores = {1: 0.9, 2: 0.85, 3: 0.7}
    prior = PathPrior(source=0.3, scope="by-form", words_ratio=1.25)
    q = "What happens if my view returns a tuple of four?"
    comparable = prior.apply(q, scores, _meta(), {1: 11.0, 2: 30.0, 3: 10.0})  # tests do not count as source
    assert max(comparable, key=comparable.get) == 3
    assert prior.apply(q, scores, _meta(), {1: 13.0, 3: 10.0}) == scores  # the page matches far better
    lifted = prior.apply("Where is the tuple of four handled?", scores, _meta(), {1: 13.0, 3: 10.0})
    assert max(lifted, key=lifted.get) == 3  # where-is-it questions keep it whatever the words


def test_a_behaviour_question_whose_words_a_page_holds_goes_without_the_source_bonus():
    scores = {1: 0.9, 2: 0.85, 3: 0.7}
    prior = PathPrior(source=0.3, scope="by-form", page_cover=0.8)
    texts = {1: "If a view returns a tuple of four items, a TypeError is raised.",
             2: "def test_make_response(): ...", 3: "def make_response(self, rv): # a view's tuple"}
    read: list[list[int]] = []

    def reader(ids):
        read.append(ids)
        return {c: texts[c] for c in ids}
    q = "What happens if a view returns a tuple of four items?"
    assert prior.apply(q, scores, _meta(), {1: 11.0, 3: 10.0}, reader) == scores  # the page holds all its words
    stated = PathPrior(source=0.3, scope="by-form", page_cover=0.8, page=0.2).apply(
        q, {1: 0.75, 2: 0.85, 3: 0.9}, _meta(), {1: 11.0, 3: 10.0}, reader)
    assert max(stated, key=stated.get) == 1 and stated[2] == 0.85 and stated[3] == 0.9  # only pages get it
    assert read and 2 not in read[0]  # tests are neither pages nor source
    texts[1] = "Views return responses."
    lifted = prior.apply(q, scores, _meta(), {1: 11.0, 3: 10.0}, reader)
    assert max(lifted, key=lifted.get) == 3
    quoted = prior.apply('I get "TypeError: the view function did not return a valid response tuple". Why?',
                         scores, _meta(), {1: 11.0, 3: 10.0}, reader)
    assert max(quoted, key=quoted.get) == 3  # a pasted message is looked for where it is raised
    read.clear()
    prior.apply("Where is the tuple of four handled?", scores, _meta(), {1: 11.0, 3: 10.0}, reader)
    assert read == []  # no text is read where the form decides


def test_quoted_text_is_searched_as_phrases_between_its_punctuation():
    from indexes.retrieval.question_form import quoted_phrases

    q = 'I get "TypeError: \'methods\' should be a list of strings" and “Could not build url for endpoint \'index\'”.'
    assert quoted_phrases(q) == ["should be a list of strings", "could not build url for endpoint"]
    assert quoted_phrases('It prints "an error" and `x = 1`.') == []  # runs under three words are words already
    terms = expand_terms(["get", "typeerror"], 'I get "TypeError: no loader for this environment specified".')
    assert terms[:3] == ["get", "typeerror", "no loader for this environment specified"]
    assert expand_terms(["vacation"], "How much vacation do I get?") == ["vacation"]
