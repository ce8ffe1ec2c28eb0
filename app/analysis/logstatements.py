"""Log statements and their static parts (the paper's section IV-A, docs/design.md §4).

A log statement is a call whose callee matches one of the configured patterns. Its static parts
are the pieces of the printed message that are known without running the code; everything else
is dynamic and becomes the `.*` gap of the paper's regex. Parts are decoded to the text the
program would print, so that matching compares like with like.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from importlib import resources
from typing import Literal

from tree_sitter import Node, Query, QueryCursor

from app.analysis.model import LogStatement
from app.analysis.source import language

LEVELS: tuple[str, ...] = (
    "debug",
    "info",
    "warning",
    "warn",
    "error",
    "critical",
    "exception",
    "fatal",
    "log",
)
LOGGER_OBJECTS: tuple[str, ...] = ("logging", "logger", "log", "LOG", "self.log", "self.logger")
DEFAULT_LOG_FUNCTIONS: tuple[str, ...] = (
    "print",
    *(f"{obj}.{level}" for obj in LOGGER_OBJECTS for level in LEVELS),
)

# A piece of a printed message: its text when static, None when only known at run time.
Piece = str | None
CallKind = Literal["print", "logging", "custom"]

PATTERN_CACHE_SIZE = 256
_MAX_DEPTH = 100  # deeper expressions count as dynamic rather than risking the recursion limit
_ESCAPE = re.compile(
    r"\\(\r\n|\n|\\|'|\"|a|b|f|n|r|t|v|[0-7]{1,3}|x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|N\{[^}\n]{1,100}\})"
)
_SIMPLE_ESCAPES = {
    "\\": "\\",
    "'": "'",
    '"': '"',
    "\n": "",
    "\r\n": "",
    "a": "\a",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
}
# printf-style conversion specifier (mapping key bounded so a pathological literal stays linear)
_PERCENT_SPEC = re.compile(
    r"%(?:\([^)]{0,200}\))?[#0\- +]*(?:\*|\d+)?(?:\.(?:\*|\d+))?[hlL]?[diouxXeEfFgGcrsab%]"
)
_FORMAT_TOKEN = re.compile(r"\{\{|\}\}|\{|\}|[^{}]+")
_WHITESPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class CalleeMatcher:
    """Compiled callee patterns: exact dotted names plus patterns where `*` is one name component."""

    exact: frozenset[str]
    wildcards: tuple[tuple[str, ...], ...]

    def __call__(self, callee: str) -> bool:
        name = _WHITESPACE.sub("", callee)
        if name in self.exact:
            return True
        if not self.wildcards:
            return False
        components = name.split(".")
        return any(
            len(pattern) == len(components)
            and all(p == "*" or p == c for p, c in zip(pattern, components, strict=True))
            for pattern in self.wildcards
        )


def compile_patterns(patterns: Iterable[str]) -> CalleeMatcher:
    """Compile dotted callee patterns; raise ValueError naming the first malformed one."""
    return _compile(tuple(patterns))


@lru_cache(maxsize=PATTERN_CACHE_SIZE)  # bounded: every request may bring its own log_functions
def _compile(patterns: tuple[str, ...]) -> CalleeMatcher:
    exact: set[str] = set()
    wildcards: list[tuple[str, ...]] = []
    for raw in patterns:
        pattern = _WHITESPACE.sub("", str(raw))
        components = tuple(pattern.split("."))
        if not pattern or not all(c == "*" or c.isidentifier() for c in components):
            raise ValueError(
                f"invalid log function pattern {raw!r}: use dotted names such as 'Log.log' or 'self.*.info'"
            )
        if "*" in components:
            wildcards.append(components)
        else:
            exact.add(pattern)
    return CalleeMatcher(frozenset(exact), tuple(dict.fromkeys(wildcards)))


_LOGGING = compile_patterns(p for p in DEFAULT_LOG_FUNCTIONS if p != "print")


def find_log_statements(
    root: Node,
    path: str,
    patterns: Sequence[str] = DEFAULT_LOG_FUNCTIONS,
    callees: Iterable[Node] | None = None,
) -> list[LogStatement]:
    """Every call under ``root`` whose callee matches ``patterns``, in source order, with its static parts.

    ``callees``: the name or attribute nodes in the function position of every call under
    ``root`` (``source.call_captures``'s ``callee``), when the caller already queried them.
    """
    matcher = compile_patterns(patterns)
    found: list[tuple[int, LogStatement]] = []
    for callee_node, known_call, known_args in _calls(root, callees):
        callee = _WHITESPACE.sub("", _text(callee_node))
        if not matcher(callee):
            continue
        call, args = known_call, known_args
        if call is None:  # from the callees: the call is the parent (a walk from the root: only now)
            call = callee_node.parent
            args = None if call is None else call.child_by_field_name("arguments")
        if call is None or args is None:
            continue
        parts = _static_parts(_message_pieces(_call_kind(callee), callee, args))
        statement = LogStatement(
            path=path,
            line=call.start_point.row + 1,
            end_line=call.end_point.row + 1,
            callee=callee,
            parts=parts,
        )
        found.append((call.start_byte, statement))
    found.sort(key=lambda item: (item[0], item[1].end_line))
    return [statement for _, statement in found]


def _calls(root: Node, callees: Iterable[Node] | None) -> Iterator[tuple[Node, Node | None, Node | None]]:
    """(callee, call, arguments) of every call whose callee is a name or an attribute; from
    ``callees`` the call and its arguments are left to find (None)."""
    if callees is None:
        for _, captures in QueryCursor(_log_call_query()).matches(root):
            yield captures["callee"][0], captures["call"][0], captures["arguments"][0]
        return
    for callee in callees:
        yield callee, None, None


@cache
def _log_call_query() -> Query:
    source = resources.files("app.analysis").joinpath("queries", "log_calls.scm").read_text("utf-8")
    return Query(language(), source)


def _call_kind(callee: str) -> CallKind:
    if callee == "print":
        return "print"
    return "logging" if _LOGGING(callee) else "custom"


def _message_pieces(kind: CallKind, callee: str, args: Node) -> list[Piece]:
    """What the call writes, as static and dynamic pieces, following each kind's calling convention.

    print joins its arguments with ``sep``; logging applies ``msg % args`` only when args are
    given; a custom logger (a user pattern) may do either, so its first argument is split at
    %-specifiers like logging's (``%%`` becomes a gap, right under both readings) and its other
    arguments follow as further parts with a gap before each.
    """
    if args.type != "argument_list":
        return [None]
    arguments = [c for c in args.named_children if c.type != "comment"]
    positional = [c for c in arguments if c.type not in ("keyword_argument", "dictionary_splat")]
    if kind == "print":
        return _print_pieces(arguments, positional)
    if kind == "logging" and callee.rsplit(".", 1)[-1] == "log":
        positional = positional[1:]  # logging's log(level, msg, *args)
    if not positional:
        return [None]
    first, rest = positional[0], positional[1:]
    message = _pieces(first, 0)
    if rest:  # the message is a %-format only when arguments follow it
        message = _percent_split(message, literal_percent=kind == "logging")
    if kind == "logging":
        return message
    for arg in rest:  # a custom logger is assumed to join its arguments
        message += [None, *_pieces(arg, 0)]
    return message


def _print_pieces(arguments: list[Node], positional: list[Node]) -> list[Piece]:
    sep: Piece = " "
    for node in arguments:
        if node.type == "dictionary_splat":
            sep = None
        elif node.type == "keyword_argument" and _text(node.child_by_field_name("name")) == "sep":
            value = node.child_by_field_name("value")
            sep = " " if value is None or value.type == "none" else _literal_text(value)
    pieces: list[Piece] = []
    for i, node in enumerate(positional):
        if i:
            pieces.append(sep)
        pieces.extend(_pieces(node, 0))
    return pieces


def _literal_text(node: Node) -> Piece:
    """The value of an expression made of string literals only, else None."""
    pieces = _pieces(node, 0)
    if node.type not in ("string", "concatenated_string") or None in pieces:
        return None
    return "".join(p for p in pieces if p is not None)


def _pieces(node: Node, depth: int) -> list[Piece]:
    if depth > _MAX_DEPTH:
        return [None]
    if node.type == "string":
        return _string_pieces(node)
    if node.type == "concatenated_string":
        return [p for child in node.named_children if child.type == "string" for p in _string_pieces(child)]
    if node.type == "parenthesized_expression":
        inner = [c for c in node.named_children if c.type != "comment"]
        return _pieces(inner[0], depth + 1) if len(inner) == 1 else [None]
    if node.type == "binary_operator":
        return _binary_pieces(node, depth)
    if node.type == "call":
        return _format_call_pieces(node, depth)
    return [None]


def _binary_pieces(node: Node, depth: int) -> list[Piece]:
    left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
    operator = node.child_by_field_name("operator")
    if left is None or right is None or operator is None:
        return [None]
    if operator.type == "+":
        operands = [right]  # a long `a + b + c ...` chain nests leftwards: walk it without recursing
        while left is not None and _is_plus(left):
            operands.append(left.child_by_field_name("right"))
            left = left.child_by_field_name("left")
        operands.append(left)
        return [p for o in reversed(operands) for p in ([None] if o is None else _pieces(o, depth + 1))]
    if operator.type == "%":
        return _percent_split(_pieces(left, depth + 1), literal_percent=True)
    return [None]


def _is_plus(node: Node | None) -> bool:
    operator = (
        None if node is None or node.type != "binary_operator" else node.child_by_field_name("operator")
    )
    return operator is not None and operator.type == "+"


def _format_call_pieces(node: Node, depth: int) -> list[Piece]:
    """`"...".format(...)` and `.format_map(...)`: the template's text between its fields."""
    function = node.child_by_field_name("function")
    if function is None or function.type != "attribute":
        return [None]
    receiver, attribute = function.child_by_field_name("object"), function.child_by_field_name("attribute")
    if receiver is None or attribute is None or _text(attribute) not in ("format", "format_map"):
        return [None]
    if receiver.type not in ("string", "concatenated_string", "parenthesized_expression"):
        return [None]
    out: list[Piece] = []
    for piece in _pieces(receiver, depth + 1):
        out.extend([None] if piece is None else _format_fields_split(piece))
    return out


def _format_fields_split(template: str) -> list[Piece]:
    out: list[Piece] = []
    depth = 0  # > 0 while inside a replacement field (format specs may nest fields)
    for token in _FORMAT_TOKEN.findall(template):
        if depth:
            depth = max(0, depth + token.count("{") - token.count("}"))
            continue
        if token == "{":
            out.append(None)
            depth = 1
        elif token in ("{{", "}}"):
            out.append(token[0])
        else:
            out.append(token)
    return out


def _percent_split(pieces: list[Piece], *, literal_percent: bool) -> list[Piece]:
    """Split static text at printf-style specifiers; `%%` prints `%` only when the format is applied."""
    out: list[Piece] = []
    for piece in pieces:
        if piece is None:
            out.append(None)
            continue
        last = 0
        for spec in _PERCENT_SPEC.finditer(piece):
            out.append(piece[last : spec.start()])
            out.append("%" if literal_percent and spec.group() == "%%" else None)
            last = spec.end()
        out.append(piece[last:])
    return out


def _string_pieces(node: Node) -> list[Piece]:
    children = node.children
    if not children or children[0].type != "string_start":
        return [None]
    prefix = _text(children[0]).lower().rstrip("'\"")
    raw, is_bytes, is_format = "r" in prefix, "b" in prefix, "f" in prefix
    if "t" in prefix:  # template strings are not text when printed
        return [None]
    out: list[Piece] = []
    for child in children:
        if child.type == "string_content":
            text = _text(child)
            if is_format:
                text = text.replace("{{", "{").replace("}}", "}")
            out.append(text if raw else _unescape(text, is_bytes=is_bytes))
        elif child.type == "interpolation":
            out.extend(_interpolation_pieces(child))
    return out


def _interpolation_pieces(node: Node) -> list[Piece]:
    """An f-string field is dynamic, except the `expr=` text that self-documenting fields print."""
    children = node.children
    for i, child in enumerate(children):
        if child.type == "=" and i + 1 < len(children) and children[0].type == "{":
            start, end = children[0].end_byte - node.start_byte, children[i + 1].start_byte - node.start_byte
            return [node.text[start:end].decode("utf-8", "replace") if node.text else "", None]
    return [None]


def _unescape(text: str, *, is_bytes: bool) -> str:
    def replace(match: re.Match[str]) -> str:
        body = match.group(1)
        if body in _SIMPLE_ESCAPES:
            return _SIMPLE_ESCAPES[body]
        head = body[0]
        if is_bytes and head in "uUN":
            return match.group()
        if head == "N":
            try:
                return unicodedata.lookup(body[2:-1])
            except KeyError:
                return match.group()
        code = int(body, 8) if head in "01234567" else int(body[1:], 16)
        return chr(code) if code <= 0x10FFFF else match.group()

    return _ESCAPE.sub(replace, text) if "\\" in text else text


def _static_parts(pieces: list[Piece]) -> tuple[str, ...]:
    """Merge adjacent static pieces; drop parts that are empty or only whitespace (no evidence)."""
    parts: list[str] = []
    run: list[str] = []
    for piece in [*pieces, None]:
        if piece is not None:
            run.append(piece)
            continue
        text = "".join(run)
        if text.strip():
            parts.append(text)
        run = []
    return tuple(parts)


def _text(node: Node | None) -> str:
    if node is None or node.text is None:
        return ""
    return node.text.decode("utf-8", "replace")
