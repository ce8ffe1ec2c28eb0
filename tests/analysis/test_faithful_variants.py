"""The paper's 12 faithful variants never change: every case under tests/data against the recorded sets.

The record (tests/data/faithful-variants.json) was written by scripts/variant_snapshot.py before the
enhanced trace and the log parser gained their newer rules; rewrite it only for a deliberate change
to the paper's algorithms.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scripts.variant_snapshot import FAITHFUL, snapshot

RECORD = Path(__file__).resolve().parent.parent / "data" / "faithful-variants.json"


@pytest.mark.slow
def test_faithful_variants_match_the_record_on_every_case():
    recorded = json.loads(RECORD.read_text())
    now = snapshot()
    assert sorted(now) == sorted(recorded)
    changed = [
        f"{case} {variant}: {recorded[case][variant]} -> {now[case][variant]}"
        for case in sorted(now)
        for variant in FAITHFUL
        if now[case][variant] != recorded[case][variant]
    ]
    assert not changed, "\n".join(changed[:20])


def test_record_covers_the_running_example_corpus_and_real_logs():
    recorded = json.loads(RECORD.read_text())
    assert "running-example" in recorded
    assert sum(k.startswith("corpus/") for k in recorded) >= 200
    assert sum(k.startswith("logs/real/") for k in recorded) >= 8
    assert all(set(v) == set(FAITHFUL) for v in recorded.values())
