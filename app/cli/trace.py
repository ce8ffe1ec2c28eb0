"""`tcfl trace`: every trace variant, per line its state and the evidence behind it."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from app.analysis.context import REFINEMENTS
from app.analysis.estimate import EstimateOptions
from app.analysis.model import TRACE_ALIASES, VARIANTS, Analysis, Loc, State, resolve_variant
from app.analysis.pipeline import analyze
from app.cli import UsageError
from app.cli.flags import add_option_flags, options_given
from app.cli.io import check_log_format, load_settings, read_log, read_scripts
from app.emit.text import printable
from app.options import resolve_options


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("trace", help="estimate which lines of the scripts ran, from the failure log")
    p.add_argument("scripts", nargs="+", metavar="SCRIPT", help="test script(s) of the failing test")
    p.add_argument("--log", required=True, metavar="FILE", help="the failure log ('-' for standard input)")
    add_option_flags(p, "log_functions", "log_format")
    p.add_argument(
        "--trace",
        "--variant",
        dest="variant",
        default="tplus",
        metavar="VARIANT",
        help="variant whose per-line states the report shows (as in triage; --variant is an alias)",
    )
    for flag in ("call-site-inference", "termination", "walk-semantics", "normal-return"):
        p.add_argument(f"--no-{flag}", action="store_true", help=f"tplus without {flag.replace('-', ' ')}")
    p.add_argument(
        "--without",
        action="append",
        default=[],
        choices=sorted(REFINEMENTS),
        metavar="RULE",
        help=f"tplus without this refinement (repeatable): {', '.join(sorted(REFINEMENTS))}",
    )
    p.add_argument(
        "--json", action="store_true", help="machine-readable output (the JSON report described in README)"
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    scripts, warnings = read_scripts(args.scripts)
    log, log_warnings = read_log(args.log)
    check_log_format(args.log_format)
    options = EstimateOptions(
        call_site_inference=not args.no_call_site_inference,
        termination=not args.no_termination,
        walk_semantics=not args.no_walk_semantics,
        normal_return=not args.no_normal_return,
    ).without(args.without)
    settings = load_settings()
    try:
        resolved = resolve_options(settings, **options_given(args, "log_functions", "log_format"))
        analysis = analyze(
            scripts,
            log,
            log_functions=resolved.log_functions,
            options=options,
            prefix_format=resolved.log_format,
        )
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    extra = [*warnings, *log_warnings]
    if args.json:
        json.dump(trace_report(analysis, extra), sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    try:
        variant = resolve_variant(args.variant)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    sys.stdout.write(format_trace(analysis, variant, extra))
    return 0


def _loc(loc: Loc) -> dict[str, Any]:
    return {"path": loc.path, "line": loc.line}


def _sid_locs(analysis: Analysis, sids: frozenset[int] | tuple[int, ...]) -> list[dict[str, Any]]:
    stmts = analysis.program.statements
    return [{"path": stmts[s].path, "line": stmts[s].start_line} for s in sorted(sids)]


def trace_report(analysis: Analysis, extra_warnings: list[str] | None = None) -> dict[str, Any]:
    """The JSON of `tcfl trace --json` (keys may be added, never renamed)."""
    stmts = analysis.program.statements
    messages = {m.index: m for m in analysis.log.messages}
    matched_by: dict[int, list[dict[str, Any]]] = {}
    for index, sids in analysis.match.matches:
        for s in sids:
            msg = messages.get(index)
            if msg is not None and len(matched_by.setdefault(s, [])) < 5:
                matched_by[s].append({"log_line": msg.line, "text": msg.text[:300], "unique": len(sids) == 1})
    variants: dict[str, Any] = {}
    for name in VARIANTS:
        trace = analysis.traces[name]
        variants[name] = {
            "kept": [_loc(x) for x in sorted(trace.kept)],
            "kept_lines": len(trace.kept),
            "pruning_rate": round(trace.pruning_rate, 6),
        }
    lines: list[dict[str, Any]] = []
    for sf in analysis.program.files:
        for ln in sorted(sf.code_lines):
            loc = Loc(sf.path, ln)
            row: dict[str, Any] = {"path": sf.path, "line": ln, "code": sf.lines[ln - 1]}
            for name in ("T1_dbt_exe", "T2", "tplus"):
                state, rule, why = line_state(analysis, name, loc)
                row[name] = {
                    "state": state.value,
                    "kept": loc in analysis.traces[name].kept,
                    "rule": rule,
                    "why": why,
                }
            lines.append(row)
    return {
        "files": [
            {"path": f.path, "lines": len(f.lines), "code_lines": len(f.code_lines)}
            for f in analysis.program.files
        ],
        "functions": [
            {
                "id": f.fid,
                "path": f.path,
                "start_line": f.start_line,
                "end_line": f.end_line,
                "hook": f.is_hook,
            }
            for f in analysis.program.functions
            if f.kind == "function"
        ],
        "log_format": analysis.log.format,
        "static_log_statements": [
            {
                "path": s.path,
                "line": s.line,
                "callee": s.callee,
                "parts": list(s.parts),
                "state": _sid_state(analysis, s.sid),
                "matched": matched_by.get(s.sid or -1, []),
            }
            for s in analysis.log_statements
            if s.is_static
        ],
        "non_static_log_statements": [
            {"path": s.path, "line": s.line, "callee": s.callee}
            for s in analysis.log_statements
            if not s.is_static
        ],
        "error_statements": _sid_locs(analysis, analysis.error_statements),
        "error_frames": [
            {"path": f.path, "line": f.line, "function": f.function, "traceback": f.traceback}
            for f in analysis.error_frames
        ],
        "error_message": analysis.log.error_message,
        "L_exe": _sid_locs(analysis, analysis.match.exe),
        "L_nexe": _sid_locs(analysis, analysis.match.nexe),
        "multi_matched": _sid_locs(analysis, analysis.match.multi),
        "blocks": [
            {
                "id": f"BLOCK {b.bid}",
                "path": b.path,
                "function": b.function,
                "start_line": b.start_line,
                "end_line": b.end_line,
            }
            for b in analysis.blocks
        ],
        "variants": variants,
        "aliases": dict(TRACE_ALIASES),
        "lines": lines,
        "statements": len(stmts),
        "warnings": [*analysis.warnings, *(extra_warnings or [])],
    }


def _sid_state(analysis: Analysis, sid: int | None) -> str:
    if sid in analysis.match.exe:
        return State.EXE.value
    if sid in analysis.match.nexe:
        return State.NEXE.value
    return State.DBT.value


_MARK = {True: "+", False: " "}
_WORD = {State.EXE: "executed", State.NEXE: "not executed", State.DBT: "doubtful"}


def line_state(analysis: Analysis, variant: str, loc: Loc) -> tuple[State, str, str]:
    """A line's state in one variant, its rule and why: executed / not executed only on evidence.

    A line the estimate kept or pruned without a recorded reason, or with the "no-evidence" rule, is
    doubtful, and says why; an unknown state (several statements matched one message) is doubtful too.
    """
    trace = analysis.traces[variant]
    ev = trace.evidence.get(loc)
    kept = loc in trace.kept
    if ev is None:
        verb = "kept" if kept else "pruned"
        return State.DBT, "no-evidence", f"{verb} by {variant} without direct evidence"
    # "no-evidence" records say why a line was kept or dropped wholesale, which proves nothing
    state = ev.state if ev.state in _WORD and ev.rule != "no-evidence" else State.DBT
    return state, ev.rule, ev.detail


def format_trace(analysis: Analysis, variant: str, extra_warnings: list[str]) -> str:
    """A terminal report: the variants' sizes, then the code with each line's state and why."""
    out: list[str] = []
    out.append("Trace variants (kept lines / pruning rate):")
    for name in VARIANTS:
        t = analysis.traces[name]
        alias = next((a for a, v in TRACE_ALIASES.items() if v == name), "")
        label = f"{name} ({alias})" if alias else name
        out.append(f"  {label:<28} {len(t.kept):>6} / {t.total:<6} {t.pruning_rate:6.1%}")
    out.append("")
    out.append(f"Error message: {printable(analysis.log.error_message) or '(none found)'}")
    out.append(f"Log format: {analysis.log.format}; messages: {len(analysis.log.messages)}")
    out.append("")
    trace = analysis.traces[variant]
    out.append(f"Per line, variant {variant}: + kept, state (executed / not executed / doubtful), rule: why")
    counts = dict.fromkeys(_WORD.values(), 0)
    for sf in analysis.program.files:
        out.append(f"== {sf.path}")
        width = len(str(len(sf.lines)))
        for ln in sorted(sf.code_lines):
            loc = Loc(sf.path, ln)
            state, rule, detail = line_state(analysis, variant, loc)
            counts[_WORD[state]] += 1
            why = f"{rule}: {printable(detail)}" if detail else rule
            code = sf.lines[ln - 1]
            if len(code) > 70:
                code = code[:67] + "..."
            out.append(f"{_MARK[loc in trace.kept]}{ln:>{width}} {_WORD[state]:<12} {code:<70}  {why}")
    out.append("")
    out.append("Lines: " + ", ".join(f"{n} {word}" for word, n in counts.items()))
    warnings = [*analysis.warnings, *extra_warnings]
    if warnings:
        out.append("")
        out.append("Warnings:")
        out.extend(f"  - {w}" for w in warnings)
    return "\n".join(out) + "\n"
