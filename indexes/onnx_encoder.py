"""Query embedding through ONNX Runtime: the same weights as the torch model, a third of the latency.

A question is one short sequence. PyTorch spends most of such a forward pass in per-operator overhead
(MiniLM-L6, one 20-token query on one core: ~15 ms fp32, ~10 ms bf16); ONNX Runtime runs the same graph
in ~5 ms with cosine 0.99999 to torch fp32, and in ~2 ms with its matrix products in int8 (cosine
0.994 to fp32; SciFact train nDCG@10 of the hybrid search 0.7407 against 0.7410, dense alone 0.6570
against 0.6588). Large ingestion batches stay on torch, where bf16 wins.

The graph is exported in memory from the local model directory when first needed (about 1 s, 2-3 s
with int8; nothing is downloaded, and only a temporary file is written for the quantizer), then pooled and normalised here the way the sentence-transformers
pipeline does it. Models whose pipeline is not Transformer -> mean/CLS Pooling [-> Normalize] are
refused with UnsupportedModel, and the caller keeps using torch.
"""

from __future__ import annotations

import io
import logging
import threading
import warnings
from pathlib import Path

import numpy as np


class UnsupportedModel(RuntimeError):
    """The sentence-transformers pipeline has a stage this encoder does not reproduce."""


class OnnxQueryEncoder:
    """`encode(texts)` -> float32 [n, dim], L2-normalised, from an ONNX export of a sentence-transformers model."""

    def __init__(self, model_path: str | Path, *, max_seq_length: int, threads: int = 1, int8: bool = False) -> None:
        import onnxruntime as ort
        import torch
        from sentence_transformers import SentenceTransformer

        model = SentenceTransformer(str(model_path), device="cpu")  # fp32: the export's reference
        self.pooling = _pooling_mode(model)
        self.dim = int(model.get_embedding_dimension())
        self.int8 = int8
        self.tokenizer = model.tokenizer
        self.max_seq_length = min(max_seq_length, model.max_seq_length or max_seq_length)
        self.input_names = [n for n in ("input_ids", "attention_mask", "token_type_ids") if n in self.tokenizer.model_input_names]
        graph = io.BytesIO()
        transformer = _last_hidden(model[0].auto_model.eval(), self.input_names).eval()
        sample = self.tokenizer(["a query"], return_tensors="pt")
        axes = {name: {0: "batch", 1: "tokens"} for name in [*self.input_names, "last_hidden_state"]}
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")  # tracer warnings about shape-dependent Python branches
            torch.onnx.export(
                transformer, tuple(sample[n] for n in self.input_names), graph, input_names=self.input_names,
                output_names=["last_hidden_state"], dynamic_axes=axes, opset_version=17, dynamo=False,
            )
        model_bytes = _int8(graph.getvalue()) if int8 else graph.getvalue()
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
            feats = self.tokenizer(texts, padding=True, truncation=True, max_length=self.max_seq_length, return_tensors="np")
        hidden = self.session.run(None, {n: feats[n].astype(np.int64) for n in self.input_names})[0]
        if self.pooling == "cls":
            pooled = hidden[:, 0]
        else:
            mask = feats["attention_mask"][..., None].astype(np.float32)
            pooled = (hidden * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1e-9, None)
        norms = np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
        return np.ascontiguousarray(pooled / norms, dtype=np.float32)


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
