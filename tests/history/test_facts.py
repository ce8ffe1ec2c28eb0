"""A run's history facts computed in bulk (``batch_facts``) are the ones computed one by one."""

from __future__ import annotations

from datetime import UTC, datetime

from app.analysis.limits import CostLimits
from app.analysis.model import Script
from app.analysis.parsed import ParseCache
from app.history.facts import batch_facts, run_facts
from app.history.packed import unpack_trace
from app.history.records import RunRecord, parse_test_id, scoped

HELPER = Script("helpers.py", "def check(v):\n    assert v\n")
TESTS = Script(
    "test_mod.py",
    "from helpers import check\n\n\ndef test_a():\n    check(1)\n\n\ndef test_b():\n    x = 2\n    if x:\n"
    "        print('x is', x)\n\n\ndef test_c():\n    raise ValueError('boom')\n",
)
OTHER = Script("test_other.py", "def test_z():\n    pass\n")
LOG = (
    "Traceback (most recent call last):\n"
    '  File "test_mod.py", line 15, in test_c\n'
    "    raise ValueError('boom')\nValueError: boom\n"
)
WHEN = datetime(2024, 1, 1, tzinfo=UTC)


def _record(
    test_id: str, verdict: str, log: str | None = None, scripts: tuple[Script, ...] = ()
) -> RunRecord:
    key, params = parse_test_id(test_id, "")
    return RunRecord(key, test_id, params, verdict, WHEN, scripts=scripts or (TESTS, HELPER, OTHER), log=log)


def test_batch_facts_are_each_records_facts() -> None:
    records = [
        _record("test_mod.py::test_a", "pass"),
        _record("test_mod.py::test_b", "pass"),
        _record("test_mod.py::test_a", "pass"),  # again: the same trace
        _record("test_mod.py::test_c", "fail", LOG),
        _record("test_mod.py::test_b", "pass", "x is 2\n"),
        _record("test_other.py::test_z", "skip"),
    ]
    found = batch_facts(records)
    parses = ParseCache()
    for record, got in zip(records, found, strict=True):
        kept = scoped(record, parses)
        want = run_facts(kept, parses)
        assert got.paths == tuple(s.path for s in kept.scripts)
        trace = unpack_trace(got.packed) if got.packed is not None else got.facts[2]
        assert (got.facts[0], got.facts[1], trace, got.facts[3]) == want
        assert got.warning is None
    assert found[0].paths == ("test_mod.py", "helpers.py")  # its version: what the test reaches


def test_scripts_over_a_cost_limit_give_the_logs_facts_and_a_warning() -> None:
    records = [_record("test_mod.py::test_a", "pass"), _record("test_mod.py::test_c", "fail", LOG)]
    found = batch_facts(records, CostLimits(max_script_lines=5))
    assert all(f.facts[2] is None and f.packed is None for f in found)
    assert found[1].facts[0] is not None and "ValueError" in (found[1].facts[1] or "")  # from the log
    assert all("max_script_lines=5" in (f.warning or "") for f in found)
