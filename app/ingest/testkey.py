"""One test key for every CI tool's test ids: what stays the same across runs of one test.

Each tool names a test its own way: pytest's node id ``tests/test_cart.py::TestX::test_y[p]``,
pytest's JUnit XML ``tests.test_cart.TestX.test_y[p]`` (classname + name), unittest, stestr and
subunit ``tests.test_cart.TestX.test_y(scenario)`` or tempest's ``...test_y[id-1,smoke]``, avocado
``1-tests/netcheck.py:InterfaceTest.test_all_up;variant`` (its xUnit file puts the class before
that: ``InterfaceTest.tests/netcheck.py:InterfaceTest.test_all_up``). They all parse to one key in
pytest's node-id form, ``path::Class::test``, and the parameters, variant or scenario leave it
(README, "CI history": parameters leave the test key).

A dotted id names no file: its module is the parts before the first capitalised one (PEP 8's
CapWords classes), ``tests.test_cart.TestX.test_y`` -> ``tests/test_cart.py::TestX::test_y``. An
id that is no Python name at all (an avocado exec-test, free text) is its own key. Pure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

MAX_TEST_ID = 1000
_SERIAL = re.compile(r"^(?:\d+-\s*)+(?=[^;]*[/:;])")  # avocado's position in its job: "1-" (job-specific)
_AVOCADO = re.compile(r"^(?P<path>[^:;\[(]+?\.py):")
_HERE = re.compile(r"^(?:\./|\s)+")  # "./tests/x.py" is tests/x.py
_IDENT = re.compile(r"^[A-Za-z_]\w*$")
_CLOSER = {"[": "]", "(": ")"}
_UNKNOWN = "<unknown>."


@dataclass(frozen=True)
class TestKey:
    """A test's identity: its file as the ids name it ("" when none can be told) and its name in
    that file (``Class::test``). ``suite`` is the tool that reported it, not part of the key."""

    __test__ = False  # not a pytest test class

    path: str
    name: str
    suite: str = field(default="", compare=False)

    @property
    def key(self) -> str:
        """The canonical text: ``path::Class::test``, or the name alone where there is no file."""
        return f"{self.path}::{self.name}" if self.path else self.name

    def __str__(self) -> str:
        return self.key


def parse_test_id(test_id: str, suite: str = "") -> tuple[TestKey, str]:
    """(key, parameters) of any reader's test id; ``ValueError`` when it is empty or too long.

    ``suite`` (the tool) goes on the key for the record; every tool's ids parse alike."""
    text = test_id.strip()
    if not text:
        raise ValueError("test_id is empty")
    if len(text) > MAX_TEST_ID:
        raise ValueError(f"test_id is longer than {MAX_TEST_ID} characters")
    if "::" in text and ";" not in text.split("::", 1)[0]:
        # a node id (an avocado variant may hold "::": it follows the ";"): the parameters follow
        # the names, which hold no bracket
        path, rest = text.split("::", 1)
        name, params = _cut(rest, ("[",))
        return _key(path, name.split("::"), suite, f"{path}::{name}"), params
    base, variant = _variant(_SERIAL.sub("", text))
    found = _AVOCADO.match(base)  # path.py:Class.test, the parameters after the path
    start = found.end() if found else 0
    name, params = _cut(base[start:], ("[", "("))
    params = ";".join(p for p in (params, variant) if p)
    if found and name and ":" not in name:
        return _key(found["path"], [name], suite, base[:start] + name), params
    return _dotted(base[:start] + name, suite), params


def canonical_key(test_id: str | TestKey) -> str:
    """The canonical key of a test id in any form (a ``TestKey`` is one already)."""
    return test_id.key if isinstance(test_id, TestKey) else parse_test_id(test_id)[0].key


def _variant(text: str) -> tuple[str, str]:
    """avocado's ``id;variant`` -> (``id``, ``variant``); a ``;`` in brackets is a parameter's."""
    semi = text.find(";")
    opened = min((at for at in (text.find("["), text.find("(")) if at >= 0), default=len(text))
    return (text[:semi].rstrip(), text[semi + 1 :]) if 0 < semi < opened else (text, "")


def _cut(text: str, openers: tuple[str, ...]) -> tuple[str, str]:
    """``test_y[p]`` -> (``test_y``, ``p``): trailing groups, each from the first opener of its
    kind when the text ends with its closer; several (``test_y[p](s)``) give ``p,s``."""
    found: list[str] = []
    while True:
        for opener in openers:
            at = text.find(opener)
            if at > 0 and text.endswith(_CLOSER[opener]):
                found.insert(0, text[at + 1 : -1])
                text = text[:at].rstrip()
                break
        else:
            return text, ",".join(found)


def _key(path: str, parts: list[str], suite: str, whole: str) -> TestKey:
    """A key from a file and the name's parts (avocado's dotted ``Class.test`` split too); ``whole``
    is the key when there is no file or no name to tell apart."""
    names = [piece for part in parts for piece in _split_dotted(part, path)]
    # avocado's xUnit names its class "<unknown>" where it knows none; a CI's page shows it before
    # the id: "<unknown>.tests/x.py:Class.test" is tests/x.py
    path = _HERE.sub("", path.removeprefix(_UNKNOWN))
    # avocado's xUnit writes classname + "." + its id: "InterfaceTest.tests/x.py" for tests/x.py
    while True:
        head, dot, rest = path.partition(".")
        if not (dot and head == names[0] and _IDENT.match(head) and ("/" in rest or rest.endswith(".py"))):
            break
        path = rest
    name = "::".join(names)
    if not path or not all(names):
        return TestKey("", whole, suite)
    return TestKey(path, name, suite)


def _split_dotted(part: str, path: str) -> list[str]:
    pieces = part.split(".")
    if path.endswith(".py") and len(pieces) > 1 and all(_IDENT.match(p) for p in pieces):
        return pieces
    return [part]


def _dotted(text: str, suite: str) -> TestKey:
    """``pkg.module.Class.test`` -> ``pkg/module.py::Class::test``; any other text is its own key."""
    parts = text.split(".")
    if len(parts) < 2 or not all(_IDENT.match(p) for p in parts):
        return TestKey("", text, suite)
    module = parts[:-1]
    classes: list[str] = []
    while module and module[-1][0].isupper():
        classes.insert(0, module.pop())
    if not module:
        return TestKey("", text, suite)
    return TestKey("/".join(module) + ".py", "::".join([*classes, parts[-1]]), suite)
