"""Turn a line tracer's output into a trace in the analysis' units (docs/design.md §4).

A tracer reports the lines where execution stepped; the estimated traces count statements as
all their lines, put a ``def``/decorator header in the trace exactly when some body line is,
a ``class`` header when any line of the class is, clause lines (``else:``, ``except``,
``finally:``) when their clause ran, and attach comment lines to the statement below them.
Statements that compile to no code (docstrings, ``global``) never show up in a tracer; they
count as executed when a sibling statement did. Comparing raw tracer lines with an estimate
would penalise the estimate for these conventions, not for its mistakes.
"""

from __future__ import annotations

import ast
from collections.abc import Collection, Sequence


def normalize_trace(source: str, executed: Collection[int]) -> frozenset[int]:
    """Executed lines as a tracer saw them -> the same execution in trace units."""
    tree = ast.parse(source)
    text = source.splitlines()
    raw = set(executed)
    kept: set[int] = set()

    def code(start: int, end: int) -> set[int]:
        return {n for n in range(start, end + 1) if 0 < n <= len(text) and text[n - 1].strip()}

    def ran(start: int, end: int) -> bool:
        return any(n in raw for n in range(start, end + 1))

    def clause_line(before: int, keyword: str) -> int | None:
        """The ``else:``/``finally:`` line found scanning up from the clause body's first line."""
        for n in range(before - 1, 0, -1):
            stripped = text[n - 1].strip()
            if stripped.startswith(keyword) and stripped.rstrip().endswith(":"):
                return n
            if stripped and not stripped.startswith("#"):
                return None
        return None

    def body(stmts: Sequence[ast.stmt]) -> bool:
        results = [stmt_(s) for s in stmts]
        any_ran = any(r for r in results if r is not None)
        for s, r in zip(stmts, results, strict=True):
            if r is None and any_ran:  # compiled to nothing: ran if its siblings did
                kept.update(code(s.lineno, s.end_lineno or s.lineno))
        return any_ran

    def orelse(stmts: Sequence[ast.stmt], keyword: str) -> bool:
        if not stmts:
            return False
        if keyword == "else" and len(stmts) == 1 and isinstance(stmts[0], ast.If):
            line = stmts[0].lineno
            if text[line - 1].lstrip().startswith("elif"):
                return bool(stmt_(stmts[0]))
        did = body(stmts)
        line = clause_line(stmts[0].lineno, keyword)
        if did and line is not None:
            kept.add(line)
        return did

    def header_end(start: int, body_start: int) -> int:
        """Last line of a compound statement's header: up to its body, less trailing comments."""
        end = body_start - 1
        while end > start and (not text[end - 1].strip() or text[end - 1].strip().startswith("#")):
            end -= 1
        return max(end, start)

    def header(node: ast.stmt, end: int, inner: bool) -> bool:
        did = inner or ran(node.lineno, end)
        if did:
            kept.update(code(node.lineno, end))
        return did

    def stmt_(node: ast.stmt) -> bool | None:
        end = node.end_lineno or node.lineno
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            head_end = header_end(node.lineno, node.body[0].lineno)
            inner = body(node.body)
            if isinstance(node, ast.ClassDef):
                inner = inner or any(n in kept for n in range(node.lineno, end + 1))
            if inner:
                kept.update(code(first, head_end))
            return ran(first, head_end) or inner
        if isinstance(node, ast.If | ast.While):
            inner = body(node.body)
            did = header(node, node.test.end_lineno or node.lineno, inner)
            return orelse(node.orelse, "else") or did
        if isinstance(node, ast.For | ast.AsyncFor):
            inner = body(node.body)
            did = header(node, node.iter.end_lineno or node.lineno, inner)
            return orelse(node.orelse, "else") or did
        if isinstance(node, ast.With | ast.AsyncWith):
            inner = body(node.body)
            return header(node, header_end(node.lineno, node.body[0].lineno), inner)
        if isinstance(node, ast.Try | ast.TryStar):
            inner = body(node.body)
            did = header(node, node.lineno, inner)
            for handler in node.handlers:
                hin = body(handler.body)
                if hin or ran(handler.lineno, handler.lineno):
                    kept.update(code(handler.lineno, header_end(handler.lineno, handler.body[0].lineno)))
                    did = True
            did = orelse(node.orelse, "else") or did
            return orelse(node.finalbody, "finally") or did
        if isinstance(node, ast.Match):
            did = ran(node.lineno, node.subject.end_lineno or node.lineno)
            for case in node.cases:
                cin = body(case.body)
                pattern_end = case.pattern.end_lineno or case.pattern.lineno
                if cin or ran(case.pattern.lineno, pattern_end):
                    kept.update(code(case.pattern.lineno, pattern_end))
                    did = True
            if did:
                kept.update(code(node.lineno, node.subject.end_lineno or node.lineno))
            return did
        if isinstance(node, ast.Global | ast.Nonlocal) or (
            isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        ):
            return None
        did = ran(node.lineno, end)
        if did:
            kept.update(code(node.lineno, end))
        return did

    body(tree.body)
    for n in range(len(text), 0, -1):  # comments go with the statement below them
        stripped = text[n - 1].strip()
        if stripped.startswith("#") and n not in kept and n + 1 in kept:
            kept.add(n)
    return frozenset(kept)
