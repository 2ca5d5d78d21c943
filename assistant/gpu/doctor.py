"""`doctor`: facts (live or recorded) + what the user means to run -> findings and one verdict."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from assistant.gpu.facts import Facts, Intent
from assistant.gpu.presets import get_preset
from assistant.gpu.rules import overall, run_rules

NO_GPU_SUMMARY = "no NVIDIA GPU: use the CPU default, the llama.cpp backend with the packaged GGUF (backend = llamacpp)"


def intent_from(
    preset: str | None = None,
    model: str | None = None,
    dtype: str | None = None,
    kv_cache_dtype: str | None = None,
    tensor_parallel_size: int | None = None,
    quant: str | None = None,
    max_model_len: int | None = None,
    gpu_memory_utilization: float | None = None,
    base: Intent | None = None,
) -> Intent:
    """An intent from a preset, then a recorded intent, then explicit flags (later wins)."""
    intent = base or Intent()
    if preset:
        p = get_preset(preset)
        intent = replace(
            intent,
            dtype=str(p.flags.get("dtype", "auto")),
            kv_cache_dtype=p.kv_cache_dtype,
            tensor_parallel_size=p.tensor_parallel_size,
            quant=p.quant,
            max_model_len=p.max_model_len,
            gpu_memory_utilization=p.gpu_memory_utilization,
            engine=p.engine,
            source=f"preset {p.name}",
        )
    flags = {
        "dtype": dtype,
        "kv_cache_dtype": kv_cache_dtype,
        "tensor_parallel_size": tensor_parallel_size,
        "quant": quant,
        "max_model_len": max_model_len,
        "gpu_memory_utilization": gpu_memory_utilization,
    }
    given = {k: v for k, v in flags.items() if v is not None}
    if given:
        intent = replace(intent, **given, source=", ".join(filter(None, [intent.source, "flags"])))
    if model:
        path = Path(model).expanduser()
        config = path / "config.json" if path.is_dir() else path
        if not config.is_file():
            raise FileNotFoundError(f"no config.json at {config}")
        intent = replace(intent, model=str(path), model_config=json.loads(config.read_text()))
    return intent


def diagnose(facts: Facts) -> dict[str, Any]:
    """The whole report: verdict, one line per GPU, the findings, and the facts they came from."""
    findings = run_rules(facts)
    if facts.gpus:
        summary = (
            f"{len(facts.gpus)} NVIDIA GPU(s); driver {facts.driver_version or '?'} (CUDA {facts.driver_cuda or '?'})"
        )
    else:
        summary = NO_GPU_SUMMARY
    return {
        "status": overall(findings),
        "gpu_count": len(facts.gpus),
        "summary": summary,
        "findings": [f.to_dict() for f in findings],
        "facts": facts.to_dict(),
    }
