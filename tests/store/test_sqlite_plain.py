"""The ``sqlite3`` write of a triage against SQLAlchemy Core's, on real SQLite files."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import insert

from app.analysis.model import Script
from app.service.pool_jobs import TriageJob
from app.service.pool_jobs import triage as triage_job
from app.store import record, sqlite_plain, tables
from app.store.rows import SIGNATURE_KEY, SNAPSHOT_KEY, StoredTriage, Submission
from app.store.sqlite_plain import DatabaseMissing, SqliteFile
from app.store.store import Store
from tests.service.test_snapshots import OPTIONS, SCRIPTS, case, padded_log, triage_data

TIME = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6}$")
TABLES = ("scripts", "triage_requests", "request_scripts", "results", "analysis_snapshots", "log_chunks")


def _items() -> list[tuple[Submission, dict[str, Any]]]:
    """Triages that cover the rows: a long log (several chunks), two scripts (one shared), no snapshot."""
    log = padded_log(300)
    two = Submission(
        scripts=(*SCRIPTS, Script("lib/helpers.py", "def helper():\n    return 1\n")),
        log=log,
        options={"trace": "tplus", "log_functions": ["Log.log"], "log_format": "plain"},
        test_id=None,
    )
    bare = Submission(scripts=(), log="boom\n", options={}, test_id="bare")
    return [
        (case(log), triage_data(log)),
        (two, triage_data(log)),
        (bare, {"ranking": [], "error_message": "x"}),
        *_from_the_worker(log),
    ]


def _from_the_worker(log: str) -> list[tuple[Submission, dict[str, Any]]]:
    """Triages as the analysis worker hands them (the failure's id beside the data,
    ``rows.handed``), with and without a snapshot: the Core path derives the id again, the
    sqlite3 path writes the one it was handed."""
    made = []
    for with_snapshot in (True, False):
        done, packed = triage_job(TriageJob(SCRIPTS, log, OPTIONS, snapshot=with_snapshot))
        assert SIGNATURE_KEY in done
        made.append((case(log), {**done, SNAPSHOT_KEY: packed} if packed is not None else done))
    return made


def _rows(path: Path) -> dict[str, list[dict[str, Any]]]:
    """Every row of the triage tables as SQLite holds it (JSON and times as text), times checked
    for their format and then left out (the two writes ran at different instants)."""
    db = sqlite3.connect(path)
    db.row_factory = sqlite3.Row
    try:
        out: dict[str, list[dict[str, Any]]] = {}
        for table in TABLES:
            found = []
            for row in db.execute(f"SELECT * FROM {table} ORDER BY rowid"):
                values = dict(row)
                for column in ("created_at", "updated_at"):
                    if column in values:
                        assert TIME.match(values.pop(column)), (table, column)
                found.append(values)
            out[table] = found
        return out
    finally:
        db.close()


def test_the_sqlite3_write_stores_the_rows_sqlalchemy_core_does(tmp_path: Path) -> None:
    """The same triages, on one new file through ``record.record_triages`` (Core), on another
    through ``Store.record_triages`` (``sqlite_plain.write_triages``): every row alike, as stored."""
    items = _items()
    answers: dict[str, list[StoredTriage]] = {}
    read: dict[str, list[Any]] = {}
    for how in ("core", "plain"):
        store = Store.open(f"sqlite:///{tmp_path / f'{how}.db'}")
        try:
            copies = [(c, dict(d)) for c, d in items]
            if how == "core":
                with store.engine.begin() as conn:
                    answers[how] = record.record_triages(conn, copies)
            else:
                answers[how] = store.record_triages(copies)
            read[how] = [(store.get_triage(t.id), store.load_case(t.id)) for t in answers[how]]
        finally:
            store.close()
    core, plain = _rows(tmp_path / "core.db"), _rows(tmp_path / "plain.db")
    assert all(core[table] for table in TABLES)
    for table in TABLES:
        assert plain[table] == core[table], table
    for ours, theirs in zip(answers["plain"], answers["core"], strict=True):
        assert ours == StoredTriage(**{**vars(theirs), "created_at": ours.created_at})
    for (ours, case_ours), (theirs, case_theirs) in zip(read["plain"], read["core"], strict=True):
        assert ours == StoredTriage(**{**vars(theirs), "created_at": ours.created_at})
        assert case_ours == case_theirs


def test_the_insert_columns_are_the_schemas(tmp_path: Path) -> None:
    """Each INSERT names every column of its table but the generated id and the nullable ones
    only other writes fill; and SQLAlchemy's own INSERT of those columns is the same statement."""
    from sqlalchemy.dialects import sqlite

    for name, columns in sqlite_plain.COLUMNS.items():
        table = tables.metadata.tables[name]
        assert set(columns) <= set(table.c.keys()), name
        left = {c.name for c in table.c if c.name not in columns}
        assert all(table.c[c].nullable or (c == "id" and table.c[c].primary_key) for c in left), (name, left)
        compiled = insert(table).values({c: None for c in columns}).compile(dialect=sqlite.dialect())
        assert f"INSERT INTO {name} ({', '.join(columns)})" == compiled.string.split(" VALUES")[0], name


