"""`assistant doctor`, `plan`, `status` and `presets`: GPU checks (and the model and OCR that ingestion needs),
capacity arithmetic, live GPU status."""

from __future__ import annotations

import argparse
import json
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from indexes.ocr_tools import find_tools, split_languages
from indexes.terminal_text import terminal_safe

from assistant.backends.model_choice import answering_model, model_line, server_agrees
from assistant.engines.checks import add_toolkit_facts, engine_report
from assistant.gpu.model import QUANTS
from assistant.settings import Settings
from assistant.commands import fail

STYLE = {"pass": "green", "warn": "yellow", "fail": "bold red", "skip": "dim"}


def register(sub: argparse._SubParsersAction) -> None:
    from assistant.cli import add_common

    p = add_common(sub.add_parser("doctor", help="check this machine's GPUs, drivers and engines; say what to fix"))
    p.add_argument("--json", action="store_true", help="print one JSON object: status, findings, facts")
    p.add_argument("--facts", metavar="PATH", help="check recorded facts (a folder of probe outputs or a facts JSON)")
    p.add_argument("--preset", help="check a launch preset (see `assistant presets`)")
    p.add_argument("--model", help="model directory or config.json, for the dtype and memory checks")
    p.add_argument("--dtype", choices=["auto", "float16", "bfloat16", "float32"], help="vLLM --dtype to check")
    p.add_argument("--kv-cache-dtype", choices=["auto", "fp8", "fp8_e4m3", "fp8_e5m2"], help="KV-cache dtype to check")
    p.add_argument("--tensor-parallel-size", "--tp", type=int, help="tensor-parallel size to check")
    p.add_argument("--quant", choices=QUANTS, help="quantization to check")
    p.add_argument("--max-model-len", type=int, help="context length to check")
    p.add_argument("--gpu-memory-utilization", type=float, help="vLLM --gpu-memory-utilization to check")
    p.set_defaults(func=run_doctor)

    p = add_common(sub.add_parser(
        "plan", help="what fits: weights, KV cache, concurrent sequences, decode ceiling, vLLM flags"))
    p.add_argument("--model", required=True, help="model directory (config.json + safetensors) or a config.json")
    p.add_argument("--gpu", required=True, help="v100-16g | v100-32g | a100-80g | h100-80g | h200 | <GiB>,<GB/s>")
    p.add_argument("--gpus", type=int, help="number of GPUs (tensor parallel; default 1, or as many as --facts shows)")
    p.add_argument("--quant", choices=QUANTS, default="fp16", help="weight format")
    p.add_argument("--max-model-len", type=int, default=4096, help="context length per sequence")
    p.add_argument("--kv-cache-dtype", choices=["auto", "fp8"], default="auto", help="KV-cache dtype")
    p.add_argument("--gpu-memory-utilization", type=float, default=0.90, help="share of GPU memory vLLM may use")
    p.add_argument("--facts", metavar="PATH", help="the GPUs' free memory from recorded facts (a probe folder or a facts "
                   "JSON, as doctor takes): llama-server's -ts; --gpus defaults to their number")  # fmt: skip
    p.add_argument("--split-mode", choices=["layer", "row", "none"],
                   help="llama-server's -sm over several GPUs (default: llama_server.split_mode)")  # fmt: skip
    p.add_argument("--json", action="store_true", help="print the plan as one JSON object")
    p.set_defaults(func=run_plan)

    p = add_common(sub.add_parser("status", help="this machine's GPUs now, and the running server's backend"))
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--url", help="server to ask for its backend (default: the configured host and port)")
    p.add_argument("--key", help="the API key to ask the server with (default: ASSISTANT_API_KEY, api_key in the config)")
    p.set_defaults(func=run_status)

    p = add_common(sub.add_parser("presets", help="list the named vLLM launch presets"))
    p.add_argument("--json", action="store_true", help="print the presets as one JSON object")
    p.set_defaults(func=run_presets)



def _print_json(obj: Any) -> None:
    print(json.dumps(obj, indent=2, ensure_ascii=False))


