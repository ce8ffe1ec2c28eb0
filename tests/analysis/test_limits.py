"""Cost limits: each one trips exactly past its bound on a small synthetic script, naming itself."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.analysis.limits import CostLimits, InputTooCostly, check_text, check_tree
from app.analysis.model import Script
from app.analysis.source import parse_tree


def _check(code: str, **limits: int) -> None:
    check_tree("t.py", parse_tree(code), CostLimits(**limits))


def nested_ifs(depth: int) -> str:
    lines = ["def f():"] + ["    " * (i + 1) + f"if x{i}:" for i in range(depth)]
    return "\n".join([*lines, "    " * (depth + 1) + "pass"]) + "\n"


def test_block_nesting_counts_every_body_and_names_the_setting() -> None:
    # def body + 9 if bodies = 10 nested blocks
    _check(nested_ifs(9), max_nesting_depth=10)
    with pytest.raises(InputTooCostly, match=r"t\.py:\d+: blocks nested over 9 deep; max_nesting_depth=9"):
        _check(nested_ifs(9), max_nesting_depth=9)


def test_syntax_depth_bounds_nested_calls_and_brackets() -> None:
    calls = "x = " + "f(" * 50 + ")" * 50 + "\n"
    _check(calls, max_syntax_depth=200)
    with pytest.raises(InputTooCostly, match="max_syntax_depth=60"):
        _check(calls, max_syntax_depth=60)
    brackets = "x = " + "[" * 50 + "]" * 50 + "\n"
    with pytest.raises(InputTooCostly, match="max_syntax_depth=40"):
        _check(brackets, max_syntax_depth=40)


def test_statements_and_branches_are_counted_per_function() -> None:
    body = "".join(f"    a{i} = {i}\n" for i in range(30))
    two = f"def f():\n{body}def g():\n{body}"
    _check(two, max_statements_per_function=30)  # 30 in each function, none over
    with pytest.raises(InputTooCostly, match="over 29 statements; max_statements_per_function=29"):
        _check(two, max_statements_per_function=29)
    chain = "def f(v):\n    if v == 0:\n        pass\n" + "".join(
        f"    elif v == {i}:\n        pass\n" for i in range(1, 20)
    )
    _check(chain, max_branches_per_function=20)
    with pytest.raises(InputTooCostly, match="over 19 branches; max_branches_per_function=19"):
        _check(chain, max_branches_per_function=19)


def test_a_nested_function_has_its_own_count() -> None:
    inner = "".join(f"        b{i} = {i}\n" for i in range(10))
    code = "def outer():\n    x = 1\n    def inner():\n" + inner + "    y = 2\n"
    _check(code, max_statements_per_function=10)


def test_line_limits_count_scripts_together_and_the_log() -> None:
    scripts = [Script("a.py", "x = 1\n" * 9), Script("b.py", "y = 2\n" * 9)]  # 10 + 10 lines
    check_text(scripts, "l\n" * 4, CostLimits(max_script_lines=20, max_log_lines=5))
    with pytest.raises(InputTooCostly, match="max_script_lines=19"):
        check_text(scripts, "", CostLimits(max_script_lines=19))
    with pytest.raises(InputTooCostly, match="max_log_lines=4"):
        check_text(scripts, "l\n" * 4, CostLimits(max_log_lines=4))


@settings(max_examples=80, deadline=None)
@given(st.text(st.sampled_from("()[]{}:\n    ifdelsxyz=+,'\"#\\"), max_size=400), st.integers(1, 30))
def test_any_text_passes_or_names_a_limit(code: str, bound: int) -> None:
    """Broken syntax included: the walk always ends, with nothing or a named limit."""
    try:
        _check(code, max_nesting_depth=bound, max_syntax_depth=bound * 3)
    except InputTooCostly as exc:
        assert "max_" in str(exc)


def test_broken_syntax_counts_as_the_rest_does() -> None:
    """ERROR nodes (whose kind id lies past the grammar's kinds) count for nothing themselves."""
    broken = nested_ifs(9) + "x = (]\n" + "".join(f"def g{i}(:\n    a = {i}\n" for i in range(3))
    assert parse_tree(broken).root_node.has_error
    _check(broken, max_nesting_depth=10)
    with pytest.raises(InputTooCostly, match="max_nesting_depth=9"):
        _check(broken, max_nesting_depth=9)
