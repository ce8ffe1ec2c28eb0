"""Evaluating cases end to end with the real analysis and the real heuristic triage."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from pathlib import Path

import pytest

from app.analysis.model import Loc
from app.analysis.pipeline import analyze
from app.localize.llm import ModelClient
from app.localize.result import TriageOptions, TriageResult
from app.triage import triage
from tcfl_lab.eval.cases import Case, load_cases
from tcfl_lab.eval.masking import MaskingPlan
from tcfl_lab.eval.runner import PAPER_KS, CaseResult, EvalOptions, evaluate, evaluate_case, faulty_elements
from tests.conftest import DATA, running_example
from tests.support.openai_standin import OpenAIStandin, Reply

PATH = "test_example.py"


async def heuristic(case: Case, options: TriageOptions) -> TriageResult:
    return await triage(list(case.scripts), case.log, options, client=None)


def golden_case(faulty: tuple[int, ...] = (3,), actual: tuple[int, ...] | None = None) -> Case:
    scripts, log, expected = running_example()
    return Case(
        id="golden",
        scripts=tuple(scripts),
        log=log,
        faulty=frozenset(Loc(PATH, n) for n in faulty),
        actual=None if actual is None else frozenset(Loc(PATH, n) for n in actual),
        log_functions=tuple(expected["log_function_patterns"]),
    )


def _run(case: Case, **kwargs) -> CaseResult:
    options = EvalOptions(masking=MaskingPlan(repetitions=2), **kwargs)
    return asyncio.run(evaluate_case(case, options, heuristic))


def test_faulty_elements_match_the_golden_labels() -> None:
    scripts, log, expected = running_example()
    analysis = analyze(scripts, log, log_functions=expected["log_function_patterns"])
    found = faulty_elements(analysis, frozenset({Loc(PATH, 3)}))
    assert found["function"] == set(expected["faulty_functions"])
    assert found["block"] == {f"BLOCK {b}" for b in expected["faulty_blocks"]}
    assert found["line"] == {"3"}
    assert faulty_elements(analysis, frozenset({Loc(PATH, 4)}))["line"] == frozenset()  # a blank line


def test_trace_quality_on_the_golden_case() -> None:
    _, _, expected = running_example()
    result = _run(golden_case(actual=tuple(expected["enhanced"]["trace"])), localize=False)
    assert result.error is None
    q = result.quality
    assert q["T0"].pruning_rate == 0.0 and q["T0"].kept_lines == 21
    assert (q["T0"].partial, q["T0"].full) == (True, True)
    assert q["CSR(T1_dbt_nexe&T2)"].partial is False  # Tmax loses line 3, as the paper says it may
    assert q["T0"].mpf1[0.0] == pytest.approx(14 / 16)
    # against a true trace equal to the golden enhanced set
    assert q["tplus"].true is not None and q["tplus"].true.f1 == 1.0
    assert q["T0"].true is not None and q["T0"].true.precision == pytest.approx(14 / 21)
    assert q["T0"].true.recall == 1.0
    assert (result.exe, result.nexe, result.error_statements) == (7, 2, 2)
    # T0 and T2 keep the two known not-executed log statements; the T1 variants agree with all evidence
    assert (
        [loc.line for loc in q["T0"].contradicted] == [18, 24] == [loc.line for loc in q["T2"].contradicted]
    )
    assert q["T1_dbt_exe"].contradicted == () and q["tplus"].contradicted == ()
    assert q["tplus"].missed == () and [loc.line for loc in q["T1_dbt_nexe"].missed] == [3]
    assert result.localization == ()


def test_localization_on_the_golden_case() -> None:
    result = _run(golden_case())
    by_level = {o.level: o for o in result.localization}
    assert set(by_level) == {"function", "block", "line", "block_lm"}
    for level, outcome in by_level.items():
        assert outcome.ranker == "heuristic"
        assert outcome.scores is not None
        assert set(outcome.scores) == set(PAPER_KS["block" if level == "block_lm" else level])
        for scores in outcome.scores.values():
            assert 0.0 <= scores.precision <= 1.0 and 0.0 <= scores.ap <= 1.0
        hits = [outcome.scores[k].hit for k in sorted(outcome.scores)]
        assert hits == sorted(hits)  # a longer prefix never loses a hit
    assert by_level["block_lm"].scores[10].answers <= by_level["line"].scores[10].answers


def test_a_case_whose_faulty_line_is_blank_has_no_scores() -> None:
    result = _run(golden_case(faulty=(4,)), levels=("block",), ks=(1,))
    assert result.quality["T0"].partial is None
    assert [o.scores for o in result.localization] == [None]


def test_chosen_ks_and_traces() -> None:
    result = _run(golden_case(), levels=("line",), ks=(2, 1), rank_traces=("T0", "tplus"))
    assert [(o.variant, o.level) for o in result.localization] == [
        ("T0", "line"),
        ("T0", "block_lm"),
        ("tplus", "line"),
        ("tplus", "block_lm"),
    ]
    assert all(set(o.scores) == {1, 2} for o in result.localization if o.scores)


def test_corpus_cases_evaluate() -> None:
    folder = DATA / "corpus" / "cpython"
    cases, problems = load_cases(folder)
    assert problems == [] and len(cases) >= 200
    picked = cases[:: len(cases) // 3][:3]
    results = asyncio.run(
        evaluate(picked, EvalOptions(levels=("block",), masking=MaskingPlan(repetitions=1)), heuristic)
    )
    for result in results:
        assert result.error is None
        q = result.quality["T0"]
        assert q.true is not None and q.true.recall == 1.0  # T0 keeps every line, so every executed one
        assert q.partial is True
        raw = json.loads((folder / f"{result.case_id}.json").read_text())
        assert result.total_lines == sum(
            1 for ln in raw["test_files"][0]["content"].splitlines() if ln.strip()
        )


def test_analysis_failure_is_reported_not_raised(tmp_path: Path) -> None:
    case = Case("dup", (golden_case().scripts[0], golden_case().scripts[0]), "log", frozenset(), None)
    result = _run(case)
    assert result.error is not None and "analysis failed" in result.error


def test_cases_wait_on_the_model_concurrently_and_keep_their_order() -> None:
    cases = [replace(golden_case(), id=f"g{i}") for i in range(3)]
    options = EvalOptions(levels=("block",), ks=(1,), ranker="llm", masking=MaskingPlan(rates=(0.0,)))

    async def run(url: str) -> list[CaseResult]:
        async with ModelClient(url, retries=0) as client:

            async def model_triage(case: Case, topts: TriageOptions) -> TriageResult:
                return await triage(list(case.scripts), case.log, topts, client=client)

            return await evaluate(cases, options, model_triage, concurrency=3)

    with OpenAIStandin(default=Reply(rank=True, delay_s=0.3)) as server:
        results = asyncio.run(run(server.url))
        assert server.max_in_flight >= 2
    assert [r.case_id for r in results] == ["g0", "g1", "g2"]
    assert all(o.ranker == "llm" and o.input_tokens == 11 for r in results for o in r.localization)
    with pytest.raises(ValueError):
        asyncio.run(evaluate(cases, options, None, concurrency=0))
