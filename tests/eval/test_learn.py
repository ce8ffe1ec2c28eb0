"""Learning the built-in ranker's weights: the fit, leave-one-repository-out, and `tcfl learn`."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from app.cli import main
from app.localize.features import CHANNEL_FEATURES
from app.localize.model_file import LevelModel, handset_level, load_model
from tcfl_lab.eval.learn import (
    Corpus,
    case_scores,
    fit_level,
    fit_weights,
    learned_scorer,
    load_corpus,
    loro,
    summarize,
)
from tests.conftest import BENCHMARK


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return load_corpus([BENCHMARK], levels=("block",))


def test_the_fit_recovers_a_known_direction() -> None:
    rng = np.random.default_rng(0)
    truth = np.array([3.0, -2.0, 0.0, 1.0])
    diffs, weights = [], []
    for _ in range(200):  # cases: 1 faulty and 20 other elements, faulty = the best by ``truth`` + noise
        x = rng.normal(size=(21, 4))
        best = int(np.argmax(x @ truth + rng.normal(scale=0.3, size=21)))
        others = np.delete(x, best, axis=0)
        diffs.append(x[best] - others)
        weights.append(np.full(len(others), 1 / len(others)))
    w = fit_weights(np.vstack(diffs), np.concatenate(weights), 200, l2=0.001, nonneg=False)
    assert float(w @ truth / np.linalg.norm(w) / np.linalg.norm(truth)) > 0.95
    positive = fit_weights(np.vstack(diffs), np.concatenate(weights), 200, l2=0.001, nonneg=True)
    assert (positive >= 0).all() and positive[1] == 0.0


def test_learning_beats_equal_weights_on_its_training_cases(corpus: Corpus) -> None:
    ones = LevelModel({name: 1.0 for name in CHANNEL_FEATURES})
    learned = fit_level(corpus.cases, "block", l2=0.001)
    before = summarize(case_scores(corpus.cases, "block", learned_scorer(ones)))
    after = summarize(case_scores(corpus.cases, "block", learned_scorer(learned)))
    assert after.cases == before.cases == 20
    assert after.hit1 > before.hit1


def test_no_repository_is_scored_by_a_model_that_saw_it(corpus: Corpus) -> None:
    report = loro(corpus.cases)
    repo_of = {c.id: c.repo for c in corpus.cases}
    assert {f["repo"] for f in report["folds"]} == set(repo_of.values()) and len(report["folds"]) == 6
    for fold in report["folds"]:
        assert fold["repo"] not in fold["train_repos"]
        assert all(repo_of[c] != fold["repo"] for c in fold["train_cases"])
        assert {repo_of[c] for c in fold["test_cases"]} == {fold["repo"]}
    assert report["overall"]["handset"]["micro"]["cases"] == 20
    assert report["overall"]["handset"]["micro"]["hit@1"] == 0.75  # as `tcfl eval` reports it


def test_hand_checked_cases_other_than_right_are_left_out(tmp_path: Path) -> None:
    source = json.loads((BENCHMARK / "tpl-mtu-unbound-local.json").read_text())
    (tmp_path / "a.json").write_text(json.dumps({**source, "hand_check": {"verdict": "wrong"}}))
    (tmp_path / "b.json").write_text(json.dumps({**source, "id": "b", "hand_check": {"verdict": "right"}}))
    found = load_corpus([tmp_path], levels=("block",))
    assert [c.id for c in found.cases] == ["b"] and found.excluded == [source["id"]]
    assert found.cases[0].repo == source["repo"]


@pytest.mark.slow
def test_tcfl_learn_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "model.json"
    code = main(
        ["learn", str(BENCHMARK), "--loro", "--out", str(out), "--json", "--quiet", "--prior", "handset"]
    )
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    assert report["cases"] == 20 and report["excluded_by_hand_check"] == 0
    assert len(report["loro"]["folds"]) == 6
    model = load_model(out)
    assert model.trained_on["cases"] == 20 and len(model.trained_on["repos"]) == 6
    assert model.levels["function"] == handset_level()  # not fitted: hand-set weights
    assert main(["learn", str(BENCHMARK)]) == 2  # nothing asked
