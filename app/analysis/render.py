"""Pruned, labelled code: what the ranker sees of one trace, at one granularity.

The paper's preprocessing drops blank lines and keeps comments; its prompts label every line
(line level) or block (block level) with a unique integer ID and refer to functions by name.
Line IDs are positions in the concatenation of all submitted files, so they do not change with
the trace variant and equal the original line number when there is one file. Every rendered
element keeps its original path and lines, so a ranked ID always maps back to source.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from app.analysis.model import Analysis, Block, Loc, Program

if TYPE_CHECKING:
    from app.analysis.parsed import ParsedScripts

LEVELS: tuple[str, ...] = ("function", "block", "line")
FILE_HEADER = "# file: {path}"
BLOCK_LABEL = "# BLOCK {bid}"
FUNCTION_LABEL = "# FUNCTION {fid}"


@dataclass(frozen=True)
class Element:
    """One rankable unit: ``id`` is what the model answers with (``17``, ``BLOCK 3``, ``Cls.method``)."""

    id: str
    level: str
    path: str
    start_line: int
    end_line: int
    code: str  # the element's kept lines, original text
    lines: tuple[int, ...]  # its kept lines, 1-based in ``path``


@dataclass(frozen=True)
class RenderedCode:
    level: str
    variant: str
    text: str
    elements: tuple[Element, ...]
    max_element_id: int | None  # highest integer ID (line/block level); None for functions
    kept_lines: int
    total_lines: int


class _Owner(NamedTuple):
    """Who a source line belongs to: its function and (where it has one) its basic block.

    A named tuple: one is made per code line of every render."""

    function: str
    block: int | None


def render(analysis: Analysis, variant: str, level: str) -> RenderedCode:
    """Render trace ``variant`` (a canonical name from ``model.VARIANTS``) at ``level``."""
    if level not in LEVELS:
        raise ValueError(f"unknown level {level!r}; expected one of {', '.join(LEVELS)}")
    if variant not in analysis.traces:
        raise ValueError(f"the analysis has no trace {variant!r}")
    program = analysis.program
    trace = analysis.traces[variant]
    owners = analysis_owners(analysis)
    offsets = line_id_offsets(program)
    multi_file = len(program.files) > 1
    text_lines: list[str] = []
    members: dict[str, list[tuple[str, int]]] = {}
    order: list[str] = []
    kept_by_path: dict[str, list[int]] = {}
    for path, line in trace.kept:  # (path, line) tuples: Loc is one
        kept_by_path.setdefault(path, []).append(line)
    kept_count = 0
    for source in program.files:
        path, lines, code_lines = source.path, source.lines, source.code_lines
        kept = sorted(
            line for line in kept_by_path.get(path, ()) if line in code_lines and lines[line - 1].strip()
        )
        if not kept:
            continue
        kept_count += len(kept)
        if multi_file:
            text_lines.append(FILE_HEADER.format(path=path))
        current: str | None = None
        offset = offsets[path]
        for line in kept:
            code = lines[line - 1]
            owner = owners.get((path, line))
            if level == "line":
                element_id: str | None = str(offset + line)
                text_lines.append(f"{element_id}: {code}")
            else:
                if level == "block":
                    element_id = None if owner is None or owner.block is None else f"BLOCK {owner.block}"
                    label = None if element_id is None else BLOCK_LABEL.format(bid=owner.block)
                else:
                    element_id = None if owner is None else owner.function
                    label = None if element_id is None else FUNCTION_LABEL.format(fid=element_id)
                if element_id is not None and element_id != current and label is not None:
                    indent = code[: len(code) - len(code.lstrip())]
                    text_lines.append(indent + label)
                current = element_id
                text_lines.append(code)
            if element_id is not None:
                if element_id not in members:
                    members[element_id] = []
                    order.append(element_id)
                members[element_id].append((path, line))
    elements = tuple(_element(eid, level, members[eid], program) for eid in order)
    return RenderedCode(
        level=level,
        variant=variant,
        text="\n".join(text_lines),
        elements=elements,
        max_element_id=_max_id(elements, level),
        kept_lines=kept_count,
        total_lines=trace.total,
    )


def element_for_line(rendered: RenderedCode, loc: Loc) -> Element | None:
    """The rendered element that shows source line ``loc``, if any."""
    for element in rendered.elements:
        if element.path == loc.path and loc.line in element.lines:
            return element
    return None


def line_id_offsets(program: Program) -> dict[str, int]:
    """Per file, what to add to a line number to get its line ID in the concatenated scripts."""
    offsets: dict[str, int] = {}
    total = 0
    for source in program.files:
        offsets[source.path] = total
        total += len(source.lines)
    return offsets


_OWNERS: dict[int, dict[Loc, _Owner]] = {}


def analysis_owners(analysis: Analysis) -> dict[Loc, _Owner]:
    """``line_owners`` of one analysis, computed once: every rendering and ranking of it reads the same map.

    Kept while the analysis lives (a triage renders two or three levels; eval renders dozens).
    """
    parse = analysis.parsed
    if parse is not None and parse.program is analysis.program and parse.blocks is analysis.blocks:
        return parse.kept(_parse_owners)  # script-only: once per parse, whatever the log
    key = id(analysis)
    found = _OWNERS.get(key)
    if found is None:
        found = _OWNERS[key] = line_owners(analysis.program, analysis.blocks)
        weakref.finalize(analysis, _OWNERS.pop, key, None)
    return found


def _parse_owners(parse: ParsedScripts) -> dict[Loc, _Owner]:
    return line_owners(parse.program, parse.blocks)


def line_owners(program: Program, blocks: tuple[Block, ...]) -> dict[Loc, _Owner]:
    """Map every code line to its function and block.

    Statement lines (comments attached to them included) go to the statement's function and
    block. Def/decorator headers go to their own function (even when the parent function also
    lists them as a statement) and keep the block the parent's statement gave them, else the
    innermost block covering them. Class headers and stray lines go to the innermost function
    whose range covers them.
    """
    block_of_sid = {sid: block.bid for block in blocks for sid in block.sids}
    blocks_of: dict[str, list[Block]] = {}
    for block in blocks:
        blocks_of.setdefault(block.function, []).append(block)
    owners: dict[Loc, _Owner] = {}
    for stmt in program.statements:
        owner = _Owner(stmt.function, block_of_sid.get(stmt.sid))
        path = stmt.path
        for line in stmt.lines:
            owners[(path, line)] = owner  # type: ignore[index]  # equal to and hashed as Loc(path, line)
    for function in program.functions:
        for line in function.header_lines:
            loc = Loc(function.path, line)
            seen_from_parent = owners.get(loc)  # a nested def is also a statement of its parent
            block = (
                seen_from_parent.block
                if seen_from_parent
                else _covering_block(blocks_of.get(function.fid, []), loc)
            )
            owners[loc] = _Owner(function.fid, block)
    for source in program.files:
        for line in sorted(source.code_lines):
            loc = Loc(source.path, line)
            if loc not in owners:
                fid = _covering_function(program, loc)
                if fid is not None:
                    owners[loc] = _Owner(fid, _covering_block(blocks_of.get(fid, []), loc))
    return owners


def _covering_block(blocks: list[Block], loc: Loc) -> int | None:
    """The innermost of one function's blocks whose line range covers ``loc``."""
    best: Block | None = None
    for block in blocks:
        if (block.path == loc.path and block.start_line <= loc.line <= block.end_line) and (
            best is None or block.end_line - block.start_line < best.end_line - best.start_line
        ):
            best = block
    return None if best is None else best.bid


def _covering_function(program: Program, loc: Loc) -> str | None:
    best = None
    module = None
    for function in program.functions:
        if function.path != loc.path:
            continue
        if function.kind == "module":
            module = function.fid
        elif function.start_line <= loc.line <= function.end_line and (
            best is None or function.end_line - function.start_line < best.end_line - best.start_line
        ):
            best = function
    return module if best is None else best.fid


def _element(eid: str, level: str, locs: list[tuple[str, int]], program: Program) -> Element:
    """An element spans its kept lines: a block may enclose nested defs that are not part of it."""
    path = locs[0][0]
    source = next(f for f in program.files if f.path == path)
    lines = tuple(sorted({line for p, line in locs if p == path}))
    code = "\n".join(source.lines[line - 1] for line in lines)
    return Element(eid, level, path, start_line=lines[0], end_line=lines[-1], code=code, lines=lines)


def _max_id(elements: tuple[Element, ...], level: str) -> int | None:
    if level == "function" or not elements:
        return None
    if level == "line":
        return max(int(e.id) for e in elements)
    return max(int(e.id.split()[1]) for e in elements)
