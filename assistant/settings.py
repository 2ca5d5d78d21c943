"""The one settings object: defaults < config file (TOML) < `ASSISTANT_*` environment variables.

Nested names are joined by `_`: `ASSISTANT_OPENAI_BASE_URL` sets `openai.base_url`. The config file is
`--config PATH`, or `ASSISTANT_CONFIG`, or `<data_dir>/config.toml` when present. Nothing else in the
project reads environment variables for configuration: settings are turned into objects in the app
factory and the CLI.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict, TomlConfigSettingsSource


def default_data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "assistant"


class LlamaCppSettings(BaseModel):
    """The in-process llama.cpp backend."""

    model_path: Path | None = Field(None, description="GGUF file; empty = the packaged Gemma-3-270M GGUF")
    n_ctx: int = Field(4096, ge=256, description="context window in tokens")
    n_threads: int | None = Field(None, ge=1, description="CPU threads; empty = all cores")
    n_gpu_layers: int = Field(0, description="layers offloaded to GPUs (-1 = all) when built with CUDA")
    n_batch: int = Field(512, ge=1, description="prompt-processing batch size")
    chat_format: str | None = Field(
        None, description="force a llama-cpp-python chat format; empty = the GGUF's own template, or a completion prompt when it has none"
    )
    max_queue: int = Field(8, ge=0, description="requests waiting for the single in-process slot before 429")
    seed: int = Field(0, description="sampling seed")


class OpenAISettings(BaseModel):
    """Any OpenAI-compatible server (vLLM, llama.cpp's server, SGLang, Ollama, ...)."""

    base_url: str = Field("http://127.0.0.1:8080/v1", description="the server's /v1 URL")
    model: str = Field("", description="model name to request; empty = the first one /v1/models lists")
    api_key: str = Field("none", description="bearer token sent to the server")
    context_window: int = Field(4096, ge=256, description="context length if the server does not report one")
    timeout_s: float = Field(120.0, gt=0, description="per-request timeout in seconds")
    connect_timeout_s: float = Field(3.0, gt=0, description="connection timeout in seconds")
    max_connections: int = Field(64, ge=1, description="HTTP connection pool size")


class EmbedderSettings(BaseModel):
    """The CPU embedder used for both ingestion and queries."""

    model_path: Path | None = Field(None, description="sentence-transformers directory; empty = the packaged all-MiniLM-L6-v2")
    batch_size: int = Field(32, ge=1, description="texts per encode batch")
    max_seq_length: int = Field(256, ge=16, description="tokens the embedder reads per text")
    dtype: Literal["auto", "fp32", "bf16"] = Field("auto", description="auto = bf16 where the CPU supports it natively")


class RetrievalSettings(BaseModel):
    """Hybrid retrieval."""

    k: int = Field(5, ge=1, le=50, description="sources given to the model per question")
    candidates: int = Field(50, ge=1, description="candidates taken from each of dense and BM25 before fusion")
    rrf_k: float = Field(60.0, gt=0, description="reciprocal-rank fusion constant")


class GenerationSettings(BaseModel):
    """Answer generation."""

    max_tokens: int = Field(384, ge=1, description="most tokens an answer may have")
    temperature: float = Field(0.2, ge=0, le=2, description="sampling temperature")
    margin_tokens: int = Field(32, ge=0, description="tokens kept free in the context window as a safety margin")


class IngestSettings(BaseModel):
    """Ingestion."""

    chunk_tokens: int = Field(200, ge=16, description="target chunk size in embedder tokens")
    overlap_tokens: int = Field(32, ge=0, description="tokens repeated between consecutive chunks")
    max_file_mb: float = Field(50.0, gt=0, description="files larger than this are skipped with a reason")


class ServerSettings(BaseModel):
    """The HTTP server."""

    host: str = Field("127.0.0.1", description="address to bind")
    port: int = Field(8000, ge=1, le=65535, description="port to bind")
    max_question_chars: int = Field(4000, ge=1, description="longest question accepted")
    cors_origins: list[str] = Field(default_factory=list, description="origins allowed to call the API from a browser")


class Settings(BaseSettings):
    """Everything configurable, in one place."""

    model_config = SettingsConfigDict(
        env_prefix="ASSISTANT_",
        env_nested_delimiter="_",
        env_nested_max_split=1,
        extra="forbid",
    )

    config: Path | None = Field(None, description="TOML config file read before the environment")
    data_dir: Path = Field(default_factory=default_data_dir, description="where the store, indexes and logs live")
    backend: Literal["llamacpp", "openai", "echo"] = Field("llamacpp", description="LLM backend to answer with")
    log_level: str = Field("INFO", description="logging level")
    llamacpp: LlamaCppSettings = Field(default_factory=LlamaCppSettings)
    openai: OpenAISettings = Field(default_factory=OpenAISettings)
    embedder: EmbedderSettings = Field(default_factory=EmbedderSettings)
    retrieval: RetrievalSettings = Field(default_factory=RetrievalSettings)
    generation: GenerationSettings = Field(default_factory=GenerationSettings)
    ingest: IngestSettings = Field(default_factory=IngestSettings)
    server: ServerSettings = Field(default_factory=ServerSettings)

    @field_validator("data_dir", mode="after")
    @classmethod
    def _expand(cls, v: Path) -> Path:
        return v.expanduser()

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings, env_settings, _ConfigFileSource(settings_cls, init_settings, env_settings))


class _ConfigFileSource(PydanticBaseSettingsSource):
    """The TOML file named by `config` (argument or ASSISTANT_CONFIG), else `<data_dir>/config.toml`."""

    def __init__(self, settings_cls, init_source, env_source) -> None:
        super().__init__(settings_cls)
        self._init = init_source
        self._env = env_source

    def get_field_value(self, field, field_name):  # pragma: no cover - required by the base class
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        given = {**self._env(), **self._init()}
        path = given.get("config")
        if not path:
            data_dir = Path(given.get("data_dir") or default_data_dir()).expanduser()
            candidate = data_dir / "config.toml"
            path = candidate if candidate.is_file() else None
        if not path:
            return {}
        path = Path(path).expanduser()
        if not path.is_file():
            raise FileNotFoundError(f"config file not found: {path}")
        return TomlConfigSettingsSource(self.settings_cls, toml_file=path)()


def load_settings(**overrides: Any) -> Settings:
    """Settings from the file and the environment, with explicit overrides (CLI flags) on top."""
    return Settings(**{k: v for k, v in overrides.items() if v is not None})


def documented_settings() -> dict[str, str]:
    """Every setting as its environment variable name -> description (for docs and their test)."""
    out: dict[str, str] = {}
    for name, field in Settings.model_fields.items():
        ann = field.annotation
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            for sub, subfield in ann.model_fields.items():
                out[f"ASSISTANT_{name}_{sub}".upper()] = subfield.description or ""
        else:
            out[f"ASSISTANT_{name}".upper()] = field.description or ""
    return out
