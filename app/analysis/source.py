"""Parse test scripts with tree-sitter into functions and their flattened statements.

Everything the estimators need is decided here once: which lines make up each statement
(multi-line statements, clause headers, attached comments), which function owns them, and
which functions each statement calls. Later steps never look at the syntax tree again.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import resources

import tree_sitter_python
from tree_sitter import Language, Node, Parser, Query, QueryCursor, Tree

from app.analysis.model import Function, Program, Script, SourceFile, Statement, StmtKind

MODULE = "module"

HOOK_NAMES = frozenset(
    {
        "setUp",
        "tearDown",
        "setUpClass",
        "tearDownClass",
        "setUpModule",
        "tearDownModule",
        "asyncSetUp",
        "asyncTearDown",
        "setup",
        "teardown",
        "setup_method",
        "teardown_method",
        "setup_class",
        "teardown_class",
        "setup_module",
        "teardown_module",
        "setup_function",
        "teardown_function",
        "pytest_configure",
        "pytest_generate_tests",
        "pytest_collection_modifyitems",
    }
)

_SIMPLE_KINDS = {
    "return_statement": StmtKind.RETURN,
    "raise_statement": StmtKind.RAISE,
    "break_statement": StmtKind.BREAK,
    "continue_statement": StmtKind.CONTINUE,
    "assert_statement": StmtKind.ASSERT,
}
_CLAUSE_KINDS = {
    "elif_clause": StmtKind.ELIF,
    "else_clause": StmtKind.ELSE,
    "except_clause": StmtKind.EXCEPT,
    "except_group_clause": StmtKind.EXCEPT,
    "finally_clause": StmtKind.FINALLY,
    "case_clause": StmtKind.CASE,
}
_COMPOUND_KINDS = {
    "if_statement": StmtKind.IF,
    "for_statement": StmtKind.FOR,
    "while_statement": StmtKind.WHILE,
    "try_statement": StmtKind.TRY,
    "with_statement": StmtKind.WITH,
    "match_statement": StmtKind.MATCH,
}


@cache
def language() -> Language:
    return Language(tree_sitter_python.language())


@cache
def _calls_query() -> Query:
    text = resources.files("app.analysis").joinpath("queries/source-calls.scm").read_text()
    return Query(language(), text)


Captures = dict[str, list[Node]]


def call_captures(tree: Tree) -> Captures:
    """The calls query's captures (``callee``, ``ref``): one walk of the tree serves the call sites
    here and the log statements (``find_log_statements(callees=...)``), each a large part of a parse.

    Each list in source order: tree-sitter hands captures back in an order that varies from call
    to call, and a statement's calls (and what reads them) would vary with it."""
    found = QueryCursor(_calls_query()).captures(tree.root_node)
    return {name: sorted(nodes, key=_span) for name, nodes in found.items()}


def _span(node: Node) -> tuple[int, int]:
    return node.start_byte, node.end_byte


def parse_tree(content: str) -> Tree:
    """Parse one file; tree-sitter recovers from syntax errors, so this never raises."""
    return Parser(language()).parse(content.encode("utf-8", "surrogatepass"))


# ---------------------------------------------------------------------------------------------
# builders: mutable while one file is walked, frozen into model records at the end


@dataclass
class _Stmt:
    sid: int
    kind: StmtKind
    function: int  # index into _FileWalk.functions
    start_row: int
    end_row: int
    own: tuple[int, int]  # byte range whose calls belong to this statement
    parent: int | None
    depth: int
    extra_rows: list[int] = field(default_factory=list)
    body: list[int] = field(default_factory=list)
    calls: list[str] = field(default_factory=list)


@dataclass
class _Func:
    name: str
    qualname: str
    kind: str
    start_row: int
    end_row: int
    header_rows: list[int]
    is_hook: bool
    is_async: bool
    parent: int | None
    statements: list[int] = field(default_factory=list)
    top_level: list[int] = field(default_factory=list)
    is_method: bool = False


# One step of the walk: ("stmt" | "clause", node, clause kind, function, parent sid, depth, scope).
_Step = tuple[str, Node, StmtKind | None, int, int | None, int, str]


