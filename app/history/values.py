"""The values channel (value tuples, docs/design.md §8.1 and §8.2d): what the logged values say.

A log statement's message has static parts (its format's literals) and dynamic parts (the values
it printed). Where every passing run printed one and the same value at a statement and the
failure printed another, the statement printed something the fault changed: the lines that last
assigned the names it prints, in its own function, are suspects (the statement itself a little).
Statements whose value varies across passes (times, addresses, ids) say nothing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from app.analysis.model import Analysis, Loc, State

_STRING = re.compile(
    r"""(?:[rbfuRBFU]{0,2})(?:'''.*?'''|\"\"\".*?\"\"\"|'(?:\\.|[^'\\])*'|"(?:\\.|[^"\\])*")""", re.S
)
_NAME = re.compile(r"\b[A-Za-z_]\w*\b")
_KEYWORDS = frozenset(
    {"self", "cls", "True", "False", "None", "and", "or", "not", "in", "is", "if", "else", "for"}
)
LOG_LINE_SCORE = 0.5  # the printing statement itself: it may compute what it prints


def dynamic_parts(parts: Sequence[str], text: str) -> tuple[str, ...]:
    """The text between (and around) the static parts, in order, each stripped; empty ones dropped."""
    out, at = [], 0
    for part in (p for p in parts if p.strip()):
        found = text.find(part, at)
        if found < 0:
            return ()
        out.append(text[at:found])
        at = found + len(part)
    out.append(text[at:])
    return tuple(v for v in (" ".join(x.split()) for x in out) if v)


def value_tuples(analysis: Analysis) -> dict[Loc, frozenset[tuple[str, ...]]]:
    """Per uniquely matched log statement, the value tuples its messages printed."""
    by_sid = {s.sid: s for s in analysis.log_statements if s.sid is not None}
    out: dict[Loc, set[tuple[str, ...]]] = {}
    for index, sids in analysis.match.matches:
        if len(sids) != 1 or sids[0] not in by_sid:
            continue
        statement = by_sid[sids[0]]
        values = dynamic_parts(statement.parts, analysis.log.messages[index].text)
        if values:
            out.setdefault(Loc(statement.path, statement.line), set()).add(values)
    return {loc: frozenset(v) for loc, v in out.items()}


def divergent(
    failure: Mapping[Loc, frozenset[tuple[str, ...]]],
    passes: Sequence[Mapping[Loc, frozenset[tuple[str, ...]]]],
) -> list[Loc]:
    """Statements where the passes agree on one value and the failure printed another."""
    out = []
    for loc, printed in failure.items():
        seen = set().union(*(p[loc] for p in passes if loc in p))
        if len(seen) == 1 and printed - seen:
            out.append(loc)
    return sorted(out)


def value_scores(
    files: Mapping[str, str],
    statements: Sequence[Loc],
    functions: Mapping[Loc, tuple[int, int]],
    states: Mapping[Loc, State],
) -> dict[Loc, float]:
    """Each divergent statement's printed names' last assignments before it (1.0), itself (0.5).

    ``functions`` gives a statement's enclosing function's (first, last) line; only lines the
    failure may have run count.
    """
    out: dict[Loc, float] = {}
    for loc in statements:
        lines = files[loc.path].splitlines()
        if not 0 < loc.line <= len(lines):
            continue
        call = _STRING.sub(" ", lines[loc.line - 1])
        names = {n for n in _NAME.findall(call.split("(", 1)[-1]) if n not in _KEYWORDS}
        first = functions.get(loc, (1, loc.line))[0]
        out[loc] = max(out.get(loc, 0.0), LOG_LINE_SCORE)
        for name in names:
            assign = re.compile(
                rf"^\s*(?:[\w.\[\]]+\s*,\s*)*(?:self\.)?{re.escape(name)}\b[\w.\[\]]*(?:\s*,\s*[\w.]+)*\s*(?:[-+*/%|&]?=)(?!=)|\bfor\s+.*\b{re.escape(name)}\b.*\bin\b|\bas\s+{re.escape(name)}\b"
            )
            for n in range(loc.line - 1, first - 1, -1):
                here = Loc(loc.path, n)
                if states.get(here, State.NEXE) != State.NEXE and assign.search(
                    _STRING.sub(" ", lines[n - 1])
                ):
                    out[here] = 1.0
                    break
    return out
