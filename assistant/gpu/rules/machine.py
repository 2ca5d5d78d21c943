"""Rules about the machine: which GPUs are visible, how they are linked, /dev/shm, heat, and memory."""

from __future__ import annotations

from assistant.gpu.facts import Facts, GpuFacts
from assistant.gpu.hardware import GIB, SLOWING_REASONS, THERMAL_REASONS, GpuSpec, bandwidth_for
from assistant.gpu.model import ModelInfo, ModelShape, load_model
from assistant.gpu.plan import PlanRequest, make_plan
from assistant.gpu.rules.base import NO_GPU, Status, rule


@rule("visible-devices", "CUDA_VISIBLE_DEVICES vs tensor-parallel size")
def visible_devices(facts: Facts) -> tuple[Status, str, str]:
    if not facts.gpus:
        return NO_GPU
    visible, unknown = facts.visible_gpus()
    cvd = facts.env.get("CUDA_VISIBLE_DEVICES")
    shown = f"CUDA_VISIBLE_DEVICES={cvd}" if cvd is not None else "CUDA_VISIBLE_DEVICES unset"
    present = ", ".join(str(g.index) for g in facts.gpus)
    if unknown:
        return (
            "fail",
            f"{shown} names {unknown[0]}, which is no GPU here (GPUs {present})",
            f"list existing GPUs, e.g. CUDA_VISIBLE_DEVICES={present.replace(' ', '')}",
        )
    if not visible:
        return (
            "fail",
            f"{shown} hides every GPU",
            f"unset it or list GPUs, e.g. CUDA_VISIBLE_DEVICES={present.replace(' ', '')}",
        )
    tp = facts.intent.tensor_parallel_size
    if tp is None:
        return "skip", f"{len(visible)} GPU(s) visible ({shown}); no tensor-parallel size given", ""
    if tp > len(visible):
        return (
            "fail",
            f"tensor-parallel size {tp} but {len(visible)} GPU(s) visible ({shown})",
            f"make {tp} GPUs visible or use --tensor-parallel-size {len(visible)}",
        )
    if tp < len(visible):
        return (
            "warn",
            f"{len(visible)} GPUs visible ({shown}) but tensor-parallel size {tp}: {len(visible) - tp} stay idle",
            "limit CUDA_VISIBLE_DEVICES to the GPUs this server uses, or raise the tensor-parallel size",
        )
    return "pass", f"tensor-parallel size {tp} over {len(visible)} visible GPU(s) ({shown})", ""


@rule("nvlink-nccl", "NCCL told to use NVLink", on_visible_gpus=True)
def nvlink_nccl(facts: Facts, gpus: list[GpuFacts]) -> tuple[Status, str, str]:
    if len(gpus) < 2:
        return "skip", "one GPU visible: no GPU-to-GPU traffic", ""
    if not facts.topology:
        return "skip", "GPU topology not known (nvidia-smi topo -m)", ""
    pairs = [(a, b) for i, a in enumerate(gpus) for b in gpus[i + 1 :]]
    linked = [
        f"GPU{a.index}-GPU{b.index} {facts.link(a.index, b.index)}"
        for a, b in pairs
        if facts.nvlinked(a.index, b.index)
    ]
    if not linked:
        links = ", ".join(f"GPU{a.index}-GPU{b.index} {facts.link(a.index, b.index) or '?'}" for a, b in pairs)
        return "pass", f"no NVLink between the visible GPUs ({links}): NCCL uses PCIe", ""
    level = facts.env.get("NCCL_P2P_LEVEL")
    if facts.env.get("NCCL_P2P_DISABLE", "0") not in ("0", ""):
        return (
            "fail",
            f"NVLink joins {', '.join(linked)} but NCCL_P2P_DISABLE={facts.env['NCCL_P2P_DISABLE']} "
            "sends traffic through host memory",
            "unset NCCL_P2P_DISABLE and export NCCL_P2P_LEVEL=NVL",
        )
    if (level or "").upper() != "NVL":
        return (
            "warn",
            f"NVLink joins {', '.join(linked)} but NCCL_P2P_LEVEL is {level or 'unset'}",
            "export NCCL_P2P_LEVEL=NVL (field reports: ~30 % lower tensor-parallel latency); the NVLink presets set it",
        )
    return "pass", f"NVLink joins {', '.join(linked)}; NCCL_P2P_LEVEL=NVL", ""


