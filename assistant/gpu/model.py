"""A model's size from its `config.json` and, when present, its safetensors headers (no weights read).

Parameter counts follow the decoder-only transformer layout shared by Llama, Qwen, Gemma, Mistral and
their MoE variants: attention q/k/v/o, a gated MLP (gate, up, down), embeddings and an LM head that
may be tied to them. Quantized formats keep embeddings, the LM head and norms in 16 bits (AWQ, GPTQ,
INT8 W8A8); GGUF quantizes every tensor, so a single bits-per-weight figure covers it.
"""

from __future__ import annotations

import json
import math
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

QUANTS = ("fp16", "bf16", "int8", "awq", "gptq", "gguf-q4_k_m", "gguf-q8_0")

# Bytes per parameter of the quantized (linear) layers. 4-bit AWQ/GPTQ with group size 128 store an
# fp16 scale and a 4-bit zero point per 128 weights; GGUF figures are llama.cpp's average bits/weight.
LINEAR_BYTES = {
    "fp16": 2.0,
    "bf16": 2.0,
    "int8": 1.0,
    "awq": (4 + (16 + 4) / 128) / 8,
    "gptq": (4 + (16 + 4) / 128) / 8,
    "gguf-q4_k_m": 4.85 / 8,
    "gguf-q8_0": 8.5 / 8,
}
# Embedding / LM head bytes per parameter: 16-bit except under GGUF.
EMBED_BYTES = {q: (LINEAR_BYTES[q] if q.startswith("gguf") else 2.0) for q in QUANTS}

SAFETENSORS_DTYPE_BYTES = {
    "F64": 8, "I64": 8, "U64": 8, "F32": 4, "I32": 4, "U32": 4, "F16": 2, "BF16": 2, "I16": 2, "U16": 2,
    "I8": 1, "U8": 1, "BOOL": 1, "F8_E4M3": 1, "F8_E5M2": 1, "F8_E8M0": 1,
}  # fmt: skip

_EMBED_NAMES = ("embed_tokens", "lm_head", "wte", "word_embeddings", "tok_embeddings")


