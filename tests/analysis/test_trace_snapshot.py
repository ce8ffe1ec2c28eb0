"""Every trace variant gives the same line sets as when the snapshot was recorded.

The snapshot (tests/data/snapshots/trace_variants.json) was taken before the static phase was
made to compute only what is asked; both ways of asking are checked against it here.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from app.analysis.model import VARIANTS, Analysis
from app.analysis.pipeline import analyze
from tests.analysis.snapshot_cases import SNAPSHOT, cases, digest

RECORDED: dict[str, dict[str, list[object]]] = json.loads(SNAPSHOT.read_text())
CASES = list(cases())


def test_the_snapshot_covers_every_case_and_variant() -> None:
    assert {name for name, *_ in CASES} == set(RECORDED)
    assert all(set(variants) == set(VARIANTS) for variants in RECORDED.values())
    assert len(RECORDED) > 200


@pytest.mark.parametrize("name", [c[0] for c in CASES])
def test_all_variants_match_the_snapshot(name: str, case_analysis: Callable[[str], Analysis]) -> None:
    analysis = case_analysis(name)  # analyze(scripts, log, log_functions=functions) of the case
    got = {variant: digest(trace.kept) for variant, trace in analysis.traces.items()}
    assert got == RECORDED[name]


@pytest.mark.parametrize(
    ("index", "name", "scripts", "log", "functions"),
    [(i, *case) for i, case in enumerate(CASES)],
    ids=[c[0] for c in CASES],
)
def test_one_asked_variant_matches_the_snapshot(
    index: int, name: str, scripts, log: str, functions: tuple[str, ...]
) -> None:
    """Triage asks for one variant (and no explanations): it must get the same set all-at-once gives."""
    variant = VARIANTS[index % len(VARIANTS)]  # every variant over many cases, one analysis per case
    analysis = analyze(scripts, log, log_functions=functions, variants=(variant,), explain=False)
    assert set(analysis.traces) == {variant}
    assert digest(analysis.traces[variant].kept) == RECORDED[name][variant]
