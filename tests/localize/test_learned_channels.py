"""The channels only a learned model weighs: source echoes and callers of the failing frame. Each on a
small script and a log written for it, through the real pipeline."""

from __future__ import annotations

from app.analysis.echo import echo_table, find_echoes
from app.analysis.model import Script
from app.analysis.pipeline import analyze
from app.localize.channels import Context
from app.localize.channels.caller import caller_scores, shared_helper
from app.localize.channels.echo import echo_scores
from app.localize.channels.traceback import script_frames

HELPERS = """\
import subprocess


def run(cmd):
    out = subprocess.check_output(cmd, shell=True)
    return out.decode()


def restart_service(name):
    return run("systemctl restart " + name)


def test_restart():
    restart_service("sshd.service")
    state = run("systemctl is-active sshd")
    assert state.strip() == "active"


def test_other():
    run("uptime --pretty")
"""


def _analysis(log: str, scripts: str = HELPERS):
    analysis = analyze([Script("tests/test_svc.py", scripts)], log)
    return analysis, Context.build(analysis, "tplus")


def _line_of(ctx: Context, sid: int) -> int:
    return ctx.statements[sid].start_line


def test_a_cut_traceback_still_locates_the_line_it_echoes() -> None:
    # no frame header survived the cut: only the echoed source line and the error
    log = '...\n    state = run("systemctl is-active sshd")\nsubprocess.CalledProcessError: exit status 3\n'
    analysis, ctx = _analysis(log)
    assert [(e.line, e.marked) for e in analysis.echoes] == [(15, False)]
    scores = echo_scores(ctx)
    assert {_line_of(ctx, sid) for sid in scores} == {15}
    (signal,) = scores.values()
    assert signal.value == 1.0 and signal.source_line == 2


def test_pytest_marked_line_and_earlier_echoes() -> None:
    log = (
        "    def test_restart():\n"
        '        restart_service("sshd.service")\n'
        '>       state = run("systemctl is-active sshd")\n'
        "E       subprocess.CalledProcessError: exit status 3\n"
    )
    analysis, ctx = _analysis(log)
    by_line = {_line_of(ctx, sid): s.value for sid, s in echo_scores(ctx).items()}
    assert by_line[15] == 1.0  # the '>' line
    assert by_line[14] < by_line[15]  # an earlier echo
    # short lines say too little: "def test_restart():" is echoed but no statement of its own
    assert all(e.line != 13 for e in analysis.echoes)


def test_echo_table_skips_comments_and_short_lines() -> None:
    analysis, _ctx = _analysis("nothing\n", "x = 1\n# a comment that is long enough\nvalue = compute(1, 2)\n")
    table = echo_table(analysis.program)
    assert list(table) == ["value=compute(1,2)"]
    assert find_echoes(table, analysis.line_index, "  value = compute(1,  2)\n")[0].line == 3
    # only the log's tail is read
    assert find_echoes(table, analysis.line_index, "value = compute(1, 2)\n" + "x\n" * 10, tail_lines=5) == ()


def test_callers_of_a_shared_helper_that_failed() -> None:
    log = (
        "Traceback (most recent call last):\n"
        '  File "/ci/tests/test_svc.py", line 14, in test_restart\n'
        '    restart_service("sshd.service")\n'
        '  File "/ci/tests/test_svc.py", line 10, in restart_service\n'
        '    return run("systemctl restart " + name)\n'
        '  File "/ci/tests/test_svc.py", line 5, in run\n'
        "    out = subprocess.check_output(cmd, shell=True)\n"
        "subprocess.CalledProcessError: Command 'systemctl restart sshd.service' returned non-zero exit"
        " status 5.\n"
    )
    ctx = _analysis(log)[1]
    frames = script_frames(ctx)
    assert shared_helper(ctx, frames)  # run() is called from four places
    by_line = {_line_of(ctx, sid): s.value for sid, s in caller_scores(ctx, frames).items()}
    assert by_line == {10: 1.0, 14: 0.7}  # the immediate caller first; the innermost frame is no caller


def test_a_line_with_an_inline_comment_is_echoed_as_the_traceback_prints_it() -> None:
    script = "def f(values):\n    total = sum(values) / len(values)  # the mean\n    return total\n"
    log = (
        '  File "/ci/t.py", line 2, in f\n    total = sum(values) / len(values)\n'
        "ZeroDivisionError: division by zero\n"
    )
    analysis, _ctx = _analysis(log, script)
    assert [(e.line, e.shared) for e in analysis.echoes] == [(2, 1)]
    # a '#' inside a string is no comment: the line is kept whole
    table = echo_table(_analysis("x\n", 'name = "a #1 thing"\n')[0].program)
    assert list(table) == ['name="a#1thing"']
