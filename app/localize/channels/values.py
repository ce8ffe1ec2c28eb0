"""Value provenance: runtime values the log printed, traced back to the literals that produced them.

Logs print values: ``name = value`` / ``name: value`` pairs (parameter dumps, pytest and
sonic-mgmt ``Local variables``, ansible results), and formatted strings (commands, messages)
whose holes show what a variable held. A value the code binds to the same name as a literal or
default (``None``, ``''``, ``[]`` included) makes that binding's line a candidate; a hole of a
formatted string of the code that printed empty or ``None`` points at the literal the name kept
and at the conditions of the assignments that did not happen.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from app.analysis.model import LogMessage
from app.localize.channels import Context, Scores, Signal, put
from app.localize.channels.dataflow import definitions
from app.localize.channels.facts import Facts, Template, build_facts

if TYPE_CHECKING:
    from app.analysis.parsed import ParsedScripts

MAX_MESSAGES = 400  # the messages before the failure that are read, newest first
MAX_TEXT = 2000  # characters read per message
MAX_TEMPLATES = 2000  # formatted strings of the code tried against the log
MIN_STATIC = 8  # a formatted string needs this much literal text to be recognized in a log line
COMMON_BINDS = 4  # a (name, value) bound this often says nothing about which line printed
EMPTY = frozenset({"", "None", "[]", "{}", "()", "''", '""'})
_PAIR = re.compile(
    r"(?<![\w.])([A-Za-z_][\w-]{0,60})[ \t]{0,40}[:=][ \t]{0,3}"
    r"('[^'\n]{0,200}'|\"[^\"\n]{0,200}\"|[^\s,;()\[\]{}]{0,200})"
)
_SPACES = re.compile(r"\s+")


def _lines(ctx: Context) -> list[tuple[str, int | None]]:
    messages: list[LogMessage] = list(ctx.analysis.log.messages[-MAX_MESSAGES:])
    lines = [(m.text[:MAX_TEXT], m.line) for m in messages]
    lines.extend((line[:MAX_TEXT], None) for line in ctx.message[: MAX_TEXT * 10].splitlines())
    return lines


def _clean(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def value_scores(ctx: Context) -> Scores:
    scores: Scores = {}
    lines = _lines(ctx)
    binds, templates = _value_facts(ctx)
    if binds:
        for text, line in lines:
            for name, raw in _PAIR.findall(text):
                value = _clean(raw)
                sids = binds.get((name, value), ())
                if not sids or len(sids) > COMMON_BINDS:
                    continue
                shown = value if value else "''"
                for sid in sids:
                    put(
                        scores,
                        sid,
                        Signal(
                            0.8,
                            f"the log shows `{name}` = {shown}, the literal bound here",
                            text.strip()[:200],
                            line,
                        ),
                    )
    if templates:
        normalized = [(_SPACES.sub(" ", text), text, line) for text, line in lines]
        everything = "\n".join(flat for flat, _, _ in normalized)
        for sid, template, pieces, longest in templates:
            if longest not in everything:  # one scan of the log excludes most templates
                continue
            for flat, text, line in normalized:
                holes = _holes_in(pieces, flat)
                if holes is not None:
                    _credit_holes(ctx, scores, sid, template, holes, text.strip()[:200], line)
                    break
    return scores


# (name, literal) -> the statements binding it; each template long enough to be recognized, with
# its pieces' runs of white space made one space and stripped, and the longest of them
ValueFacts = tuple[dict[tuple[str, str], list[int]], list[tuple[int, Template, list[str], str]]]


def _value_facts(ctx: Context) -> ValueFacts:
    """The channel's script-only part: once per parse where analyses share it, not per failure."""
    return ctx.per_parse(_parse_value_facts, lambda: _facts_of(ctx.facts))


def _parse_value_facts(parsed: ParsedScripts) -> ValueFacts:
    return _facts_of(parsed.derived(build_facts))


def _facts_of(facts: Facts) -> ValueFacts:
    binds: dict[tuple[str, str], list[int]] = {}
    for sid, pairs in facts.binds.items():
        for name, value in pairs:
            binds.setdefault((name.removeprefix("attr:"), value), []).append(sid)
    templates = []
    for sid, template in [(sid, t) for sid, ts in facts.templates.items() for t in ts][:MAX_TEMPLATES]:
        if sum(len(p.strip()) for p in template.pieces) < MIN_STATIC:
            continue
        pieces = [_SPACES.sub(" ", p).strip() for p in template.pieces]
        templates.append((sid, template, pieces, max(pieces, key=len)))
    return binds, templates


def _holes(template: Template, text: str) -> list[str] | None:
    """The text each hole printed, if ``text`` holds the template's pieces in order; else None."""
    return _holes_in([_SPACES.sub(" ", p).strip() for p in template.pieces], text)


def _holes_in(pieces: list[str], text: str) -> list[str] | None:
    """``_holes`` of a template whose pieces are given with their spaces made one and stripped."""
    first = pieces[0]
    at = text.find(first) if first else 0
    if at < 0:
        return None
    cursor = at + len(first)
    values: list[str] = []
    for piece in pieces[1:]:
        if piece:
            nxt = text.find(piece, cursor)
            if nxt < 0:
                return None
            values.append(text[cursor:nxt].strip())
            cursor = nxt + len(piece)
        else:
            rest = text[cursor:].lstrip()
            values.append(rest.split(" ", 1)[0] if rest else "")
            cursor = len(text) - len(rest) + len(values[-1])
    return values


def _credit_holes(
    ctx: Context,
    scores: Scores,
    sid: int,
    template: Template,
    holes: list[str],
    source: str,
    line: int | None,
) -> None:
    use = ctx.statements[sid]
    for names, printed in zip(template.holes, holes, strict=False):
        if printed not in EMPTY and len(names) != 1:
            continue
        for name in names:
            shown = printed if printed else "empty"
            defs = definitions(ctx, name, use)
            for def_sid in defs:
                bound = {v for n, v in ctx.facts.binds.get(def_sid, ()) if n == name}
                if bound and printed in {_clean(v) for v in bound} | (
                    {""} if "None" in bound and printed == "None" else set()
                ):
                    put(
                        scores,
                        def_sid,
                        Signal(
                            1.0,
                            f"`{name}` printed {shown} in the log: the value this line binds",
                            source,
                            line,
                        ),
                    )
                elif printed in EMPTY:
                    guard = ctx.statements[def_sid].parent
                    if guard is not None:
                        put(
                            scores,
                            guard,
                            Signal(
                                0.8,
                                f"`{name}` printed {shown}: this condition kept its assignment from running",
                                source,
                                line,
                            ),
                        )
