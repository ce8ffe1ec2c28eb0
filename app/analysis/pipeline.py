"""The static phase end to end: scripts + one log -> Analysis (no I/O).

parse -> log statements -> log parsing -> error statements -> Algorithm 1 -> CFG -> estimators.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from tree_sitter import Tree

from app.analysis.callsites import call_sites
from app.analysis.cfg import build_blocks, flow_graph
from app.analysis.coverage import log_coverage
from app.analysis.estimate import EstimateOptions, estimate
from app.analysis.lifecycle import lifecycle
from app.analysis.logparse import match_script_path, parse_log
from app.analysis.logparse.frames import realign
from app.analysis.logstatements import DEFAULT_LOG_FUNCTIONS, find_log_statements
from app.analysis.matching import match_messages
from app.analysis.model import Analysis, Frame, LogStatement, Program, Script
from app.analysis.selection import is_test_function, select_tests
from app.analysis.source import LineIndex, line_index, normalize_newlines, parse_program, parse_tree


def analyze(
    scripts: Sequence[Script],
    log: str,
    *,
    log_functions: Sequence[str] = (),
    options: EstimateOptions | None = None,
    prefix_format: str | None = None,
    explain: bool = True,
) -> Analysis:
    """Run the whole static phase. Raises ValueError only for invalid options (patterns, format)."""
    if not scripts:
        raise ValueError("no test scripts given")
    paths = [s.path for s in scripts]
    if len(set(paths)) != len(paths):
        raise ValueError("two scripts share a path; each submitted file needs its own path")
    trees = [parse_tree(normalize_newlines(s.content)) for s in scripts]
    program = parse_program(scripts, trees)
    patterns = tuple(dict.fromkeys((*DEFAULT_LOG_FUNCTIONS, *log_functions)))
    index = line_index(program)
    log_statements = _log_statements(index, scripts, trees, patterns)
    parsed = parse_log(log, prefix_format=prefix_format)
    warnings: list[str] = [*program.warnings, *parsed.warnings]

    frames, frame_warnings = _script_frames(program, parsed.frames, paths)
    warnings.extend(frame_warnings)
    error_sids: list[int] = []
    for frame in frames:
        st = index.get((frame.path, frame.line))
        if st is not None and st.sid not in error_sids:
            error_sids.append(st.sid)
    if parsed.frames and not frames:
        warnings.append("the log's traceback has no frame in the submitted scripts")
    match = match_messages([s for s in log_statements if s.is_static], parsed.messages, error_sids)

    graphs = {f.fid: flow_graph(program, f) for f in program.functions}
    blocks = build_blocks(program, graphs)
    coverage = log_coverage(log_statements, match, parsed)
    sites = call_sites(program)
    selection = select_tests(
        program,
        log,
        frames,
        (program.statements[s].function for s in error_sids),
        match.exe,
        sites,
    )
    if options is None or options.log_coverage:
        warnings.extend(coverage.reasons)
    life = lifecycle(
        program,
        index,
        match,
        frames,
        (s.sid for s in log_statements if s.is_static and s.sid is not None),
        sites,
        (f.fid for f in program.functions if f.kind == "function" and is_test_function(f.name)),
    )
    estimation = estimate(
        program,
        match,
        blocks,
        frames,
        options,
        explain=explain,
        graphs=graphs,
        silent=coverage.silent,
        other_tests=selection.others,
        life=life,
    )
    warnings.extend(estimation.warnings)
    return Analysis(
        program=program,
        log=parsed,
        log_statements=tuple(log_statements),
        error_statements=tuple(error_sids),
        error_frames=tuple(frames),
        match=match,
        blocks=blocks,
        traces=estimation.traces,
        warnings=tuple(dict.fromkeys(warnings)),
    )


def _log_statements(
    index: LineIndex, scripts: Sequence[Script], trees: Sequence[Tree], patterns: tuple[str, ...]
) -> list[LogStatement]:
    out: list[LogStatement] = []
    for script, tree in zip(scripts, trees, strict=True):
        for ls in find_log_statements(tree.root_node, script.path, patterns):
            st = index.get((script.path, ls.line))
            out.append(replace(ls, sid=st.sid if st is not None else None))
    return [s for s in out if s.sid is not None]


def _script_frames(
    program: Program, frames: Sequence[Frame], paths: list[str]
) -> tuple[list[Frame], list[str]]:
    """Frames in submitted scripts, path rewritten and line numbers corrected for small skew."""
    out: list[Frame] = []
    warnings: list[str] = []
    files = {f.path: f for f in program.files}
    for frame in frames:
        path = match_script_path(frame.path, paths)
        if path is None:
            continue
        lines = files[path].lines
        line = realign(lines, frame.line, frame.code)
        if line is None:
            warnings.append(
                f"traceback frame {frame.path}:{frame.line} is outside {path} ({len(lines)} lines); ignored"
            )
            continue
        if line != frame.line:
            warnings.append(
                f"traceback line {frame.line} of {path} does not hold the code the log shows;"
                f" using line {line}"
            )
        out.append(replace(frame, path=path, line=line))
    return out, warnings
