"""Calls checked against the scripts' own def signatures (``app.localize.channels.calls``).

Each signature and call is checked against what the running interpreter does with it: a call the
checker says does not fit raises TypeError when run, one it says fits does not.
"""

from __future__ import annotations

import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.analysis.model import Script
from app.analysis.pipeline import analyze
from app.localize.channels.calls import Signature, call_shapes, format_misfits, misfits, passes, signature

DEFS = {
    "plain": "def f(a, b):\n    pass\n",
    "defaults": "def f(a, b=1, *, c=2):\n    pass\n",
    "kwonly": "def f(a, *, c):\n    pass\n",
    "star": "def f(a, *rest, **options):\n    pass\n",
    "wrapped": "def f(a,\n      b,\n      c=3):  # a comment\n    pass\n",
    "method": "class X:\n    def f(self, a):\n        pass\n",
    "static": "class X:\n    @staticmethod\n    def f(a):\n        pass\n",
}
CALLS = [
    "f(1)",
    "f(1, 2)",
    "f(1, 2, 3)",
    "f(1, c=2)",
    "f(1, a=2)",
    "f(b=1, a=2)",
    "f(*x)",
    "f(1, **kw)",
    "f()",
]


def _sig(name: str) -> Signature | None:
    code = DEFS[name]
    program = analyze([Script("t.py", code)], "").program
    (function,) = [f for f in program.functions if f.name == "f"]
    return signature(function, program.files[0].lines)


def _fits_when_run(name: str, call: str) -> bool:
    code = DEFS[name]
    target = "X()." + call if name in ("method", "static") else call
    scope: dict[str, object] = {"x": [1], "kw": {"z": 1}}
    exec(code, scope)
    try:
        exec(target, scope)
    except TypeError:
        return False
    return True


@pytest.mark.parametrize("name", sorted(DEFS))
@pytest.mark.parametrize("call", CALLS)
def test_a_call_misfits_exactly_when_the_interpreter_refuses_it(name: str, call: str) -> None:
    sig = _sig(name)
    assert sig is not None
    (shape,) = call_shapes("y = X()." + call if name in ("method", "static") else call, "f")
    wrong = misfits(sig, shape)
    unknown = shape.star or shape.double_star  # splatted: the checker says nothing either way
    if not unknown:
        assert (not wrong) == _fits_when_run(name, call), (name, call, wrong)
    elif wrong:
        assert not _fits_when_run(name, call)


def test_a_constructor_call_is_checked_against_init_without_self() -> None:
    code = "class Conn:\n    def __init__(self, host):\n        self.host = host\n"
    program = analyze([Script("t.py", code)], "").program
    (init,) = [f for f in program.functions if f.name == "__init__"]
    sig = signature(init, program.files[0].lines)
    assert sig is not None
    (fits,) = call_shapes("c = Conn('a')", "Conn")
    (extra,) = call_shapes("c = Conn('a', 22)", "Conn")
    (keyword,) = call_shapes("c = Conn('a', port=22)", "Conn")
    assert misfits(sig, fits, constructor=True) == ()
    assert misfits(sig, extra, constructor=True) == ("too-many",)
    assert misfits(sig, keyword, constructor=True) == ("keyword:port",)


def test_clause_headers_and_nested_calls_are_read() -> None:
    assert [c.positional for c in call_shapes("if f(1, 2):", "f")] == [2]
    assert [c.positional for c in call_shapes("elif g(f(1)):", "f")] == [1]
    assert [c.keywords for c in call_shapes("with obj.f(a=1) as x:", "f")] == [("a",)]
    assert [c.positional for c in call_shapes("for x in f(1, 2, 3):", "f")] == [3]
    assert call_shapes("this is not python (", "f") == []


def test_the_given_count_includes_self_for_a_call_through_an_object() -> None:
    (shape,) = call_shapes("remote.run(cmd, 5)", "run")
    assert passes(shape, 3, method=True)
    assert not passes(shape, 2, method=True)
    assert passes(shape, 2, method=False)
    assert passes(shape, 2, method=None) and passes(shape, 3, method=None)
    assert not passes(shape, 4, method=None)
    (build,) = call_shapes("conn = Conn(host, 22)", "Conn")
    assert passes(build, 3, method=None, constructor=True)


def test_a_statement_with_an_invalid_escape_is_read_without_a_warning() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (shape,) = call_shapes('found = re.match("\\w+", text)', "match")
    assert shape.positional == 2


# --- formattings checked against their templates ---------------------------------------------------

FIELDS = ("{}", "{0}", "{1}", "{2}", "{name}", "{host.port}", "{0[1]}", "{:>{width}}", "{{", "}}", " x ")


def _interpreter_misfits(expression: str) -> bool:
    """Does the running interpreter refuse this formatting?"""
    values = {"a": "aa", "b": "bb", "name": "n", "host": type("H", (), {"port": 1})(), "width": 3}
    try:
        eval(expression, {}, values)
    except (IndexError, KeyError, TypeError):
        return True
    except ValueError:  # mixed automatic and manual numbering: not a misfit of the arguments
        return False
    return False


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(FIELDS), min_size=1, max_size=4),
    st.integers(min_value=0, max_value=3),
    st.sets(st.sampled_from(["name", "host", "width"])),
)
def test_a_format_call_is_a_misfit_exactly_when_the_interpreter_refuses_it(
    pieces: list[str], positional: int, keywords: set[str]
) -> None:
    template = "".join(pieces)
    args = ", ".join([*(["a"] * positional), *(f"{k}={k}" for k in sorted(keywords))])
    expression = f"{template!r}.format({args})"
    try:
        template.format(*["aa"] * 5, name=1, host=type("H", (), {"port": 1})(), width=3)
    except ValueError:  # a template mixing automatic and manual numbering is another error
        return
    except (IndexError, KeyError, TypeError):
        pass
    assert bool(format_misfits(f"x = {expression}")) == _interpreter_misfits(expression)


@pytest.mark.parametrize(
    "expression",
    [
        "'%s %s' % (a,)",
        "'%s' % (a, b)",
        "'%s %%' % (a,)",
        "'%d%%s' % (1,)",
        "'%*d' % (3, 1)",
        "'%s-%s' % (a, b)",
    ],
)
def test_a_percent_formatting_is_a_misfit_exactly_when_the_interpreter_refuses_it(expression: str) -> None:
    assert bool(format_misfits(f"x = {expression}")) == _interpreter_misfits(expression)


def test_a_named_field_no_keyword_fills_is_reported_by_name() -> None:
    (misfit,) = format_misfits("log.info('{host} {port}'.format(host=h))")
    assert misfit.names == ("port",)
    assert not misfit.positional
    assert format_misfits("log.info('{host} {port}'.format(**values))") == []
    assert format_misfits("log.info('{} {}'.format(*values))") == []
