"""`tcfl eval --ablate`: each evidence channel off in turn, beside the stack-trace baseline."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from app.analysis.context import REFINEMENTS
from app.cli import main
from app.localize.evidence import ABLATED
from tcfl_lab.eval.cases import load_cases
from tcfl_lab.eval.channels import BASELINE, FULL, channel_ablation
from tests.conftest import DATA

CORPUS = DATA / "corpus" / "cpython"


@pytest.fixture
def cases(tmp_path: Path) -> Path:
    folder = tmp_path / "cases"
    folder.mkdir()
    for path in sorted(CORPUS.glob("cpython-*.json"))[:4]:
        shutil.copy(path, folder / path.name)
    return folder


def test_every_switchable_channel_has_a_row_with_rates(cases: Path) -> None:
    loaded, _ = load_cases(cases)
    table = channel_ablation(loaded, levels=("block",))
    assert set(table) == {FULL, BASELINE, *(f"-{name}" for name in (*ABLATED, *REFINEMENTS))}
    for row in table.values():
        scores = row["block"]
        assert scores.cases == len(loaded)
        assert 0.0 <= scores.hit1 <= scores.hit3 <= 1.0
        assert 0.0 <= scores.map5 <= 1.0


@pytest.mark.slow
def test_cli_prints_the_table_and_json(cases: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", str(cases), "--ablate", "--quiet"]) == 0
    text = capsys.readouterr().out
    assert "channel ablation" in text and "stacktrace baseline" in text and "-check" in text
    assert main(["eval", str(cases), "--ablate", "--quiet", "--json", "--level", "line"]) == 0
    report = json.loads(capsys.readouterr().out)
    rows = report["channel_ablation"]
    assert set(rows[FULL]) == {"line"}
    assert set(rows[FULL]["line"]) == {"hit@1", "hit@3", "map@5", "cases"}


def test_ablate_needs_block_or_line(cases: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", str(cases), "--ablate", "--level", "function"]) == 2
    assert "--ablate" in capsys.readouterr().err