@rule("shm", "/dev/shm size")
def shm(facts: Facts) -> tuple[Status, str, str]:
    if not facts.gpus:
        return NO_GPU
    if facts.shm_bytes is None:
        return "skip", "/dev/shm size not known", ""
    size = f"/dev/shm is {facts.shm_bytes / GIB:.2f} GiB"
    fix = "give the container more: docker run --shm-size=16g (or --ipc=host)"
    if facts.shm_bytes < 1 * GIB:
        return "fail", f"{size}: Docker's 64 MB default broke model loading in field reports", fix
    if facts.shm_bytes < 16 * GIB:
        return "warn", f"{size}, less than the 16 GiB vLLM's worker processes were reported to need", fix
    return "pass", size, ""


@rule("thermal", "temperature and throttling", on_visible_gpus=True)
def thermal(facts: Facts, gpus: list[GpuFacts]) -> tuple[Status, str, str]:
    worst: Status = "pass"
    seen, fixes = [], []
    for g in gpus:
        slowing = [r for r in g.throttle_reasons if r in SLOWING_REASONS]
        clocks = f", SM {g.sm_clock_mhz}/{g.max_sm_clock_mhz} MHz" if g.sm_clock_mhz and g.max_sm_clock_mhz else ""
        hot_at = (g.slowdown_temp_c - 5) if g.slowdown_temp_c else 85
        temp = f"{g.temperature_c:.0f} C" if g.temperature_c is not None else "temperature unknown"
        seen.append(f"GPU{g.index} {temp}" + (f", throttling: {', '.join(slowing)}{clocks}" if slowing else ""))
        if any(r in THERMAL_REASONS for r in slowing):
            worst = "fail"
            fixes.append(
                f"GPU{g.index} is slowed by heat or its board: check airflow, fans and inlet temperature "
                "(field reports: 55 -> 30 tok/s on hot V100s)"
            )
        elif slowing:
            worst = "warn" if worst == "pass" else worst
            limit = f" ({g.power_limit_w:.0f} W)" if g.power_limit_w else ""
            fixes.append(f"GPU{g.index} is at its power limit{limit}: see nvidia-smi -q -d POWER,PERFORMANCE")
        elif g.temperature_c is not None and g.temperature_c >= hot_at:
            worst = "warn" if worst == "pass" else worst
            fixes.append(f"GPU{g.index} runs at {temp}, near its slowdown point: improve cooling before it throttles")
    idle = all("gpu_idle" in g.throttle_reasons for g in gpus)
    saw = "; ".join(seen) + (" (idle)" if idle and worst == "pass" else "")
    return worst, saw, "; ".join(fixes)


@rule("memory-fit", "free GPU memory vs the plan", on_visible_gpus=True)
def memory_fit(facts: Facts, gpus: list[GpuFacts]) -> tuple[Status, str, str]:
    intent = facts.intent
    if not intent.model_config and not intent.model:
        return "skip", "no model given (--model DIR or --preset with --model)", ""
    model = (
        load_model(intent.model)
        if intent.model and not intent.model_config
        else ModelInfo(ModelShape.from_config(intent.model_config or {}), intent.model or "MODEL")
    )
    small = min(gpus, key=lambda g: g.memory_total_bytes or 0)
    if not small.memory_total_bytes:
        return "skip", "GPU memory size not reported", ""
    spec = GpuSpec(
        small.name, small.name, small.memory_total_bytes, bandwidth_for(small.name) or 900.0, small.compute_capability
    )
    quant = intent.quant or ("bf16" if (intent.dtype or "").startswith("b") else "fp16")
    util = intent.gpu_memory_utilization or 0.90
    req = PlanRequest(
        spec,
        intent.tensor_parallel_size or len(gpus),
        quant,
        intent.max_model_len or 4096,
        intent.kv_cache_dtype or "auto",
        util,
    )
    plan = make_plan(model, req)
    if not plan.fits:
        options = ", ".join(o["change"] for o in plan.options[:3]) or "a smaller model"
        return "fail", "; ".join(plan.fit_reasons), f"try {options} (assistant plan shows the arithmetic)"
    want = util * small.memory_total_bytes
    short = [g for g in gpus if g.memory_free_bytes is not None and g.memory_free_bytes < want]
    fits = (
        f"{plan.max_concurrent_seqs} full-length sequence(s) of {req.max_model_len:,} tokens fit "
        f"({quant}, {plan.weights_per_gpu_bytes / 1e9:.1f} GB weights per GPU)"
    )
    if short:
        g = short[0]
        free, total = g.memory_free_bytes or 0, g.memory_total_bytes or 1
        lower = max(free / total - 0.02, 0.05)
        return (
            "fail",
            f"{fits}, but GPU{g.index} has {free / GIB:.1f} GiB free and vLLM wants "
            f"{util:.2f} x {total / GIB:.1f} GiB = {want / GIB:.1f} GiB at start",
            f"stop the other processes on GPU{g.index} (nvidia-smi lists them) "
            f"or lower --gpu-memory-utilization to {lower:.2f} and re-run plan",
        )
    return "pass", fits, ""
