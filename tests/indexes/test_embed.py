"""Questions are embedded through ONNX Runtime; the vectors must be the torch model's."""

from __future__ import annotations

import numpy as np
import pytest

from indexes.embedding.embedder import Embedder

QUESTIONS = [
    "How much annual leave do I get?",
    "Does vitamin D supplementation reduce fractures in older women?",
    "Flask.make_response",
    "会议室怎么预订？",
    "word " * 400,  # longer than max_seq_length: truncated the same way on both paths
]


def test_onnx_query_vectors_match_torch_fp32():
    onnx = Embedder(dtype="fp32", query_runtime="onnx")
    torch_ = Embedder(dtype="fp32", query_runtime="torch")
    assert torch_.query_encoder is None and onnx.query_encoder is not None
    a, b = onnx.embed_queries(QUESTIONS), torch_.embed_queries(QUESTIONS)
    assert a.shape == b.shape == (len(QUESTIONS), onnx.dim) and a.dtype == np.float32
    assert np.allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)
    assert (a * b).sum(axis=1).min() > 0.9999
    single = onnx.embed_query(QUESTIONS[1])  # one alone and in a padded batch: the same vector
    assert float(single @ a[1]) > 0.9999


def test_int8_query_vectors_stay_close_to_fp32():
    int8 = Embedder(dtype="fp32", query_runtime="onnx-int8").embed_queries(QUESTIONS)
    fp32 = Embedder(dtype="fp32", query_runtime="onnx").embed_queries(QUESTIONS)
    cos = (int8 * fp32).sum(axis=1)
    assert cos.min() > 0.98 and cos.mean() > 0.99
    alone = Embedder(dtype="fp32", query_runtime="onnx-int8").embed_queries(QUESTIONS[1:2])[0]
    assert np.array_equal(alone, int8[1]), "a question's vector does not depend on the questions beside it"


def test_query_vectors_find_the_documents_embedded_by_torch(embedder):
    """Documents go through torch (bf16 where the CPU has it), questions through ONNX int8: they must agree."""
    docs = ["Employees get 25 days of annual leave a year.", "Vitamin D and calcium reduce hip fractures.",
            "def make_response(self, rv): convert the return value of a view into a response"]
    doc_vecs = embedder.embed(docs)
    q = embedder.embed_queries(QUESTIONS[:3])
    assert (q @ doc_vecs.T).argmax(axis=1).tolist() == [0, 1, 2]
    assert embedder.embed_queries([]).shape == (0, embedder.dim)


def test_unknown_query_runtime_is_refused():
    with pytest.raises(ValueError, match="query_runtime"):
        Embedder(query_runtime="tensorrt")


def test_the_export_is_cached_and_a_later_process_embeds_questions_without_torch(tmp_path, monkeypatch):
    import json
    import subprocess
    import sys

    from indexes.embedding.embedder import default_cache_dir

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    first = Embedder(dtype="fp32", query_runtime="onnx-int8").embed_queries(QUESTIONS)
    cached = sorted(p.suffix for p in default_cache_dir().iterdir())
    assert cached == [".json", ".onnx"], cached
    later = subprocess.run(
        [sys.executable, "-c", "import json, sys; from indexes.embedding.embedder import Embedder; "
         "v = Embedder(query_runtime='onnx-int8').embed_queries(json.loads(sys.argv[1])); "
         "print(json.dumps({'torch': 'torch' in sys.modules, 'vectors': v.tolist()}))", json.dumps(QUESTIONS)],
        capture_output=True, text=True, timeout=300, check=True)
    seen = json.loads(later.stdout)
    assert seen["torch"] is False, "the cached export loads without torch"
    assert np.allclose(np.array(seen["vectors"], dtype=np.float32), first, atol=1e-6)


def test_a_damaged_cache_entry_is_exported_again(tmp_path, monkeypatch):
    from indexes.embedding.embedder import default_cache_dir

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    good = Embedder(dtype="fp32", query_runtime="onnx").embed_queries(QUESTIONS[:2])
    (meta,) = default_cache_dir().glob("*.json")
    meta.write_text("{not json")
    again = Embedder(dtype="fp32", query_runtime="onnx").embed_queries(QUESTIONS[:2])
    assert np.allclose(good, again, atol=1e-6) and meta.read_text().startswith("{\"pooling\"")
