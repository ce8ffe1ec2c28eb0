"""Source-to-log matching: the paper's Algorithm 1.

A message matches a static log statement when the statement's static parts occur in the message
in order with anything between: the paper's regex with `.*` for each dynamic part, unanchored,
compared with whitespace runs collapsed (wrapped or re-indented log lines still match). It is
decided with ordered ``str.find`` (linear in the message, whatever the parts hold) instead
of a regex built from user text. An Aho-Corasick automaton over one key part per statement picks
the few candidate statements of each message, so a log of n messages costs O(total length)
rather than n times the number of statements.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import accumulate, compress, count

import ahocorasick

from app.analysis.logparse.messages import _ODD_ASCII_SPACE, _ODD_SPACE, LogMessages
from app.analysis.model import LogMessage, LogStatement, MatchResult


def ordered_match(parts: Sequence[str], message: str) -> bool:
    """True when every part occurs in ``message``, in order, without overlapping.

    Leftmost-first search is complete for literal fragments: taking the earliest occurrence of
    each part leaves the most room for the ones after it.
    """
    position = 0
    for part in parts:
        found = message.find(part, position)
        if found < 0:
            return False
        position = found + len(part)
    return True


@dataclass(frozen=True)
class _Pattern:
    sid: int
    fragments: tuple[str, ...]


def match_messages(
    static: Sequence[LogStatement], messages: Sequence[LogMessage], error_sids: Iterable[int]
) -> MatchResult:
    """Algorithm 1: L_exe, L_nexe and the multi-matched statements, by statement id.

    Statements without static parts are not static log statements and take no part. Several log
    calls may belong to one statement (one sid): a message that matches only calls of one
    statement matches that statement uniquely. ``multi`` holds L_mm less L_exe: statements seen
    only in messages that also matched another statement.
    """
    return Matcher(static).match(messages, error_sids)


class Matcher:
    """``match_messages`` for one set of log statements: the patterns and their automaton are
    built once and serve every log of the same scripts (read-only once built)."""

    def __init__(self, static: Sequence[LogStatement]) -> None:
        patterns = _patterns(static)
        self.statements = frozenset(p.sid for p in patterns)
        self.index = _Index(patterns)

    def match(self, messages: Sequence[LogMessage], error_sids: Iterable[int]) -> MatchResult:
        return _match(self.statements, self.index, messages, frozenset(error_sids))


def _match(
    statements: frozenset[int], index: _Index, messages: Sequence[LogMessage], errors: frozenset[int]
) -> MatchResult:

    # Logs repeat messages: each distinct text is matched once (all of them in one automaton
    # pass) and the result fanned out. Which statements end in L_exe and L_mm does not depend on
    # the order the messages are read in.
    if isinstance(messages, LogMessages):
        keep = index.possible(*messages.shapes())
        if keep is None:
            texts = messages.texts()
            numbers: Sequence[int] = range(len(texts))
        else:  # only the messages whose shape may hold a key: most texts are never cut out
            numbers, texts = messages.selected(keep)
    else:
        texts = [m.text for m in messages]
        numbers = [m.index for m in messages]
    distinct = list(dict.fromkeys(texts))
    found = {t: sids for t, sids in zip(distinct, index.match_all(distinct), strict=True) if sids}
    exe: set[int] = set(errors)
    multi: set[int] = set()
    for matched in found.values():
        if len(matched) == 1:
            exe.update(matched)
        else:
            multi.update(matched)
    # the messages whose text matched, picked by C-level iterators (most match nothing)
    hit = bytes(map(found.__contains__, texts))
    matches = list(zip(compress(numbers, hit), map(found.__getitem__, compress(texts, hit)), strict=True))

    nexe = statements - exe - multi
    return MatchResult(
        exe=frozenset(exe),
        nexe=frozenset(nexe),
        multi=frozenset(multi - exe),
        matches=tuple(matches),
        error_sids=errors,
    )


def _patterns(static: Sequence[LogStatement]) -> list[_Pattern]:
    patterns: dict[tuple[int, tuple[str, ...]], _Pattern] = {}
    for statement in static:
        if statement.sid is None:
            raise ValueError(
                f"log statement at {statement.path}:{statement.line} has no sid; "
                "assign statement ids before matching"
            )
        if statement.is_static:
            fragments = _fragments(statement.parts)
            patterns.setdefault((statement.sid, fragments), _Pattern(statement.sid, fragments))
    return list(patterns.values())


def _fragments(parts: Sequence[str]) -> tuple[str, ...]:
    """The parts with whitespace runs collapsed to one space and trimmed: see ``_normalized``.

    Whitespace-only parts vanish; a statement left with none matches every message, as the
    regex of only `.*` and blanks would match nearly any.
    """
    return tuple(f for f in map(_normalized, parts) if f)


def _normalized(text: str) -> str:
    """Whitespace-insensitive form of a message or part.

    Log lines get wrapped, re-indented and stripped on their way to the log (a printed newline
    ends a log line; a long line is folded at a space), so whitespace carries no evidence. Every
    match of the paper's regex survives this (a part's trimmed text keeps its inner runs whole),
    so the predicate only grows more tolerant, never stricter.
    """
    return " ".join(text.split())


# whitespace runs that are not already one space (a single space is left alone: most are)
_SPACE = re.compile(r"[^\S ]\s*| \s+")
_SPACES = re.compile("  +")
_BETWEEN = "\x00"  # joins texts for one automaton pass; log text never holds it (see clean_text)


def _normalized_all(texts: Sequence[str], joined: str | None = None) -> list[str]:
    """``_normalized`` of every text, in one substitution over them all (``joined``: the texts
    already joined with ``_BETWEEN``).

    Newlines and tabs become spaces first; then text with no other whitespace (the usual case)
    takes a search for the literal double space, much faster than trying a whitespace class at
    every character.
    """
    if joined is None:
        joined = _BETWEEN.join(texts)
    joined = joined.replace("\n", " ").replace("\t", " ")
    odd = _ODD_ASCII_SPACE if joined.isascii() else _ODD_SPACE
    plain = not any(ch in joined for ch in odd)
    joined = (_SPACES if plain else _SPACE).sub(" ", joined).strip(" ")
    return joined.replace(" " + _BETWEEN, _BETWEEN).replace(_BETWEEN + " ", _BETWEEN).split(_BETWEEN)


_DIGIT_SHAPE = str.maketrans("123456789", "000000000")
_SHAPED_MIN = 256  # fewer texts are matched directly
_SHAPED_SHARE = 4  # texts are first told by their shapes when there are at most a quarter as many


class _Index:
    """Candidate lookup: each pattern is keyed by its longest fragment, found by one automaton pass."""

    def __init__(self, patterns: Sequence[_Pattern]) -> None:
        self._patterns = patterns
        self._joinable = not any(_BETWEEN in f for p in patterns for f in p.fragments)
        self._always = tuple(i for i, p in enumerate(patterns) if not p.fragments)
        self._automaton: ahocorasick.Automaton | None = None
        self._shaped: ahocorasick.Automaton | None = None  # the keys' shapes (digits made 0)
        keyed: dict[str, list[int]] = {}
        for i, pattern in enumerate(patterns):
            if pattern.fragments:
                keyed.setdefault(max(pattern.fragments, key=len), []).append(i)
        if keyed:
            self._automaton = ahocorasick.Automaton()
            for key, members in keyed.items():
                self._automaton.add_word(key, tuple(members))
            self._automaton.make_automaton()
            self._shaped = ahocorasick.Automaton()
            for key in keyed:
                self._shaped.add_word(key.translate(_DIGIT_SHAPE), True)
            self._shaped.make_automaton()

    def match(self, text: str) -> tuple[int, ...]:
        """Sorted sids of the statements whose fragments occur in ``text`` in order."""
        candidates: set[int] = set(self._always)
        if self._automaton is not None:
            for _, members in self._automaton.iter(text):
                candidates.update(members)
        sids: set[int] = set()
        for i in candidates:
            pattern = self._patterns[i]
            if pattern.sid not in sids and ordered_match(pattern.fragments, text):
                sids.add(pattern.sid)
        return tuple(sorted(sids))

    def match_all(self, texts: Sequence[str]) -> list[tuple[int, ...]]:
        """``match`` of each text (normalized here): one automaton pass over all of them joined."""
        if not texts:
            return []
        joined = _BETWEEN.join(texts)
        if not self._joinable or joined.count(_BETWEEN) != len(texts) - 1:
            return [self.match(_normalized(t)) for t in texts]
        if self._always or self._automaton is None or len(texts) < _SHAPED_MIN:
            return self._match_joined(texts, joined)
        # Logs repeat a few messages with other numbers: the texts whose shape (every digit made
        # 0) holds no key's shape cannot hold the key, and need no further look. A text holding
        # a key holds its shape once both are shaped, and shaping commutes with normalizing.
        shapes: dict[str, int] = {}
        shape_ids = list(map(shapes.setdefault, joined.translate(_DIGIT_SHAPE).split(_BETWEEN), count()))
        if len(shapes) * _SHAPED_SHARE > len(texts):
            return self._match_joined(texts, joined)
        del joined
        hit = self._shaped_hits(list(shapes), list(shapes.values()))
        keep = list(map(hit.__contains__, shape_ids))
        out: list[tuple[int, ...]] = [()] * len(texts)
        places = list(compress(range(len(texts)), keep))
        for k, sids in zip(places, self._match_joined(list(compress(texts, keep))), strict=True):
            out[k] = sids
        return out

    def possible(self, codes: Sequence[int], shapes: Sequence[str]) -> bytes | None:
        """Which messages may match, by their shape codes (-1: unknown, so may) into ``shapes``
        (a message's text with every digit made 0); None: all may, or no shape is known."""
        if not shapes or self._always or self._shaped is None or not self._joinable:
            return None
        hit = self._shaped_hits(list(shapes), list(range(len(shapes))))
        flags = [*map(hit.__contains__, range(len(shapes))), True]  # the last one read for -1
        return bytes(map(flags.__getitem__, codes))

    def _shaped_hits(self, shapes: list[str], ids: list[int]) -> set[int]:
        """The ids of the shapes (normalized here) holding the shape of some pattern's key."""
        assert self._shaped is not None
        normal = _normalized_all(shapes)
        starts = list(accumulate(map((1).__add__, map(len, normal[:-1])), initial=0))
        return {ids[bisect_right(starts, end) - 1] for end, _ in self._shaped.iter(_BETWEEN.join(normal))}

    def _match_joined(self, texts: Sequence[str], joined: str | None = None) -> list[tuple[int, ...]]:
        """``match_all`` of texts that can be joined (``joined``: so joined already): one automaton pass."""
        if not texts:
            return []
        normal = _normalized_all(texts, joined)
        joined = _BETWEEN.join(normal)
        starts = list(accumulate(map((1).__add__, map(len, normal[:-1])), initial=0))
        candidates: dict[int, set[int]] = {}
        if self._always:
            candidates = {k: set(self._always) for k in range(len(normal))}
        if self._automaton is not None:
            for end, members in self._automaton.iter(joined):
                k = bisect_right(starts, end) - 1
                got = candidates.get(k)
                if got is None:
                    candidates[k] = set(members)
                else:
                    got.update(members)
        out: list[tuple[int, ...]] = [()] * len(normal)
        patterns = self._patterns
        for k, members in candidates.items():
            text = normal[k]
            sids: set[int] = set()
            for i in members:
                pattern = patterns[i]
                if pattern.sid not in sids and ordered_match(pattern.fragments, text):
                    sids.add(pattern.sid)
            out[k] = tuple(sorted(sids))
        return out
