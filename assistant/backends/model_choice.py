"""Which model answers with these settings, and why: what `assistant doctor` and `assistant status` say.

Read from the settings alone; nothing is loaded, joined or asked over the network here.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from assistant.backends.packaged_models import DEFAULT_PACKAGED, describe, packaged_model

if TYPE_CHECKING:
    from assistant.settings import Settings


def answering_model(settings: "Settings", cache_dir: Path | None = None) -> dict[str, Any]:
    """The model the configured backend answers with: name, file, size, licence where known, and why that one."""
    backend = settings.backend
    if backend == "llamacpp":
        return _llamacpp(settings, cache_dir)
    if backend == "vllm":
        name = settings.vllm.served_model_name or (Path(settings.vllm.model).name if settings.vllm.model else "")
        return {"backend": backend, "name": name or None, "file": settings.vllm.model or None,
                "why": "the model the managed vLLM server is started with (vllm.model)"}  # fmt: skip
    if backend == "llama-server":
        cfg = settings.llama_server
        if cfg.model:
            path = Path(cfg.model).expanduser()
            return {"backend": backend, "name": cfg.alias or path.name.removesuffix(".gguf"), "file": str(path),
                    "size_bytes": path.stat().st_size if path.is_file() else None, "exists": path.is_file(),
                    "why": "the GGUF the managed llama-server is started with (llama_server.model)"}  # fmt: skip
        info = _llamacpp(settings, cache_dir)
        return {**info, "backend": backend, "name": cfg.alias or info["name"],
                "why": "the managed llama-server runs the llamacpp backend's model (llama_server.model is empty): "
                + info["why"]}  # fmt: skip
    if backend == "openai":
        from assistant.backends.openai_server import base_urls
        from assistant.security.redaction import redact_url

        servers = [redact_url(u) for u in base_urls(settings.openai)]
        named = settings.openai.model
        return {"backend": backend, "name": named or None, "servers": servers,
                "why": f"the model {named!r} of the OpenAI-compatible server (openai.model)" if named
                else "the first model the OpenAI-compatible server lists at /v1/models (openai.model is empty)"}  # fmt: skip
    return {"backend": backend, "name": backend, "why": f"the {backend} backend generates without a model"}


def runs_packaged_model(settings: "Settings") -> bool:
    """Whether the backend answers with a packaged GGUF: the llamacpp backend, or a managed llama-server,
    given no model file of their own (llama_server.model, else llamacpp.model_path)."""
    if settings.backend == "llama-server" and settings.llama_server.model:
        return False
    return settings.backend in ("llamacpp", "llama-server") and settings.llamacpp.model_path is None


def _llamacpp(settings: "Settings", cache_dir: Path | None) -> dict[str, Any]:
    cfg = settings.llamacpp
    if cfg.model_path:
        path = Path(cfg.model_path).expanduser()
        return {
            "backend": "llamacpp", "name": path.name.removesuffix(".gguf"), "file": str(path),
            "size_bytes": path.stat().st_size if path.is_file() else None, "exists": path.is_file(),
            "licence": "the file's own (not known to the assistant)",
            "why": "the GGUF file configured in llamacpp.model_path",
        }  # fmt: skip
    model = packaged_model(cfg.packaged_model)
    info = describe(model, cache_dir)
    about = info.pop("why")
    if model.name == DEFAULT_PACKAGED:
        why = f"the packaged default instruct model (llamacpp.model_path is empty): {about}"
    else:
        why = f"the packaged model chosen in llamacpp.packaged_model: {about}"
    return {"backend": "llamacpp", **info, "why": why}


def model_line(info: dict[str, Any]) -> str:
    """One line for a terminal: name, file, size, licence, then why."""
    bits = [str(info.get("title") or info.get("name") or "(not named)")]
    if info.get("file"):
        bits.append(str(info["file"]))
    if info.get("size_bytes"):
        bits.append(f"{info['size_bytes'] / 1e6:,.0f} MB")
    if info.get("licence"):
        bits.append(f"licence: {info['licence']}")
    if info.get("servers"):
        bits.append("at " + ", ".join(info["servers"]))
    line = f"model ({info['backend']}): " + ", ".join(bits) + f" — {info['why']}"
    if info.get("fix"):
        line += f"\n  not ready: {info['fix']}"
    elif info.get("joined") is False:
        line += ("\n  (joined from its part packages at the first start, or now: "
                 f"python -m assistant.backends.packaged_models {info['name']})")
    elif info.get("exists") is False:
        line += "\n  not ready: that file does not exist"
    return line


def server_agrees(info: dict[str, Any], backend: dict[str, Any] | None) -> bool | None:
    """Whether a running server's /api/status backend answers with the model `info` describes; None when
    no server answered. A server started with other settings (another backend or model) disagrees."""
    if not isinstance(backend, dict):
        return None
    if backend.get("name") != info["backend"]:
        return False
    said = backend.get("model") or ""
    if info["backend"] in ("llamacpp", "llama-server"):
        return said in (info.get("name"), Path(str(info["file"])).name.removesuffix(".gguf"))
    return info.get("name") is None or said == info["name"]
