"""Value provenance matchers: formatted-string holes and ``name = value`` pairs (property-based)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from app.localize.channels.facts import Template
from app.localize.channels.values import _PAIR, _clean, _holes

WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyz-_.", min_size=1, max_size=12)
PIECE = st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZ", min_size=3, max_size=10)  # never inside a value


@given(pieces=st.lists(PIECE, min_size=2, max_size=5), data=st.data())
def test_holes_recover_the_printed_values(pieces: list[str], data: st.DataObject) -> None:
    values = [data.draw(st.one_of(WORD, st.just(""))) for _ in pieces[1:]]
    text = pieces[0] + "".join(f" {v} {p}" for v, p in zip(values, pieces[1:], strict=True))
    template = Template(
        (*(f"{p} " for p in pieces[:-1]), pieces[-1]), tuple(frozenset({"x"}) for _ in values)
    )
    assert _holes(template, " ".join(text.split())) == values


@given(prefix=st.text(max_size=50), text=st.text(max_size=200))
def test_holes_never_fail_on_unrelated_text(prefix: str, text: str) -> None:
    template = Template(("configure ", " --apply"), (frozenset({"x"}),))
    found = _holes(template, prefix + text)
    assert found is None or len(found) == 1


def test_a_missing_piece_is_no_match() -> None:
    assert _holes(Template(("run ", " now"), (frozenset({"x"}),)), "run it later") is None


@given(name=st.from_regex(r"[a-z_][a-z0-9_]{0,10}", fullmatch=True), value=WORD)
def test_pairs_are_read_in_every_usual_spelling(name: str, value: str) -> None:
    for text in (f"{name} = {value}", f"{name}: {value}", f"{name}={value!r}", f"x, {name} = '{value}'"):
        assert (name, value) in [(n, _clean(v)) for n, v in _PAIR.findall(text)], text


def test_pairs_keep_empty_values() -> None:
    assert [(n, _clean(v)) for n, v in _PAIR.findall("stdout = '' rc = 2")] == [("stdout", ""), ("rc", "2")]