def run_doctor(args: argparse.Namespace, settings: Settings) -> int:
    from assistant.gpu.doctor import diagnose, intent_from
    from assistant.gpu.smi import load_facts
    from assistant.gpu.probe import collect_facts

    try:
        if args.facts:
            facts = load_facts(args.facts)
        else:
            facts = collect_facts()
            add_toolkit_facts(settings, facts)
        facts.intent = intent_from(
            args.preset, args.model, args.dtype, args.kv_cache_dtype, args.tensor_parallel_size, args.quant,
            args.max_model_len, args.gpu_memory_utilization, base=facts.intent,
        )  # fmt: skip
    except (FileNotFoundError, KeyError, ValueError) as exc:
        return fail(str(exc).strip("'\""))
    report = diagnose(facts)
    report["model"] = answering_model(settings)
    report["ocr"] = find_tools(settings.ingest.ocr_command).report(split_languages(settings.ingest.ocr_languages))
    report["engine"] = engine_report(settings, facts.gpus)
    if args.json:
        _print_json(report)
    else:
        console = Console()
        console.print(f"[bold]{escape(report['summary'])}[/bold]  (facts: {escape(facts.source)})")
        console.print(terminal_safe(model_line(report["model"]), multiline=True, markup=True), soft_wrap=True)
        console.print(f"[{STYLE[report['ocr']['status']]}]{escape(ocr_line(report['ocr']))}[/]", soft_wrap=True)
        for f in report["engine"]["findings"]:
            line = f"{f['check']}: {f['saw']}" + (f"\n  fix: {f['fix']}" if f["fix"] and f["status"] != "pass" else "")
            console.print(f"[{STYLE[f['status']]}]{escape(line)}[/]", soft_wrap=True)
        for gpu in facts.gpus:
            mem = f"{(gpu.memory_total_bytes or 0) / 2**30:.1f} GiB"
            console.print(escape(f"  GPU{gpu.index}: {gpu.name}  {gpu.sm or ''}  {mem}"))
        if facts.intent.source:
            console.print(escape(f"  checking: {facts.intent.source}"))
        table = Table("status", "check", "saw", "fix", show_lines=True)
        skipped = [f for f in report["findings"] if f["status"] == "skip"]
        for f in report["findings"]:
            if f["status"] != "skip":
                table.add_row(
                    f"[{STYLE[f['status']]}]{f['status']}[/]", escape(f["title"]), escape(f["saw"]), escape(f["fix"])
                )
        console.print(table)
        if skipped:
            console.print(f"[dim]skipped: {escape('; '.join(f['rule'] + ' (' + f['saw'] + ')' for f in skipped))}[/]")
        console.print(f"verdict: [{STYLE[report['status']]}]{report['status']}[/]")
    return 1 if "fail" in (report["status"], report["engine"]["status"]) else 0


def ocr_line(ocr: dict[str, Any]) -> str:
    """OCR in one line (two with the fix): what tesseract and poppler this machine has, then the verdict."""
    if ocr["tesseract"]:
        found = f"tesseract {ocr['tesseract_version'] or '?'} (languages: {', '.join(ocr['languages']) or 'none'})"
    else:
        found = "no tesseract"
    found += f", poppler {ocr['poppler_version'] or '?'}" if ocr["pdftoppm"] else ", no poppler (pdftoppm)"
    line = f"OCR: {found} — {ocr['saw']}"
    return line + (f"\n  fix: {ocr['fix']}" if ocr["fix"] else "")


