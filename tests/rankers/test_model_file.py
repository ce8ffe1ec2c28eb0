"""Model files: round trip, clear errors, and the rankers that score with them."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from app.localize.model_file import (
    HANDSET_LABEL,
    ModelFileError,
    handset_model,
    load_model,
    write_model,
)
from app.options import TriageOptions
from app.triage import check_options, triage
from tests.conftest import BENCHMARK, load_case


def test_a_written_model_reads_back_the_same(tmp_path: Path) -> None:
    model = handset_model()
    model.levels["block"].weights["traceback*frame"] = 1.5
    target = tmp_path / "m.json"
    write_model(model, target)
    again = load_model(target)
    assert again.levels == model.levels and again.trained_on == model.trained_on
    assert again.source == str(target)
    shipped = load_model()  # the shipped file: learned from the mined corpus, every level fitted
    assert set(shipped.levels) == {"function", "block", "line"}
    assert shipped.trained_on["cases"] >= 200 and shipped.levels != handset_model().levels


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d["levels"]["block"]["features"].__setitem__(0, "stack"), "unknown feature(s) stack"),
        (lambda d: d.__setitem__("format", "other"), 'expected "format": "tcfl-ranker"'),
        (lambda d: d.__setitem__("version", 9), "version 9 is not supported"),
        (lambda d: d["levels"].pop("line"), "missing ['line']"),
        (lambda d: d["levels"]["block"]["weights"].pop(), "of the same length"),
    ],
)
def test_a_bad_model_file_says_what_is_wrong(tmp_path: Path, edit, message: str) -> None:
    data = handset_model().to_dict()
    edit(data)
    target = tmp_path / "bad.json"
    target.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ModelFileError, match=r"ranker model .*bad\.json") as caught:
        load_model(target)
    assert message in str(caught.value)
    with pytest.raises(ValueError, match=r"unknown feature|not a ranker|not supported|levels|same length"):
        check_options(TriageOptions(ranker_model=str(target)))
    with pytest.raises(ModelFileError, match="cannot read it"):
        load_model(tmp_path / "missing.json")


def test_missing_features_weigh_nothing(tmp_path: Path) -> None:
    data = handset_model().to_dict()
    data["levels"]["block"] = {"features": ["check"], "weights": [2.0]}
    target = tmp_path / "few.json"
    target.write_text(json.dumps(data), encoding="utf-8")
    weights = (
        load_model(target).levels["block"].channel_weights({"frame": 1.0, "check": 0.0, "long_log": 0.5})
    )
    assert weights == {"check": 2.0}


def test_triage_says_which_model_ranked(tmp_path: Path) -> None:
    scripts, log, _ = load_case(BENCHMARK / "tpl-mtu-unbound-local.json")
    target = tmp_path / "model.json"
    write_model(handset_model(), target)
    shipped = asyncio.run(triage(scripts, log, TriageOptions(ranker="heuristic").validated(), client=None))
    named = TriageOptions(ranker="heuristic", ranker_model=str(target)).validated()
    chosen = asyncio.run(triage(scripts, log, named, client=None))
    handset = asyncio.run(triage(scripts, log, TriageOptions(ranker="handset").validated(), client=None))
    assert shipped.to_dict()["ranker_model"].startswith("shipped (")
    assert chosen.to_dict()["ranker_model"].startswith(str(target))
    assert chosen.to_dict()["options"]["ranker_model"] == str(target)
    assert handset.ranker == "handset" and handset.ranker_model == HANDSET_LABEL
    # a model file holding the hand-set weights ranks as the handset ranker does, but for the stack
    # trace's element, which any model holds in the top 3 (the handset ranker is the bare baseline)
    held = [i.id for i in chosen.ranking if "held in the top 3" in i.reason]
    assert [i.id for i in handset.ranking if i.id not in held] == [
        i.id for i in chosen.ranking if i.id not in held
    ]
    assert handset.evidence_found and shipped.ranker == "heuristic"
