"""`assistant db upgrade|status|revision|copy`: the store's schema migrations, and moving a store.

`upgrade` brings the configured store (the data dir's SQLite file, or ASSISTANT_DATABASE_URL) to the
newest schema; `serve` and `worker` do the same when they open it. `copy --to URL` copies the store
into an empty PostgreSQL database and verifies the copy by its row counts and by searching both
stores with sampled questions.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from functools import partial
from pathlib import Path

from indexes import migrations
from indexes.store_copy import CopyError, copy_store, table_counts
from indexes.db import driver, make_store_engine
from indexes.factory import embedder_from, retriever_from
from indexes.pg import is_postgres_url
from indexes.store import Store

from assistant.security.redaction import redact_text, redact_url
from assistant.settings import Settings
from assistant.commands import fail as failed

fail = partial(failed, command="assistant db")


def register(sub: argparse._SubParsersAction) -> None:
    from assistant.cli import add_common

    p = sub.add_parser("db", help="the store's schema (migrations) and copying a store into PostgreSQL")
    dbsub = p.add_subparsers(dest="db_command", metavar="ACTION", required=True)
    up = add_common(dbsub.add_parser("upgrade", help="migrate the configured store to the newest schema"))
    up.set_defaults(func=run_upgrade)
    st = add_common(dbsub.add_parser("status", help="the store's schema revision and any difference from the models"))
    st.set_defaults(func=run_status)
    rev = add_common(dbsub.add_parser("revision", help="write a migration for what the models changed (for developers)"))
    rev.add_argument("-m", "--message", required=True, help="what the revision changes")
    rev.set_defaults(func=run_revision)
    cp = add_common(dbsub.add_parser(
        "copy", help="copy the configured store into an empty PostgreSQL database, verified"))
    cp.add_argument("--to", required=True, metavar="URL", help="postgresql+psycopg://user:password@host/db")
    cp.add_argument("--questions", type=int, default=20, help="sampled searches compared after the copy")
    cp.add_argument("-k", type=int, default=5, help="hits compared per sampled search")
    cp.add_argument("--json", action="store_true", help="print the report as JSON")
    cp.set_defaults(func=run_copy)



def where(settings: Settings) -> str:
    return redact_url(settings.database_url) if settings.database_url else str(settings.data_dir / "store.db")


def run_upgrade(args: argparse.Namespace, settings: Settings) -> int:
    engine = make_store_engine(settings.data_dir, settings.database_url)  # opening migrates
    try:
        with engine.connect() as conn:
            print(f"{where(settings)}: at revision {migrations.current(conn)} (newest {migrations.head()})")
    finally:
        engine.dispose()
    return 0


def run_status(args: argparse.Namespace, settings: Settings) -> int:
    engine = make_store_engine(settings.data_dir, settings.database_url)
    try:
        with engine.connect() as conn:
            diffs = migrations.differences(conn)
            print(f"{where(settings)}: revision {migrations.current(conn)} (newest {migrations.head()})")
    finally:
        engine.dispose()
    for diff in diffs:
        print(f"  differs from the models: {diff}")
    return 1 if diffs else 0


def run_revision(args: argparse.Namespace, settings: Settings) -> int:
    if not args.message.strip():
        return fail("the message is empty")
    engine = make_store_engine(settings.data_dir, settings.database_url)
    try:
        with engine.begin() as conn:
            if not migrations.differences(conn):
                print("the migrations already make the models' schema: nothing to write")
                return 0
            print(f"wrote {migrations.revision(conn, args.message.strip())}")
    finally:
        engine.dispose()
    return 0


def sample_questions(store: Store, n: int) -> list[tuple[str, str]]:
    """(collection, question) pairs: the opening words of chunks spread evenly over the store."""
    with store.engine.connect() as conn:
        rows = driver(conn).execute(
            "SELECT k.name, c.text FROM chunk c JOIN collection k ON k.id = c.collection_id "
            "WHERE substr(k.name, 1, 1) != '~' ORDER BY c.id").fetchall()
    if not rows or n <= 0:
        return []
    step = max(len(rows) // n, 1)
    picked = rows[::step][:n]
    return [(name, " ".join(text.split()[:12])) for name, text in picked if text.strip()]


def compare_searches(source: Store, target: Store, settings: Settings, n: int, k: int) -> list[dict]:
    """The top-k chunk ids of sampled questions on both stores, and whether they agree."""
    embedder = embedder_from(settings.embedder)
    src = retriever_from(settings.retrieval, source, embedder, settings.embedder)  # each collection's own model
    dst = retriever_from(settings.retrieval, target, embedder, settings.embedder)
    out = []
    for collection, question in sample_questions(source, n):
        a = [h.chunk_id for h in src.search(question, [collection], k)]
        b = [h.chunk_id for h in dst.search(question, [collection], k)]
        out.append({"collection": collection, "question": question, "source": a, "target": b, "same": a == b})
    return out


def run_copy(args: argparse.Namespace, settings: Settings) -> int:
    if not is_postgres_url(args.to):
        return fail("--to must be a postgresql+psycopg://... URL")
    if not 0 <= args.questions <= 1000 or not 1 <= args.k <= 100:
        return fail("--questions must be 0-1000 and -k 1-100")
    url = "postgresql+psycopg://" + args.to.split("://", 1)[1]
    if settings.database_url and settings.database_url == url:
        return fail("the source and the target are the same database")
    source = Store(settings.data_dir, database_url=settings.database_url)
    with tempfile.TemporaryDirectory(prefix="assistant-copy-") as work:
        try:
            target = Store(Path(work), database_url=url)  # its derived indexes in a scratch dir
        except Exception as exc:  # noqa: BLE001  (a wrong URL, an unreachable server: said plainly)
            source.close()
            return fail(redact_text(f"cannot open {redact_url(url)}: {exc}"))
        try:
            copied = copy_store(source.engine, target.engine,
                                progress=None if args.json else lambda t, n: print(f"\r{t}: {n}", end="", file=sys.stderr))
            if not args.json:
                print(file=sys.stderr)
            counts_source, counts_target = table_counts(source.engine), table_counts(target.engine)
            searches = compare_searches(source, target, settings, args.questions, args.k)
        except CopyError as exc:
            return fail(str(exc))
        finally:
            source.close()
            target.close()
    same_counts = counts_source == counts_target
    same_searches = all(s["same"] for s in searches)
    report = {"from": where(settings), "to": redact_url(url), "copied": copied, "counts_equal": same_counts,
              "searches": len(searches), "searches_equal": sum(s["same"] for s in searches),
              "differences": [s for s in searches if not s["same"]]}
    if args.json:
        print(json.dumps(report, ensure_ascii=False, indent=2))
    else:
        for table, n in copied.items():
            mark = "ok" if counts_source[table] == counts_target[table] else f"MISMATCH (source {counts_source[table]})"
            print(f"{table:14} {n:>10} rows  {mark}")
        print(f"sampled searches: {report['searches_equal']}/{len(searches)} with the same top {args.k}")
    return 0 if same_counts and same_searches else 1
