"""Python's own failure messages, every CPython wording from 2.7 to 3.13, read into the same facts.

Forms the running interpreter produces are produced for real (a snippet run, its traceback
captured) and go through the real log parser; older wordings are literal strings.
"""

from __future__ import annotations

import traceback

import pytest

from app.analysis.logparse import parse_log
from app.analysis.logparse.pyerrors import python_error
from app.analysis.model import Script
from app.analysis.pipeline import analyze
from app.analysis.render import render
from app.localize.evidence import Channel
from app.localize.heuristic import rank_heuristic


def _real(snippet: str) -> str:
    """The error message of the snippet's exception, through a real traceback and the real parser."""
    try:
        exec(compile(snippet, "snippet.py", "exec"), {})
    except Exception:
        log = traceback.format_exc()
    else:
        raise AssertionError("the snippet did not fail")
    return parse_log(log).error_message


REAL = [
    ("def f():\n    print(x)\n    x = 1\nf()", "unbound-local", {"name": "x"}),
    # a closure's variable read before its assignment: NameError, "free variable" (both wordings)
    ("def f():\n    def g():\n        return y\n    g()\n    y = 1\nf()", "unbound-local", {"name": "y"}),
    ("print(undefined_thing)", "undefined-name", {"name": "undefined_thing"}),
    ("import os\nos.no_such_call()", "missing-attribute", {"owner": "module", "attribute": "no_such_call"}),
    ("class X:\n    pass\nX.nope", "missing-attribute", {"owner": "type", "attribute": "nope"}),
    ("class X:\n    pass\nX().nope", "missing-attribute", {"owner": "object", "attribute": "nope"}),
    # a class made at run time may have any name (a tenant's copy of a test class, say)
    (
        "type('Tenant-2', (), {})().nope",
        "missing-attribute",
        {"owner": "object", "owner_name": "Tenant-2", "attribute": "nope"},
    ),
    ("'{1}'.format(0)", None, {"index": True}),
    ("'%s %s' % (1,)", None, {"formatting": True}),
    ("def f(a, b):\n    pass\nf(1, 2, 3)", "arguments", {"callee": "f"}),
    ("def f(a, b):\n    pass\nf(1)", "arguments", {"callee": "f"}),
    ("def f(a):\n    pass\nf(1, c=2)", "arguments", {"callee": "f"}),
    ("class X:\n    def m(self, a):\n        pass\nX().m()", "arguments", {"callee": "m"}),
    ("class X:\n    def __init__(self, a):\n        pass\nX()", "arguments", {"called": "X"}),
    ("import no_such_module_here", "missing-module", {"module": "no_such_module_here"}),
    ("from os import no_such_name", "cannot-import", {"name": "no_such_name", "module": "os"}),
    ("{'a': 1}['b']", None, {"key": "b"}),
    ("{1: 1}[2]", None, {"key": "2"}),
    ("[][0]", None, {"index": True}),
    ("[].pop()", None, {"index": True}),
    ("None[0]", None, {"none": True, "not_indexable": True}),
    ("for _ in None:\n    pass", None, {"none": True}),
    ("None()", None, {"none": True}),
    ("a, b = None", None, {"none": True}),
    ("1 + 'a'", None, {"operand": True}),
    ("'a' + 1", None, {"operand": True}),
    ("{}.keys()[0]", None, {"not_indexable": True}),
    ("'%(a) w' % {'a': 1}", None, {"directive": "w", "formatting": True}),
    ("'%d%y' % (1, 2)", None, {"directive": "y"}),
    # a container changed while a loop went over it: dict, set, deque, OrderedDict
    ("d = {1: 1}\nfor k in d:\n    d[k + 1] = 1", None, {"resized": True, "exception": "RuntimeError"}),
    ("d = {1: 1, 2: 2}\nfor k in d:\n    del d[k]\n    d[k + 10] = 1", None, {"resized": True}),
    ("s = {1}\nfor k in s:\n    s.add(k + 1)", None, {"resized": True}),
    ("import collections\nq = collections.deque([1])\nfor k in q:\n    q.append(k)", None, {"resized": True}),
    (
        "import collections\nd = collections.OrderedDict(a=1, b=2)\nfor k in d:\n    d[k + 'x'] = 2",
        None,
        {"resized": True},
    ),
]


@pytest.mark.parametrize(("snippet", "kind", "facts"), REAL)
def test_messages_this_interpreter_produces(snippet: str, kind: str | None, facts: dict[str, object]) -> None:
    error = python_error(_real(snippet))
    assert error.kind == kind
    for field, value in facts.items():
        assert getattr(error, field) == value, (field, error)


