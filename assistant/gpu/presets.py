"""Named vLLM launch presets for the V100 rigs our users run, in two modes.

`interactive` keeps time-to-first-token low (few sequences at once, prefix caching for the shared
system prompt); `batch` trades latency for throughput (many sequences, chunked prefill). A preset is
plain data: vLLM flags plus environment variables, for `serve --backend vllm --preset NAME`, `plan`
and `doctor --preset NAME`.

The engines decide what runs: vLLM's AWQ kernels need sm_75, so the V100 presets use GPTQ 4-bit
(plain GPTQ kernels run on sm_70) and float16 (no native BF16 before sm_80). Upstream vLLM >= 0.21 runs
none of them on sm_70 (gpu/volta.py); the `-1cat-awq` presets are for a V100 fork the user starts and the
assistant reaches with backend = openai.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Literal

from assistant.gpu.volta import V100_FORK, V100_FORK_TITLE

Mode = Literal["interactive", "batch"]


@dataclass(frozen=True)
class Preset:
    name: str
    rig: str
    gpu: str  # a key of hardware.GPU_SPECS
    gpus: int
    mode: Mode
    quant: str
    flags: dict[str, Any]  # vLLM flag name (without --) -> value; True = a bare switch
    env: dict[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    engine: str = "vllm"  # or a V100 fork (gpu/volta.py), started by the user, reached with backend = openai

    @property
    def max_model_len(self) -> int:
        return int(self.flags["max-model-len"])

    @property
    def kv_cache_dtype(self) -> str:
        return str(self.flags.get("kv-cache-dtype", "auto"))

    @property
    def gpu_memory_utilization(self) -> float:
        return float(self.flags["gpu-memory-utilization"])

    @property
    def tensor_parallel_size(self) -> int:
        return int(self.flags.get("tensor-parallel-size", 1))

    def vllm_args(self) -> list[str]:
        """The flags as `vllm serve MODEL` arguments."""
        out: list[str] = []
        for name, value in self.flags.items():
            if value is True:
                out.append(f"--{name}")
            elif value is not False and value is not None:
                out += [f"--{name}", str(value)]
        return out

    def vllm_settings(self) -> dict[str, Any]:
        """The preset as `settings.vllm` values: each flag's name with `_` for `-`, plus `env`."""
        return {name.replace("-", "_"): value for name, value in self.flags.items()} | {"env": dict(self.env)}

    @property
    def backend(self) -> str:
        """The assistant's backend for this preset: vllm manages upstream vLLM; a fork runs on its own."""
        return "vllm" if self.engine == "vllm" else "openai"

    def command(self, model: str = "MODEL") -> str:
        env = " ".join(f"{k}={v}" for k, v in self.env.items())
        return " ".join(p for p in [env, "vllm serve", model, *self.vllm_args()] if p)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["notes"] = list(self.notes)
        out["vllm_args"] = self.vllm_args()
        out["backend"] = self.backend
        return out


def _rig(
    name: str,
    rig: str,
    gpu: str,
    gpus: int,
    seqs: tuple[int, int],
    base: dict[str, Any],
    env: dict[str, str],
    notes: tuple[str, ...],
) -> list[Preset]:
    """The two modes of one rig: `seqs` is (interactive, batch) max-num-seqs."""
    interactive = {**base, "max-num-seqs": seqs[0], "enable-prefix-caching": True}
    batch = {**base, "max-num-seqs": seqs[1], "enable-chunked-prefill": True, "max-num-batched-tokens": 4096,
             "enable-prefix-caching": True}  # fmt: skip
    return [
        Preset(f"{name}-interactive", rig, gpu, gpus, "interactive", "gptq", interactive, env, notes),
        Preset(f"{name}-batch", rig, gpu, gpus, "batch", "gptq", batch, env, notes),
    ]


_NVLINK_ENV = {"NCCL_P2P_LEVEL": "NVL"}