def test_a_cli_triage_at_the_current_schema_is_written_without_sqlalchemy_and_reads_back(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'tcfl.db'}"
    log = padded_log(10)
    first = sqlite_plain.record(url, case(log), triage_data(log))  # a new file: created, migrated
    again = sqlite_plain.record(url, case(log), triage_data(log))  # the plain write
    assert again.id == first.id + 1
    store = Store.open(url)
    try:
        read = store.get_triage(again.id)
        assert read is not None and read.status == "done" and read.result == again.result
        assert store.load_case(again.id) == store.load_case(first.id)
    finally:
        store.close()


def test_a_missing_file_with_its_marker_is_refused_not_created(tmp_path: Path) -> None:
    path = tmp_path / "tcfl.db"
    url = f"sqlite:///{path}"
    sqlite_plain.record(url, case("boom\n"), {"ranking": []})
    for leftover in tmp_path.glob("tcfl.db*"):
        if not leftover.name.endswith(".created"):
            leftover.unlink()
    with pytest.raises(DatabaseMissing, match="is missing"):
        sqlite_plain.record(url, case("boom\n"), {"ranking": []})
    assert not path.exists()


def test_a_file_removed_during_the_write_is_not_acknowledged(tmp_path: Path) -> None:
    path = tmp_path / "tcfl.db"
    sqlite_plain.record(f"sqlite:///{path}", case("boom\n"), {"ranking": []})
    found = SqliteFile(path, sqlite_plain.threading.Lock())
    db = sqlite_plain.connect(found)
    try:
        with (
            pytest.raises(sqlite_plain.StoreUnavailable, match="was removed"),
            sqlite_plain.transaction(db, found),
        ):
            sqlite_plain.write_triages(db, [(case("boom\n"), {"ranking": []})])
            path.unlink()
        assert not db.in_transaction
    finally:
        db.close()


@pytest.mark.parametrize(
    ("url", "plain"),
    [
        ("sqlite:////abs/tcfl.db", "/abs/tcfl.db"),
        ("sqlite+pysqlite:////abs/tcfl.db", "/abs/tcfl.db"),
        ("sqlite:///relative.db", None),  # relative: resolved against the working folder
        ("sqlite://", None),
        ("sqlite:///:memory:", None),
        ("sqlite:///file:x.db?mode=ro&uri=true", None),
        ("sqlite:////abs/tcfl.db?timeout=3", None),
        ("sqlite:///~/tcfl.db", None),
        ("postgresql://user:secret@host/db", None),
    ],
)
def test_only_plain_file_urls_take_the_sqlite3_path(url: str, plain: str | None) -> None:
    found = sqlite_plain.file_of(url)
    if url == "sqlite:///relative.db":
        assert found == Path.cwd() / "relative.db"
    else:
        assert found == (Path(plain) if plain else None)
    assert "secret" not in sqlite_plain.safe_url(url)
