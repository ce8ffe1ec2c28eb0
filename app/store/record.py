"""Writing one triage (request, scripts, result, snapshot) with SQLAlchemy Core.

This is the store's Core write path for a triage's rows (built by ``app.store.rows``): ``Store``
calls it on its session's connection (a SQLite file takes the same rows through
``app.store.sqlite_plain``). Everything here runs inside the caller's transaction.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, bindparam, delete, insert, select

from app.analysis.model import Script
from app.store import tables
from app.store.rows import (  # noqa: F401  (re-exported: the store's row values)
    ERROR_TEXT_CHARS,
    SNAPSHOT_KEY,
    StoredTriage,
    Submission,
    aware,
    failure_id,
    index_values,
    link_rows,
    pack,
    plain,
    request_row,
    script_row,
    sha256_text,
    snapshot_rows,
    split_snapshot,
    stored,
    summary_of,
    triage_rows,
    unpack,
    utcnow,
)

if TYPE_CHECKING:
    from app.analysis.snapshot import PackedSnapshot, Snapshot

# Statements built once and given their values as parameters: SQLAlchemy compiles each once
# (its cache), where ``.values(...)`` built a new statement and coerced every value per call.
_INSERT_REQUEST = insert(tables.triage_requests)
# many at once, their ids back in the order given (SQLAlchemy's "insertmanyvalues")
_INSERT_REQUESTS = insert(tables.triage_requests).returning(
    tables.triage_requests.c.id, sort_by_parameter_order=True
)
_INSERT_REQUEST_SCRIPT = insert(tables.request_scripts)
_INSERT_RESULT = insert(tables.results)
_INSERT_SNAPSHOT = insert(tables.analysis_snapshots)
_INSERT_CHUNK = insert(tables.log_chunks)
_SCRIPT_IDS = select(tables.scripts.c.sha256, tables.scripts.c.id).where(
    tables.scripts.c.sha256.in_(bindparam("hashes", expanding=True))
)


def record_to(url: str, case: Submission, data: dict[str, Any]) -> StoredTriage:
    """Open the database at ``url`` (migrating it when behind), store one finished triage, close.

    The CLI's path: one engine, one connection from its pool, one write transaction.
    """
    from app.store.engine import make_engine, migrate

    engine = make_engine(url)
    try:
        migrate(engine)
        with engine.begin() as conn:
            return record_triage(conn, case, data)
    finally:
        engine.dispose()


def record_triage(conn: Connection, case: Submission, data: dict[str, Any]) -> StoredTriage:
    """A finished triage: its request (done), its result and its snapshot."""
    return record_triages(conn, [(case, data)])[0]


def record_triages(
    conn: Connection,
    items: Sequence[tuple[Submission, dict[str, Any]]],
    signatures: Sequence[str | None] | None = None,
) -> list[StoredTriage]:
    """Finished triages, each stored as ``record_triage`` stores one, with one statement per
    table for them all (the service's writer stores the triages that finish together so);
    ``signatures``: each failure's id where the caller has it already (``app.store.rows.triage_rows``)."""
    if not items:
        return []
    split = [(case, *split_snapshot(data)) for case, data in items]
    ids = scripts_ids(conn, [s.content for case, _, _ in split for s in case.scripts])
    now = utcnow()
    rows = [request_row(case, "done", now) for case, _, _ in split]
    request_ids = [int(i) for i in conn.execute(_INSERT_REQUESTS, rows).scalars()]
    links = [
        link
        for (case, _, _), rid in zip(split, request_ids, strict=True)
        for link in link_rows(case, rid, ids)
    ]
    results, snapshots, chunks = triage_rows(split, request_ids, signatures)
    if links:
        conn.execute(_INSERT_REQUEST_SCRIPT, links)
    conn.execute(_INSERT_RESULT, results)
    conn.execute(_INSERT_SNAPSHOT, snapshots)
    if chunks:
        conn.execute(_INSERT_CHUNK, chunks)
    return [stored(case, rid, now, data) for (case, data, _), rid in zip(split, request_ids, strict=True)]


def add_request(
    conn: Connection,
    case: Submission,
    status: str,
    *,
    script_ids: Mapping[str, int] | None = None,
    error: str | None = None,
) -> tuple[int, datetime]:
    """Insert a request and its script links; its id and creation time."""
    ids = script_ids if script_ids is not None else scripts_ids(conn, [s.content for s in case.scripts])
    now = utcnow()
    row = request_row(case, status, now, error)
    request_id = int(conn.execute(_INSERT_REQUEST, row).inserted_primary_key[0])
    if case.scripts:
        conn.execute(_INSERT_REQUEST_SCRIPT, link_rows(case, request_id, ids))
    return request_id, now


def scripts_ids(conn: Connection, contents: Sequence[str]) -> dict[str, int]:
    """Insert unseen contents (racing inserts of the same content are harmless) and map hash -> id."""
    unique = {sha256_text(c): c for c in contents}
    if not unique:
        return {}
    insert_new = _insert_scripts(conn.dialect.name)
    hashes = list(unique)
    ids: dict[str, int] = {}
    for start in range(0, len(hashes), 500):
        chunk = hashes[start : start + 500]
        known = dict(conn.execute(_SCRIPT_IDS, {"hashes": chunk}).all())
        missing = [h for h in chunk if h not in known]
        if missing:
            rows = [script_row(unique[h], h) for h in missing]
            conn.execute(insert_new, rows)
            known.update(conn.execute(_SCRIPT_IDS, {"hashes": missing}).all())
        ids.update(known)
    return ids


_INSERT_SCRIPTS: dict[str, Any] = {}


def _insert_scripts(dialect: str) -> Any:
    """``INSERT ... ON CONFLICT (sha256) DO NOTHING`` for the dialect, built once (then cached
    compiled) and given its rows as parameters."""
    if dialect not in _INSERT_SCRIPTS:
        if dialect == "postgresql":  # each dialect loads when used: postgresql's is not cheap to import
            from sqlalchemy.dialects.postgresql import insert as dialect_insert
        else:
            from sqlalchemy.dialects.sqlite import insert as dialect_insert
        _INSERT_SCRIPTS[dialect] = dialect_insert(tables.scripts).on_conflict_do_nothing(
            index_elements=["sha256"]
        )
    return _INSERT_SCRIPTS[dialect]


def stored_case(conn: Connection, request_id: int) -> Submission:
    """A stored triage's submission (scripts, log, options), read with Core on ``conn``."""
    request = conn.execute(
        select(
            tables.triage_requests.c.options, tables.triage_requests.c.log_z, tables.triage_requests.c.test_id
        ).where(tables.triage_requests.c.id == request_id)
    ).one()
    links, blobs = tables.request_scripts, tables.scripts
    scripts = conn.execute(
        select(links.c.path, blobs.c.content_z)
        .join(blobs, blobs.c.id == links.c.script_id)
        .where(links.c.request_id == request_id)
        .order_by(links.c.position)
    ).all()
    return Submission(
        scripts=tuple(Script(path, unpack(blob)) for path, blob in scripts),
        log=unpack(request.log_z),
        options=dict(request.options or {}),
        test_id=request.test_id,
    )


def write_snapshot(
    conn: Connection,
    request_id: int,
    snapshot: Snapshot | PackedSnapshot | None,
    data: Mapping[str, Any],
    *,
    replace: bool = True,
) -> None:
    """The triage's snapshot row and log chunks (a ``Snapshot`` is packed here; an analysis
    worker hands it packed); ``replace`` first deletes any stored before."""
    if replace:
        chunks, rows = tables.log_chunks, tables.analysis_snapshots
        conn.execute(delete(chunks).where(chunks.c.request_id == request_id))
        conn.execute(delete(rows).where(rows.c.request_id == request_id))
    options = conn.execute(
        select(tables.triage_requests.c.options).where(tables.triage_requests.c.id == request_id)
    ).scalar_one()
    signature = failure_id(options or {}, summary_of(snapshot), lambda: stored_case(conn, request_id))
    row, chunk_rows = snapshot_rows(request_id, snapshot, data, signature)
    conn.execute(_INSERT_SNAPSHOT, row)
    if chunk_rows:
        conn.execute(_INSERT_CHUNK, chunk_rows)
