"""Never worse than a stack trace: every script frame a plain pattern finds reaches the parse's frames.

Tracebacks are generated, then mangled the ways logs reach us (wrapped at 72 columns as in a
commit message or email, quoted, prefixed, indented, CRLF, junk around them); the real parser
must still give every frame in the scripts, with its line, and the innermost one last.
"""

from __future__ import annotations

import textwrap

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.analysis.logparse import match_script_path, parse_log
from app.analysis.model import Script
from app.analysis.pipeline import analyze
from app.analysis.render import render
from app.localize.evidence import Channel
from app.localize.heuristic import rank_heuristic

SCRIPTS = ("tests/functional/test_network_bridge.py", "tests/functional/helpers_mod.py")
ELSEWHERE = ("/usr/lib/python3.11/site-packages/requests/api.py", "/opt/venv/lib/python3.11/json/decoder.py")
ROOTS = ("", "/home/ci/workspace/job-1234/a/very/long/path/to/the/checkout/", "C:\\ci\\w\\", "./")
FUNCS = ("test_bridge", "helper", "<module>", "wait_for", "Case.setUp")
PREFIXES = (
    lambda k: "",
    lambda k: "> ",
    lambda k: ">> ",
    lambda k: "    ",
    lambda k: f"2024-05-01 10:{k % 60:02d}:{(7 * k) % 60:02d},{(37 * k) % 1000:03d} INFO ",
    lambda k: f"2024-05-01T10:00:{k % 60:02d}.{(13 * k) % 10_000_000:07d}Z ",
    lambda k: f"[{k % 24:02d}:00:01] ERROR: ",
    lambda k: f"Jan  5 10:00:{k % 60:02d} host app[123]: ",
)
junk = st.lists(st.text(alphabet="abcdefghij klmnop0123456789-=", max_size=60), max_size=3)
frame = st.tuples(
    st.sampled_from(SCRIPTS + ELSEWHERE), st.sampled_from(ROOTS), st.integers(1, 9999), st.sampled_from(FUNCS)
)


def _printed(path: str, root: str) -> str:
    if path.startswith("/"):
        return path
    return root + (path.replace("/", "\\") if "\\" in root else path)


def _wrap(lines: list[str]) -> list[str]:
    out: list[str] = []
    for line in lines:
        out.extend(textwrap.wrap(line, 72, break_on_hyphens=False) or [""])
    return out


@st.composite
def mangled(draw: st.DrawFn) -> tuple[str, list[tuple[str, int]], str]:
    frames = draw(st.lists(frame, min_size=1, max_size=6))
    style = draw(st.sampled_from(("python", "pytest-short", "pytest-long")))
    lines: list[str] = []
    if style == "python":
        lines.append("Traceback (most recent call last):")
        for path, root, n, func in frames:
            lines += [f'  File "{_printed(path, root)}", line {n}, in {func}', "    value = compute(x)"]
        lines.append("ValueError: boom")
    else:
        for k, (path, root, n, func) in enumerate(frames):
            where = _printed(path, root.replace("\\", "/") if root.startswith("C:") else root)
            if style == "pytest-short":
                lines += [f"{where}:{n}: in {func.split('.')[-1].strip('<>')}", "    value = compute(x)"]
            else:
                last = k == len(frames) - 1
                lines += [">       value = compute(x)", "", f"{where}:{n}:{' ValueError' if last else ''}"]
        lines.append("E   ValueError: boom")
    wrap = draw(st.booleans()) and style == "python"  # pytest locations are short: not wrapped
    prefix = draw(st.sampled_from(PREFIXES))
    wrap_first = draw(st.booleans())
    if wrap and wrap_first:
        lines = _wrap(lines)
    lines = [prefix(k) + line for k, line in enumerate(lines)]
    if wrap and not wrap_first:
        lines = _wrap(lines)
    text = "\n".join([*draw(junk), *lines, *draw(junk)])
    if draw(st.booleans()):
        text = text.replace("\n", "\r\n")
    wanted = [(path, n) for path, _root, n, _f in frames if path in SCRIPTS]
    return text, wanted, style


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mangled())
def test_every_script_frame_is_found_with_its_line(case: tuple[str, list[tuple[str, int]], str]) -> None:
    text, wanted, _style = case
    parsed = parse_log(text)
    found = [
        (script, f.line) for f in parsed.frames if (script := match_script_path(f.path, SCRIPTS)) is not None
    ]
    for want in wanted:
        assert want in found, (want, found, text)
    if wanted:  # as the ranking reads it: the last script frame of the last traceback holding one
        script_frames = [f for f in parsed.frames if match_script_path(f.path, SCRIPTS) is not None]
        last_tb = max(f.traceback for f in script_frames)
        innermost = [f for f in script_frames if f.traceback == last_tb][-1]
        assert (match_script_path(innermost.path, SCRIPTS), innermost.line) == wanted[-1]


WRAPPED_QUOTED = """\
Hi, the nightly run failed again:

> Traceback (most recent call last):
>   File "/home/ci/workspace/job-1234/a/very/long/path/to/tests/t.py", line
> 7, in test_x
>     check(3)
>   File "/home/ci/workspace/job-1234/a/very/long/path/to/tests/t.py", line 3,
> in check
>     assert n == 2
> AssertionError
"""

SCRIPT = "def helper():\n    return 1\n\ndef check(n):\n    assert n == 2\n\ndef test_x():\n    check(3)\n"


def test_a_quoted_wrapped_traceback_reaches_the_ranking_as_traceback_evidence() -> None:
    # the script's lines 3 and 7 are printed as 5 and 8 here: fix the numbers to the script
    log = WRAPPED_QUOTED.replace("line\n> 7,", "line\n> 8,").replace("line 3,", "line 5,")
    analysis = analyze([Script("tests/t.py", SCRIPT)], log)
    assert [(f.line, f.function) for f in analysis.error_frames] == [(8, "test_x"), (5, "check")]
    ranked = rank_heuristic(analysis, render(analysis, "T0", "line"), 3)
    assert ranked[0].element.id == "5"
    assert Channel.TRACEBACK in {e.channel for e in ranked[0].evidence}


def test_a_log_with_logging_locations_gives_no_frames() -> None:
    # quoted `%(filename)s:%(lineno)d:` logging prefixes and warnings look like pytest locations,
    # but name a level or a warning, not an exception
    log = "> t.py:3: INFO: starting\n> t.py:4: in two words\n> t.py:5: DeprecationWarning: old\n"
    assert parse_log(log).frames == ()
