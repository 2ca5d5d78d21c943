"""The one settings object: defaults < config file (TOML) < `ASSISTANT_*` environment variables.

Nested names are joined by `_`: `ASSISTANT_OPENAI_BASE_URL` sets `openai.base_url`. The config file is
`--config PATH`, or `ASSISTANT_CONFIG`, or `<data_dir>/config.toml` when present. Nothing else in the
project reads environment variables for configuration: settings are turned into objects in the app
factory and the CLI.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, Field, field_validator, model_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict, TomlConfigSettingsSource

from indexes.settings import EmbedderSettings, RetrievalSettings
from ingest.settings import IngestSettings

from assistant.backends.registry import backend_names

# The sections the store and retrieval read live in indexes/, the ingestion worker's in ingest/: this
# object composes them with the server's own.
__all__ = ["EmbedderSettings", "IngestSettings", "RetrievalSettings", "Settings"]

Switch = Literal["auto", "on", "off"]  # auto: the setting decides by what runs (the model, the hardware)


def default_data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "assistant"


SET_ELSEWHERE = frozenset({"model", "messages", "prompt", "stream", "max_tokens", "temperature", "stop"})


def check_sampling(value: dict[str, Any]) -> dict[str, Any]:
    """Sampling parameters may not override what each request sets itself."""
    clash = sorted(SET_ELSEWHERE & value.keys())
    if clash:
        raise ValueError(f"{', '.join(clash)} cannot be set here: each request sets it (see [generation])")
    return value


# The `sampling` field of the backends that talk to an OpenAI-compatible server.
Sampling = Annotated[
    dict[str, Any],
    AfterValidator(check_sampling),
    Field(
        default_factory=dict,
        description="more sampling parameters sent as they are in each request's body, for what the OpenAI API "
        "lacks (vLLM: top_k, min_p, repetition_penalty, min_tokens, ignore_eos, ...); max_tokens and temperature "
        "come from [generation]",
    ),
]


class LlamaCppSettings(BaseModel):
    """The in-process llama.cpp backend."""

    model_path: Path | None = Field(None, description="GGUF file; empty = the packaged model named by packaged_model")
    packaged_model: Literal["qwen2.5-coder-1.5b-instruct", "qwen2.5-coder-0.5b-instruct", "gemma-3-270m"] = Field(
        "qwen2.5-coder-1.5b-instruct",
        description="packaged GGUF used when model_path is empty: qwen2.5-coder-1.5b-instruct (the default, an "
        "instruct model with a chat template, Apache-2.0), qwen2.5-coder-0.5b-instruct (three times faster on a "
        "CPU, fewer facts right; installed on request: pip install '.[smaller-model]') or gemma-3-270m (a base "
        "model, for fast tests; Gemma Terms of Use); joined once from its part packages into the user's cache "
        "(~/.cache/assistant/models)",
    )
    n_ctx: int = Field(4096, ge=256, description="context window in tokens")
    n_threads: int | None = Field(None, ge=1, description="CPU threads; empty = all cores")
    n_gpu_layers: int | None = Field(
        None, description="layers offloaded to GPUs (-1 = all); empty = all when llama.cpp was built with GPU offload, else 0"
    )
    main_gpu: int = Field(0, ge=0, description="GPU that holds the model (or its small tensors when split)")
    tensor_split: list[float] | None = Field(
        None, description="share of the model per GPU, e.g. [1, 1] for two equal GPUs; empty = llama.cpp's default"
    )
    flash_attn: bool = Field(False, description="flash attention (GPU builds; saves memory on long contexts)")
    n_batch: int = Field(512, ge=1, description="prompt-processing batch size")
    chat_format: str | None = Field(
        None, description="force a llama-cpp-python chat format; empty = the GGUF's own template, or a completion prompt when it has none"
    )
    max_queue: int = Field(8, ge=0, description="requests waiting for the single in-process slot before 429")
    seed: int = Field(0, description="sampling seed")
    repeat_penalty: float = Field(
        1.15, ge=1.0, le=2.0, description="penalty on tokens used in the last 64 (1 = none); small models loop without it"
    )
    max_line_repeats: int = Field(
        2, ge=0, description="an answer ends before a line it has already written this many times (0 = never)"
    )
    max_tokens: int | None = Field(
        None, ge=1, description="most tokens an answer of this backend may have; empty = 384 with the packaged "
        "instruct models, 256 with gemma-3-270m, else [generation].max_tokens"
    )
    max_prompt_tokens: int | None = Field(
        None, ge=0, description="most tokens a prompt of this backend may have (fewer sources, a shorter wait for "
        "the first token); empty = 1,024 when no layer is offloaded to a GPU, else the window's; 0 = the window's"
    )


class OpenAISettings(BaseModel):
    """Any OpenAI-compatible server (vLLM, llama.cpp's server, SGLang, Ollama, ...)."""

    base_url: str = Field(
        "http://127.0.0.1:8080/v1", description="the server's /v1 URL; several replicas may be given comma-separated"
    )
    base_urls: list[str] = Field(
        default_factory=list,
        description="replicas of one model (their /v1 URLs); each request goes to the one with the fewest in flight. "
        "When set, base_url is not used",
    )
    retry_unhealthy_s: float = Field(10.0, gt=0, description="how long a replica that could not be reached is skipped")
    model: str = Field("", description="model name to request; empty = the first one /v1/models lists")
    api_key: str = Field("none", description="bearer token sent to the server")
    context_window: int = Field(4096, ge=256, description="context length if the server does not report one")
    timeout_s: float = Field(120.0, gt=0, description="per-request timeout in seconds")
    connect_timeout_s: float = Field(3.0, gt=0, description="connection timeout in seconds")
    max_connections: int = Field(64, ge=1, description="HTTP connection pool size")
    prompt_style: Literal["chat", "completion"] = Field(
        "chat",
        description="chat = /v1/chat/completions with the server's chat template; completion = /v1/completions "
        "with a plain prompt, for base models that have no chat template",
    )
    sampling: Sampling


class EngineProcessSettings(BaseModel):
    """How a managed engine server (vLLM, llama-server) is run as a child process and spoken to."""

    env: dict[str, str] = Field(
        default_factory=dict, description="environment for the engine process, e.g. {NCCL_P2P_LEVEL = \"NVL\", CUDA_VISIBLE_DEVICES = \"0,1\"}"
    )
    port: int = Field(0, ge=0, le=65535, description="loopback port for the engine's server; 0 = a free one")
    nice: int = Field(
        0, ge=0, le=19, description="CPU priority given up by the engine process (os.nice): on a host where the engine "
        "runs on the same few CPU cores as this server (a CPU engine), a few steps let each question's "
        "retrieval run at once instead of waiting behind the engine; 0 on GPU hosts"
    )
    start_timeout_s: float = Field(900.0, gt=0, description="how long a start may take before it counts as failed")
    stop_timeout_s: float = Field(20.0, gt=0, description="how long to wait after SIGTERM before SIGKILL")
    restart_backoff_s: float = Field(2.0, gt=0, description="first pause before restarting a process that died; doubles each time")
    restart_backoff_max_s: float = Field(60.0, gt=0, description="longest pause between restarts")
    timeout_s: float = Field(300.0, gt=0, description="per-request timeout in seconds")
    prompt_style: Literal["chat", "completion"] = Field(
        "chat", description="chat = the model's chat template; completion = a plain prompt, for base models"
    )
    sampling: Sampling


class VLLMSettings(EngineProcessSettings):
    """The `vllm` backend: a vLLM OpenAI-compatible server started and watched as a child process."""

    model: str = Field("", description="model directory (or hub name) vLLM loads; required for the vllm backend")
    python: str = Field(
        "", description="Python interpreter that has vLLM installed (its own environment); empty = this interpreter"
    )
    served_model_name: str = Field("", description="model name the server answers to; empty = the model's folder name")
    dtype: str = Field("auto", description="--dtype: auto, bfloat16, float16 (V100s need float16) or float32")
    max_model_len: int | None = Field(None, ge=64, description="--max-model-len: context length; empty = the model's own")
    tensor_parallel_size: int = Field(1, ge=1, description="--tensor-parallel-size: GPUs one model is split over")
    gpu_memory_utilization: float | None = Field(
        None, gt=0, le=1, description="--gpu-memory-utilization: share of each GPU's memory vLLM may take; empty = vLLM's default"
    )
    max_num_seqs: int | None = Field(
        None, ge=1, description="--max-num-seqs: sequences batched at once; also sizes our HTTP pool; empty = vLLM's default (256)"
    )
    max_num_batched_tokens: int | None = Field(None, ge=1, description="--max-num-batched-tokens: tokens per engine step")
    enable_chunked_prefill: bool | None = Field(None, description="--(no-)enable-chunked-prefill; empty = vLLM's default")
    enable_prefix_caching: bool | None = Field(None, description="--(no-)enable-prefix-caching; empty = vLLM's default")
    kv_cache_dtype: str | None = Field(None, description="--kv-cache-dtype, e.g. fp8 to double the context on a GPU")
    swap_space: float | None = Field(
        None, ge=0, description="--swap-space in GiB of CPU memory per GPU (only vLLM versions that still have the flag)"
    )
    enforce_eager: bool = Field(False, description="--enforce-eager: no CUDA graphs / compilation (faster start, less memory)")
    quantization: str | None = Field(None, description="--quantization, e.g. gptq; empty = what the model's config says")
    extra_args: list[str] = Field(default_factory=list, description="any other vLLM flags, passed as they are")


class LlamaServerSettings(EngineProcessSettings):
    """The `llama-server` backend: llama.cpp's own batching server started and watched as a child process."""

    binary: str = Field(
        "", description="the llama-server executable; empty = the one `assistant engine build llama-server` built "
        "(a CUDA build before a CPU one), else llama-server on PATH"
    )
    model: str = Field("", description="GGUF file; empty = the packaged model the llamacpp backend would answer with")
    alias: str = Field("", description="model name the server answers to; empty = the GGUF's file name without .gguf")
    gpu_layers: int | None = Field(
        None, ge=0, description="-ngl: layers on the GPUs; empty = every layer when GPUs are found, else 0"
    )
    tensor_split: list[float] | None = Field(
        None, description="-ts: share of the model per GPU, e.g. [1, 1]; empty = llama.cpp's split by free memory"
    )
    main_gpu: int | None = Field(None, ge=0, description="-mg: the GPU for the model's small tensors; empty = llama.cpp's (0)")
    split_mode: Literal["layer", "row", "none"] | None = Field(
        None, description="-sm: how one model is split over several GPUs (layer = whole layers per GPU, row = each "
        "layer's rows over the GPUs, none = main_gpu alone); empty = llama.cpp's (layer). With several GPUs and no "
        "tensor_split, -ts is each GPU's free memory"
    )
    draft_model: str = Field(
        "", description="speculative decoding: a smaller GGUF of the same vocabulary (a file, or a packaged model name "
        "such as qwen2.5-coder-0.5b-instruct) drafting tokens the main model checks in one step; with spec_type = "
        "draft-mtp, the GGUF holding the model's MTP heads; empty = no draft model"
    )
    spec_type: Literal["draft-simple", "draft-mtp"] = Field(
        "draft-simple", description="--spec-type with a draft model: draft-simple (a smaller model) or draft-mtp (the "
        "model's own multi-token-prediction heads; only builds whose --help lists draft-mtp)"
    )
    draft_max: int | None = Field(None, ge=1, description="--spec-draft-n-max: tokens drafted per step; empty = llama.cpp's (3)")
    draft_min: int | None = Field(None, ge=0, description="--spec-draft-n-min: fewest drafted tokens worth checking; empty = llama.cpp's")
    draft_gpu_layers: int | None = Field(None, ge=0, description="-ngld: the draft model's layers on the GPUs; empty = as -ngl")
    flash_attn: Switch = Field("auto", description="-fa: flash attention")
    parallel: int | None = Field(
        None, ge=1, le=512, description="-np: slots, the answers generated at once; empty = what `assistant plan` "
        "finds fits the GPUs' memory beside the weights (64 at most), 4 without GPUs"
    )
    ctx_per_slot: int | None = Field(
        None, ge=256, description="context of each slot in tokens (-c is this times the slots); empty = the "
        "model's training context up to 4096"
    )
    threads: int | None = Field(
        None, ge=1, description="-t: CPU threads; empty = a quarter of the cores (1-4) when every layer is on the GPUs, else llama-server's choice"
    )
    extra_args: list[str] = Field(default_factory=list, description="any other llama-server flags, passed as they are")


class EchoSettings(BaseModel):
    """The deterministic `echo` backend: it repeats the question instead of generating (for tests)."""

    context_window: int = Field(4096, ge=64, description="context length the echo backend reports")
    prompt_style: Literal["chat", "completion"] = Field("chat", description="prompt style the echo backend asks for")
    delay_s: float = Field(0.0, ge=0, description="pause between streamed words, to make streaming observable")
    replies: dict[str, str] = Field(
        default_factory=dict, description="fixed answers by question (the question as asked): the echo backend streams "
        "the reply given for a question instead of repeating it, so that tests can see how a known answer is shown"
    )


class GenerationSettings(BaseModel):
    """Answer generation."""

    max_tokens: int = Field(384, ge=1, description="most tokens an answer may have")
    temperature: float = Field(0.2, ge=0, le=2, description="sampling temperature")
    margin_tokens: int = Field(32, ge=0, description="tokens kept free in the context window as a safety margin")
    replace_unsupported: Switch = Field("auto", description=(
        "an answer making claims that none of its sources supports (and that does not abstain) is replaced by 'the "
        "documents do not contain the answer', the model's text kept as model_answer; auto = on for the packaged "
        "small models (the llamacpp backend without model_path)"))
    quote_sources: Switch = Field("auto", description=(
        "under an answer, the words of its sources that its claims stand on, when they say more than the claim does "
        "(a condition, the exact name, a sentence saying the opposite); auto = on for the packaged small models"))
    absent_words: Switch = Field("off", description=(
        "opt-in: a question with a word that none of its sources holds and at most 0.2% of the collections' passages "
        "hold is answered 'the documents do not contain the answer', naming the word, without asking the model (auto "
        "= on for the packaged small models). Off by default: the words people use are often not the documents' own "
        "(a contraction, a pronoun, a typo, a brand name, a first-person story), and one such word refused answerable "
        "questions"))


class SummarySettings(BaseModel):
    """Long-document summaries: map-reduce over pieces sized to the backend's context window."""

    max_tokens: int = Field(160, ge=16, description="most tokens of each partial summary and of the final one")
    concurrency: int = Field(4, ge=1, le=64, description="summary requests sent to the backend at once (a batching engine runs them together)")


class ServerSettings(BaseModel):
    """The HTTP server."""

    host: str = Field("127.0.0.1", description="address to bind")
    port: int = Field(8000, ge=1, le=65535, description="port to bind")
    max_question_chars: int = Field(4000, ge=1, description="longest question accepted")
    cors_origins: list[str] = Field(default_factory=list, description="origins allowed to call the API from a browser")
    mcp: bool = Field(True, description="serve the MCP tools (streamable HTTP) at /mcp")
    metrics: bool = Field(
        True, description="serve GET /metrics in Prometheus format: requests and latency per route, answer, "
        "retrieval and ingestion series"
    )
    allowed_hosts: list[str] = Field(
        default_factory=list, description="host names the server answers to (the Host header) besides localhost, "
        "127.0.0.1 and [::1], e.g. [\"wiki.example.org\"]; '*.example.org' allows its subdomains. Any other Host "
        "is refused (DNS rebinding)"
    )
    rate_limit_per_minute: int = Field(
        600, ge=0, le=1_000_000, description="requests one API key (or one client address without a key) may make "
        "per minute before 429 + Retry-After; 0 = no limit"
    )
    max_concurrent_answers: int = Field(
        64, ge=1, le=10_000, description="answers and summaries being generated at once, whatever the backend; more "
        "get 429 + Retry-After"
    )
    max_concurrent_searches: int = Field(
        16, ge=1, le=10_000, description="searches (/api/search) run at once; more get 429 + Retry-After"
    )
    header_timeout_s: float = Field(
        10.0, gt=0, le=3600, description="seconds a connection has to send a request's headers (from its opening or "
        "the previous response); a client still sending them is disconnected (slow-header attacks)"
    )
    keep_alive_s: int = Field(
        5, ge=1, le=3600, description="seconds an idle keep-alive connection stays open between requests"
    )


class ConversationSettings(BaseModel):
    """Saved conversations, and how a follow-up question becomes a standalone search query."""

    rewrite: Literal["auto", "model", "fallback"] = Field(
        "auto", description="how a follow-up becomes a standalone search query: model = one short extra call to the "
        "backend; fallback = the previous question's content words added to the follow-up (no call); auto = model "
        "when the backend has a chat template, else fallback (the echo backend always takes the fallback)"
    )
    rewrite_max_tokens: int = Field(48, ge=8, le=256, description="most tokens the model's rewrite may have")
    rewrite_timeout_s: float = Field(
        10.0, gt=0, description="how long the model's rewrite may take before the fallback is used instead"
    )
    history_turns: int = Field(10, ge=0, le=100, description="most recent turns of a conversation given to the model as history")
    max_title_chars: int = Field(200, ge=1, description="longest conversation title accepted")


class V1Settings(BaseModel):
    """The OpenAI-compatible API (/v1)."""

    append_sources: bool = Field(
        False, description="rag: answers end with a numbered list of the sources they cite (path:lines or :p.page), "
        "for clients that show only the text (llm, LangChain, editor chats); a request turns it on or off with "
        "`append_sources` in its body or the model name suffix `+sources` (rag:docs+sources)"
    )


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
    database_url: str = Field(
        "",
        description="the store on PostgreSQL (postgresql+psycopg://user:password@host/db), shared by replicas and "
        "workers; empty = the SQLite file in data_dir",
    )
    api_key: str = Field("", description="the API key the CLI commands that talk to a running server (`assistant "
                         "status`) send as `Authorization: Bearer`; their --key wins")
    backend: str = Field("llamacpp", description=f"LLM backend to answer with: {', '.join(backend_names())}")
    log_level: str = Field("INFO", description="logging level")
    llamacpp: LlamaCppSettings = Field(default_factory=LlamaCppSettings)
    openai: OpenAISettings = Field(default_factory=OpenAISettings)
    vllm: VLLMSettings = Field(default_factory=VLLMSettings)
    llama_server: LlamaServerSettings = Field(default_factory=LlamaServerSettings)
    echo: EchoSettings = Field(default_factory=EchoSettings)
    embedder: EmbedderSettings = Field(default_factory=EmbedderSettings)
    retrieval: RetrievalSettings = Field(default_factory=RetrievalSettings)
    generation: GenerationSettings = Field(default_factory=GenerationSettings)
    ingest: IngestSettings = Field(default_factory=IngestSettings)
    summary: SummarySettings = Field(default_factory=SummarySettings)
    server: ServerSettings = Field(default_factory=ServerSettings)
    conversations: ConversationSettings = Field(default_factory=ConversationSettings)
    v1: V1Settings = Field(default_factory=V1Settings)

    @field_validator("data_dir", mode="after")
    @classmethod
    def _expand(cls, v: Path) -> Path:
        return v.expanduser()

    @field_validator("database_url", mode="after")
    @classmethod
    def _postgres_url(cls, v: str) -> str:
        if v and not v.startswith(("postgresql://", "postgresql+psycopg://", "postgres://")):
            raise ValueError("database_url must be a postgresql+psycopg://... URL (empty = SQLite in data_dir)")
        return "postgresql+psycopg://" + v.split("://", 1)[1] if v else v

    @model_validator(mode="after")
    def _lexical_needs_postgres(self) -> "Settings":
        if self.retrieval.lexical == "postgres" and not self.database_url:
            raise ValueError("retrieval.lexical = 'postgres' needs database_url (a postgresql+psycopg://... URL); "
                             "a SQLite store searches its own FTS5 tables (use auto or copy)")
        if self.retrieval.search_processes and self.database_url:
            raise ValueError("retrieval.search_processes works with the SQLite store only: on PostgreSQL each "
                             "process would keep its own copy of the full-text index; run more replicas instead, "
                             "or set it to 0")
        return self

    @field_validator("backend", mode="after")
    @classmethod
    def _known_backend(cls, v: str) -> str:
        if v not in backend_names():
            raise ValueError(f"unknown backend {v!r}; known: {', '.join(backend_names())}")
        return v

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