def _fork(gpus: int, seqs: int) -> Preset:
    """The V100 fork serving a 27B AWQ model on `gpus` V100-32GB: run by the user in its own environment
    (CUDA 12.8, torch 2.9.1+cu128), the assistant pointed at it with backend = openai."""
    flags = {"tensor-parallel-size": gpus, "dtype": "float16", "quantization": "awq", "max-model-len": 32768,
             "gpu-memory-utilization": 0.90, "max-num-seqs": seqs, "enable-prefix-caching": True}  # fmt: skip
    notes = (
        f"upstream vLLM >= 0.21 has no sm_70 kernels (gpu/volta.py); this preset is for {V100_FORK_TITLE}",
        "the fork serves Qwen3.5/3.6-27B-AWQ on 2 or 4 V100-32GB with its own AWQ kernels and attention backend",
        "serve the assistant with backend = openai, openai.base_url = http://HOST:8000/v1, openai.model = the served name",
    )
    env = _NVLINK_ENV if gpus > 1 else {}
    return Preset(f"v100x{gpus}-32g-1cat-awq", f"{gpus} x V100 32 GB, the 1Cat-vLLM fork, tensor parallel {gpus}",
                  "v100-32g", gpus, "interactive", "awq", flags, env, notes, engine=V100_FORK)  # fmt: skip

PRESETS: dict[str, Preset] = {
    p.name: p
    for p in [
        *_rig(
            "v100x2-16g-nvlink",
            "2 x V100 16 GB joined by NVLink, tensor parallel 2",
            "v100-16g",
            2,
            (8, 32),
            {
                "tensor-parallel-size": 2,
                "dtype": "float16",
                "quantization": "gptq",
                "max-model-len": 8192,
                "gpu-memory-utilization": 0.90,
                "enforce-eager": True,
            },
            _NVLINK_ENV,
            (
                "a 27B model in FP16 (54 GB) does not fit in 2 x 16 GB: 4-bit GPTQ weights (~16 GB) do",
                "field reports: 64 tok/s aggregate at 16 concurrent; NCCL_P2P_LEVEL=NVL cut TP latency ~30 %",
                "--enforce-eager skips CUDA-graph capture, whose memory peak stops 16 GB cards at start-up",
            ),
        ),  # fmt: skip
        *_rig(
            "v100-32g",
            "1 x V100 32 GB",
            "v100-32g",
            1,
            (8, 32),
            {"dtype": "float16", "quantization": "gptq", "max-model-len": 16384, "gpu-memory-utilization": 0.90},
            {},
            (
                "27B at 4 bits is ~16 GB of weights: single-stream ceiling ~58 tok/s at 900 GB/s",
                "field reports: 40-60 tok/s single stream, 280 tok/s aggregate at 8 concurrent",
            ),
        ),  # fmt: skip
        *_rig(
            "v100x2-32g-nvlink",
            "2 x V100 32 GB (PCIe cards with an NVLink bridge), tensor parallel 2, 64k context",
            "v100-32g",
            2,
            (12, 48),
            {
                "tensor-parallel-size": 2,
                "dtype": "float16",
                "quantization": "gptq",
                "max-model-len": 65536,
                "gpu-memory-utilization": 0.90,
                "kv-cache-dtype": "fp8",
            },
            _NVLINK_ENV,
            (
                "FP8 KV cache has no hardware support on Volta: converted in software, ~8 % slower, twice the context",
                "field reports: ~400 tok/s aggregate at 4 concurrent",
            ),
        ),  # fmt: skip
        _fork(2, 16),
        _fork(4, 32),
    ]
}


def list_presets() -> list[Preset]:
    return list(PRESETS.values())


def get_preset(name: str) -> Preset:
    try:
        return PRESETS[name]
    except KeyError:
        raise KeyError(f"unknown preset {name!r}; known: {', '.join(PRESETS)}") from None


def fork_presets(gpus: int | None = None) -> list[Preset]:
    """The presets of V100 forks (for `gpus` GPUs, or any)."""
    return [p for p in PRESETS.values() if p.engine != "vllm" and gpus in (None, p.gpus)]


def presets_for(gpu: str, gpus: int) -> list[Preset]:
    """The presets written for this GPU model and count."""
    return [p for p in PRESETS.values() if p.gpu == gpu and p.gpus == gpus]


def preset_settings(name: str, setting_names: Iterable[str]) -> dict[str, Any]:
    """A preset's flags and environment as the vLLM settings named in `setting_names` (the server's
    `vllm` section); flags without a setting of their own go to `extra_args`."""
    preset = get_preset(name)
    known = set(setting_names) - {"extra_args", "env"}
    out: dict[str, Any] = {"env": dict(preset.env)}
    extra: list[str] = []
    for flag, value in preset.flags.items():
        field_name = flag.replace("-", "_")
        if field_name in known:
            out[field_name] = value
        elif value is True:
            extra.append(f"--{flag}")
        elif value is not False and value is not None:
            extra += [f"--{flag}", str(value)]
    if extra:
        out["extra_args"] = extra
    return out