def run_plan(args: argparse.Namespace, settings: Settings) -> int:
    from assistant.gpu.hardware import parse_gpu_arg
    from assistant.gpu.model import load_model
    from assistant.gpu.plan import PlanRequest, make_plan
    from assistant.gpu.presets import get_preset

    from assistant.backends.llama_server_args import speculative_args
    from assistant.gpu.smi import load_facts

    try:
        model = load_model(args.model)
        free = [g.memory_free_bytes or 0 for g in load_facts(args.facts).gpus] if args.facts else None
        gpus = args.gpus or (len(free) if free else 1)
        if free is not None and len(free) != gpus:
            raise ValueError(f"--facts shows {len(free)} GPU(s), --gpus says {gpus}")
        req = PlanRequest(
            gpu=parse_gpu_arg(args.gpu), gpus=gpus, quant=args.quant, max_model_len=args.max_model_len,
            kv_cache_dtype=args.kv_cache_dtype, gpu_memory_utilization=args.gpu_memory_utilization,
            free_bytes=tuple(free) if free else None, split_mode=args.split_mode or settings.llama_server.split_mode,
        )  # fmt: skip
        plan = make_plan(model, req)
    except (FileNotFoundError, ValueError) as exc:
        return fail(str(exc))
    cfg = settings.llama_server  # what the backend adds to the plan's flags: -mg, speculative decoding, extra flags
    plan.llama_server_args += (["-mg", str(cfg.main_gpu)] if cfg.main_gpu is not None else []) + speculative_args(
        cfg, cfg.draft_model or None) + list(cfg.extra_args)  # fmt: skip
    if args.json:
        _print_json(plan.to_dict())
        return 0 if plan.ok else 1
    console = Console()
    gb = lambda n: f"{n / 1e9:,.2f} GB"  # noqa: E731
    table = Table("", "", show_header=False)
    rows = [
        ("model", escape(f"{plan.model}  ({plan.weights_source})")),
        ("rig", f"{plan.gpus} x {req.gpu.name}, {plan.quant} on {plan.engine}"),
        ("weights", f"{gb(plan.weights_bytes)} total, {gb(plan.weights_per_gpu_bytes)} per GPU"),
        ("KV cache", f"{plan.kv_bytes_per_token:,} bytes/token ({plan.kv_cache_dtype}); "
                     f"{plan.kv_bytes_per_token_per_gpu:,} per GPU"),
        ("budget per GPU", f"{gb(plan.budget_per_gpu_bytes)} ({plan.gpu_memory_utilization:.2f} of memory), "
                           f"runtime reserve ~{gb(plan.reserved_per_gpu_bytes)}"),
        ("KV pool per GPU", f"{gb(plan.kv_pool_bytes)} = {plan.kv_pool_tokens:,} tokens"),
        ("full-length sequences", f"{plan.max_concurrent_seqs} at {plan.max_model_len:,} tokens each"),
        ("decode ceiling", f"{plan.decode_ceiling_tok_s} tok/s per stream (short context), "
                           f"{plan.decode_ceiling_full_context_tok_s} at full context; "
                           "aggregate over many streams can be higher"),
        ("fits", "[green]yes[/]" if plan.fits else "[bold red]no[/]: " + escape("; ".join(plan.fit_reasons))),
        ("supported",
         "[green]yes[/]" if plan.supported else "[bold red]no[/]: " + escape("; ".join(plan.support_reasons))),
    ]  # fmt: skip
    for k, v in rows:
        table.add_row(k, v)
    console.print(table)
    for note in plan.notes:
        console.print(f"  note: {escape(note)}")
    if plan.ok:
        console.print(f"\n[bold]launch:[/bold] {escape(plan.command)}", soft_wrap=True)
        console.print(f"[bold]llama-server:[/bold] {escape(' '.join(plan.llama_server_args))} "
                      f"({plan.llama_server_args[3]} slots of {plan.max_model_len:,} tokens; the llama-server "
                      "backend derives the same from the GPUs it finds)", soft_wrap=True)
    else:
        console.print(
            "\n[bold]does not work as asked.[/bold] Options that would:"
            if plan.options
            else "\n[bold]does not work as asked[/bold]"
        )
        for o in plan.options:
            extra = (
                f" -> {o['max_concurrent_seqs']} sequence(s), ceiling {o['decode_ceiling_tok_s']} tok/s"
                if "max_concurrent_seqs" in o
                else f" ({o.get('note', '')})"
            )
            console.print(escape(f"  {o['change']}{extra}"))
    if plan.presets:
        console.print("\n[bold]presets for this rig:[/bold]")
    for name in plan.presets:
        console.print(escape(f"  {name}: {get_preset(name).command(plan.model)}"), soft_wrap=True)
    return 0 if plan.ok else 1