@dataclass(frozen=True)
class ModelShape:
    """The numbers planning needs, read from config.json (text part of multimodal configs)."""

    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    hidden: int
    intermediate: int
    vocab: int
    tied_embeddings: bool
    experts: int = 0  # routed experts per MoE layer (0 = dense)
    experts_per_token: int = 0
    expert_intermediate: int = 0
    shared_expert_intermediate: int = 0
    torch_dtype: str | None = None
    sliding_window: int | None = None
    checkpoint_quant: str | None = None  # quant_method of an already-quantized checkpoint
    mla: bool = False  # multi-head latent attention (DeepSeek): KV formula differs

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> ModelShape:
        cfg = dict(config.get("text_config") or {})
        for k, v in config.items():  # top-level keys fill what text_config leaves out
            cfg.setdefault(k, v)
        try:
            layers = int(cfg["num_hidden_layers"])
            heads = int(cfg["num_attention_heads"])
            hidden = int(cfg["hidden_size"])
        except KeyError as exc:
            raise ValueError(f"config.json lacks {exc.args[0]!r}: not a decoder-only transformer config") from None
        kv_heads = int(cfg.get("num_key_value_heads") or heads)
        head_dim = int(cfg.get("head_dim") or hidden // heads)
        experts = int(cfg.get("num_experts") or cfg.get("num_local_experts") or cfg.get("n_routed_experts") or 0)
        quant = (cfg.get("quantization_config") or {}).get("quant_method")
        return cls(
            layers=layers,
            heads=heads,
            kv_heads=kv_heads,
            head_dim=head_dim,
            hidden=hidden,
            intermediate=int(cfg.get("intermediate_size") or 4 * hidden),
            vocab=int(cfg.get("vocab_size") or 32000),
            tied_embeddings=bool(cfg.get("tie_word_embeddings", False)),
            experts=experts,
            experts_per_token=int(cfg.get("num_experts_per_tok") or 0) if experts else 0,
            expert_intermediate=int(cfg.get("moe_intermediate_size") or cfg.get("intermediate_size") or 0)
            if experts
            else 0,
            shared_expert_intermediate=int(
                cfg.get("shared_expert_intermediate_size")
                or (cfg.get("n_shared_experts") or 0) * (cfg.get("moe_intermediate_size") or 0)
            ),
            torch_dtype=cfg.get("torch_dtype") or cfg.get("dtype"),
            sliding_window=cfg.get("sliding_window"),
            checkpoint_quant=str(quant).lower() if quant else None,
            mla=bool(cfg.get("kv_lora_rank")),
        )

    def attention_params(self) -> int:
        q = self.hidden * self.heads * self.head_dim
        kv = 2 * self.hidden * self.kv_heads * self.head_dim
        o = self.heads * self.head_dim * self.hidden
        return q + kv + o

    def mlp_params(self, active_only: bool = False) -> int:
        if not self.experts:
            return 3 * self.hidden * self.intermediate
        n = self.experts_per_token if active_only else self.experts
        router = self.hidden * self.experts
        return (
            n * 3 * self.hidden * self.expert_intermediate + 3 * self.hidden * self.shared_expert_intermediate + router
        )

    def linear_params(self, active_only: bool = False) -> int:
        """Parameters in the quantizable layers (all decoder blocks)."""
        return self.layers * (self.attention_params() + self.mlp_params(active_only))

    def embedding_params(self) -> int:
        """Input embedding plus LM head (one table when tied)."""
        return self.vocab * self.hidden * (1 if self.tied_embeddings else 2)

    def total_params(self) -> int:
        return self.linear_params() + self.embedding_params()

    def kv_bytes_per_token(self, bytes_per_value: float) -> int:
        """2 (K and V) x layers x KV heads x head_dim x bytes per value."""
        return int(2 * self.layers * self.kv_heads * self.head_dim * bytes_per_value)


@dataclass
class CheckpointTensors:
    """What the safetensors headers declare: per tensor dtype and shape, and the files read."""

    files: list[Path] = field(default_factory=list)
    tensors: dict[str, tuple[str, list[int]]] = field(default_factory=dict)

    def stored_bytes(self) -> int:
        return sum(SAFETENSORS_DTYPE_BYTES.get(dt, 2) * math.prod(shape) for dt, shape in self.tensors.values())

    def split_params(self) -> tuple[int, int, int]:
        """(quantizable linear params, embedding/LM-head params, other params such as norms and biases)."""
        linear = embed = other = 0
        for name, (_, shape) in self.tensors.items():
            n = math.prod(shape)
            if any(e in name for e in _EMBED_NAMES):
                embed += n
            elif len(shape) >= 2:
                linear += n
            else:
                other += n
        return linear, embed, other


def read_safetensors_header(path: Path) -> dict[str, Any]:
    """The JSON header of one .safetensors file: an 8-byte little-endian length, then that much JSON."""
    with path.open("rb") as fh:
        (length,) = struct.unpack("<Q", fh.read(8))
        if length > 100 * 1024 * 1024:
            raise ValueError(f"{path}: implausible safetensors header length {length}")
        return json.loads(fh.read(length))


def read_checkpoint(model_dir: Path) -> CheckpointTensors | None:
    """Tensors declared by the checkpoint's safetensors files, or None when it has none."""
    index = model_dir / "model.safetensors.index.json"
    if index.is_file():
        names = sorted(set(json.loads(index.read_text())["weight_map"].values()))
        files = [model_dir / n for n in names if (model_dir / n).is_file()]
        if len(files) != len(names):
            return None  # a partial download: the config estimate is safer than half a sum
    else:
        files = sorted(model_dir.glob("*.safetensors"))
    if not files:
        return None
    out = CheckpointTensors(files=files)
    for f in files:
        for name, meta in read_safetensors_header(f).items():
            if name != "__metadata__":
                out.tensors[name] = (meta["dtype"], list(meta["shape"]))
    return out


@dataclass
class ModelInfo:
    """A model to plan for: its shape, its checkpoint when on disk, and where it lives."""

    shape: ModelShape
    path: str
    checkpoint: CheckpointTensors | None = None

    def weight_bytes(self, quant: str) -> tuple[int, str]:
        """Bytes of weights in GPU memory under `quant`, and where the figure comes from."""
        if quant not in QUANTS:
            raise ValueError(f"unknown quantization {quant!r}; choose from {', '.join(QUANTS)}")
        ck = self.checkpoint
        if ck is not None:
            stored_quant = self.shape.checkpoint_quant
            if stored_quant and (stored_quant == quant or (quant == "int8" and stored_quant == "compressed-tensors")):
                return ck.stored_bytes(), "safetensors headers (checkpoint already quantized)"
            if not stored_quant:
                linear, embed, other = ck.split_params()
                total = linear * LINEAR_BYTES[quant] + embed * EMBED_BYTES[quant] + other * EMBED_BYTES[quant]
                return int(total), "safetensors headers (parameter counts)"
        shape = self.shape
        total = shape.linear_params() * LINEAR_BYTES[quant] + shape.embedding_params() * EMBED_BYTES[quant]
        return int(total), "config.json estimate"

    def bytes_read_per_token(self, quant: str) -> int:
        """Weight bytes one decode step reads: active experts only, and one row of an untied input
        embedding (the LM head is read in full)."""
        weights, _ = self.weight_bytes(quant)
        shape = self.shape
        skipped = 0.0
        if shape.experts:
            skipped += (shape.linear_params() - shape.linear_params(active_only=True)) * LINEAR_BYTES[quant]
        if not shape.tied_embeddings:
            skipped += shape.vocab * shape.hidden * EMBED_BYTES[quant]
        return max(int(weights - skipped), 1)


def load_model(path: str | Path) -> ModelInfo:
    """A model directory (config.json + safetensors) or a config.json file."""
    p = Path(path).expanduser()
    if p.is_dir():
        config_path, model_dir = p / "config.json", p
    else:
        config_path, model_dir = p, p.parent
    if not config_path.is_file():
        raise FileNotFoundError(f"no config.json at {config_path}")
    shape = ModelShape.from_config(json.loads(config_path.read_text()))
    return ModelInfo(shape=shape, path=str(model_dir), checkpoint=read_checkpoint(model_dir))
