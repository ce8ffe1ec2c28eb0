"""Line maps across script versions: equal lines map 1:1, edited lines pair, new lines stay unmapped."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from app.history.versions import changed_lines, hunks, map_lines, version_id

V0 = """def test_login(self):
    user = make_user()
    self.assertEqual(user.name, "alice")
    log.info("user %s created", user.name)
""".splitlines()


def test_unchanged_file_maps_every_line_to_itself() -> None:
    m = map_lines(V0, V0)
    assert m.forward == {1: 1, 2: 2, 3: 3, 4: 4}
    assert m.changed() == frozenset()


def test_inserted_comment_shifts_the_lines_below() -> None:
    new = [V0[0], "    # a comment", *V0[1:]]
    m = map_lines(V0, new)
    assert m.forward == {1: 1, 2: 3, 3: 4, 4: 5}
    assert m.added == frozenset({2})


def test_reindented_line_is_equal_after_stripping() -> None:
    new = [V0[0], "        user = make_user()", *V0[2:]]
    assert map_lines(V0, new).forward[2] == 2
    assert map_lines(V0, new).changed() == frozenset()


def test_edited_line_pairs_when_similar_enough() -> None:
    new = list(V0)
    new[2] = '    self.assertEqual(user.name, "alicia")'
    m = map_lines(V0, new)
    assert m.forward[3] == 3
    assert m.modified == frozenset({3})


def test_rewritten_line_has_no_pre_image() -> None:
    new = list(V0)
    new[2] = "    assert something_else_entirely()"
    m = map_lines(V0, new)
    assert 3 not in m.forward
    assert m.added == frozenset({3})


def test_replace_pairs_in_order_and_skips_dissimilar_lines() -> None:
    old = ["a = compute_value(1)", "b = compute_value(2)", "c = 3"]
    new = ["a = compute_value(10)", "zzz()", "b = compute_value(20)"]
    m = map_lines(old, new)
    assert m.forward == {1: 1, 2: 3}
    assert m.added == frozenset({2})


def test_version_id_is_content_addressed() -> None:
    a = version_id({"t.py": "x = 1\n", "u.py": "y = 2\n"})
    assert a == version_id({"u.py": "y = 2\n", "t.py": "x = 1\n"})
    assert a != version_id({"t.py": "x = 2\n", "u.py": "y = 2\n"})


def test_hunks_and_changed_lines_name_what_changed() -> None:
    new = list(V0)
    new[2] = '    self.assertEqual(user.name, "bob")'
    (h,) = hunks("t.py", V0, new)
    assert (h.old_start, h.old_count, h.new_start, h.new_count) == (3, 1, 3, 1)
    assert h.new_lines == (new[2],)
    old_files, new_files = {"t.py": "\n".join(V0)}, {"t.py": "\n".join(new), "n.py": "x = 1\n\ny = 2"}
    assert changed_lines(old_files, new_files) == {("t.py", 3), ("n.py", 1), ("n.py", 3)}


lines = st.lists(
    st.sampled_from(["a = 1", "b = 2", "call(x)", "", "# note", "return y", "x += 1"]), max_size=25
)


@given(lines, lines)
def test_map_is_monotone_one_to_one_and_keeps_text_or_similarity(old: list[str], new: list[str]) -> None:
    m = map_lines(old, new)
    pairs = sorted(m.forward.items())
    targets = [t for _, t in pairs]
    assert targets == sorted(targets) and len(set(targets)) == len(targets)
    for o, n in pairs:
        assert 1 <= o <= len(old) and 1 <= n <= len(new)
        assert old[o - 1].strip() == new[n - 1].strip() or n in m.modified
    assert not (set(targets) & m.added)


@given(lines)
def test_identity_maps_everything(text: list[str]) -> None:
    m = map_lines(text, text)
    assert m.forward == {n: n for n in range(1, len(text) + 1)}
    assert m.changed() == frozenset()


distinct = st.lists(
    st.sampled_from(["a = 1", "b = 2", "call(x)", "# note", "return y", "x += 1"]), unique=True
)


@given(distinct, st.integers(min_value=0, max_value=25), st.sampled_from(["# new comment", "new_call()", ""]))
def test_one_insertion_shifts_everything_below(text: list[str], at: int, extra: str) -> None:
    # with repeated lines difflib may leave one unmapped (it is not a minimal diff); distinct lines all map
    at = min(at, len(text))
    new = [*text[:at], extra, *text[at:]]
    m = map_lines(text, new)
    assert len(m.forward) == len(text)
    for o, n in m.forward.items():
        assert text[o - 1].strip() == new[n - 1].strip()
