"""String literals of the scripts that the log's last lines repeat: arguments the test passed on.

A system test hands literal text to the system it drives (commands, options, names, paths,
queries), and the runner or the system logs it back, most of all around a failure. A literal
found in the log's tail marks the statement that passed it; a rarer literal (one statement holds
it) and a later place in the log count more. Log statements' own text is what log matching
reads; here it counts little. The pieces are found in one pass of an Aho-Corasick automaton,
built once per parse of the scripts.
"""

from __future__ import annotations

import re
import weakref

import ahocorasick

from app.localize.channels import Context, Scores, Signal, put
from app.localize.channels.facts import Facts
from app.localize.channels.message import LOGGED_LITERAL, logging_sids

TAIL_MESSAGES = 200  # the log's last messages read
MAX_TAIL = 40_000  # characters of them
_SPACES = re.compile(r"\s+")
# by the identity of the facts (kept with a parse, so analyses of the same scripts share one);
# an entry goes when its facts are freed
_AUTOMATA: dict[int, tuple[weakref.ref[Facts], ahocorasick.Automaton | None]] = {}


def _automaton(facts: Facts) -> ahocorasick.Automaton | None:
    """Each literal piece -> (piece, the statements holding it); None when the scripts have none."""
    kept = _AUTOMATA.get(id(facts))
    if kept is not None and kept[0]() is facts:
        return kept[1]
    holders: dict[str, list[int]] = {}
    for sid, pieces in facts.literals.items():
        for piece in pieces:
            holders.setdefault(_SPACES.sub(" ", piece), []).append(sid)
    automaton = None
    if holders:
        automaton = ahocorasick.Automaton()
        for piece, sids in holders.items():
            automaton.add_word(piece, (piece, tuple(sorted(set(sids)))))
        automaton.make_automaton()
    key = id(facts)
    _AUTOMATA[key] = (weakref.ref(facts, lambda _ref: _AUTOMATA.pop(key, None)), automaton)
    return automaton


def literal_scores(ctx: Context) -> Scores:
    """Statements whose literal pieces the log's tail repeats: rarer and later = higher."""
    scores: Scores = {}
    automaton = _automaton(ctx.facts)
    if automaton is None:
        return scores
    messages = ctx.analysis.log.messages
    count = len(messages)
    first = max(0, count - TAIL_MESSAGES)
    column = getattr(messages, "text", None)  # the parser's columns: texts without building records
    tail = map(column, range(first, count)) if column else (m.text for m in messages[first:])
    text = _SPACES.sub(" ", " \n".join(tail)[-MAX_TAIL:])
    if not text.strip():
        return scores
    last: dict[str, tuple[int, tuple[int, ...]]] = {}
    for end, (piece, sids) in automaton.iter(text):
        last[piece] = (end, sids)  # the latest place each piece occurs
    logged = logging_sids(ctx)
    for piece, (end, sids) in last.items():
        value = (0.5 + 0.5 * end / len(text)) / len(sids) ** 0.5
        shown = piece if len(piece) <= 40 else piece[:37] + "..."
        detail = f"the log repeats its text {shown!r}"
        for sid in sids:
            put(scores, sid, Signal(value * (LOGGED_LITERAL if sid in logged else 1.0), detail))
    return scores