@dataclass
class _FileWalk:
    path: str
    source: bytes
    first_sid: int
    statements: list[_Stmt] = field(default_factory=list)
    functions: list[_Func] = field(default_factory=list)
    # classes: start row, end row, header rows
    containers: list[tuple[int, int, list[int]]] = field(default_factory=list)
    class_scopes: set[str] = field(default_factory=set)  # qualified names of classes seen

    def add_stmt(
        self,
        kind: StmtKind,
        func: int,
        start: int,
        end: int,
        own: tuple[int, int],
        parent: int | None,
        depth: int,
    ) -> _Stmt:
        st = _Stmt(self.first_sid + len(self.statements), kind, func, start, end, own, parent, depth)
        self.statements.append(st)
        self.functions[func].statements.append(st.sid)
        if parent is None:
            self.functions[func].top_level.append(st.sid)
        else:
            self.statements[parent - self.first_sid].body.append(st.sid)
        return st

    # -- walking ------------------------------------------------------------------------------
    # An explicit stack instead of recursion, so nesting depth is bounded by the input limits and
    # never by Python's recursion limit. Each step returns the steps its children need, in source
    # order; pushing them reversed keeps statement ids in preorder, as a recursive walk gives them.

    def walk(self, root: Node) -> None:
        stack: list[_Step] = [("stmt", root, None, 0, None, 0, "")]
        while stack:
            step = stack.pop()
            if step[0] == "stmt":
                _, node, _kind, func, parent, depth, scope = step
                more = self.walk_statement(node, func, parent, depth, scope)
            else:
                _, node, kind, func, parent, depth, scope = step
                assert kind is not None
                more = self.walk_clause(node, kind, func, parent, depth, scope)
            stack.extend(reversed(more))

    @staticmethod
    def _body(nodes: Sequence[Node], func: int, parent: int | None, depth: int, scope: str) -> list[_Step]:
        return [("stmt", n, None, func, parent, depth, scope) for n in nodes]

    def walk_statement(
        self, node: Node, func: int, parent: int | None, depth: int, scope: str
    ) -> list[_Step]:
        t = node.type
        if not node.is_named or t == "comment":
            return []
        if t in ("function_definition", "decorated_definition"):
            return self.walk_function(node, func, scope)
        if t == "class_definition":
            return self.walk_class(node, func, parent, depth, scope)
        if t in _COMPOUND_KINDS:
            return self.walk_compound(node, _COMPOUND_KINDS[t], func, parent, depth, scope)
        if t in ("block", "module") or (t == "ERROR" and _has_statement_child(node)):
            return self._body(node.named_children, func, parent, depth, scope)
        kind = _SIMPLE_KINDS.get(t, StmtKind.SIMPLE)
        self.add_stmt(
            kind,
            func,
            node.start_point.row,
            node.end_point.row,
            (node.start_byte, node.end_byte),
            parent,
            depth,
        )
        return []

    def walk_compound(
        self, node: Node, kind: StmtKind, func: int, parent: int | None, depth: int, scope: str
    ) -> list[_Step]:
        header = self.add_header(node, kind, func, parent, depth)
        steps: list[_Step] = []
        for child in node.named_children:
            ct = child.type
            if ct == "block":
                if kind is StmtKind.MATCH:
                    for case in child.named_children:
                        if case.type == "case_clause":
                            steps.append(("clause", case, StmtKind.CASE, func, header.sid, depth + 1, scope))
                else:
                    steps.extend(self._body(child.named_children, func, header.sid, depth + 1, scope))
            elif ct in _CLAUSE_KINDS:
                # clauses are siblings of the header in the flattened sequence
                steps.append(("clause", child, _CLAUSE_KINDS[ct], func, parent, depth, scope))
        return steps

    def walk_clause(
        self, node: Node, kind: StmtKind, func: int, parent: int | None, depth: int, scope: str
    ) -> list[_Step]:
        header = self.add_header(node, kind, func, parent, depth)
        steps: list[_Step] = []
        for child in node.named_children:
            if child.type == "block":
                steps.extend(self._body(child.named_children, func, header.sid, depth + 1, scope))
        return steps

    def add_header(self, node: Node, kind: StmtKind, func: int, parent: int | None, depth: int) -> _Stmt:
        colon_end = node.end_byte
        colon_row = node.start_point.row
        for child in node.children:
            if child.type == ":":
                colon_end, colon_row = child.end_byte, child.end_point.row
                break
            if child.type == "block":
                break
        return self.add_stmt(
            kind,
            func,
            node.start_point.row,
            max(colon_row, node.start_point.row),
            (node.start_byte, colon_end),
            parent,
            depth,
        )

    def walk_function(self, node: Node, enclosing: int, scope: str) -> list[_Step]:
        decorators: list[Node] = []
        definition = node
        if node.type == "decorated_definition":
            decorators = [c for c in node.named_children if c.type == "decorator"]
            inner = node.child_by_field_name("definition")
            if inner is None:
                return []
            if inner.type == "class_definition":
                return self.walk_class(inner, enclosing, None, 0, scope, outer=node)
            definition = inner
        name_node = definition.child_by_field_name("name")
        name = _text(self.source, name_node) if name_node else "<anonymous>"
        body = definition.child_by_field_name("body")
        header_rows = list(range(node.start_point.row, _colon_row(definition) + 1))
        deco_text = " ".join(_text(self.source, d) for d in decorators)
        is_hook = name in HOOK_NAMES or "fixture" in deco_text
        is_async = any(c.type == "async" for c in definition.children)
        qual = f"{scope}.{name}" if scope else name
        self.functions.append(
            _Func(
                name,
                qual,
                "function",
                node.start_point.row,
                node.end_point.row,
                header_rows,
                is_hook,
                is_async,
                enclosing,
                is_method=scope in self.class_scopes,
            )
        )
        idx = len(self.functions) - 1
        if body is None:
            return []
        return self._body(body.named_children, idx, None, 0, qual)

    def walk_class(
        self, node: Node, func: int, parent: int | None, depth: int, scope: str, outer: Node | None = None
    ) -> list[_Step]:
        top = outer or node
        name_node = node.child_by_field_name("name")
        name = _text(self.source, name_node) if name_node else "<class>"
        body = node.child_by_field_name("body")
        self.containers.append(
            (top.start_point.row, top.end_point.row, list(range(top.start_point.row, _colon_row(node) + 1)))
        )
        if body is None:
            return []
        # class bodies run where the class statement runs: statements go to the enclosing function
        qual = f"{scope}.{name}" if scope else name
        self.class_scopes.add(qual)
        return self._body(body.named_children, func, parent, depth, qual)


