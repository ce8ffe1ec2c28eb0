"""Log statements and static parts, through the real tree-sitter-python parser."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import tree_sitter_python
from hypothesis import given, settings
from hypothesis import strategies as st
from tree_sitter import Language, Parser

from app.analysis.logstatements import (
    DEFAULT_LOG_FUNCTIONS,
    LEVELS,
    compile_patterns,
    find_log_statements,
)
from app.analysis.model import LogStatement
from app.analysis.source import call_captures, normalize_newlines, parse_tree

EXAMPLE = Path(__file__).parents[1] / "data" / "running-example"
PARSER = Parser(Language(tree_sitter_python.language()))


def statements(source: str, *extra: str) -> list[LogStatement]:
    tree = PARSER.parse(source.encode())
    return find_log_statements(tree.root_node, "t.py", (*DEFAULT_LOG_FUNCTIONS, *extra))


def parts_of(source: str, *extra: str) -> tuple[str, ...]:
    """The parts of the only log statement in ``source``."""
    [found] = statements(source, *extra)
    return found.parts


# ---------------------------------------------------------------------------------------------
# the golden case
# ---------------------------------------------------------------------------------------------


def test_running_example_static_parts_match_the_paper() -> None:
    expected = json.loads((EXAMPLE / "expected.json").read_text())
    found = statements((EXAMPLE / "test_example.py").read_text(), *expected["log_function_patterns"])

    static = {s.line: list(s.parts) for s in found if s.is_static}
    assert static == {int(line): parts for line, parts in expected["regex_static_parts"].items()}
    assert sorted(static) == expected["static_log_statements"]
    assert [s.line for s in found if not s.is_static] == expected["non_static_log_statements"]
    assert {s.callee for s in found} == {"Log.log"}


def test_running_example_without_the_custom_pattern_has_no_log_statements() -> None:
    assert statements((EXAMPLE / "test_example.py").read_text()) == []


# ---------------------------------------------------------------------------------------------
# static part forms: one case per form, source -> parts
# ---------------------------------------------------------------------------------------------

FORMS = {
    "string": ('logging.info("hello world")', ("hello world",)),
    "single-quoted": ("logging.info('it is \"done\"')", ('it is "done"',)),
    "implicit-concatenation": ('logging.info("a" "b" \'c\')', ("abc",)),
    "triple-quoted": ('logging.info("""one\n  two""")', ("one\n  two",)),
    "f-string": ('logging.info(f"got {n} items from {src}!")', ("got ", " items from ", "!")),
    "f-string-escaped-braces": ('logging.info(f"{{literal}} {x}")', ("{literal} ",)),
    "f-string-format-spec": ('logging.info(f"took {t:>{w}.2f}s total")', ("took ", "s total")),
    "f-string-conversion": ('logging.info(f"value={v!r}.")', ("value=", ".")),
    "f-string-self-documenting": ('logging.info(f"state: {count = }")', ("state: count = ",)),
    "f-string-concatenated": ('logging.info(f"{a}" " mid " f"{b} end")', (" mid ", " end")),
    "plus": ('logging.info("x=" + str(x) + ", y=" + str(y))', ("x=", ", y=")),
    "plus-adjacent-static-merge": ('logging.info("a" + "b" + x + ("c" + "d"))', ("ab", "cd")),
    "plus-numbers-dynamic": ("logging.info(1 + 2)", ()),
    "percent": ('logging.info("a %s b %d" % (x, y))', ("a ", " b ")),
    "percent-escaped": ('logging.info("100%% of %s" % x)', ("100% of ",)),
    "percent-mapping-and-flags": ('logging.info("%(name)s is %-5.2f%%" % d)', (" is ", "%")),
    "percent-inside-plus": ('logging.info("head " + "%d items" % n)', ("head ", " items")),
    "format": (
        'logging.info("first {} then {name!r:>4} end".format(a, name=b))',
        ("first ", " then ", " end"),
    ),
    "format-escaped-braces": ('logging.info("{{x}} = {}".format(v))', ("{x} = ",)),
    "format-nested-spec": ('logging.info("[{:{w}}] done".format(v, w=3))', ("[", "] done")),
    "format-map": ('logging.info("id {id} ok".format_map(d))', ("id ", " ok")),
    "format-on-concatenation": ('logging.info(("a{}" "b").format(x))', ("a", "b")),
    "logging-lazy": ('logger.warning("host %s port %d up", host, port)', ("host ", " port ", " up")),
    "logging-lazy-escaped": ('logger.info("at 50%% (%s)", x)', ("at 50% (", ")")),
    "logging-no-args-keeps-percent": ('logger.info("100%% sure")', ("100%% sure",)),
    "logging-log-level-first": ('logging.log(logging.INFO, "level %s", x)', ("level ",)),
    "logging-keywords-ignored": ('logger.error("boom", exc_info=True, extra={"k": "v"})', ("boom",)),
    "print-args-joined-by-space": ('print("a", x, "b")', ("a ", " b")),
    "print-static-args-merge": ('print("a", "b", x)', ("a b ",)),
    "print-literal-sep": ('print("a", "b", x, sep="-")', ("a-b-",)),
    "print-sep-none": ('print("a", "b", sep=None)', ("a b",)),
    "print-dynamic-sep": ('print("a", "b", x, sep=s)', ("a", "b")),
    "print-kwargs-may-set-sep": ('print("a", "b", **kw)', ("a", "b")),
    "print-star-args": ('print("a", *rest, "z")', ("a ", " z")),
    "print-end-and-file-ignored": ('print("done", end="!", file=sys.stderr)', ("done",)),
    "escapes": (r'logging.info("a\tb\nc\\d\x41\u00e9\N{BULLET}\101\q")', ("a\tb\nc\\dAé•A\\q",)),
    "line-continuation": ('logging.info("one \\\ntwo")', ("one two",)),
    "raw-string": (r'logging.info(r"C:\new\x41")', (r"C:\new\x41",)),
    "raw-f-string": (r'logging.info(rf"\d{x}\n")', (r"\d", r"\n")),
    "bytes": (r'logging.info(b"raw \x41 \u00e9")', (r"raw A \u00e9",)),
    "whitespace-only-parts-dropped": ('logging.info(f"{a} {b}")', ()),
    "dynamic-only": ("logging.info(message)", ()),
    "conditional-is-dynamic": ('logging.info("a" if ok else "b")', ()),
    "parenthesized": ('logging.info(("wrapped"))', ("wrapped",)),
    "no-arguments": ("print()", ()),
    "custom-joins-arguments": ('Log.log("values: ", values, "and", 3)', ("values: ", "and")),
    "custom-percent-split-when-args": ('Log.log("n=%s", n)', ("n=",)),
    "custom-percent-escape-is-a-gap": ('Log.log("100%% of %s", x)', ("100", " of ")),
}


@pytest.mark.parametrize(("source", "expected"), FORMS.values(), ids=FORMS.keys())
def test_static_parts(source: str, expected: tuple[str, ...]) -> None:
    assert parts_of(source, "Log.log") == expected


# ---------------------------------------------------------------------------------------------
# patterns
# ---------------------------------------------------------------------------------------------


def test_defaults_cover_print_and_every_level_of_every_logger_object() -> None:
    objects = ("logging", "logger", "log", "LOG", "self.log", "self.logger")
    source = "\n".join([f'{o}.{level}("m")' for o in objects for level in LEVELS if level != "log"])
    source += '\nprint("m")\n' + "\n".join(f'{o}.log(20, "m")' for o in objects)
    found = statements(source)
    assert len(found) == len(objects) * len(LEVELS) + 1
    assert all(s.parts == ("m",) for s in found)


@pytest.mark.parametrize(
    "callee", ["logging.getLogger", "foo.info", "self.other.info", "logger.success", "Log.log", "info"]
)
def test_default_patterns_ignore_other_calls(callee: str) -> None:
    assert statements(f'{callee}("m")') == []


def test_user_patterns_and_wildcards() -> None:
    source = 'Log.log("a")\nLog.step("b")\nself.reporter.info("c")\nself.reporter.x.info("d")\n'
    assert [s.parts for s in statements(source, "Log.log")] == [("a",)]
    assert [s.parts for s in statements(source, "Log.*")] == [("a",), ("b",)]
    assert [s.parts for s in statements(source, "self.*.info")] == [("c",)]
    assert [s.callee for s in statements(source, "*.*.*.*")] == ["self.reporter.x.info"]


def test_callee_whitespace_is_ignored() -> None:
    [found] = statements('Log . log(\n  "spaced"\n)', "Log.log")
    assert (found.callee, found.parts) == ("Log.log", ("spaced",))


@pytest.mark.parametrize("bad", ["", "Log..log", "Log.", "get_logger().info", "a.b-c"])
def test_malformed_patterns_are_rejected(bad: str) -> None:
    with pytest.raises(ValueError, match="invalid log function pattern"):
        compile_patterns(["print", bad])


def test_matcher_accepts_patterns_with_whitespace() -> None:
    matcher = compile_patterns([" Log . log ", "self.*.info"])
    assert matcher("Log.log")
    assert matcher("self.x.info")
    assert not matcher("self.info")
    assert not matcher("self.x.y.info")


# ---------------------------------------------------------------------------------------------
# where log calls appear
# ---------------------------------------------------------------------------------------------


def test_multi_line_call_spans_its_lines() -> None:
    source = 'x = 1\nlogger.info(\n    "first %s and %s",\n    a,\n    b,\n)\n'
    [found] = statements(source)
    assert (found.line, found.end_line, found.parts) == (2, 6, ("first ", " and "))


def test_nested_log_call_inside_another_calls_arguments() -> None:
    found = statements('print(wrap(logger.info("inner")), "outer")\n')
    assert [(s.callee, s.parts) for s in found] == [("print", (" outer",)), ("logger.info", ("inner",))]


def test_method_chain_in_a_class_body() -> None:
    source = 'class T:\n    def run(self):\n        self.log.info("Running %s", self.name)\n'
    [found] = statements(source)
    assert (found.line, found.callee, found.parts) == (3, "self.log.info", ("Running ",))


def test_call_inside_an_f_string_interpolation() -> None:
    found = statements('x = f"{print("side")} done"\n')
    assert [(s.callee, s.parts) for s in found] == [("print", ("side",))]


def test_call_in_a_decorator() -> None:
    source = '@log.debug("decorating")\ndef f():\n    pass\n'
    [found] = statements(source)
    assert (found.line, found.callee, found.parts) == (1, "log.debug", ("decorating",))


def test_statements_come_in_source_order_with_their_path() -> None:
    source = 'def f():\n    LOG.info("one")\n\n    print("two")\nlogging.error("three")\n'
    found = statements(source)
    assert [(s.path, s.line, s.parts) for s in found] == [
        ("t.py", 2, ("one",)),
        ("t.py", 4, ("two",)),
        ("t.py", 5, ("three",)),
    ]


def test_long_concatenation_chains_keep_every_part() -> None:
    source = "logging.info(" + " + ".join(f'"p{i};" + x' for i in range(3000)) + ")"
    assert parts_of(source) == tuple(f"p{i};" for i in range(3000))


def test_deep_nesting_degrades_to_dynamic_instead_of_failing() -> None:
    nested = "(" * 1500 + '"deep"' + ")" * 1500
    assert parts_of(f'logging.info({nested}, "%s" % {"(" * 300}x{")" * 300})') == ()


def test_syntax_errors_are_tolerated() -> None:
    found = statements('def broken(:\n    logger.info("still found")\nprint("after"\n')
    assert ("still found",) in [s.parts for s in found]


# ---------------------------------------------------------------------------------------------
# properties
# ---------------------------------------------------------------------------------------------

TOKENS = [*"()[]{}\"'fbr%+.,=:*\\ \n\t#sx0", "print", "logger.info", "Log.log", '"""', "f'", "rb'"]
python_ish = st.lists(st.sampled_from(TOKENS), max_size=60).map("".join)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=200), python_ish))
def test_never_raises_on_arbitrary_text(source: str) -> None:
    found = statements(source, "Log.log", "Log.*")
    line_count = source.count("\n") + 1
    for s in found:
        assert 1 <= s.line <= s.end_line <= line_count
        assert all(part.strip() for part in s.parts)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=10).filter(str.strip), min_size=1, max_size=4))
def test_string_literals_round_trip(pieces: list[str]) -> None:
    literals = " ".join(repr(p) for p in pieces)  # implicit concatenation of Python-quoted literals
    assert parts_of(f"logging.info({literals})") == ("".join(pieces),)


# ---------------------------------------------------------------------------------------------
# the pipeline's shared calls query
# ---------------------------------------------------------------------------------------------

DATA = Path(__file__).parents[1] / "data"


@pytest.mark.parametrize(
    "script",
    sorted(p for p in DATA.rglob("*.py") if p.is_file()),
    ids=lambda p: str(p.relative_to(DATA)),
)
def test_callees_from_the_calls_query_find_the_same_log_statements(script: Path) -> None:
    """The pipeline hands find_log_statements the calls query's callees: same statements as its own query."""
    tree = parse_tree(normalize_newlines(script.read_text(encoding="utf-8", errors="replace")))
    patterns = (*DEFAULT_LOG_FUNCTIONS, "Log.log", "self.*.info")
    callees = call_captures(tree).get("callee", [])
    own = find_log_statements(tree.root_node, script.name, patterns)
    assert find_log_statements(tree.root_node, script.name, patterns, callees) == own