OLDER = [
    # 2.7
    ("NameError: global name 'x' is not defined", "undefined-name", {"name": "x"}),
    ("UnboundLocalError: local variable 'x' referenced before assignment", "unbound-local", {"name": "x"}),
    (
        "NameError: free variable 'x' referenced before assignment in enclosing scope",
        "unbound-local",
        {"name": "x"},
    ),
    ("AttributeError: 'module' object has no attribute 'foo'", "missing-attribute", {"owner": "module"}),
    ("AttributeError: Foo instance has no attribute 'bar'", "missing-attribute", {"owner": "instance"}),
    ("AttributeError: class Foo has no attribute 'bar'", "missing-attribute", {"owner": "type"}),
    ("TypeError: f() takes exactly 2 arguments (3 given)", "arguments", {"callee": "f"}),
    ("TypeError: __init__() takes exactly 2 arguments (1 given)", "arguments", {"callee": "__init__"}),
    (
        "TypeError: unbound method m() must be called with Foo instance as first argument",
        "arguments",
        {"callee": "m", "qualifier": "Foo"},
    ),
    ("ImportError: No module named foo.bar", "missing-module", {"module": "foo.bar"}),
    ("ImportError: cannot import name baz", "cannot-import", {"name": "baz"}),
    ("TypeError: cannot concatenate 'str' and 'int' objects", None, {"operand": True}),
    ("TypeError: 'NoneType' object has no attribute '__getitem__'", "missing-attribute", {"none": True}),
    ("TypeError: 'set' object does not support indexing", None, {"not_indexable": True}),
    ("KeyError: u'name'", None, {"key": "name"}),
    ("RuntimeError: dictionary changed size during iteration", None, {"resized": True}),
    # 3.0 - 3.10
    (
        "UnboundLocalError: local variable 'count' referenced before assignment",
        "unbound-local",
        {"name": "count"},
    ),
    ("TypeError: Can't convert 'int' object to str implicitly", None, {"operand": True}),
    ("TypeError: unorderable types: int() < str()", None, {"operand": True}),
    # 3.10+: qualified names and suggestions
    (
        "TypeError: Foo.m() takes 2 positional arguments but 3 were given",
        "arguments",
        {"callee": "m", "qualifier": "Foo"},
    ),
    (
        "TypeError: Foo.__init__() missing 1 required positional argument: 'a'",
        "arguments",
        {"called": "Foo"},
    ),
    (
        "NameError: name 'lenght' is not defined. Did you mean: 'length'?",
        "undefined-name",
        {"name": "lenght"},
    ),
    (
        "AttributeError: 'Foo' object has no attribute 'sise'. Did you mean: 'size'?",
        "missing-attribute",
        {"owner": "object", "attribute": "sise"},
    ),
    # 3.11+
    (
        "UnboundLocalError: cannot access local variable 'x' where it is not associated with a value",
        "unbound-local",
        {"name": "x"},
    ),
    (
        "NameError: cannot access free variable 'x' where it is not associated with a value "
        "in enclosing scope",
        "unbound-local",
        {"name": "x"},
    ),
    (
        "AttributeError: partially initialized module 'm' has no attribute 'f' "
        "(most likely due to a circular import)",
        "missing-attribute",
        {"owner": "module", "owner_name": "m", "attribute": "f"},
    ),
]


@pytest.mark.parametrize(("message", "kind", "facts"), OLDER)
def test_older_and_newer_wordings(message: str, kind: str | None, facts: dict[str, object]) -> None:
    error = python_error(
        parse_log(
            f'Traceback (most recent call last):\n  File "t.py", line 1, in f\n{message}\n'
        ).error_message
    )
    assert error.kind == kind
    for field, value in facts.items():
        assert getattr(error, field) == value, (field, error)


def _top(code: str, message: str, k: int = 3) -> list[tuple[str, set[Channel]]]:
    last = code.count("\n")
    log = f'Traceback (most recent call last):\n  File "t.py", line {last}, in test_x\n{message}\n'
    analysis = analyze([Script("t.py", code)], log)
    ranked = rank_heuristic(analysis, render(analysis, "T0", "line"), k)
    return [(s.element.id, {e.channel for e in s.evidence}) for s in ranked]


UNBOUND = "def test_x(flag):\n    if flag:\n        total = 1\n    print(total)\n"


@pytest.mark.parametrize(
    "message",
    [
        "UnboundLocalError: local variable 'total' referenced before assignment",
        "UnboundLocalError: cannot access local variable 'total' where it is not associated with a value",
    ],
)
def test_an_unbound_local_in_either_wording_points_at_its_conditional_definition(message: str) -> None:
    top = _top(UNBOUND, message)
    ids = {i for i, _ in top[:3]}
    assert {"2", "3"} <= ids
    assert all(Channel.EXCEPTION in channels for i, channels in top if i in {"2", "3"})


ARGS = (
    "class Conn:\n    def __init__(self, host):\n        self.host = host\n\n"
    "def test_x():\n    Conn('a', 22)\n"
)


@pytest.mark.parametrize(
    "message",
    [
        "TypeError: __init__() takes exactly 2 arguments (3 given)",
        "TypeError: __init__() takes 2 positional arguments but 3 were given",
        "TypeError: Conn.__init__() takes 2 positional arguments but 3 were given",
    ],
)
def test_a_constructor_call_that_does_not_fit_is_blamed_in_every_wording(message: str) -> None:
    top = _top(ARGS, message)
    assert top[0][0] == "6"
    assert Channel.EXCEPTION in top[0][1] or Channel.TRACEBACK in top[0][1]
    assert any(i == "3" and Channel.EXCEPTION in c for i, c in _top(ARGS, message, 5))


