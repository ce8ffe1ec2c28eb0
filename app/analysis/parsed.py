"""The part of the static phase that depends on the scripts alone, and a bounded cache of it.

CI fails the same test file again and again: a multi-test job log fails several tests of one
script, a backlog holds one suite's failures run after run, history records every run of a test
with the same script, and the service sees the same scripts with a new log each time. Parsing,
the cost check, the program model, the log statements, control flow, blocks and call sites (and,
through ``derived``, a ranker's syntax facts) are the same each time; only the log differs. A
``ParseCache`` keeps them per exact set of scripts, so that only the log's half of an analysis is
computed for a script seen before.

Everything kept here is read-only once built (frozen records, tuples, dicts nobody writes);
``tests/analysis/test_parsed.py`` checks that cached and fresh analyses agree in any order.

A file comes back in other sets too (a test module with the traceback's helper named second,
or third after a conftest): what one file alone gives (its syntax tree, its check against the
cost limits, its log calls) is kept per file as well (``_FileCache``), so a new set parses only
what is new; each set gets its own copy of a kept tree (tree-sitter trees are not to be read by
two threads at once).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, TypeVar

from tree_sitter import Node, Tree

from app.analysis.callsites import call_sites
from app.analysis.cfg import FlowGraph, build_blocks, program_graph
from app.analysis.limits import CostLimits, check_tree
from app.analysis.logstatements import DEFAULT_LOG_FUNCTIONS, find_log_statements
from app.analysis.model import Block, LogStatement, Program, Script
from app.analysis.source import (
    Captures,
    FileParse,
    LineIndex,
    call_captures,
    line_index,
    normalize_newlines,
    parse_file,
    parse_program,
    parse_tree,
)

T = TypeVar("T")

# the limits measured on the parse trees; the line counts depend on the log too (checked apart)
_TREE_LIMITS = tuple(
    f.name for f in fields(CostLimits) if f.name not in ("max_script_lines", "max_log_lines")
)


@dataclass(frozen=True, eq=False)
class ParsedScripts:
    """What the static phase derives from one set of scripts and log-function patterns.

    The program is built with the parse; its log statements, flow graphs, blocks and call sites
    on first use: a CI job's recording reads only the program of many sets (a test's scope, a
    pass's must-run lines), which no analysis of theirs follows.
    """

    trees: tuple[Tree, ...]
    program: Program
    index: LineIndex
    checked: CostLimits | None  # the limits these trees were found within (None: not checked)
    # builds the log statements once (``_log_statements`` of this set's files), then dropped
    _find_log_statements: list[Callable[[], tuple[LogStatement, ...]]] = field(
        default_factory=list, repr=False
    )
    _derived: dict[Callable[..., Any], Any] = field(default_factory=dict, repr=False)
    _lock: threading.RLock = field(default_factory=threading.RLock, repr=False)

    @property
    def log_statements(self) -> tuple[LogStatement, ...]:
        return self.kept(_found_log_statements)

    @property
    def graphs(self) -> dict[str, FlowGraph]:
        return self.kept(_graphs)

    @property
    def blocks(self) -> tuple[Block, ...]:
        return self.kept(_blocks)

    @property
    def sites(self) -> dict[str, tuple[int, ...]]:
        return self.kept(_sites)

    def derived(self, build: Callable[[Program, tuple[Tree, ...]], T]) -> T:
        """``build(program, trees)``, computed once per parse: a later stage's script-only facts
        (the heuristic's syntax facts) without this module knowing their type."""
        with self._lock:  # one builder at a time: threads sharing a parse never walk its trees at once
            if build not in self._derived:
                self._derived[build] = build(self.program, self.trees)
            return self._derived[build]

    def kept(self, build: Callable[[ParsedScripts], T]) -> T:
        """``build(self)``, computed once per parse: what a step derives from the whole parse (the
        matcher of its log statements, the owners of its lines), kept beside ``derived``'s."""
        with self._lock:
            if build not in self._derived:
                self._derived[build] = build(self)
            return self._derived[build]

    def check(self, scripts: Sequence[Script], limits: CostLimits | None) -> None:
        """Raise ``InputTooCostly`` where these trees exceed ``limits``; nothing when they were
        already found within limits at least as strict."""
        if limits is None or _within(self.checked, limits):
            return
        with self._lock:
            _check_trees(scripts, self.trees, limits)


def _found_log_statements(parsed: ParsedScripts) -> tuple[LogStatement, ...]:
    found = parsed._find_log_statements[0]()  # a malformed pattern raises here, every time
    parsed._find_log_statements.clear()  # its files and captures are let go
    return found


def _graphs(parsed: ParsedScripts) -> dict[str, FlowGraph]:
    return {f.fid: program_graph(parsed.program, f) for f in parsed.program.functions}


def _blocks(parsed: ParsedScripts) -> tuple[Block, ...]:
    return build_blocks(parsed.program, parsed.graphs)


def _sites(parsed: ParsedScripts) -> dict[str, tuple[int, ...]]:
    return call_sites(parsed.program)


def _check_trees(scripts: Sequence[Script], trees: Sequence[Tree], limits: CostLimits) -> None:
    for script, tree in zip(scripts, trees, strict=True):
        check_tree(script.path, tree, limits)


def _within(checked: CostLimits | None, limits: CostLimits) -> bool:
    return checked is not None and all(
        getattr(limits, name) >= getattr(checked, name) for name in _TREE_LIMITS
    )


def log_patterns(log_functions: Sequence[str]) -> tuple[str, ...]:
    """The log-function patterns an analysis looks for: the defaults, then the configured ones."""
    return tuple(dict.fromkeys((*DEFAULT_LOG_FUNCTIONS, *log_functions)))


def parse_scripts(
    scripts: Sequence[Script], patterns: tuple[str, ...], limits: CostLimits | None = None
) -> ParsedScripts:
    """Parse the scripts and build their program model; ``InputTooCostly`` over ``limits``."""
    files = [_FILES.get(s) for s in scripts]
    trees = tuple(f.tree.copy() for f in files)
    if limits is not None:
        for script, file, tree in zip(scripts, files, trees, strict=True):
            file.check(script.path, tree, limits)
    queried: dict[int, Captures] = {}

    def captures(n: int) -> Captures:
        """One query per script, for calls and logging; only for what a file has not kept yet."""
        if n not in queried:
            queried[n] = call_captures(trees[n])
        return queried[n]

    pairs = enumerate(zip(scripts, files, strict=True))
    parts = [file.parse(script, trees[n], captures, n) for n, (script, file) in pairs]
    program = parse_program(scripts, parts=parts)
    index = line_index(program)
    scripts = tuple(scripts)
    return ParsedScripts(
        trees=trees,
        program=program,
        index=index,
        checked=limits,
        _find_log_statements=[lambda: _log_statements(index, scripts, files, trees, captures, patterns)],
    )


def _log_statements(
    index: LineIndex,
    scripts: Sequence[Script],
    files: Sequence[_File],
    trees: Sequence[Tree],
    captures: Callable[[int], Captures],
    patterns: tuple[str, ...],
) -> tuple[LogStatement, ...]:
    out: list[LogStatement] = []
    for n, (script, file, tree) in enumerate(zip(scripts, files, trees, strict=True)):
        for ls in file.log_calls(script.path, tree, lambda n=n: captures(n).get("callee", []), patterns):
            st = index.get((script.path, ls.line))
            if st is not None:  # built directly: dataclasses.replace costs far more than a constructor call
                out.append(LogStatement(ls.path, ls.line, ls.end_line, ls.callee, ls.parts, st.sid))
    return tuple(out)


class _File:
    """What one file alone gives the parse: its tree (copied for each set that reads it), the
    loosest cost limits it was found within, its log calls per log-function patterns, and its
    statements and functions (``parse_file``), which a set only numbers on."""

    def __init__(self, tree: Tree) -> None:
        self.tree = tree
        self.checked: CostLimits | None = None
        self.calls: dict[tuple[str, ...], tuple[LogStatement, ...]] = {}
        self.parsed: FileParse | None = None
        self._lock = threading.Lock()

    def check(self, path: str, tree: Tree, limits: CostLimits) -> None:
        """``check_tree`` of the file's tree (``tree``: this set's copy), once per limits."""
        with self._lock:
            if _within(self.checked, limits):
                return
        check_tree(path, tree, limits)
        with self._lock:
            self.checked = limits

    def parse(self, script: Script, tree: Tree, captures: Callable[[int], Captures], n: int) -> FileParse:
        """The file's ``parse_file`` (from ``tree``, this set's copy, and ``captures(n)``), once."""
        with self._lock:
            found = self.parsed
        if found is None:
            found = parse_file(script, tree, captures(n))
            with self._lock:
                self.parsed = found
        return found

    def log_calls(
        self, path: str, tree: Tree, callees: Callable[[], Sequence[Node]], patterns: tuple[str, ...]
    ) -> tuple[LogStatement, ...]:
        """The file's log calls (without statement ids), found once per patterns."""
        with self._lock:
            found = self.calls.get(patterns)
        if found is None:
            found = tuple(find_log_statements(tree.root_node, path, patterns, callees()))
            with self._lock:
                self.calls[patterns] = found
        return found


class _FileCache:
    """``_File`` records by path and content, the least recently used evicted first; bounded by
    entries and by the files' characters. Thread-safe; a file is parsed outside the lock."""

    def __init__(self, max_entries: int = 64, max_chars: int = 500_000) -> None:
        self.max_entries = max_entries
        self.max_chars = max_chars
        self._entries: OrderedDict[tuple[str, str], _File] = OrderedDict()
        self._chars = 0
        self._lock = threading.Lock()

    def get(self, script: Script) -> _File:
        key = (script.path, script.content)
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
                return found
        file = _File(parse_tree(normalize_newlines(script.content)))
        size = len(script.content)
        with self._lock:
            if size <= self.max_chars and key not in self._entries:
                self._entries[key] = file
                self._chars += size
                while len(self._entries) > self.max_entries or self._chars > self.max_chars:
                    (_, content), _ = self._entries.popitem(last=False)
                    self._chars -= len(content)
        return file


_FILES = _FileCache()


def script_set(scripts: Sequence[Script]) -> tuple[tuple[str, str], ...]:
    """A script set's identity: its paths and contents in order (what ``ParseCache`` keys a parse by)."""
    return tuple((s.path, s.content) for s in scripts)


def grouped(items: Sequence[T], key: Callable[[T], Hashable]) -> list[int]:
    """The indexes of ``items``, those of equal ``key`` together, groups in order of first sight:
    the order to analyse items in so that a small ``ParseCache`` parses each script set once."""
    first: dict[Hashable, int] = {}
    return sorted(range(len(items)), key=lambda i: first.setdefault(key(items[i]), i))


class ParseCache:
    """The ``ParsedScripts`` of recently seen script sets, least recently used evicted first.

    Bounded by entries and by the scripts' characters (a parse holds many times its text in trees
    and records). Keyed by the exact paths, contents and patterns, so a
    changed byte is a new entry. Thread-safe; the parse itself runs outside the lock.
    """

    def __init__(self, max_entries: int = 64, max_chars: int = 1_000_000) -> None:
        self.max_entries = max_entries
        self.max_chars = max_chars
        self._entries: OrderedDict[tuple[Any, ...], tuple[ParsedScripts, int]] = OrderedDict()
        self._chars = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)

    def get(
        self, scripts: Sequence[Script], patterns: tuple[str, ...], limits: CostLimits | None = None
    ) -> ParsedScripts:
        key = (script_set(scripts), patterns)
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
                self.hits += 1
        if found is not None:
            found[0].check(scripts, limits)
            return found[0]
        parsed = parse_scripts(scripts, patterns, limits)
        size = sum(len(s.content) for s in scripts)
        with self._lock:
            self.misses += 1
            if size <= self.max_chars and key not in self._entries:
                self._entries[key] = (parsed, size)
                self._chars += size
                while len(self._entries) > self.max_entries or self._chars > self.max_chars:
                    _, (_, dropped) = self._entries.popitem(last=False)
                    self._chars -= dropped
        return parsed
