"""No traceback frame in the scripts: infer where the failure was raised (pseudo error statements).

In order of trust: pytest's ``>`` source lines; frames whose printed source text is a statement
of the scripts (line numbers stale); the script's own check whose literal the error quotes;
the assert method implied by the message's shape (``X != Y`` -> assertEqual...); the script's
call sites of the functions named by frames in library code. With none of these and no other
evidence, ``structure_scores`` orders code by what usually fails (checks, calls in test bodies),
never by position in the file.
"""

from __future__ import annotations

from app.analysis.model import Loc, StmtKind
from app.localize.channels import Context, Scores, Signal, put
from app.localize.channels.dataflow import is_check

MAX_SCAN = 5000  # log messages scanned for pytest source lines, newest first
LIBRARY_CALL = 0.6
SHAPE_CALL = 0.7
COMPARISONS = ("not in", "is not", "==", "!=", "<=", ">=", "<", ">", "in", "is")
# (a phrase of unittest's failure message, the assert methods that print it)
ASSERT_SHAPES: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        " != ",
        (
            "assertEqual",
            "assertEquals",
            "assertListEqual",
            "assertDictEqual",
            "assertCountEqual",
            "assertSequenceEqual",
            "assertTupleEqual",
            "assertMultiLineEqual",
            "assert_equal",
        ),
    ),
    (" not found in ", ("assertIn",)),
    (" unexpectedly found in ", ("assertNotIn",)),
    ("False is not true", ("assertTrue", "assert_")),
    ("True is not false", ("assertFalse",)),
    ("unexpectedly None", ("assertIsNotNone",)),
    (" is not None", ("assertIsNone",)),
    (" == ", ("assertNotEqual",)),
    (" not greater than ", ("assertGreater",)),
    (" not less than ", ("assertLess",)),
    (" not greater than or equal to ", ("assertGreaterEqual",)),
    (" not less than or equal to ", ("assertLessEqual",)),
    (" is not an instance of ", ("assertIsInstance",)),
    (" not raised", ("assertRaises", "assertRaisesRegex")),
)


def _first_lines(ctx: Context) -> dict[str, list[int]]:
    index: dict[str, list[int]] = {}
    sources = {f.path: f for f in ctx.analysis.program.files}
    for stmt in ctx.statements:
        text = sources[stmt.path].lines[stmt.start_line - 1].strip() if stmt.start_line else ""
        if text:
            index.setdefault(text, []).append(stmt.sid)
    return index


def pseudo_scores(ctx: Context, message: Scores) -> Scores:
    scores: Scores = {}
    analysis = ctx.analysis
    by_text = _first_lines(ctx)
    for msg in analysis.log.messages[-MAX_SCAN:]:
        text = msg.text.lstrip()
        if text.startswith(">") and len(text) > 2:
            for sid in by_text.get(text[1:].strip(), ()):
                put(
                    scores,
                    sid,
                    Signal(1.0, "pytest shows this source line failing", msg.text.strip(), msg.line),
                )
    mapped = {(f.path, f.line) for f in analysis.error_frames}
    last = max((f.traceback for f in analysis.log.frames), default=0)
    library = [f for f in analysis.log.frames if (f.path, f.line) not in mapped and f.traceback == last]
    basenames = {f.path.rsplit("/", 1)[-1]: f.path for f in analysis.program.files}
    for depth, frame in enumerate(library):
        source = f'File "{frame.path}", line {frame.line}, in {frame.function}'
        script = basenames.get(frame.path.replace("\\", "/").rsplit("/", 1)[-1])
        sid = ctx.sid_at(script, frame.line) if script else None
        if sid is not None and ctx.functions[ctx.statements[sid].function].name == frame.function:
            detail = "a frame names this line of the script (under another directory)"
            put(
                scores, sid, Signal(1.0 if depth == len(library) - 1 else 0.8, detail, source, frame.log_line)
            )
        if frame.code and frame.code.strip() in by_text:
            sids = by_text[frame.code.strip()]
            named = [
                s for s in sids if ctx.functions[ctx.statements[s].function].name == frame.function
            ] or sids
            for sid in named:
                put(
                    scores,
                    sid,
                    Signal(0.9 / len(named), "a frame prints this statement's text", source, frame.log_line),
                )
        for sid in ctx.facts.call_sites.get(frame.function or "", ()):
            value = LIBRARY_CALL * 0.9**depth
            put(
                scores,
                sid,
                Signal(value, f"calls {frame.function}(), a frame of the traceback", source, frame.log_line),
            )
    for sid, signal in message.items():
        if is_check(ctx, sid):
            put(
                scores,
                sid,
                Signal(signal.value, "the script's check whose text the error quotes", signal.source),
            )
    head = ctx.message[:2000]
    _rewritten_assert(ctx, head, scores)
    methods = {m for phrase, names in ASSERT_SHAPES if phrase in head for m in names}
    if methods:
        sites = [sid for name in sorted(methods) for sid in ctx.facts.call_sites.get(name, ())]
        for sid in sites:
            put(
                scores,
                sid,
                Signal(
                    SHAPE_CALL / max(1, len(sites)) ** 0.5,
                    "an assert method that prints this message's shape",
                ),
            )
    return scores


def _rewritten_assert(ctx: Context, head: str, scores: Scores) -> None:
    """pytest's rewritten assertion (``assert 3 == 4``): the script's asserts with that comparison."""
    first = head.strip().splitlines()[0] if head.strip() else ""
    first = first.removeprefix("AssertionError:").strip()
    if not first.startswith("assert "):
        return
    operator = next((op for op in COMPARISONS if f" {op} " in first), None)
    sites = [
        stmt.sid
        for stmt in ctx.statements
        if stmt.kind == StmtKind.ASSERT
        and ctx.is_kept(stmt.sid)
        and (operator is None or f" {operator} " in ctx.first_line(stmt.sid))
    ]
    for sid in sites:
        put(
            scores,
            sid,
            Signal(1.0 / len(sites) ** 0.5, "an assert of the shape pytest reports", first[:200]),
        )


def structure_scores(ctx: Context) -> Scores:
    """No evidence at all: checks and calls of test bodies first; hooks and helpers last."""
    scores: Scores = {}
    statements = ctx.statements
    for sid, stmt in enumerate(statements):
        if Loc(stmt.path, stmt.start_line) not in ctx.kept:
            continue
        function = ctx.functions[stmt.function]
        entry = (
            function.kind != "module" and not function.is_hook and not ctx.facts.call_sites.get(function.name)
        )
        base = 0.5 if entry else 0.2 if function.kind != "module" else 0.05
        if is_check(ctx, sid):
            base *= 2.0
        elif ctx.facts.calls.get(sid):
            base *= 1.4
        put(scores, sid, Signal(min(1.0, base), "no evidence: a check or call in a test body (a guess)"))
    return scores