def _colon_row(definition: Node) -> int:
    """Last row of a def/class header: comments after the colon belong to the body."""
    for child in definition.children:
        if child.type == ":":
            return child.end_point.row
        if child.type == "block":
            break
    return definition.start_point.row


def _has_statement_child(node: Node) -> bool:
    return any(c.type.endswith(("_statement", "_definition")) for c in node.named_children)


def _text(source: bytes, node: Node) -> str:
    return source[node.start_byte : node.end_byte].decode("utf-8", "replace")


# ---------------------------------------------------------------------------------------------


def _collect_calls(walk: _FileWalk, captures: Captures) -> None:
    """Give every statement the names it calls (or passes as callbacks) in its own byte range."""
    if not walk.statements:
        return
    owners = sorted(walk.statements, key=lambda s: s.own[0])
    starts = [s.own[0] for s in owners]
    for nodes in captures.values():
        for node in nodes:
            i = bisect.bisect_right(starts, node.start_byte) - 1
            # headers' own ranges never contain their bodies, simple statements never nest:
            # the closest start before the node is the only candidate
            while i >= 0 and not (owners[i].own[0] <= node.start_byte < owners[i].own[1]):
                i -= 1
                if i >= 0 and starts[i] < node.start_byte - 200_000:
                    i = -1
            if i >= 0:
                owners[i].calls.append(_call_name(walk.source, node))


def _call_name(source: bytes, node: Node) -> str:
    """`f` for a bare name, `obj.f` when the object is a plain name (`self.f`, `process.run`), else `.f`."""
    if node.type != "attribute":
        return _text(source, node)
    attr = node.child_by_field_name("attribute")
    obj = node.child_by_field_name("object")
    name = _text(source, attr) if attr is not None else ""
    if obj is not None and obj.type == "identifier":
        return f"{_text(source, obj)}.{name}"
    return f".{name}"


