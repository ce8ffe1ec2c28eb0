"""The JSON report keeps DESIGN section 3's keys; rates are fractions; the table shows every variant."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace

import pytest

from app.analysis.model import VARIANTS
from tcfl_lab.eval.masking import MaskingPlan
from tcfl_lab.eval.report import build_report, render_table
from tcfl_lab.eval.runner import CaseResult, EvalOptions, evaluate
from tests.conftest import running_example
from tests.eval.test_runner import golden_case, heuristic


@pytest.fixture(scope="module")
def report() -> dict:
    _, _, expected = running_example()
    cases = [
        golden_case(actual=tuple(expected["enhanced"]["trace"])),
        replace(golden_case(faulty=(17,)), id="g17"),
    ]
    options = EvalOptions(masking=MaskingPlan(repetitions=2), ablation=True, ablation_rates=(0.0, 0.5, 1.0))
    results = asyncio.run(evaluate(cases, options, heuristic))
    results.append(CaseResult("broken", error="analysis failed: ValueError: x"))
    return build_report(results, options, problems=["bad.json: not JSON"], seconds=1.5)


def _rates(node: object) -> list[float]:
    if isinstance(node, dict):
        return [
            v
            for key, value in node.items()
            if key not in ("cases", "kept_lines", "mean_answers", "cases_with_actual_trace")
            for v in _rates(value)
        ]
    if isinstance(node, float):
        return [node]
    return []


def test_design_keys(report: dict) -> None:
    assert report["cases"] == 2
    assert report["failed_cases"] == [{"id": "broken", "error": "analysis failed: ValueError: x"}]
    assert report["skipped_files"] == ["bad.json: not JSON"]
    assert set(report["trace"]) == set(VARIANTS)
    row = report["trace"]["tplus"]
    for key in (
        "pruning_rate",
        "partial_preservation",
        "full_preservation",
        "mpf1",
        "true_precision",
        "true_recall",
        "true_f1",
    ):
        assert key in row
    assert set(row["mpf1"]) == {"0", "20", "50", "80", "mean"}
    assert row["cases_with_actual_trace"] == 1 and row["true_f1"] == 1.0
    assert report["trace"]["CSR(T1_dbt_exe&T2)"]["alias"] == "tmid"
    for level, per_k in report["localization"].items():
        assert level in ("function", "block", "line")
        for metrics in per_k.values():
            assert set(metrics) >= {"precision", "recall", "hit", "map", "mrr"}
    assert set(report["localization"]["block"]) == {"1", "3", "5", "10"}
    assert set(report["localization"]["function"]) == {"1", "3", "5"}
    assert set(report["localization_lm"]) == {"1", "3", "5", "10"}
    assert set(report["ablation"]["T0"]) == {"0", "50", "100"}
    json.dumps(report)


def test_rates_are_fractions(report: dict) -> None:
    for section in ("trace", "localization", "localization_lm", "ablation"):
        values = _rates(report[section])
        assert values and all(0.0 <= v <= 1.0 for v in values)


def test_preservation_means_over_cases(report: dict) -> None:
    # line 3 survives T0 in both cases; Tmax drops line 3 but keeps line 17
    assert report["trace"]["T0"]["partial_preservation"] == 1.0
    assert report["trace"]["CSR(T1_dbt_nexe&T2)"]["partial_preservation"] == 0.5


def test_table_lists_every_variant_and_level(report: dict) -> None:
    table = render_table(report)
    for name in VARIANTS:
        assert name in table
    for label in (
        "block DP",
        "block LM",
        "function",
        "line",
        "ablation",
        "failed: broken",
        "skipped: bad.json",
    ):
        assert label in table
