"""Feedback storage on both database backends, and the migration that adds the table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import select
from sqlalchemy.orm import Session

from app.analysis.model import Loc, Script
from app.localize.result import TriageOptions
from app.service.dashboard.feedback import FeedbackRow, FeedbackStore
from app.store.store import MIGRATIONS_DIR, Base, Store, Submission
from app.triage import triage
from tests.service.dashboard.conftest import run_async
from tests.service.helpers import EXAMPLE

PATH = "test_example.py"


def _stored_triage(store: Store) -> tuple[int, list[dict[str, Any]]]:
    scripts = (Script(PATH, (EXAMPLE / "test_example.py").read_text()),)
    log = (EXAMPLE / "failure.log").read_text()
    options = TriageOptions(level="block", k=3, ranker="heuristic", log_functions=("Log.log",))
    data = run_async(lambda: triage(scripts, log, options, client=None)).to_dict()
    data.pop("id")
    case = Submission(scripts=scripts, log=log, options={"trace": "tplus", "log_functions": ["Log.log"]})
    return store.record_triage(case, data).id, data["ranking"]


def _rows(store: Store, triage_id: int) -> dict[int, tuple[int, Any]]:
    with Session(store.engine) as session:
        rows = session.scalars(select(FeedbackRow).where(FeedbackRow.triage_id == triage_id)).all()
        return {r.line: (r.id, r.created_at) for r in rows}


def test_feedback_replaces_marks_keeps_old_rows_and_feeds_accuracy(database_url: str) -> None:
    store = Store.open(database_url)
    try:
        feedback = FeedbackStore(store.engine)
        triage_id, ranking = _stored_triage(store)
        unranked = store.create_request(Submission(scripts=(Script(PATH, "x = 1\n"),), log="", options={}))
        assert feedback.lines(triage_id) == [] and feedback.accuracy().cases == 0

        feedback.set_lines(triage_id, [Loc(PATH, 17), Loc(PATH, 3)])
        feedback.set_lines(unranked, [Loc(PATH, 1)])
        assert feedback.lines(triage_id) == [Loc(PATH, 3), Loc(PATH, 17)]
        best = min(i["rank"] for i in ranking if i["start_line"] <= 17 <= i["end_line"])
        accuracy = feedback.accuracy()
        assert accuracy.cases == 1
        assert accuracy.hits == {k: int(best <= k) for k in (1, 3, 5)}

        with store._tx() as session:
            before = {
                r.line: (r.id, r.created_at)
                for r in session.query(FeedbackRow).filter_by(triage_id=triage_id)
            }
        feedback.set_lines(triage_id, [Loc(PATH, 3), Loc(PATH, 3)])
        with store._tx() as session:
            after = {
                r.line: (r.id, r.created_at)
                for r in session.query(FeedbackRow).filter_by(triage_id=triage_id)
            }
        assert after == {3: before[3]}
        feedback.set_lines(triage_id, [])
        assert feedback.lines(triage_id) == []
    finally:
        store.close()


def _alembic() -> Config:
    cfg = Config(str(MIGRATIONS_DIR / "alembic.ini"))
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    return cfg


def test_migrations_have_one_head_and_create_the_feedback_table_as_modelled(tmp_path: Path) -> None:
    heads = ScriptDirectory.from_config(_alembic()).get_heads()
    assert len(heads) == 1, f"alembic has several heads: {heads}"
    store = Store.open(f"sqlite:///{tmp_path / 'tcfl.db'}")
    try:
        with store.engine.connect() as conn:
            diffs = compare_metadata(MigrationContext.configure(conn), Base.metadata)
        assert [d for d in diffs if "feedback" in repr(d)] == []
    finally:
        store.close()


@pytest.mark.parametrize("revision", ["0001"])
def test_feedback_migration_downgrades_cleanly(tmp_path: Path, revision: str) -> None:
    from alembic import command

    store = Store.open(f"sqlite:///{tmp_path / 'tcfl.db'}")
    try:
        cfg = _alembic()
        with store.engine.begin() as conn:
            cfg.attributes["connection"] = conn
            command.downgrade(cfg, revision)
        with store.engine.connect() as conn:
            tables = set(conn.dialect.get_table_names(conn))
        assert "feedback" not in tables and "triage_requests" in tables
    finally:
        store.close()


def test_marked_failures_become_cases_tcfl_learn_learns_from(database_url: str, tmp_path: Path) -> None:
    from app.cli import main
    from app.localize.model_file import load_model

    store = Store.open(database_url)
    try:
        feedback = FeedbackStore(store.engine)
        triage_id, _ranking = _stored_triage(store)
        unmarked, _ = _stored_triage(store)
        feedback.set_lines(triage_id, [Loc(PATH, 3), Loc("elsewhere.py", 9)])
        (case,) = feedback.marked_cases(store)
        assert case["id"] == f"dashboard-{triage_id}" and case["repo"] == "dashboard"
        assert case["faulty_lines"] == [{"path": PATH, "line": 3}]  # marks outside the scripts dropped
        assert case["test_files"][0]["path"] == PATH and "ZeroDivisionError" in case["failure_log"]
        assert case["log_functions"] == ["Log.log"] and unmarked != triage_id
    finally:
        store.close()
    out = tmp_path / "model.json"
    assert main(["learn", "--db", database_url, "--out", str(out), "--quiet"]) == 0
    assert load_model(out).trained_on["cases"] == 1 and load_model(out).trained_on["repos"] == ["dashboard"]
