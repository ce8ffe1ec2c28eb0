"""Writing one triage (request, scripts, result, snapshot) with SQLAlchemy Core.

This is the store's one write path for a triage's rows: ``Store`` calls it on its session's
connection, and ``tcfl triage`` calls it on a bare engine (``record_to``), so a cold CLI triage
does not import ``sqlalchemy.orm`` or build the mapped classes. Everything here runs inside the
caller's transaction.
"""

from __future__ import annotations

import hashlib
import json
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, bindparam, delete, insert, select

from app.analysis.model import Script
from app.analysis.snapshot import Snapshot
from app.history.signatures import log_signature, snapshot_signature
from app.store import tables
from app.store.tables import utcnow

if TYPE_CHECKING:
    from app.analysis.snapshot import PackedSnapshot

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

SNAPSHOT_KEY = "_snapshot"  # where a runner hands the snapshot to the store beside the result's data
ERROR_TEXT_CHARS = 1000


@dataclass(frozen=True)
class Submission:
    """A submitted triage, validated, its options resolved: what the pipeline needs, and a label.

    (A benchmark case with its known faults is the harness's ``tcfl_lab.eval.cases.Case``, another thing.)
    """

    scripts: tuple[Script, ...]
    log: str
    options: dict[str, Any]
    test_id: str | None = None
    test: str | None = None  # the failing test's key in the CI history (its runs are read before ranking)


@dataclass(frozen=True)
class StoredTriage:
    """One stored triage: its request's state and, where it was read, the result's data.

    The API's and the dashboard's JSON are built from it in one place (``app.service.views``).
    """

    id: int
    status: str
    test_id: str | None
    created_at: datetime | None
    options: dict[str, Any]
    error: str | None
    result: dict[str, Any] | None = None  # None until done, and in list pages (not read there)

    @property
    def summary_index(self) -> dict[str, Any]:
        """The options a list row shows (level, k, trace, ranker)."""
        return {key: self.options.get(key) for key in ("level", "k", "trace", "ranker")}


def aware(value: datetime | None) -> datetime | None:
    """SQLite hands timestamps back without a zone; they were written in UTC."""
    if value is None or value.tzinfo is not None:
        return value
    return value.replace(tzinfo=UTC)


def pack(text_value: str) -> bytes:
    return zlib.compress(text_value.encode("utf-8"), 6)


def unpack(blob: bytes) -> str:
    return zlib.decompress(blob).decode("utf-8")


def plain(message: str) -> str:
    """Error text goes into text columns, which cannot hold NUL on PostgreSQL."""
    return message.replace("\x00", "\\x00")


def sha256_text(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8")).hexdigest()


def split_snapshot(data: dict[str, Any]) -> tuple[dict[str, Any], Any]:
    """A runner hands the analysis snapshot beside the result's data; it is stored in its own tables."""
    if SNAPSHOT_KEY not in data:
        return data, None
    rest = dict(data)
    return rest, rest.pop(SNAPSHOT_KEY)


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
    conn: Connection, items: Sequence[tuple[Submission, dict[str, Any]]]
) -> list[StoredTriage]:
    """Finished triages, each stored as ``record_triage`` stores one, with one statement per
    table for them all (the service's writer stores the triages that finish together so)."""
    if not items:
        return []
    split = [(case, *split_snapshot(data)) for case, data in items]
    ids = scripts_ids(conn, [s.content for case, _, _ in split for s in case.scripts])
    now = utcnow()
    rows = [_request_row(case, "done", now) for case, _, _ in split]
    request_ids = [int(i) for i in conn.execute(_INSERT_REQUESTS, rows).scalars()]
    links: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    snapshots: list[dict[str, Any]] = []
    chunks: list[dict[str, Any]] = []
    for (case, data, snapshot), rid in zip(split, request_ids, strict=True):
        links.extend(_links(case, rid, ids))
        results.append({"request_id": rid, "data": data})
        signature = failure_id(case.options, summary_of(snapshot), lambda case=case: case)
        row, chunk_rows = _snapshot_rows(rid, snapshot, data, signature)
        snapshots.append(row)
        chunks.extend(chunk_rows)
    if links:
        conn.execute(_INSERT_REQUEST_SCRIPT, links)
    conn.execute(_INSERT_RESULT, results)
    conn.execute(_INSERT_SNAPSHOT, snapshots)
    if chunks:
        conn.execute(_INSERT_CHUNK, chunks)
    return [
        StoredTriage(
            id=rid,
            status="done",
            test_id=case.test_id,
            created_at=now,
            options=dict(case.options),
            error=None,
            result=data,
        )
        for (case, data, _), rid in zip(split, request_ids, strict=True)
    ]


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
    row = _request_row(case, status, now, error)
    request_id = int(conn.execute(_INSERT_REQUEST, row).inserted_primary_key[0])
    if case.scripts:
        conn.execute(_INSERT_REQUEST_SCRIPT, _links(case, request_id, ids))
    return request_id, now


