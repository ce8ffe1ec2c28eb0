"""Failure signatures: run-specific values masked, different errors or locations kept apart."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from app.ingest.signature import normalise_error, signature


def test_values_that_differ_between_runs_are_masked() -> None:
    a = "TimeoutError: 10.0.0.7:8080 no answer in 30s at 2024-01-01T10:00:00Z (/var/run/a/b.sock) 0xdeadbeef"
    b = "TimeoutError: 10.0.3.9:8081 no answer in 45s at 2025-02-03T11:12:13Z (/tmp/x/y.sock) 0x1"
    assert normalise_error(a) == normalise_error(b)
    assert signature(a, "t.py:3") == signature(b, "t.py:3")


def test_different_errors_or_tops_differ() -> None:
    assert signature("KeyError: 'mtu'", "a.py:3") != signature("KeyError: 'mtu'", "a.py:9")
    assert signature("KeyError: 'mtu'", "a.py:3") != signature("ValueError: 'mtu'", "a.py:3")


def test_uuid_and_only_the_first_line() -> None:
    one = normalise_error("Error: job 123e4567-e89b-12d3-a456-426614174000 failed\nmore")
    assert one == "Error: job <uuid> failed"


@given(st.text(max_size=200))
def test_normalising_is_idempotent_and_one_line(text: str) -> None:
    once = normalise_error(text)
    assert "\n" not in once
    assert normalise_error(once) == once