def _attach_loose_lines(walk: _FileWalk, code_rows: list[int]) -> None:
    """Comment (and stray) lines go with the statement or header that follows them."""
    covered: set[int] = set()
    items: list[tuple[int, int, str, int]] = []  # (start_row, order, kind, index)
    for i, st in enumerate(walk.statements):
        covered.update(range(st.start_row, st.end_row + 1))
        items.append((st.start_row, 2, "s", i))
    for i, fn in enumerate(walk.functions):
        if fn.kind == "function":
            covered.update(fn.header_rows)
            items.append((fn.header_rows[0], 0, "f", i))
    for i, (_s, _e, rows) in enumerate(walk.containers):
        covered.update(rows)
        items.append((rows[0], 1, "c", i))
    loose = [r for r in code_rows if r not in covered]
    if not loose or not items:
        return
    items.sort()
    item_starts = [it[0] for it in items]
    for row in loose:
        j = bisect.bisect_right(item_starts, row)
        _s, _o, kind, idx = items[j] if j < len(items) else items[-1]
        if kind == "s":
            walk.statements[idx].extra_rows.append(row)
        elif kind == "f":
            walk.functions[idx].header_rows.append(row)
        else:
            walk.containers[idx][2].append(row)


def normalize_newlines(content: str) -> str:
    return content.replace("\r\n", "\n").replace("\r", "\n")


def text_lines(content: str) -> list[str]:
    """A script's lines as the analysis numbers them (any newline, no empty line after the last)."""
    lines = normalize_newlines(content).split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


@dataclass(frozen=True, eq=False)
class FileParse:
    """One file's part of ``parse_program``, its statement ids counted from 0: the same in every
    set of scripts that holds the file, so ``app.analysis.parsed`` keeps it per file and a set
    only numbers its files' statements on. Read-only once built."""

    source: SourceFile
    warnings: tuple[str, ...]
    # per statement: kind, function (index into ``functions``), start and end line, its lines,
    # its calls, parent sid, body sids, depth
    statements: tuple[
        tuple[StmtKind, int, int, int, tuple[int, ...], tuple[str, ...], int | None, tuple[int, ...], int],
        ...,
    ]
    functions: tuple[_Func, ...]


def parse_file(script: Script, tree: Tree | None = None, captures: Captures | None = None) -> FileParse:
    """One script's statements, functions and lines (``tree``: its parse after ``normalize_newlines``,
    ``captures``: the tree's ``call_captures``, when the caller has them)."""
    content = normalize_newlines(script.content)
    file_lines = text_lines(content)
    tree = tree if tree is not None else parse_tree(content)
    walk = _FileWalk(script.path, content.encode("utf-8", "surrogatepass"), 0)
    walk.functions.append(
        _Func(MODULE, MODULE, "module", 0, max(len(file_lines) - 1, 0), [], False, False, None)
    )
    walk.walk(tree.root_node)
    code_rows = [i for i, line in enumerate(file_lines) if line.strip()]
    _attach_loose_lines(walk, code_rows)
    _collect_calls(walk, captures if captures is not None else call_captures(tree))
    code_set = frozenset(r + 1 for r in code_rows)
    warnings = []
    if tree.root_node.has_error:
        warnings.append(f"{script.path}: syntax errors; tree-sitter recovered, results may be less precise")
    if not code_rows:
        warnings.append(f"{script.path}: no code")
    statements = []
    for st in walk.statements:
        if st.extra_rows:
            rows = {*range(st.start_row, st.end_row + 1), *st.extra_rows}
            lines = tuple(sorted(r + 1 for r in rows if r + 1 in code_set))
        elif st.start_row == st.end_row:
            lines = (st.start_row + 1,) if st.start_row + 1 in code_set else ()
        else:
            lines = tuple(r for r in range(st.start_row + 1, st.end_row + 2) if r in code_set)
        calls = tuple(dict.fromkeys(st.calls)) if len(st.calls) > 1 else tuple(st.calls)
        statements.append(
            (
                st.kind,
                st.function,
                st.start_row + 1,
                st.end_row + 1,
                lines,
                calls,
                st.parent,
                tuple(st.body),
                st.depth,
            )
        )
    source = SourceFile(
        path=script.path,
        lines=tuple(file_lines),
        code_lines=code_set,
        container_headers=tuple(
            (s + 1, e + 1, tuple(sorted({r + 1 for r in rows} & code_set))) for s, e, rows in walk.containers
        ),
        has_errors=tree.root_node.has_error,
    )
    return FileParse(source, tuple(warnings), tuple(statements), tuple(walk.functions))


