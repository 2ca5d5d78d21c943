"""A GGUF file's metadata (its header's key-value pairs), read without its tensors or any engine.

Planning a llama-server needs a few numbers of the model: its layers, KV heads and head size (the KV
cache per token) and its training context. They sit in the header, before the tensor data; the
tokenizer's arrays are stepped over, not kept.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

# GGUF value types: code -> struct format of a scalar
SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
STRING, ARRAY = 8, 9


class GGUFError(ValueError):
    """Not a GGUF file, or one cut short."""


def _read(f: BinaryIO, fmt: str) -> Any:
    size = struct.calcsize("<" + fmt)
    data = f.read(size)
    if len(data) != size:
        raise GGUFError("the file ends inside its header")
    return struct.unpack("<" + fmt, data)[0]


def _string(f: BinaryIO) -> str:
    n = _read(f, "Q")
    data = f.read(n)
    if len(data) != n:
        raise GGUFError("the file ends inside its header")
    return data.decode("utf-8", errors="replace")


def _value(f: BinaryIO, kind: int, keep: bool) -> Any:
    if kind in SCALARS:
        return _read(f, SCALARS[kind])
    if kind == STRING:
        return _string(f)
    if kind == ARRAY:
        item, count = _read(f, "I"), _read(f, "Q")
        if item in SCALARS and not keep:
            f.seek(struct.calcsize("<" + SCALARS[item]) * count, 1)
            return None
        values = [_value(f, item, keep) for _ in range(count)]
        return values if keep else None
    raise GGUFError(f"unknown GGUF value type {kind}")


def read_metadata(path: str | Path) -> dict[str, Any]:
    """The header's key-value pairs; arrays (the tokenizer's) are skipped and given as None."""
    with open(path, "rb") as f:
        if f.read(4) != b"GGUF":
            raise GGUFError(f"{path} is not a GGUF file")
        version = _read(f, "I")
        if version < 2:
            raise GGUFError(f"{path} is GGUF version {version}; versions 2 and 3 are read")
        _read(f, "Q")  # tensors
        pairs = _read(f, "Q")
        out: dict[str, Any] = {}
        for _ in range(pairs):
            key = _string(f)
            out[key] = _value(f, _read(f, "I"), keep=False)
        return out


@dataclass(frozen=True)
class GGUFModel:
    """What planning reads of a GGUF: its size and the shape of its KV cache."""

    path: str
    architecture: str
    file_bytes: int
    layers: int
    kv_heads: int
    head_dim: int
    context_length: int | None

    def kv_bytes_per_token(self, bytes_per_value: float = 2.0) -> int:
        """K and V of every layer for one token (an f16 cache by default)."""
        return int(2 * self.layers * self.kv_heads * self.head_dim * bytes_per_value)


def read_model(path: str | Path) -> GGUFModel:
    meta = read_metadata(path)
    arch = str(meta.get("general.architecture") or "")

    def number(key: str) -> int | None:
        value = meta.get(f"{arch}.{key}")
        return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None

    layers, heads = number("block_count"), number("attention.head_count")
    width = number("embedding_length")
    if not arch or not layers or not heads or not width:
        raise GGUFError(f"{path} does not say its layers, heads and width ({arch or 'no architecture'})")
    head_dim = number("attention.key_length") or width // heads
    return GGUFModel(
        path=str(path), architecture=arch, file_bytes=Path(path).stat().st_size, layers=layers,
        kv_heads=number("attention.head_count_kv") or heads, head_dim=head_dim, context_length=number("context_length"),
    )  # fmt: skip
