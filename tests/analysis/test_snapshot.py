"""The stored analysis snapshot: what it keeps of an analysis, and the log cut into chunks."""

from __future__ import annotations

import json
import textwrap
import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.analysis import snapshot
from app.analysis.model import Loc, Script, State
from app.analysis.pipeline import analyze
from app.analysis.render import render
from tests.conftest import running_example


@pytest.fixture(scope="module")
def example() -> tuple[snapshot.Snapshot, dict]:
    scripts, log, exp = running_example()
    analysis = analyze(scripts, log, log_functions=exp["log_function_patterns"])
    return snapshot.build(analysis, render(analysis, "tplus", "block"), log, chunk_lines=4), exp


def test_summary_is_plain_json_and_checked_back(example: tuple[snapshot.Snapshot, dict]) -> None:
    snap, _ = example
    text = json.dumps(snap.summary)
    assert snapshot.check(json.loads(text)) == snap.summary
    with pytest.raises(snapshot.SnapshotError, match="version"):
        snapshot.check({**snap.summary, "version": 999})
    with pytest.raises(snapshot.SnapshotError, match="lacks 'files'"):
        snapshot.check({k: v for k, v in snap.summary.items() if k != "files"})
    with pytest.raises(snapshot.SnapshotError):
        snapshot.check([1, 2])


def test_line_states_and_kept_lines_are_the_ranked_variants(example: tuple[snapshot.Snapshot, dict]) -> None:
    snap, exp = example
    file = snap.summary["files"][0]
    assert snapshot.kept_lines(file) == set(exp["enhanced"]["trace"])
    states = snapshot.line_states(file)
    code = {n for n, text in enumerate(file["lines"], 1) if text.strip()}
    assert set(states) == code
    assert set(states.values()) <= {State.EXE.value, State.NEXE.value, State.DBT.value}
    assert {n for n, s in states.items() if s == State.EXE.value} >= set(exp["L_exe"])
    rules = snap.summary["rules"]
    assert all(0 <= rule < len(rules) and isinstance(detail, str) for _, rule, detail in file["reasons"])


def test_log_statements_keep_algorithm_1_and_their_log_lines(example: tuple[snapshot.Snapshot, dict]) -> None:
    snap, exp = example
    by_line = {s["line"]: s for s in snap.summary["statements"]}
    for line in exp["static_log_statements"]:
        assert by_line[line]["static"]
    for line in exp["non_static_log_statements"]:
        assert by_line[line]["state"] == State.DBT.value and not by_line[line]["matches"]
    for line in exp["L_nexe"]:
        if line in by_line:
            assert by_line[line]["state"] == State.NEXE.value and by_line[line]["match_count"] == 0
    matched = [s for s in snap.summary["statements"] if s["matches"]]
    assert matched and all(s["state"] == State.EXE.value for s in matched if s["matches"][0][1])
    # every listed match is marked on that line of the stored log, pointing back at the statement
    marks = {n: ids for chunk in snap.chunks for n, ids in chunk.marks.items()}
    for index, statement in enumerate(snap.summary["statements"]):
        for log_line, _unique in statement["matches"]:
            assert index in marks[log_line]


def test_error_frames_and_error_lines_point_into_the_log(example: tuple[snapshot.Snapshot, dict]) -> None:
    snap, exp = example
    error = snap.summary["error"]
    assert exp["error_message_contains"] in error["message"]
    lines = [line for chunk in snap.chunks for line in chunk.lines]
    first, last = error["log_lines"]
    assert exp["error_message_contains"] in "\n".join(lines[first - 1 : last])
    assert sorted(f["line"] for f in error["frames"]) == exp["error_statements"]
    for frame in error["frames"]:
        assert f"line {frame['line']}" in lines[frame["log_line"] - 1]
    assert set(error["log_frame_lines"]) >= {f["log_line"] for f in error["frames"]}


