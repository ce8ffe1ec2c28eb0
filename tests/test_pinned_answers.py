"""The answers speed work must not change: traces, matches, the parsed log and the
hand-set and stack-trace rankings of the golden example, the 20 real cases and the mined corpus's
right cases, against ``tests/data/snapshots/answers.json`` (``scripts/pin_answers.py`` wrote it).

Each check runs ``scripts/pin_answers.py`` in a process of its own, under the hash seed the
answers were recorded with. The quick lane checks the golden example, every 4th real case and
every 60th mined case; the slow lane checks every case.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.support.pinned import ROOT, SNAPSHOT, cases

SCRIPT = ROOT / "scripts" / "pin_answers.py"


def test_every_case_is_pinned() -> None:
    names = [name for name, *_ in cases()]
    assert sorted(json.loads(SNAPSHOT.read_text())) == sorted(names)
    mined = [n for n in names if n.startswith("mined/")]
    assert len(mined) >= 250 and len(names) - len(mined) == 21


def _check(*flags: str) -> None:
    done = subprocess.run([sys.executable, str(SCRIPT), *flags], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert done.stdout.rstrip().endswith(" 0 answers changed")


def test_answers_of_the_sampled_cases_are_the_pinned_ones() -> None:
    _check("--sample")


@pytest.mark.slow  # some 150 s of CPU: every case analysed, and ranked four ways
def test_answers_of_every_case_are_the_pinned_ones() -> None:
    _check()
