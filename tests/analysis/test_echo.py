"""Source echoes (app/analysis/echo.py): any log gives echoes that point at real script lines."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from app.analysis.echo import echo_table, find_echoes
from app.analysis.model import Script
from app.analysis.pipeline import analyze

SCRIPT = 'def test_restart():\n    state = run("systemctl is-active sshd")\n    assert state == "active"\n'


def test_lines_of_marks_only_are_not_echoes() -> None:
    # ">>>>" or "||||" lose every character to the mark strip: nothing is left to look up
    analysis = analyze([Script("tests/test_svc.py", SCRIPT)], "x\n")
    table = echo_table(analysis.program)
    assert find_echoes(table, analysis.line_index, ">" * 20 + "\n" + "|" * 15 + "\n>|>|>|>|>|>|>|\n") == ()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.text(alphabet=">|E \t-", max_size=30), st.sampled_from(SCRIPT.splitlines()))))
def test_any_log_gives_echoes_of_script_lines_only(lines: list[str]) -> None:
    analysis = analyze([Script("tests/test_svc.py", SCRIPT)], "x\n")
    table = echo_table(analysis.program)
    log = "\n".join(lines)
    for echo in find_echoes(table, analysis.line_index, log):
        assert echo.line in (2, 3)
        assert 1 <= echo.log_line <= log.count("\n") + 1
