"""Lines that only failures print (``app.history.newlines``): real logs of a script run passing
and failing, masking of run-specific tokens, and the new-lines evidence channel."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from app.analysis.model import Script
from app.analysis.pipeline import analyze
from app.history.newlines import new_lines, newline_scores, printed, statement_messages

SCRIPT = """import logging
import sys

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
log = logging.getLogger("shop")


def pay(amount, retries):
    log.info("paying %d cents", amount)
    if retries:
        log.warning("gateway busy, retrying %d times", retries)
    return amount >= 0


def test_pay():
    log.info("starting at step %d", 1)
    ok = pay(int(sys.argv[1]), int(sys.argv[2]))
    assert ok, "payment refused"


test_pay()
"""


def _run(tmp: Path, amount: int, retries: int) -> str:
    script = tmp / "shop.py"
    script.write_text(SCRIPT)
    done = subprocess.run(
        [sys.executable, "shop.py", str(amount), str(retries)],
        cwd=tmp,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return done.stdout + done.stderr


def test_a_failure_is_read_against_its_test_s_passes(tmp_path: Path) -> None:
    passes = [_run(tmp_path, 120, 0), _run(tmp_path, 99, 0)]  # other amounts, other timestamps
    failure = _run(tmp_path, -5, 2)
    assert "AssertionError: payment refused" in failure
    lines = failure.splitlines()
    new = new_lines(failure, passes)
    assert new is not None
    said = [lines[n - 1] for n in new]
    assert any("gateway busy, retrying" in s for s in said)  # a statement no pass reached
    assert any("payment refused" in s for s in said) and any("Traceback" in s for s in said)
    assert not any("paying" in s or "starting at step" in s for s in said)  # numbers and times masked
    assert new_lines(failure, []) is None  # no passing log: nothing to say


def test_the_channel_points_at_the_statement_that_printed_the_new_message(tmp_path: Path) -> None:
    passes = [_run(tmp_path, 120, 0)]
    failure = _run(tmp_path, -5, 2)
    analysis = analyze([Script("shop.py", SCRIPT)], failure)
    seen = frozenset().union(*(printed(p) for p in passes))
    scores = newline_scores(statement_messages(analysis), seen)
    assert {loc.line for loc in scores} == {11}  # log.warning("gateway busy, ...")
    assert newline_scores(statement_messages(analysis), printed(failure)) == {}


@given(st.lists(st.text(alphabet="abc xyz:=", min_size=1, max_size=20), min_size=1, max_size=20))
def test_a_log_holds_no_line_new_to_itself(words: list[str]) -> None:
    log = "\n".join(words)
    assert new_lines(log, [log]) == ()


@given(st.integers(0, 10**9), st.integers(0, 10**9))
def test_numbers_alone_make_no_line_new(a: int, b: int) -> None:
    assert new_lines(f"INFO cart total {a} after {b} ms", [f"INFO cart total {b} after {a} ms"]) == ()
