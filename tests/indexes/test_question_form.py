"""The form of a question: where something is implemented, how the user does something, how the system behaves."""

import pytest

from indexes.retrieval.question_form import question_form


@pytest.mark.parametrize("question, form", [
    ("Where is the session interface implemented?", "implementation"),
    ("Which function builds the URL adapter?", "implementation"),
    ("How can I rotate my key, and where does the app build the signer?", "implementation"),
    ("会话是在哪个文件实现的？", "implementation"),
    ("How do I serve my project with Gunicorn?", "usage"),
    ("How to deploy behind a proxy?", "usage"),
    ("If I register handlers for both classes, which one handles a 404?", "usage"),
    ("My tests fail. How can we trigger the hooks?", "usage"),
    ("What should I set to allow only my domains?", "usage"),
    ("如何配置反向代理？", "usage"),
    ("What happens if my view returns a tuple with four elements?", "behaviour"),
    ("How does the CLI find the app when I run it without naming one?", "behaviour"),
    ("Why does app.run() do nothing when I start the server with the command?", "behaviour"),
    ("How do blueprints register their templates?", "behaviour"),
    ("In what order do teardown functions run?", "behaviour"),
])
def test_the_form_is_read_from_how_the_question_is_put(question, form):
    assert question_form(question) == form


@pytest.mark.parametrize("question, subjects", [
    ("If the app and a blueprint both have index.html, which one does render_template load?", ["render_template"]),
    ("What HTTP status code does flask.redirect() send when I don't pass one?", ["flask.redirect"]),
    ("Why does the app.run() call at the bottom of my module seem to do nothing?", ["app.run"]),
    ("What does `url_for` return for an unknown endpoint?", ["url_for"]),
    # only mentioned: the name is an object or a complement, or stands outside the question's clause
    ("How do I call render_template from a blueprint?", []),
    ("Which function calls make_response?", []),
    ("Which function does make_response call?", ["make_response"]),
    ("How does it work that the system behind the URL map is the add_url_rule function?", []),
    ("I get \"RuntimeError: Was not able to determine binary stream for sys.stderr\". Why?", []),
    ("What does the template loader do?", []),
])
def test_a_name_is_the_subject_when_the_question_asks_what_it_does(question, subjects):
    from indexes.retrieval.question_form import subject_identifiers

    assert subject_identifiers(question) == subjects