def parse_program(
    scripts: Sequence[Script],
    trees: Sequence[Tree] | None = None,
    captures: Sequence[Captures] | None = None,
    parts: Sequence[FileParse] | None = None,
) -> Program:
    """Parse every script of a case; element ids are unique across files.

    ``trees`` lets a caller that already parsed the scripts (after ``normalize_newlines``) reuse
    them, and ``captures`` their ``call_captures``; ``parts``: the scripts' ``parse_file``, kept.
    """
    if parts is None:
        parts = [
            parse_file(
                script,
                trees[n] if trees is not None else None,
                captures[n] if captures is not None else None,
            )
            for n, script in enumerate(scripts)
        ]
    files: list[SourceFile] = []
    statements: list[Statement] = []
    raw_functions: list[tuple[str, _Func, int, int]] = []  # (path, func, first function index, first sid)
    warnings: list[str] = []
    next_sid = 0
    for part in parts:
        files.append(part.source)
        warnings.extend(part.warnings)
        base = len(raw_functions)
        raw_functions.extend((part.source.path, fn, base, next_sid) for fn in part.functions)
        next_sid += len(part.statements)
    fids = _unique_fids([(path, fn.qualname, fn.start_row) for path, fn, _, _ in raw_functions])
    # statements are built once, knowing their function ids (frozen records cost to rebuild)
    base = first = 0
    for part in parts:
        path = part.source.path
        for kind, function, start, end, lines, calls, parent, body, depth in part.statements:
            statements.append(
                Statement(
                    len(statements),  # the file's statements numbered on from the files before it
                    path,
                    fids[base + function],
                    kind,
                    start,
                    end,
                    lines,
                    calls,
                    None if parent is None else parent + first,
                    tuple(b + first for b in body) if first else body,
                    depth,
                )
            )
        base += len(part.functions)
        first += len(part.statements)
    functions: list[Function] = []
    code_by_path = {f.path: f.code_lines for f in files}
    for i, (path, fn, base, first) in enumerate(raw_functions):
        parent_fid = fids[base + fn.parent] if fn.parent is not None and fn.kind == "function" else None
        functions.append(
            Function(
                fid=fids[i],
                name=fn.name,
                qualname=fn.qualname,
                path=path,
                kind=fn.kind,
                header_lines=tuple(sorted({r + 1 for r in fn.header_rows} & code_by_path[path])),
                start_line=fn.start_row + 1,
                end_line=fn.end_row + 1,
                statements=tuple(s + first for s in fn.statements) if first else tuple(fn.statements),
                top_level=tuple(s + first for s in fn.top_level) if first else tuple(fn.top_level),
                is_hook=fn.is_hook,
                is_async=fn.is_async,
                is_method=fn.is_method,
                parent=parent_fid,
            )
        )
    return Program(
        files=tuple(files), statements=tuple(statements), functions=tuple(functions), warnings=tuple(warnings)
    )


def _unique_fids(keys: list[tuple[str, str, int]]) -> list[str]:
    """Qualified names, disambiguated by line within a file and by path across files."""
    by_path_qual: dict[tuple[str, str], int] = {}
    for path, qual, _row in keys:
        by_path_qual[(path, qual)] = by_path_qual.get((path, qual), 0) + 1
    local = [qual if by_path_qual[(path, qual)] == 1 else f"{qual}@{row + 1}" for path, qual, row in keys]
    paths_per_local: dict[str, set[str]] = {}
    for (path, _q, _r), name in zip(keys, local, strict=True):
        paths_per_local.setdefault(name, set()).add(path)
    return [
        name if len(paths_per_local[name]) == 1 else f"{path}::{name}"
        for (path, _q, _r), name in zip(keys, local, strict=True)
    ]


LineIndex = dict[tuple[str, int], Statement]


def line_index(program: Program) -> LineIndex:
    """(path, line) -> innermost statement owning the line (clause headers own only their header)."""
    index: LineIndex = {}
    for st in program.statements:
        for line in range(st.start_line, st.end_line + 1):
            cur = index.get((st.path, line))
            if cur is None or st.depth >= cur.depth:
                index[(st.path, line)] = st
    return index


def statement_at(program: Program, path: str, line: int) -> Statement | None:
    """The innermost statement owning a line; build ``line_index`` once to look up many."""
    return line_index(program).get((path, line))
