"""Packed estimated traces: exact round trips, much smaller than JSON, refusals of what would change."""

from __future__ import annotations

import json
import random
import sys

import pytest

from app.history.packed import pack_trace, packable, unpack_trace


def test_a_trace_round_trips_exactly_in_its_order() -> None:
    trace = {
        "tests/b.py": {"E": [1, 2, 5, 400], "N": [], "D": [3, 4_000_000_000]},
        "tests/a.py": {"N": [7], "E": [8, 9]},
        "tests/empty.py": {},
    }
    back = unpack_trace(pack_trace(trace))
    assert back == trace
    assert list(back) == list(trace) and list(back["tests/a.py"]) == ["N", "E"]


def test_a_large_trace_packs_to_a_fraction_of_its_json() -> None:
    rng = random.Random(3)
    lines = list(range(1, 3001))
    ran = sorted(rng.sample(lines, 1800))
    rest = sorted(set(lines) - set(ran))
    trace = {"tests/test_big.py": {"E": ran, "N": rest[:900], "D": rest[900:]}}
    blob = pack_trace(trace)
    assert unpack_trace(blob) == trace
    assert len(blob) * 4 < len(json.dumps(trace))


@pytest.mark.parametrize(
    "trace",
    [
        None,
        [],
        {"a.py": {"E": [3, 2]}},  # unsorted: packing would reorder it
        {"a.py": {"E": [2, 2]}},
        {"a.py": {"E": [-1]}},
        {"a.py": {"E": [1.5]}},
        {"a.py": {"E": [True]}},
        {"a.py": {"E": "12"}},
        {"a.py": ["E"]},
        {"a.py": {"E": [2**32]}},
    ],
)
def test_what_would_not_round_trip_is_refused(trace: object) -> None:
    assert not packable(trace)
    with pytest.raises(ValueError):
        pack_trace(trace)  # type: ignore[arg-type]


def test_packing_gives_the_bytes_of_deltas_taken_number_by_number() -> None:
    """``_deltas`` over one array is the plain loop's array, byte for byte (stored blobs stay)."""
    from array import array
    from itertools import chain
    from operator import sub

    from app.history.packed import _deltas

    def plain(lists: list[list[int]]) -> bytes:
        numbers = array("I")
        for lines in lists:
            numbers.extend(map(sub, lines, chain((0,), lines)))
        if sys.byteorder != "little":
            numbers.byteswap()
        return numbers.tobytes()

    rng = random.Random(5)
    cases: list[list[list[int]]] = [[], [[]], [[], []], [[7]], [[], [1, 2, 3], [], [2**32 - 1]]]
    for _ in range(200):
        cases.append(
            [sorted(rng.sample(range(1, 5000), rng.randint(0, 40))) for _ in range(rng.randint(1, 6))]
        )
    for lists in cases:
        assert _deltas(lists) == plain(lists)