MODULE = "import helpers_lib\n\ndef test_x():\n    helpers_lib.connect_all()\n"


@pytest.mark.parametrize(
    "message",
    [
        "AttributeError: 'module' object has no attribute 'connect_all'",
        "AttributeError: module 'helpers_lib' has no attribute 'connect_all'",
    ],
)
def test_a_module_lacking_an_attribute_blames_its_use_and_import(message: str) -> None:
    top = dict(_top(MODULE, message, 5))
    assert Channel.EXCEPTION in top["4"]
    if "helpers_lib'" in message:
        assert Channel.EXCEPTION in top["1"]


CALLS = [
    # what the call did wrong, read from the message this interpreter produces
    ("def f(a, b):\n    pass\nf(1, 2, 3)", {"exception": "TypeError", "arity": "too-many", "given": 3}),
    ("def f(a, b=1):\n    pass\nf(1, 2, 3)", {"arity": "too-many", "given": 3}),
    ("class X:\n    def m(self):\n        pass\nX().m(1)", {"arity": "too-many", "given": 2}),
    ("def f(a, b):\n    pass\nf(1)", {"arity": "too-few"}),
    ("def f(a):\n    pass\nf(1, c=2)", {"arity": "keyword", "keyword": "c"}),
    ("def f(a):\n    pass\nf(1, a=2)", {"arity": "keyword", "keyword": "a"}),
    ("def f(*, a):\n    pass\nf()", {"arity": "keyword", "keyword": "a"}),
    ("a, b = [1]", {"exception": "ValueError", "unpack": 2}),
    ("a, b = [1, 2, 3]", {"unpack": 2}),
    ("int('x')", {"conversion": "int"}),
    ("float('x')", {"conversion": "float"}),
    ("open('/no/such/dir/data.json')", {"exception": "FileNotFoundError", "path": "/no/such/dir/data.json"}),
    ("'%s %s' % (1,)", {"formatting": True}),
    ("'%s' % (1, 2)", {"formatting": True}),
    ("'{1}'.format(1)", {"formatting": True, "exception": "IndexError"}),
    ("{}['k']", {"exception": "KeyError", "arity": None}),
    ("def f(a, b):\n    pass\nf()", {"missing": ("a", "b")}),
    ("1 + 'a'", {"operator": "+"}),
    ("None | {}", {"operator": "|"}),
    ("None < 1", {"operator": "<"}),
    ("[1] * 1.5", {"operator": "*"}),
    ("{}.keys()[0]", {"value_type": "dict_keys"}),
    ("filter(None, [])[0]", {"value_type": "filter"}),
]


@pytest.mark.parametrize(("snippet", "facts"), CALLS)
def test_what_went_wrong_is_read_from_the_interpreters_own_message(
    snippet: str, facts: dict[str, object]
) -> None:
    error = python_error(_real(snippet))
    for field, value in facts.items():
        assert getattr(error, field) == value, (field, error)


@pytest.mark.parametrize(
    ("message", "facts"),
    [
        ("TypeError: f() takes exactly 2 arguments (3 given)", {"arity": "too-many", "given": 3}),
        ("TypeError: f() takes exactly 2 arguments (1 given)", {"arity": "too-few", "given": 1}),
        ("TypeError: f() takes at least 2 arguments (1 given)", {"arity": "too-few", "given": 1}),
        ("TypeError: f() takes no arguments (1 given)", {"arity": "too-many", "given": 1}),
        ("TypeError: f() got multiple values for keyword argument 'a'", {"arity": "keyword", "keyword": "a"}),
        ("ValueError: too many values to unpack", {"unpack": 0}),
        ("ValueError: need more than 1 value to unpack", {"unpack": 0}),
        ("ValueError: invalid literal for float(): 1,2", {"conversion": "float"}),
        ("IOError: [Errno 2] No such file or directory: 'x.cfg'", {"path": "x.cfg", "exception": "IOError"}),
        ("pkg.errors.CustomError: boom", {"exception": "CustomError"}),
        # a shell tool's wording, in a command's output the script logged
        ("cat: /etc/app.d/io.conf: No such file or directory", {"path": "/etc/app.d/io.conf"}),
        # wrapped by a person or a terminal: the facts are those of the one line
        (
            "TypeError: sudo() got an unexpected keyword argument \\\n    'ctx'",
            {"keyword": "ctx", "callee": "sudo"},
        ),
        (
            "TypeError: Builder.revoke() missing 1 required\n    positional argument: 'reason'",
            {"arity": "too-few", "callee": "revoke", "qualifier": "Builder"},
        ),
    ],
)
def test_older_and_wrapped_wordings_tell_the_same(message: str, facts: dict[str, object]) -> None:
    error = python_error(message)
    for field, value in facts.items():
        assert getattr(error, field) == value, (field, error)