def test_elements_are_the_rendered_ones(example: tuple[snapshot.Snapshot, dict]) -> None:
    snap, exp = example
    blocks = {e["id"]: [e["start_line"], e["end_line"]] for e in snap.summary["elements"]}
    assert blocks and all(i.startswith("BLOCK ") for i in blocks)
    assert snap.summary["level"] == "block" and snap.summary["variant"] == "tplus"
    assert all(str(b) in exp["blocks"] for b in (i.split()[1] for i in blocks))


def test_packed_snapshot_holds_the_same_summary_and_chunks(example: tuple[snapshot.Snapshot, dict]) -> None:
    """What an analysis worker hands the store decodes back to the snapshot it packed."""
    snap, _ = example
    packed = snap.packed()
    assert json.loads(zlib.decompress(packed.summary_z)) == snap.summary
    assert (packed.version, packed.log_lines) == (snap.summary["version"], snap.summary["log"]["lines"])
    assert len(packed.chunks) == len(snap.chunks) > 1
    for chunk, packed_chunk in zip(snap.chunks, packed.chunks, strict=True):
        text = zlib.decompress(packed_chunk.text_z).decode("utf-8", "surrogatepass")
        assert text.split("\n") == list(chunk.lines)
        assert (packed_chunk.index, packed_chunk.first_line) == (chunk.index, chunk.first_line)
        assert packed_chunk.line_count == len(chunk.lines)
        assert {int(k): tuple(v) for k, v in packed_chunk.marks.items()} == chunk.marks
    assert any(c.marks for c in packed.chunks)


def test_no_traceback_points_at_the_last_error_line() -> None:
    script = textwrap.dedent(
        """\
        import logging

        def test_it():
            logging.info("starting %s", "x")
            value = compute()
            assert value
        """
    )
    log = "INFO starting x\nINFO other\nERROR boom: it broke\n"
    analysis = analyze([Script("t.py", script)], log)
    snap = snapshot.build(analysis, render(analysis, "tplus", "line"), log)
    assert snap.summary["log"]["lines"] == 3
    assert len(snap.chunks) == 1 and snap.chunks[0].lines[2] == "ERROR boom: it broke"
    assert "boom" in snap.summary["error"]["message"]
    assert snap.summary["error"]["log_lines"] == [3, 3] and snap.summary["error"]["frames"] == []
    (statement,) = snap.summary["statements"]
    assert statement["state"] == State.EXE.value and statement["matches"] == [[1, True]]
    assert snap.chunks[0].marks == {1: (0,)}


@given(
    st.lists(st.text(alphabet=st.characters(blacklist_characters="\n\r"), max_size=12), max_size=60),
    st.integers(min_value=1, max_value=9),
    st.booleans(),
)
def test_chunks_cover_the_log_once_in_order(lines: list[str], size: int, crlf: bool) -> None:
    log = ("\r\n" if crlf else "\n").join(lines)
    analysis = analyze([Script("t.py", "def test_a():\n    pass\n")], log)
    snap = snapshot.build(analysis, render(analysis, "T0", "line"), log, chunk_lines=size)
    expected = snapshot.log_lines(log)
    assert [line for chunk in snap.chunks for line in chunk.lines] == expected
    assert snap.summary["log"]["lines"] == len(expected)
    starts = [chunk.first_line for chunk in snap.chunks]
    assert starts == list(range(1, len(expected) + 1, size))
    for chunk in snap.chunks:
        assert all(chunk.first_line <= n <= chunk.last_line for n in chunk.marks)


def test_log_lines_number_like_the_parser() -> None:
    log = "a\r\nb\n\nc"
    analysis = analyze([Script("t.py", "def test_a():\n    print('c')\n")], log)
    assert snapshot.log_lines(log) == ["a", "b", "", "c"]
    assert [m.line for m in analysis.log.messages if m.text == "c"] == [4]
    assert Loc("t.py", 2) in analysis.traces["T0"].kept
