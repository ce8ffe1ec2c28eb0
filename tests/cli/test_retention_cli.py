"""`tcfl retention` as a user runs it, on a real SQLite file filled by `tcfl ingest`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.test_history_cli import LOG, SCRIPT, tcfl


@pytest.mark.slow
def test_dry_run_counts_then_retention_drops_old_runs_but_keeps_the_anchors(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'h.db'}"
    runs = tmp_path / "runs.jsonl"
    verdicts = ["pass", "pass", "fail", "fail", "fail"]
    runs.write_text(
        "".join(
            json.dumps(
                {
                    "test_id": "t.py::test_answer",
                    "verdict": v,
                    "started_at": f"2020-03-01T00:0{n}:00Z",
                    "ci": {"job_url": f"https://ci/{n}"},
                    "scripts": [{"path": "t.py", "content": SCRIPT}],
                    "log": LOG if v == "fail" else "ok",
                }
            )
            + "\n"
            for n, v in enumerate(verdicts)
        )
    )
    assert tcfl("ingest", str(runs), "--db", db).returncode == 0
    dry = tcfl("retention", "--db", db, "--keep-runs", "1", "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    counts = json.loads(dry.stdout)
    assert counts == {"dry_run": True, "runs": 2, "failing_logs": 2, "passing_logs": 1}
    done = tcfl("retention", "--db", db, "--keep-runs", "1")
    assert done.returncode == 0 and "dropped 2 runs, 2 failing logs, 1 passing logs" in done.stdout
    page = json.loads(tcfl("history", "t.py::test_answer", "--db", db, "--json").stdout)
    assert [r["started_at"][14:16] for r in page["runs"]] == [
        "04",
        "02",
        "01",
    ]  # newest, first bad, last pass
    assert json.loads(tcfl("retention", "--db", db, "--json").stdout)["runs"] == 0


def test_a_negative_limit_is_a_usage_error(tmp_path: Path) -> None:
    bad = tcfl("retention", "--db", f"sqlite:///{tmp_path / 'h.db'}", "--keep-days", "-1")
    assert bad.returncode == 2 and "--keep-days and --keep-runs must be at least 0" in bad.stderr