def run_status(args: argparse.Namespace, settings: Settings) -> int:
    from assistant.gpu.status import ServerRefused, gpu_status, server_status
    from assistant.security.redaction import redact_url

    gpus = gpu_status()
    host = settings.server.host if settings.server.host not in ("0.0.0.0", "::") else "127.0.0.1"
    url = args.url or f"http://{host}:{settings.server.port}"
    refused: int | None = None
    try:
        server = server_status(url, key=args.key or settings.api_key)
    except ServerRefused as exc:
        server, refused = None, exc.status
    url = redact_url(url)  # shown from here on: a token in the URL stays off the screen
    out = {
        "gpus": gpus,
        "server": url,
        "server_reachable": server is not None or refused is not None,
        "server_refused": refused,  # 401: a key is needed (or was wrong); 403: the key may not read the status
        "backend": (server or {}).get("backend"),
        "search_processes": (server or {}).get("search_processes"),  # retrieval.search_processes, when set
        "model": answering_model(settings),  # what these settings answer with; `backend.model` is what the server says
    }
    out["model"]["server_agrees"] = server_agrees(out["model"], out["backend"])
    if args.json:
        _print_json(out)
        return 0
    console = Console()
    if not gpus:
        console.print("no NVIDIA GPU on this machine (the CPU llama.cpp backend is the default)")
    else:
        table = Table("GPU", "memory", "util", "temp", "SM clock", "power", "throttle")
        for g in gpus:
            mem = f"{(g['memory_used_bytes'] or 0) / 2**30:.1f} / {(g['memory_total_bytes'] or 0) / 2**30:.1f} GiB"
            power = f"{g['power_w']} / {g['power_limit_w']} W" if g["power_w"] is not None else "?"
            clock = f"{g['sm_clock_mhz']} / {g['max_sm_clock_mhz']} MHz" if g["sm_clock_mhz"] is not None else "?"
            throttle = ", ".join(g["throttle_reasons"]) or "-"
            cells = [mem, f"{g['utilization_pct']}%", f"{g['temperature_c']} C", clock, power]
            table.add_row(
                escape(f"{g['index']} {g['name']}"),
                *cells,
                f"[yellow]{escape(throttle)}[/]" if g["slowed"] else escape(throttle),
            )
        console.print(table)
    console.print(terminal_safe(model_line(out["model"]), multiline=True, markup=True), soft_wrap=True)
    if refused is not None:
        why = "a valid API key is needed" if refused == 401 else "this key may not read the server's status"
        console.print(terminal_safe(f"server {url} answers, and refused ({refused}): {why}; give one with --key or "
                                    "ASSISTANT_API_KEY", markup=True))
    elif server is None:
        console.print(terminal_safe(f"server: nothing answers at {url}", markup=True))
    else:
        backend = dict(out["backend"] or {}) if isinstance(out["backend"], dict) else {"reported": out["backend"]}
        engine = backend.pop("engine", None)
        details = ", ".join(f"{k}={v}" for k, v in backend.items())
        console.print(terminal_safe(f"server {url}: backend {details or '(not reported)'}", markup=True))
        if isinstance(engine, dict):
            console.print(terminal_safe(engine_line(engine), markup=True))
        if isinstance(out["search_processes"], dict):
            console.print(terminal_safe(search_processes_line(out["search_processes"]), markup=True))
        if out["model"]["server_agrees"] is False:
            console.print("  that server was started with other settings: it answers, not the model above")
    return 0


def search_processes_line(processes: dict[str, Any]) -> str:
    """The server's search processes in one line: how many are up, and the searches they took."""
    return (f"  search processes: {processes.get('ready', '?')} of {processes.get('processes', '?')} up, "
            f"{processes.get('searched', '?')} searches taken from the server")


def engine_line(engine: dict[str, Any]) -> str:
    """A managed engine in one line: its state and its slots busy and idle."""
    slots = engine.get("slots")
    busy = f"{slots['busy']} busy, {slots['idle']} idle of {slots['total']} slots" if isinstance(slots, dict) else "slots not known"
    launch = engine.get("launch") or {}
    return f"  engine: {engine.get('state')} (pid {engine.get('pid')}), {busy}; started with {launch.get('why', '?')}"


def run_presets(args: argparse.Namespace, settings: Settings) -> int:
    from assistant.gpu.presets import list_presets

    presets = list_presets()
    if args.json:
        _print_json({"presets": [p.to_dict() for p in presets]})
        return 0
    console = Console()
    for p in presets:
        console.print(f"[bold]{p.name}[/bold]  ({p.mode}) {escape(p.rig)}")
        console.print(escape(f"  {p.command()}"), soft_wrap=True)
        if p.backend != "vllm":
            console.print(escape(f"  then: assistant serve --backend openai (the {p.engine} server started above)"), soft_wrap=True)
        for note in p.notes:
            console.print(f"  [dim]{escape(note)}[/]")
    return 0
