"""`tcfl batch` against a model server: many requests in flight, static phases overlapping model calls."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from app.cli.batch import in_flight
from app.settings import Settings
from tests.service.helpers import clean_env, example_body, jsonl, tcfl_command
from tests.support.openai_standin import OpenAIStandin, Reply


def test_in_flight_defaults_to_the_model_setting_only_with_a_model() -> None:
    with_model = Settings(_env_file=None, model_url="http://127.0.0.1:1/v1")  # type: ignore[call-arg]
    without = Settings(_env_file=None)  # type: ignore[call-arg]
    assert in_flight(None, with_model) == with_model.batch_in_flight == 64
    assert in_flight(None, without) == without.batch_concurrency
    assert in_flight(5, with_model) == 5


@pytest.mark.slow
def test_batch_keeps_many_model_requests_in_flight(tmp_path: Path) -> None:
    cases = tmp_path / "cases.jsonl"
    cases.write_bytes(jsonl([example_body(ranker="llm", test_id=f"c{i}") for i in range(40)]))
    out = tmp_path / "out.jsonl"
    with OpenAIStandin(default=Reply(rank=True, delay_s=0.5)) as server:
        env = clean_env(TCFL_DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite'}", TCFL_MODEL_URL=server.url)
        done = subprocess.run(
            tcfl_command("batch", str(cases), "--out", str(out)),
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        most = server.max_in_flight
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 40 and all(r["status"] == "done" for r in rows)
    assert most > 8  # the old fixed limits were 4 items and 8 requests at once
