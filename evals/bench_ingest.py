"""`assistant bench ingest PATH`: end-to-end ingestion speed against the embedder's raw speed.

Three timed steps in one process, on a fresh store: (1) ingest PATH (scan, parse, split, embed,
write, save the FAISS index); (2) `SentenceTransformer.encode` alone on exactly the texts step 1
embedded, with the same model, batch size and threads; (3) ingest PATH again, unchanged. The model
is loaded and the parsers warmed up before step 1, so each step measures steady-state work.

`ratio` = end-to-end chunks/s ÷ raw encode chunks/s (1.0 would mean parsing, splitting and writing
cost nothing next to the embedder); `ratio_cpu` is the same in CPU seconds of this process, which
other processes on the machine disturb less; `rerun_speedup` = step 1 time ÷ step 3 time. Pages read
through OCR (scans, images) are counted from the documents written: `ocr_pages_per_min` is that count over
step 1's time, the OCR throughput when PATH holds only scans.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from indexes.store import Store
from ingest.pipeline import ingest_paths


class RecordingEmbedder:
    """An embedder that remembers every text it was asked to embed (and passes everything through)."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.texts: list[str] = []

    def __getattr__(self, name: str):
        return getattr(self.inner, name)

    def embed(self, texts: list[str], **kwargs) -> np.ndarray:
        self.texts.extend(texts)
        return self.inner.embed(texts, **kwargs)


def warm_up(embedder, options) -> dict[str, float]:
    """Load the model and the document parsers once (in the parsing process, or here when files are
    parsed in this one), outside the timed steps."""
    t0 = time.perf_counter()
    embedder.embed(["warm up the model"])
    t1 = time.perf_counter()
    from ingest.parse_pool import ParsePool, warm_parser

    if options.parse_process:
        ParsePool.shared().warm()
    else:
        warm_parser()
    return {"model_load_s": round(t1 - t0, 3), "parser_warmup_s": round(time.perf_counter() - t1, 3)}


def raw_encode(embedder, texts: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds `SentenceTransformer.encode` takes for texts, as the embedder configures it."""
    started, cpu = time.perf_counter(), time.process_time()
    embedder.model.encode(list(texts), batch_size=embedder.batch_size, normalize_embeddings=True,
                          convert_to_numpy=True, show_progress_bar=False)
    return time.perf_counter() - started, time.process_time() - cpu


def pages_read_through_ocr(store: Store, collection: str) -> int:
    """Pages of the collection's documents whose text came from OCR (the pages their meta names)."""
    total = 0
    for doc in store.list_documents(store.require_collection(collection)):
        ocr = json.loads(doc.meta or "{}").get("ocr")
        total += len(ocr.get("pages") or []) if isinstance(ocr, dict) else 0
    return total


def run_bench(paths: list[str], embedder, options, data_dir: Path, log=lambda m: None) -> dict[str, Any]:
    result: dict[str, Any] = {"paths": paths}
    result.update(warm_up(embedder, options))
    recorder = RecordingEmbedder(embedder)
    store = Store(data_dir)
    try:
        log("first run…")
        cpu = time.process_time()
        first = ingest_paths(store, recorder, paths, "bench", options=options)
        first_cpu = time.process_time() - cpu
        log(f"first run: {first.files_ingested} files, {first.chunks_written} chunks in {first.seconds:.1f} s")
        texts = recorder.texts
        log(f"raw encode of the same {len(texts)} texts…")
        raw_s, raw_cpu = raw_encode(embedder, texts)
        ocr_pages = pages_read_through_ocr(store, "bench")
        log("unchanged re-run…")
        again = ingest_paths(store, recorder, paths, "bench", options=options)
    finally:
        store.close()
    e2e = first.chunks_written / first.seconds if first.seconds else 0.0
    e2e_embedded = first.chunks_embedded / first.seconds if first.seconds else 0.0
    raw = len(texts) / raw_s if raw_s else 0.0
    result.update(
        files=first.files_seen, files_ingested=first.files_ingested, files_failed=first.files_failed,
        files_ignored=first.files_ignored, chunks=first.chunks_written, chunks_embedded=first.chunks_embedded,
        seconds=first.seconds, embed_seconds_in_pipeline=first.embed_seconds,
        files_per_s=round(first.files_seen / first.seconds, 2) if first.seconds else 0.0,
        chunks_per_s=round(e2e, 2), raw_encode_seconds=round(raw_s, 3), raw_encode_chunks_per_s=round(raw, 2),
        ratio=round(e2e / raw, 3) if raw else 0.0,
        # the same ratio in CPU time of this process: steadier on a machine shared with other work
        cpu_seconds=round(first_cpu, 3), raw_encode_cpu_seconds=round(raw_cpu, 3),
        ratio_cpu=round((first.chunks_written / first_cpu) / (len(texts) / raw_cpu), 3) if first_cpu and raw_cpu else 0.0,
        ratio_embedded_only=round(e2e_embedded / raw, 3) if raw else 0.0,
        rerun_seconds=again.seconds, rerun_files_skipped=again.files_skipped, rerun_chunks_embedded=again.chunks_embedded,
        rerun_speedup=round(first.seconds / again.seconds, 1) if again.seconds else 0.0,
        ocr_pages=ocr_pages, ocr_pages_per_min=round(ocr_pages * 60 / first.seconds, 2) if first.seconds else 0.0,
        embedder={"name": embedder.name, "dtype": getattr(embedder, "dtype", ""), "batch_size": embedder.batch_size},
        failures=[f.__dict__ for f in first.failures],
    )
    return result


def run(args: argparse.Namespace, settings: Any) -> int:
    from indexes.factory import embedder_from
    from ingest.cli import quiet_libraries
    from ingest.worker import options_from

    missing = [p for p in args.paths if not Path(p).expanduser().exists()]
    if missing:
        print("assistant bench ingest: no such file or folder: " + ", ".join(missing), file=sys.stderr)
        return 2
    quiet_libraries()
    log = lambda m: print(m, file=sys.stderr, flush=True)  # noqa: E731
    paths = [str(Path(p).expanduser().resolve()) for p in args.paths]
    embedder = embedder_from(settings.embedder)
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
        result = run_bench(paths, embedder, options_from(settings), args.keep, log)
    else:
        with tempfile.TemporaryDirectory(prefix="bench-ingest-") as tmp:
            result = run_bench(paths, embedder, options_from(settings), Path(tmp), log)
    if args.json:
        print(json.dumps(result))
        return 0
    print(f"{result['files']} files, {result['chunks']} chunks in {result['seconds']} s: {result['files_per_s']} files/s, "
          f"{result['chunks_per_s']} chunks/s end to end; raw encode {result['raw_encode_chunks_per_s']} chunks/s; "
          f"ratio {result['ratio']}; unchanged re-run {result['rerun_seconds']} s ({result['rerun_speedup']}x faster)"
          + (f"; {result['ocr_pages']} pages read through OCR: {result['ocr_pages_per_min']} pages/min"
             if result["ocr_pages"] else ""))
    return 0
