"""Post-processing a model's ranking against the rendered golden case (paper VI-D, VI-E3)."""

from __future__ import annotations

from functools import lru_cache

from hypothesis import given
from hypothesis import strategies as st

from app.analysis.model import Analysis
from app.analysis.pipeline import analyze
from app.analysis.render import RenderedCode, render
from app.localize.prompts import RawAnswer
from app.localize.repair import PostprocessCounts, closest_line, lines_to_blocks, normalize_code, repair
from tests.conftest import running_example


@lru_cache(maxsize=1)
def golden() -> Analysis:
    scripts, log, expected = running_example()
    return analyze(scripts, log, log_functions=expected["log_function_patterns"])


@lru_cache(maxsize=4)
def rendered(level: str, variant: str = "tplus") -> RenderedCode:
    return render(golden(), variant, level)


def test_matching_lines_pass_unchanged() -> None:
    answers = [
        RawAnswer("3", "return set()  # Fault (Root cause)"),
        RawAnswer("17", None),
        RawAnswer("13", "values  =  test_1(values)"),
    ]
    result = repair(answers, rendered("line"))
    assert [e.id for e in result.elements] == ["3", "17", "13"]
    assert result.counts == PostprocessCounts()


def test_a_line_number_off_by_one_moves_to_the_line_with_that_content() -> None:
    answers = [RawAnswer("16", "var_2 = var_1 / len(values)  # Error (Failure)")]
    result = repair(answers, rendered("line"))
    assert [e.id for e in result.elements] == ["17"]
    assert result.counts == PostprocessCounts(mismatches=1, repaired=1)


def test_an_out_of_range_line_with_known_content_is_repaired() -> None:
    result = repair([RawAnswer("99", "    return set()")], rendered("line"))
    assert [e.id for e in result.elements] == ["3"]
    assert result.counts == PostprocessCounts(mismatches=1, repaired=1)


def test_position_breaks_ties_between_identical_lines() -> None:
    lines = rendered("line", "T0")
    # lines 2 and 22 both log a literal; the answer names neither exactly, so position decides
    near_two = closest_line(RawAnswer("4", 'Log.log("Test 1" " executed!")'), lines)
    assert near_two is not None and near_two.id == "2"


def test_unrecognizable_content_keeps_a_valid_id_and_drops_an_invalid_one() -> None:
    result = repair(
        [RawAnswer("9", "completely different"), RawAnswer("500", "nothing like it")], rendered("line")
    )
    assert [e.id for e in result.elements] == ["9"]
    assert result.counts == PostprocessCounts(invalid=1, mismatches=2, repaired=0)


def test_out_of_range_and_duplicate_blocks_are_dropped_and_counted() -> None:
    answers = [RawAnswer("BLOCK 6"), RawAnswer("BLOCK 6"), RawAnswer("BLOCK 5"), RawAnswer("BLOCK 99")]
    result = repair(answers, rendered("block"))  # BLOCK 5 is pruned in tplus
    assert [e.id for e in result.elements] == ["BLOCK 6"]
    assert result.counts == PostprocessCounts(invalid=2, duplicates=1)


def test_functions_may_be_named_loosely_when_unambiguous() -> None:
    result = repair([RawAnswer("TEST_1"), RawAnswer("main"), RawAnswer("nowhere")], rendered("function"))
    assert [e.id for e in result.elements] == ["test_1", "main"]
    assert result.counts.invalid == 1


def test_line_to_block_mapping_keeps_first_occurrence_order() -> None:
    lines = repair([RawAnswer(n) for n in ("17", "16", "3", "13", "2")], rendered("line")).elements
    blocks = lines_to_blocks(lines, rendered("block"))
    assert [b.id for b in blocks] == ["BLOCK 6", "BLOCK 1", "BLOCK 4"]


def test_normalize_code_ignores_whitespace_only() -> None:
    assert normalize_code("  a  =\tb ") == "a = b"
    assert normalize_code("a=b") != normalize_code("a = b")


@given(
    st.lists(
        st.tuples(
            st.integers(min_value=-3, max_value=40).map(str),
            st.one_of(st.none(), st.sampled_from(["return set()", "values = test_1(values)", "zzz", ""])),
        ),
        max_size=15,
    )
)
def test_repair_returns_distinct_rendered_elements_and_accounts_for_every_answer(answers: list) -> None:
    lines = rendered("line")
    result = repair([RawAnswer(i, c) for i, c in answers], lines)
    ids = [e.id for e in result.elements]
    assert len(ids) == len(set(ids))
    assert set(ids) <= {e.id for e in lines.elements}
    assert len(ids) + result.counts.invalid + result.counts.duplicates == len(answers)
    assert result.counts.repaired <= result.counts.mismatches
