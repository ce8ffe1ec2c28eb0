"""The heuristic ranker's evidence channels, one module per kind of evidence.

Every channel reads the analysis (never the raw log) and returns, per statement id, its best
``Signal``: a strength in [0, 1], one sentence for a person, and the log text it came from.
``app.localize.heuristic`` weighs the channels and turns signals into ``Evidence`` records.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, TypeVar

from app.analysis.model import Analysis, Function, Loc, Program, Statement
from app.localize.channels.facts import Facts, build_facts

if TYPE_CHECKING:
    from collections.abc import Callable

    from app.analysis.parsed import ParsedScripts

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Signal:
    value: float  # strength in [0, 1] before the channel's weight
    detail: str
    source: str | None = None  # log text or frame it was read from
    source_line: int | None = None  # that text's 1-based line in the log


Scores = dict[int, Signal]


def put(scores: Scores, sid: int, signal: Signal) -> None:
    """Keep the strongest signal per statement."""
    if signal.value > 0 and (sid not in scores or signal.value > scores[sid].value):
        scores[sid] = signal


@dataclass(frozen=True)
class Context:
    """What every channel reads: the analysis plus shared indexes built once per ranking."""

    analysis: Analysis
    kept: frozenset[Loc]
    functions: dict[str, Function]
    by_name: dict[str, tuple[str, ...]]  # simple function name -> fids

    @classmethod
    def build(cls, analysis: Analysis, variant: str) -> Context:
        program = analysis.program
        by_name: dict[str, list[str]] = {}
        for function in program.functions:
            by_name.setdefault(function.name, []).append(function.fid)
        return cls(
            analysis=analysis,
            kept=analysis.traces[variant].kept,
            functions={f.fid: f for f in program.functions},
            by_name={k: tuple(v) for k, v in by_name.items()},
        )

    @cached_property
    def facts(self) -> Facts:
        """Syntax-tree facts: the costly part, built on first use (the stack-trace baseline needs none),
        and once per parse where analyses of the same scripts share it (``app.analysis.parsed``)."""
        parsed = self.shared_parse
        if parsed is not None:
            return parsed.derived(build_facts)
        return build_facts(self.analysis.program, self.analysis.trees)

    @property
    def shared_parse(self) -> ParsedScripts | None:
        """The parse this analysis shares with the other analyses of the same scripts, if any."""
        parsed = self.analysis.parsed
        return parsed if parsed is not None and parsed.program is self.analysis.program else None

    def per_parse(self, build: Callable[[ParsedScripts], T], otherwise: Callable[[], T]) -> T:
        """``build(parse)`` kept once per shared parse (script-only facts, the same for every
        failure of those scripts), else ``otherwise()`` for this ranking alone."""
        parsed = self.shared_parse
        return parsed.kept(build) if parsed is not None else otherwise()

    @cached_property
    def modules(self) -> tuple[Function, ...]:
        """The files' module pseudo-functions, in the program's order."""
        return tuple(f for f in self.functions.values() if f.kind == "module")

    @cached_property
    def definers(self) -> dict[str, tuple[int, ...]]:
        """Name -> the statements that bind it, in statement order: the data-flow channel's
        lookups, indexed once per parse instead of a scan of every statement per name."""
        return self.per_parse(_parse_definers, lambda: definers(self.facts))

    @cached_property
    def found_definitions(self) -> dict[tuple[str, int], tuple[int, ...]]:
        """(name, using statement) -> its definitions (``dataflow.definitions``): kept per parse,
        where analyses of the same scripts share it, else for this ranking."""
        return self.per_parse(_no_definitions, dict)

    @cached_property
    def sorted_uses(self) -> dict[int, tuple[str, ...]]:
        """sid -> the names it reads, sorted (``dataflow.walk``'s order): kept per parse, as
        ``found_definitions`` is."""
        return self.per_parse(_no_uses, dict)

    @cached_property
    def walk_memo(self) -> dict[tuple[object, ...], object]:
        """What ``dataflow``'s walk derives from the scripts alone (a function's results, the
        calls that bind a parameter, each step's credits), by a key naming it: kept per parse, as
        ``sorted_uses`` is."""
        return self.per_parse(_no_walks, dict)

    @cached_property
    def class_bases(self) -> dict[str, frozenset[str]]:
        """Class simple name -> the simple names of its base classes, from the scripts' ``class``
        headers (a name defined twice: the union), kept per parse."""
        return self.per_parse(_parse_bases, lambda: class_bases(self.analysis.program))

    def ancestors(self, names: Iterable[str]) -> set[str]:
        """``names`` and every class the scripts define that they inherit from, transitively."""
        found = set(names)
        todo = list(found)
        while todo:
            for base in self.class_bases.get(todo.pop(), ()):
                if base not in found:
                    found.add(base)
                    todo.append(base)
        return found

    def sid_at(self, path: str, line: int) -> int | None:
        """The statement owning a source line, from the analysis' one line index (innermost wins)."""
        stmt = self.analysis.line_index.get((path, line))
        return None if stmt is None else stmt.sid

    def first_line(self, sid: int) -> str:
        """The source text of a statement's first line."""
        stmt = self.statements[sid]
        lines = self._lines[stmt.path]
        return lines[stmt.start_line - 1] if 0 < stmt.start_line <= len(lines) else ""

    @cached_property
    def _lines(self) -> dict[str, tuple[str, ...]]:
        return {f.path: f.lines for f in self.analysis.program.files}

    @property
    def statements(self) -> tuple[Statement, ...]:
        return self.analysis.program.statements

    @property
    def message(self) -> str:
        return self.analysis.log.error_message

    def is_kept(self, sid: int) -> bool:
        stmt = self.statements[sid]
        return Loc(stmt.path, stmt.start_line) in self.kept

    @cached_property
    def kept_sids(self) -> frozenset[int]:
        """The statements ``is_kept`` says are kept, for channels that scan every statement: read
        from the kept lines (a few dozen) through the statements' first lines (once per parse)."""
        starts = self.per_parse(_parse_starts, lambda: statement_starts(self.statements))
        return frozenset(sid for loc in self.kept for sid in starts.get(loc, ()))


def definers(facts: Facts) -> dict[str, tuple[int, ...]]:
    """Name -> the sids whose definitions hold it, ascending (``facts.defs`` is in sid order)."""
    found: dict[str, list[int]] = {}
    for sid, names in facts.defs.items():
        for name in names:
            found.setdefault(name, []).append(sid)
    return {name: tuple(sids) for name, sids in found.items()}


def _parse_definers(parsed: ParsedScripts) -> dict[str, tuple[int, ...]]:
    return definers(parsed.derived(build_facts))


_CLASS_HEADER = re.compile(r"\s*class\s+([A-Za-z_]\w*)\s*(?:\(([^)]*)\))?\s*:")


def class_bases(program: Program) -> dict[str, frozenset[str]]:
    """Class simple name -> its bases' simple names (``pkg.Base`` -> ``Base``), read off each
    ``class`` header; keyword arguments (``metaclass=``) are not bases."""
    found: dict[str, set[str]] = {}
    for source in program.files:
        for _, _, rows in source.container_headers:
            header = " ".join(source.lines[r - 1].strip() for r in rows if 0 < r <= len(source.lines))
            match = _CLASS_HEADER.match(header)
            if match is None:
                continue
            bases = found.setdefault(match.group(1), set())
            for part in (match.group(2) or "").split(","):
                name = part.strip()
                if name and "=" not in name:
                    bases.add(name.rsplit(".", 1)[-1])
    return {name: frozenset(bases) for name, bases in found.items()}


def _parse_bases(parsed: ParsedScripts) -> dict[str, frozenset[str]]:
    return class_bases(parsed.program)


def _no_definitions(parsed: ParsedScripts) -> dict[tuple[str, int], tuple[int, ...]]:
    return {}


def _no_uses(parsed: ParsedScripts) -> dict[int, tuple[str, ...]]:
    return {}


def _no_walks(parsed: ParsedScripts) -> dict[tuple[object, ...], object]:
    return {}


def statement_starts(statements: Sequence[Statement]) -> dict[Loc, tuple[int, ...]]:
    """Each statement's first line -> the statements starting there (``a = 1; b = 2``: two)."""
    found: dict[Loc, list[int]] = {}
    for sid, st in enumerate(statements):
        found.setdefault(Loc(st.path, st.start_line), []).append(sid)
    return {loc: tuple(sids) for loc, sids in found.items()}


def _parse_starts(parsed: ParsedScripts) -> dict[Loc, tuple[int, ...]]:
    return statement_starts(parsed.program.statements)
