"""The mined corpus kept in corpus/: every case loads, is checked, may be kept, and none comes from a
repository whose failures are held back for evaluation."""

from __future__ import annotations

import json
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

from app.mining.mine import is_open
from tcfl_lab.eval.cases import parse_case

CORPUS = Path(__file__).parent.parent / "corpus" / "mined"
# sources of held-back evaluation cases (and their forks and ancestors): never mined
HELD_BACK = (
    "avocado-misc-tests",
    "tp-qemu",
    "tp-libvirt",
    "avocado-vt",
    "sonic-mgmt",
    "openstack/tempest",
    "virt-test",
    "autotest/autotest",
    "tempest-lib",
)


@cache
def cases() -> tuple[dict[str, Any], ...]:
    return tuple(json.loads(p.read_text(encoding="utf-8")) for p in sorted(CORPUS.glob("*/*.json")))


def test_every_case_loads_and_is_hand_checked() -> None:
    assert len(cases()) >= 200
    for data in cases():
        case = parse_case(data)
        assert case.faulty and case.log.strip(), case.id
        assert data["hand_check"]["verdict"] in {"right", "wrong", "unsure"}, case.id
        assert data["confidence"] in {"high", "medium", "low"} and data["confidence_reasons"], case.id
        assert {f["role"] for f in data["test_files"]} <= {"faulty", "context"}, case.id
        assert is_open(data["licence"]), case.id


def test_no_case_from_a_held_back_source() -> None:
    for data in cases():
        repo = data["repo"].lower()
        assert not any(
            repo == name or repo.endswith("/" + name) or repo.startswith(name) for name in HELD_BACK
        ), data["id"]


def test_size_and_spread_of_the_right_cases() -> None:
    right = Counter(d["repo"] for d in cases() if d["hand_check"]["verdict"] == "right")
    total = sum(right.values())
    assert total >= 200 and len(right) >= 6
    assert max(right.values()) <= 0.4 * total  # no repository more than 40 % of the corpus


def test_faulty_lines_hold_the_text_the_fix_changed() -> None:
    for data in cases():
        files = {f["path"]: f["content"].split("\n") for f in data["test_files"]}
        for fault in data["faulty_lines"]:
            assert files[fault["path"]][fault["line"] - 1] == fault["text"], data["id"]