def _request_row(case: Submission, status: str, now: datetime, error: str | None = None) -> dict[str, Any]:
    return {
        "test_id": case.test_id,
        "status": status,
        "options": case.options,
        "log_z": pack(case.log),
        "log_sha256": sha256_text(case.log),
        "error": error,
        "created_at": now,
        "updated_at": now,
    }


def _links(case: Submission, request_id: int, ids: Mapping[str, int]) -> list[dict[str, Any]]:
    return [
        {"request_id": request_id, "position": i, "path": s.path, "script_id": ids[sha256_text(s.content)]}
        for i, s in enumerate(case.scripts)
    ]


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
            rows = [
                {
                    "sha256": h,
                    "size": len(unique[h].encode("utf-8")),
                    "content_z": pack(unique[h]),
                    "created_at": utcnow(),
                }
                for h in missing
            ]
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


def index_values(data: Mapping[str, Any], signature: str | None = None) -> dict[str, Any]:
    """The list page's columns, from a result's data and the failure's id (``failure_id``); without
    one, as for a test the results give no log for, the id is the error text's."""
    ranking = data.get("ranking") or []
    top = ranking[0] if ranking else None
    message = data.get("error_message")
    text = message if isinstance(message, str) else ""
    return {
        "signature": signature or log_signature(text),
        "error_text": plain(text[:ERROR_TEXT_CHARS]) if isinstance(message, str) else None,
        "ranker": data.get("ranker"),
        "top_path": (str(top.get("path"))[:1024] if top else None),
    }


def failure_id(
    options: Mapping[str, Any], summary: Mapping[str, Any] | None, case: Callable[[], Submission]
) -> str:
    """A triaged failure's id, the one ``tcfl ci``, the stored runs and ``/v1/signatures`` give it
    (``app.history.signatures``): from its log and scripts, read off the summary of their analysis
    snapshot when there is one and the log was parsed as the id parses it (no ``log_format``); else
    from ``case()``, the submission."""
    if summary is not None and "error" in summary and "files" in summary and not options.get("log_format"):
        return snapshot_signature(summary)
    submitted = case()
    return log_signature(submitted.log, submitted.scripts)


def summary_of(snapshot: Snapshot | PackedSnapshot | None) -> dict[str, Any] | None:
    """A snapshot's summary, unpacked."""
    if snapshot is None:
        return None
    if isinstance(snapshot, Snapshot):
        return snapshot.summary
    return json.loads(zlib.decompress(snapshot.summary_z))


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
    row, chunk_rows = _snapshot_rows(request_id, snapshot, data, signature)
    conn.execute(_INSERT_SNAPSHOT, row)
    if chunk_rows:
        conn.execute(_INSERT_CHUNK, chunk_rows)


def _snapshot_rows(
    request_id: int, snapshot: Snapshot | PackedSnapshot | None, data: Mapping[str, Any], signature: str
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    packed = snapshot.packed() if isinstance(snapshot, Snapshot) else snapshot
    row = {
        "request_id": request_id,
        "version": packed.version if packed is not None else None,
        "summary_z": packed.summary_z if packed is not None else None,
        "log_lines": packed.log_lines if packed is not None else 0,
        "created_at": utcnow(),
        **index_values(data, signature),
    }
    chunks = [
        {
            "request_id": request_id,
            "chunk": c.index,
            "first_line": c.first_line,
            "line_count": c.line_count,
            "text_z": c.text_z,
            "marks": c.marks,
        }
        for c in (packed.chunks if packed is not None else ())
    ]
    return row, chunks
