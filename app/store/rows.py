"""A triage's rows as plain values: what every write path of the store inserts, built here once.

No SQLAlchemy here: ``app.store.record`` inserts these rows with SQLAlchemy Core (any database),
``app.store.sqlite_plain`` with the ``sqlite3`` module (a SQLite file: the service's writer and a
cold ``tcfl triage``). The schema is ``app.store.tables``'s; the migrations stay its source.
"""

from __future__ import annotations

import hashlib
import json
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from app.analysis.model import Script
from app.analysis.snapshot import Snapshot
from app.history.signatures import log_signature, snapshot_signature

if TYPE_CHECKING:
    from app.analysis.snapshot import PackedSnapshot

SNAPSHOT_KEY = "_snapshot"  # where a runner hands the snapshot to the store beside the result's data
# What an analysis worker hands beside them, computed there (``app.service.pool_jobs``) so that
# the server process, which every request crosses, does not: the failure's id (``failure_id``,
# from the case and its snapshot, which the worker has in hand; not from the result's data)
SIGNATURE_KEY = "_signature"
_HANDED = (SNAPSHOT_KEY, SIGNATURE_KEY)
ERROR_TEXT_CHARS = 1000


def utcnow() -> datetime:
    return datetime.now(UTC)


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
    """A runner hands the analysis snapshot beside the result's data; it is stored in its own tables
    (what else was handed beside is left out: the store derives it again)."""
    rest, snapshot, _ = split_handed(data)
    return rest, snapshot


def split_handed(data: dict[str, Any]) -> tuple[dict[str, Any], Any, str | None]:
    """The result's data; and what was handed beside it, each None when not: the snapshot and the
    failure's id."""
    if not any(key in data for key in _HANDED):
        return data, None, None
    rest = dict(data)
    snapshot, signature = (rest.pop(key, None) for key in _HANDED)
    return rest, snapshot, signature


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


def request_row(case: Submission, status: str, now: datetime, error: str | None = None) -> dict[str, Any]:
    """A ``triage_requests`` row (its id is the database's)."""
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


def link_rows(case: Submission, request_id: int, ids: Mapping[str, int]) -> list[dict[str, Any]]:
    """The ``request_scripts`` rows of a request; ``ids`` maps each content's hash to its script id."""
    return [
        {"request_id": request_id, "position": i, "path": s.path, "script_id": ids[sha256_text(s.content)]}
        for i, s in enumerate(case.scripts)
    ]


def script_row(content: str, digest: str) -> dict[str, Any]:
    """A ``scripts`` row: one script content, kept once whatever requests name it."""
    return {
        "sha256": digest,
        "size": len(content.encode("utf-8")),
        "content_z": pack(content),
        "created_at": utcnow(),
    }


def result_row(request_id: int, data: dict[str, Any], now: datetime) -> dict[str, Any]:
    """A ``results`` row of a synchronous triage (no batch item)."""
    return {"request_id": request_id, "data": data, "created_at": now}


def snapshot_rows(
    request_id: int, snapshot: Snapshot | PackedSnapshot | None, data: Mapping[str, Any], signature: str
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The ``analysis_snapshots`` row and the ``log_chunks`` rows of a triage."""
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


def triage_rows(
    split: Sequence[tuple[Submission, dict[str, Any], Any]],
    request_ids: Sequence[int],
    signatures: Sequence[str | None] | None = None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """The ``results``, ``analysis_snapshots`` and ``log_chunks`` rows of finished triages, each
    ``(case, data, snapshot)`` (``split_snapshot``) beside its request's id, and the failure's id
    where an analysis worker computed it (else it is computed here)."""
    now = utcnow()
    results: list[dict[str, Any]] = []
    snapshots: list[dict[str, Any]] = []
    chunks: list[dict[str, Any]] = []
    given = signatures if signatures is not None else [None] * len(split)
    for (case, data, snapshot), rid, known in zip(split, request_ids, given, strict=True):
        results.append(result_row(rid, data, now))
        signature = known or failure_id(case.options, summary_of(snapshot), lambda case=case: case)
        row, chunk_rows = snapshot_rows(rid, snapshot, data, signature)
        snapshots.append(row)
        chunks.extend(chunk_rows)
    return results, snapshots, chunks


def handed(data: dict[str, Any], case: Submission, snapshot: Any, log_format: str | None) -> dict[str, Any]:
    """``data`` with the failure's id beside it (``SIGNATURE_KEY``): what an analysis worker
    computes for the store. ``snapshot`` is the packed one the store will get; ``log_format`` the
    case's option (without one the id is read off the snapshot's summary)."""
    return {**data, SIGNATURE_KEY: failure_id({"log_format": log_format}, summary_of(snapshot), lambda: case)}


def stored(case: Submission, request_id: int, now: datetime, data: dict[str, Any]) -> StoredTriage:
    """What a finished triage's write answers."""
    return StoredTriage(
        id=request_id,
        status="done",
        test_id=case.test_id,
        created_at=now,
        options=dict(case.options),
        error=None,
        result=data,
    )
