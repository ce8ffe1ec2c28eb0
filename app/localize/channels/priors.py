"""Priors: what an element is, whatever the failure's evidence says.

Its size, whether it checks something, where it sits (a test body, a framework hook, module
level), whether the log shows it ran, and whether it holds the names the error message gives.
Only a learned model weighs them (the hand-set weights predate them): they order the elements
that the failure's evidence leaves level, and never count as evidence on their own. Each is a
number in [0, 1] per element, not per statement: the size of a block is a property of the block.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass

from app.analysis.logparse.pyerrors import python_error
from app.analysis.render import Element
from app.analysis.selection import is_test_function
from app.localize.channels import Context
from app.localize.channels.dataflow import is_check
from app.localize.channels.message import last_logged

# In the order a model file lists them; each name is a feature ``prior:<name>``.
PRIORS: tuple[str, ...] = (
    "size",
    "test_body",
    "hook",
    "module_level",
    "check",
    "timing",
    "logged",
    "last_logged",
    "message_names",
    "attribute_named",
    "attribute_set",
)
WORDS: dict[str, str] = {
    "size": "a large element",
    "test_body": "in a test's body",
    "hook": "in a setup or cleanup hook",
    "module_level": "at module level",
    "check": "checks a result",
    "timing": "waits or times out, as the error says something did",
    "logged": "printed a message of the log",
    "last_logged": "printed the log's last matched message",
    "message_names": "holds names the error message gives",
    "attribute_named": "names the attribute the error says is missing",
    "attribute_set": "sets the attribute the error says is missing",
}
SIZE_LINES = 60  # size = log(1 + lines) / log(SIZE_LINES), capped at 1
MESSAGE_NAMES = 3  # names of the message an element holds for message_names to reach 1
MESSAGE_HEAD = 3000  # characters of the error message read
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")
# words of any error message that say nothing about the code
_COMMON = frozenset(
    {
        *("Error", "Exception", "Traceback", "most", "recent", "call", "last", "File", "line", "self"),
        *("None", "True", "False", "object", "has", "not", "the", "and", "for", "with", "from", "that"),
        *("this", "was", "were", "are"),
    }
)
_TIMEOUT = re.compile(r"time(?:d)?[ -]?out|took too long|waiting for", re.IGNORECASE)
_WAITS = re.compile(r"sleep|timeout|wait|retry|retries|interval|poll|delay|until", re.IGNORECASE)


@dataclass(frozen=True)
class FailureWords:
    """What the priors read of the failure once: the message's names, its missing attribute, a timeout."""

    names: frozenset[str]
    attribute: re.Pattern[str] | None  # the missing attribute as a word
    setter: re.Pattern[str] | None  # an assignment or definition of it
    timeout: bool
    last_logged: int | None

    @classmethod
    def read(cls, ctx: Context) -> FailureWords:
        head = ctx.message[:MESSAGE_HEAD]
        attribute = python_error(head).attribute
        word = re.escape(attribute) if attribute else None
        return cls(
            names=frozenset(_IDENT.findall(head)) - _COMMON,
            attribute=re.compile(rf"\b{word}\b") if word else None,
            setter=re.compile(rf"\.\s*{word}\s*=[^=]|\bdef {word}\b|^\s*{word}\s*=[^=]", re.MULTILINE)
            if word
            else None,
            timeout=_TIMEOUT.search(head) is not None,
            last_logged=last_logged(ctx),
        )


def element_priors(
    ctx: Context, element: Element, sids: Iterable[int], words: FailureWords
) -> dict[str, float]:
    """The element's non-zero priors."""
    sids = tuple(sids)
    out: dict[str, float] = {}
    if element.lines:
        out["size"] = min(1.0, math.log1p(len(element.lines)) / math.log(SIZE_LINES))
    functions = {ctx.statements[s].function for s in sids}
    if functions:
        function = ctx.functions[min(functions)]
        if function.kind == "module":
            out["module_level"] = 1.0
        elif function.is_hook:
            out["hook"] = 1.0
        elif is_test_function(function.name):
            out["test_body"] = 1.0
    if any(is_check(ctx, s) for s in sids):
        out["check"] = 1.0
    code = element.code
    if words.timeout and _WAITS.search(code):
        out["timing"] = 1.0
    matched = ctx.analysis.match.exe
    if any(s in matched for s in sids):
        out["logged"] = 1.0
    if words.last_logged is not None and words.last_logged in sids:
        out["last_logged"] = 1.0
    if words.names:
        shared = len(words.names.intersection(_IDENT.findall(code)))
        if shared:
            out["message_names"] = min(1.0, shared / MESSAGE_NAMES)
    if words.attribute is not None and words.attribute.search(code):
        out["attribute_named"] = 1.0
        if words.setter is not None and words.setter.search(code):
            out["attribute_set"] = 1.0
    return out


def describe(contributions: Iterable[tuple[str, float]]) -> str:
    """The priors that raised an element, strongest first, in words."""
    named = [WORDS[name] for name, weight in sorted(contributions, key=lambda item: -item[1]) if weight > 0]
    return "what the element is: " + "; ".join(named[:3])
