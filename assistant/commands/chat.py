"""`assistant chat`: a conversation in the terminal, kept in the store so that it can be resumed.

Each answer streams as it is generated, then its sources are listed. Follow-up questions are
rewritten to stand alone before retrieval, as in `/api/ask` with a `conversation_id`. `/quit` or
Ctrl-D ends the chat; `--conversation ID` resumes a saved one.
"""

from __future__ import annotations

import argparse
import asyncio

from rich.console import Console
from rich.text import Text

from indexes.conversations import create_conversation, latest_variants
from indexes.store import Store
from indexes.terminal_text import terminal_safe

from assistant.backends.registry import backend_names
from assistant.answers.ask import AskError, Question
from assistant.answers.conversation import UnknownConversation, collections_of, require_conversation
from assistant.commands.query import ask_failure, check_notice, fail, quoted_after, source_line
from assistant.security.access import LOCAL_USER
from assistant.services import Services
from assistant.settings import Settings

QUIT = {"/quit", "/exit"}


def register(sub: argparse._SubParsersAction) -> None:
    from assistant.cli import add_common

    p = add_common(sub.add_parser(
        "chat", help="a conversation in the terminal, saved in the store (resume with --conversation)"))
    p.add_argument("--collection", "-c", action="append", help="collection (repeat for several); "
                   "a resumed conversation keeps its own unless given")
    p.add_argument("--conversation", type=int, metavar="ID", help="resume this saved conversation")
    p.add_argument("-k", type=int, help="sources to give the model")
    p.add_argument("--backend", choices=backend_names(), help="LLM backend")
    p.set_defaults(func=run_chat, overrides=lambda a: {"backend": a.backend} if a.backend else {})


def run_chat(args: argparse.Namespace, settings: Settings) -> int:
    if args.k is not None and not 1 <= args.k <= 50:
        return fail("-k must be between 1 and 50")
    if not args.collection and args.conversation is None:
        return fail("name a collection (--collection) or a conversation to resume (--conversation)")
    store = Store(settings.data_dir, database_url=settings.database_url)  # checked before the models load: a mistake is told at once
    try:
        collections, error = chat_scope(store, args)
    finally:
        store.close()
    if error:
        return fail(error)
    services = Services.build(settings)
    try:
        return asyncio.run(chat(services, collections, args.conversation, args.k))
    finally:
        asyncio.run(services.aclose())


def chat_scope(store: Store, args: argparse.Namespace) -> tuple[list[str], str | None]:
    """The collections the chat asks (given, or the resumed conversation's), or what is wrong."""
    collections = list(dict.fromkeys(args.collection or []))
    if args.conversation is not None:
        try:
            conv = require_conversation(store.engine, args.conversation)
        except UnknownConversation as exc:
            return [], str(exc)
        collections = collections or collections_of(conv)
        if not collections:
            return [], "the conversation names no collection: give --collection"
    for name in collections:
        if store.get_collection(name) is None:
            known = ", ".join(c["name"] for c in store.list_collections()) or "none yet"
            return [], f"unknown collection {name!r} (known: {known})"
    return collections, None


def read_line(console: Console) -> str | None:
    """The next line typed, or None at the end of input (Ctrl-D). It blocks the event loop, which has
    nothing else to do between answers, so that Ctrl-C interrupts it at once."""
    try:
        return console.input("[bold]> [/bold]")
    except EOFError:
        return None


async def chat(services: Services, collections: list[str], conversation_id: int | None, k: int | None) -> int:
    console = Console(highlight=False)
    engine = services.store.engine
    if conversation_id is not None:
        conv = require_conversation(engine, conversation_id)
        turns = latest_variants(engine, conversation_id)  # each question once, by its latest answer
        title = terminal_safe(conv.title or "untitled", markup=True)
        console.print(f"[dim]Resuming conversation {conversation_id} ({title}): {len(turns)} turns.[/dim]")
        for t in turns[-3:]:
            console.print(Text(terminal_safe(f"> {t.question}\n{t.answer}", multiline=True), style="dim"))
    console.print(f"[dim]Asking {terminal_safe(', '.join(collections), markup=True)}. /quit or Ctrl-D ends the chat.[/dim]")
    limit = services.settings.server.max_question_chars
    status = 0
    while True:
        line = read_line(console)
        if line is None:
            console.print()  # the prompt's line was left open
            break
        if line.strip() in QUIT:
            break
        question = line.strip()
        if not question:
            continue
        if len(question) > limit:
            console.print(f"[red]The question is too long ({len(question)} > {limit} characters).[/red]")
            continue
        if conversation_id is None:
            conversation_id = create_conversation(engine, "", collections).id
            console.print(f"[dim]Conversation {conversation_id} (resume with --conversation {conversation_id}).[/dim]")
        status |= await ask_in_conversation(services, console, conversation_id, collections, question, k)
    if conversation_id is not None:
        console.print(f"[dim]Saved as conversation {conversation_id}.[/dim]")
    return status


async def ask_in_conversation(
    services: Services, console: Console, conversation_id: int, collections: list[str], question: str, k: int | None
) -> int:
    """One question of the conversation through the ask use case: streamed answer, then its sources; 1
    when it failed."""
    asked = Question(question, tuple(collections), k=k, conversation_id=conversation_id)
    try:
        answering = await services.asking.open(LOCAL_USER, asked)
    except AskError as exc:
        console.print(Text(f"error: {terminal_safe(ask_failure(exc, services), multiline=True)}", style="red"))
        return 1
    if answering.query != question:
        console.print(Text(f"searching for: {terminal_safe(answering.query)}", style="dim"))
    got = await answering.outcome(on_token=lambda text: console.print(Text(terminal_safe(text, multiline=True)), end=""))
    sources, done, failed = got.sources, got.fields, got.failed is not None
    if got.failed is not None:
        console.print(Text(f"\nerror: {terminal_safe(got.failed.message, multiline=True)} ({got.failed.code})", style="red"))
    console.print(Text(terminal_safe(quoted_after(done), multiline=True)))
    if notice := check_notice(done):
        console.print(Text(terminal_safe(notice, multiline=True), style="yellow"))
    for s in sources:
        console.print(Text(source_line(s), style="default"), highlight=False)
    return 1 if failed else 0
