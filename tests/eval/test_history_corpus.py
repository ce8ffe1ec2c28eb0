"""The corpus with CI history: benign edits, helper discovery, per-test traced child runs with noise."""

from __future__ import annotations

import ast
import json
import random
from pathlib import Path

import pytest

from app.history.versions import map_lines
from tcfl_lab.eval.history_corpus import (
    Executor,
    HistoryOptions,
    HistorySummary,
    benign_edit,
    benign_edits,
    build_history_corpus,
    helpers_used_twice,
    rename_local,
    shift,
    statement_starts,
)

TINY = """import logging
import unittest

log = logging.getLogger("tiny")


def make(n):
    return list(range(n))


class Tiny(unittest.TestCase):
    def setUp(self):
        self.base = 40

    def helper(self, x):
        return x + self.base

    def test_ok(self):
        log.info("checking %s", "ok")
        self.assertEqual(self.helper(2), 42)
        self.assertEqual(len(make(3)), 3)

    def test_bad(self):
        value = self.helper(1)
        print("value is", value)
        if value > 100:
            value = 0
        self.assertEqual(value, 42)

    def test_other(self):
        self.assertEqual(make(2), [0, 1])
"""


def test_benign_edits_keep_the_code_and_every_line_maps() -> None:
    rng = random.Random(3)
    source = TINY
    for _ in range(5):
        edited, inserted = benign_edit(source, rng)
        ast.parse(edited)
        assert ast.dump(ast.parse(edited)) == ast.dump(ast.parse(source))
        m = map_lines(source.splitlines(), edited.splitlines())
        assert m.forward == {n: shift(n, inserted) for n in range(1, len(source.splitlines()) + 1)}
        source = edited


def test_a_local_rename_changes_names_only() -> None:
    rng = random.Random(1)
    renamed = rename_local(TINY, rng)
    assert renamed is not None and renamed != TINY
    assert "_value" in renamed
    new_tree = ast.dump(ast.parse(renamed))
    assert new_tree != ast.dump(ast.parse(TINY))
    assert "self.base" in renamed and "log.info" in renamed  # attributes untouched
    assert rename_local(TINY, rng, avoid=tuple(range(1, 40))) is None


def test_benign_edits_track_the_line_to_keep() -> None:
    line = TINY.splitlines().index("        self.assertEqual(value, 42)") + 1
    edited, moved = benign_edits(TINY, random.Random(5), 4, line)
    assert moved is not None and edited.splitlines()[moved - 1].strip() == "self.assertEqual(value, 42)"


def test_benign_edit_avoids_the_given_lines() -> None:
    starts = [line for line, _ in statement_starts(TINY)]
    rng = random.Random(0)
    for _ in range(20):
        _, inserted = benign_edit(TINY, rng, avoid=tuple(starts[1:]))
        assert inserted == starts[0]


def test_helpers_reached_by_two_chosen_tests() -> None:
    tests = ["Tiny.test_ok", "Tiny.test_bad", "Tiny.test_other"]
    assert helpers_used_twice(TINY, tests) == ["Tiny.setUp", "Tiny.helper", "make"]
    assert helpers_used_twice(TINY, ["Tiny.test_bad"]) == []


def test_each_test_runs_alone_with_its_own_log_trace_and_injected_noise(tmp_path: Path) -> None:
    executor = Executor(tmp_path, HistoryOptions(timeout_s=30), HistorySummary())
    tests = ["Tiny.test_ok", "Tiny.test_bad"]
    runs = executor.run("test/test_tiny.py", TINY, tests, "a")
    ok, bad = runs["Tiny.test_ok"], runs["Tiny.test_bad"]
    assert (ok.outcome, bad.outcome) == ("pass", "fail")
    assert " INFO tiny: checking ok" in ok.output and "value is" not in ok.output
    assert "AssertionError: 41 != 42" in bad.output and "checking ok" not in bad.output
    assert 20 in ok.executed and 20 not in bad.executed  # line 20 is test_ok's log call
    assert 27 not in bad.executed  # the branch not taken
    assert executor.run("test/test_tiny.py", TINY, tests, "a") is runs  # same execution: not run again
    noisy = executor.run("test/test_tiny.py", TINY, tests, "a", {"Tiny.test_ok": 21})
    hit = noisy["Tiny.test_ok"]
    assert hit.outcome == "error" and hit.noise
    assert "ConnectionResetError" in hit.output and "history_runner" not in hit.output
    assert 'test/test_tiny.py", line 21, in test_ok' in hit.output
    assert 22 not in hit.executed
    assert not noisy["Tiny.test_bad"].noise


@pytest.mark.slow
def test_parallel_build_gives_the_same_corpus_as_one_worker(tmp_path: Path) -> None:
    options = HistoryOptions(
        max_files=1, mutants_per_file=1, tests_per_file=3, rounds=(2, 2, 2), max_seconds=300
    )
    one = build_history_corpus(tmp_path / "one", options, jobs=1)
    two = build_history_corpus(tmp_path / "two", options, jobs=2)
    assert one.groups == two.groups >= 1 and one.cases == two.cases >= 1
    names = sorted(p.name for p in (tmp_path / "one" / "groups").iterdir())
    assert names == sorted(p.name for p in (tmp_path / "two" / "groups").iterdir())
    for name in names:
        a = json.loads((tmp_path / "one" / "groups" / name).read_text())
        b = json.loads((tmp_path / "two" / "groups" / name).read_text())
        # logs carry unittest's timings; everything else is the same
        assert (a["versions"], a["traces"], a["cases"]) == (b["versions"], b["traces"], b["cases"])
        facts = ("test", "version", "env", "outcome", "noise", "trace")
        assert [[r[f] for f in facts] for r in a["runs"]] == [[r[f] for f in facts] for r in b["runs"]]
