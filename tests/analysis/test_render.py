"""Rendering a trace as labelled code: real scripts, real logs, the real analysis pipeline."""

from __future__ import annotations

import re
from dataclasses import replace
from functools import lru_cache

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.analysis.model import Analysis, Loc, resolve_variant
from app.analysis.pipeline import analyze
from app.analysis.render import LEVELS, element_for_line, render
from tests.conftest import BENCHMARK, load_case, running_example


@lru_cache(maxsize=1)
def golden_analysis() -> Analysis:
    scripts, log, expected = running_example()
    return analyze(scripts, log, log_functions=expected["log_function_patterns"])


@lru_cache(maxsize=1)
def two_file_analysis() -> Analysis:
    scripts, log, case = load_case(BENCHMARK / "sonic-fib-utils-dict-keys.json")
    return analyze(scripts, log, log_functions=case.get("log_functions", []))


def test_block_level_labels_each_kept_block_and_shows_only_kept_lines() -> None:
    analysis = golden_analysis()
    rendered = render(analysis, "tplus", "block")
    _, _, expected = running_example()
    kept = {loc.line for loc in analysis.traces["tplus"].kept}
    assert kept == set(expected["enhanced"]["trace"])
    shown = [line for line in rendered.text.splitlines() if not line.lstrip().startswith("# BLOCK")]
    source = analysis.program.files[0].lines
    assert shown == [source[n - 1] for n in sorted(kept)]
    labels = re.findall(r"# BLOCK (\d+)", rendered.text)
    assert labels == [e.id.split()[1] for e in rendered.elements]
    assert "# BLOCK 5" not in rendered.text  # the else branch is pruned in tplus
    assert rendered.max_element_id == 7
    assert rendered.kept_lines == len(kept)
    assert rendered.total_lines == 21


def test_blocks_carry_their_original_lines_and_code() -> None:
    rendered = render(golden_analysis(), "T0", "block")
    by_id = {e.id: e for e in rendered.elements}
    _, _, expected = running_example()
    for bid, (start, end) in expected["blocks"].items():
        element = by_id[f"BLOCK {bid}"]
        assert (element.start_line, element.end_line) == (start, end)
        assert element.path == "test_example.py"
        assert element.level == "block"
    assert by_id["BLOCK 1"].code.splitlines()[-1].strip().startswith("return set()")


def test_line_ids_are_original_numbers_for_one_file_and_stable_across_variants() -> None:
    analysis = golden_analysis()
    full = render(analysis, "T0", "line")
    pruned = render(analysis, "tplus", "line")
    assert "17:     var_2 = var_1 / len(values)  # Error (Failure)" in full.text.splitlines()
    full_ids = {e.id: e.lines for e in full.elements}
    for element in pruned.elements:
        assert full_ids[element.id] == element.lines == (int(element.id),)
    assert not any(line.split(":", 1)[1].strip() == "" for line in full.text.splitlines())
    assert full.max_element_id == 24


def test_function_level_groups_code_by_function_id() -> None:
    rendered = render(golden_analysis(), "tplus", "function")
    assert [e.id for e in rendered.elements] == ["test_1", "execute_tests", "main"]
    assert "# FUNCTION execute_tests" in rendered.text
    assert rendered.max_element_id is None
    execute = rendered.elements[1]
    assert execute.lines == (8, 9, 10, 11, 12, 13, 16, 17)


def test_several_files_get_headers_and_concatenated_line_ids() -> None:
    analysis = two_file_analysis()
    first, second = analysis.program.files
    rendered = render(analysis, "T0", "line")
    headers = [line for line in rendered.text.splitlines() if line.startswith("# file: ")]
    assert headers == [f"# file: {first.path}", f"# file: {second.path}"]
    in_second = [e for e in rendered.elements if e.path == second.path]
    assert in_second
    for element in in_second:
        assert int(element.id) == len(first.lines) + element.lines[0]
    blocks = render(analysis, "T0", "block")
    assert {e.path for e in blocks.elements} == {first.path, second.path}


def test_element_for_line_maps_every_kept_line_back() -> None:
    analysis = golden_analysis()
    for level in LEVELS:
        rendered = render(analysis, "tplus", level)
        for loc in analysis.traces["tplus"].kept:
            element = element_for_line(rendered, loc)
            assert element is not None and loc.line in element.lines and element.path == loc.path
        assert element_for_line(rendered, Loc("test_example.py", 18)) is None  # pruned in tplus
        assert element_for_line(rendered, Loc("other.py", 1)) is None


def test_bad_level_and_unknown_variant_are_clear_errors() -> None:
    analysis = golden_analysis()
    with pytest.raises(ValueError, match="level"):
        render(analysis, "tplus", "file")
    with pytest.raises(ValueError, match="no trace"):
        render(analysis, "tmid", "block")  # aliases are resolved by the caller
    assert render(analysis, resolve_variant("tmid"), "block").elements


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), level=st.sampled_from(LEVELS))
def test_any_trace_renders_exactly_its_kept_lines(data: st.DataObject, level: str) -> None:
    analysis = two_file_analysis()
    everything = sorted(analysis.traces["T0"].kept)
    kept = frozenset(data.draw(st.lists(st.sampled_from(everything), unique=True, max_size=60)))
    trace = replace(analysis.traces["T0"], kept=kept)
    narrowed = replace(analysis, traces={**analysis.traces, "T0": trace})
    rendered = render(narrowed, "T0", level)
    shown = {Loc(e.path, line) for e in rendered.elements for line in e.lines}
    non_blank = {loc for loc in kept if _text(analysis, loc).strip()}
    assert shown <= non_blank
    if level == "line":
        assert shown == non_blank
        assert len(rendered.text.splitlines()) == len(non_blank) + len(
            [ln for ln in rendered.text.splitlines() if ln.startswith("# file: ")]
        )
    assert rendered.kept_lines == len(non_blank)
    assert len({e.id for e in rendered.elements}) == len(rendered.elements)


def _text(analysis: Analysis, loc: Loc) -> str:
    source = next(f for f in analysis.program.files if f.path == loc.path)
    return source.lines[loc.line - 1]
