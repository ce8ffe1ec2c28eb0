"""Typed evidence reaches the triage result, its JSON and the CLI's text; channels can be switched off."""

from __future__ import annotations

import asyncio

import pytest

from app.analysis.model import Script
from app.emit.text import format_result
from app.localize.evidence import Channel, Evidence
from app.localize.result import TriageOptions
from app.triage import check_options, triage

SCRIPT = """class T:
    def test_kernel(self):
        version = self.params.get("version", "4.1")
        if version.startswith("4|5"):
            self.log.info("supported")
        else:
            self.fail("unsupported kernel %s" % version)
"""
LOG = (
    "Traceback (most recent call last):\n"
    '  File "/src/t.py", line 7, in test_kernel\n'
    '    self.fail("unsupported kernel %s" % version)\n'
    "TestFail: unsupported kernel 4.1\n"
)


def _triage(log: str, **options: object) -> object:
    return asyncio.run(
        triage([Script("t.py", SCRIPT)], log, TriageOptions(level="line", k=3, **options), client=None)
    )


def test_ranked_items_carry_evidence_in_json_and_text() -> None:
    result = _triage(LOG)
    body = result.to_dict()  # type: ignore[attr-defined]
    assert body["evidence_found"] is True
    first = body["ranking"][0]
    assert first["evidence"], "the top item explains itself"
    record = Evidence.from_dict(first["evidence"][0])
    assert record.channel in set(Channel)
    assert record.weight == pytest.approx(first["evidence"][0]["weight"])
    text = format_result(result, [])  # type: ignore[arg-type]
    assert f"[{record.channel}] t.py:{record.line}" in text


def test_a_failure_without_evidence_is_marked_as_a_guess() -> None:
    result = _triage("the job ended\n")
    assert result.evidence_found is False  # type: ignore[attr-defined]
    assert any("guess" in w for w in result.warnings)  # type: ignore[attr-defined]


def test_disabled_channels_are_validated_and_applied() -> None:
    with pytest.raises(ValueError, match="unknown channel"):
        check_options(TriageOptions(disabled_channels=frozenset({"nonsense"})))
    with pytest.raises(ValueError, match="single string"):
        TriageOptions(disabled_channels="check").validated()  # type: ignore[arg-type]
    result = _triage(LOG, disabled_channels=frozenset({"check", "traceback"}))
    channels = {e.channel for item in result.ranking for e in item.evidence}  # type: ignore[attr-defined]
    assert Channel.CHECK not in channels and Channel.TRACEBACK not in channels


def test_the_stacktrace_baseline_is_a_registered_ranker() -> None:
    result = _triage(LOG, ranker="stacktrace")
    assert result.ranker == "stacktrace"  # type: ignore[attr-defined]
    first = result.ranking[0]  # type: ignore[attr-defined]
    assert first.start_line <= 7 <= first.end_line
    assert first.evidence[0].channel == Channel.TRACEBACK
