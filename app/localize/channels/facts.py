"""Static facts the ranking channels share: def-use per statement, calls, literals, smells.

One iterative walk over the tree-sitter syntax tree of each script (scripts can nest hundreds
of levels deep, so no recursion), folded per statement. Everything is keyed by statement id.
A file's walk depends on the file alone: it is kept by path and lines (``_WALKS``), so a file
that comes back in another set of scripts (a CI job's test module with other helpers, the same
suite job after job) is walked once.
"""

from __future__ import annotations

import ast
import re
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from tree_sitter import Language, Node, Tree

from app.analysis.model import Program
from app.analysis.source import parse_tree

MIN_LITERAL = 8  # shortest one-word string-literal piece worth looking for in a message
MAX_LITERAL_TEXT = 200  # longer literals are data, not values a log would echo
IGNORED_NAMES = frozenset({"self", "cls", "True", "False", "None"})
MUTATORS = frozenset(
    {"append", "extend", "insert", "remove", "pop", "update", "setdefault", "add", "discard", "clear", "sort"}
)
LITERAL_TYPES = frozenset(
    {
        "string",
        "concatenated_string",
        "integer",
        "float",
        "true",
        "false",
        "none",
        "list",
        "dictionary",
        "tuple",
    }
)
REGEX_IN_LITERAL = re.compile(r"\w\|\w|\.\*|\\[ds]|^\^|\$$")  # alternation, wildcards, anchors
ORDERINGS = frozenset({"==", "!=", "<", ">", "<=", ">="})
NUMERIC_CALLS = frozenset({"int", "len", "float", "round", "abs", "sum"})
SIMPLE_LITERALS = {"none": "None", "true": "True", "false": "False"}
FORMAT_HOLE = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(?:\d+|\*)?(?:\.\d+)?[a-zA-Z%]|\{[^{}]*\}|\\[ntr]")


@dataclass(frozen=True)
class Call:
    callee: str  # simple name: ``f`` for ``f(x)`` and ``obj.f(x)``
    via_attribute: bool
    args: tuple[frozenset[str], ...]  # names read by each positional argument
    keywords: tuple[tuple[str, frozenset[str]], ...]
    receiver: str = ""  # ``obj`` of ``obj.f(x)`` when it is a plain name or ``self``


@dataclass(frozen=True)
class Template:
    """A formatted string of the code: its literal pieces and the names each hole reads."""

    pieces: tuple[str, ...]  # len(holes) + 1 pieces, possibly empty
    holes: tuple[frozenset[str], ...]


@dataclass
class LineFacts:
    defs: set[str] = field(default_factory=set)
    imports: set[str] = field(default_factory=set)
    uses: set[str] = field(default_factory=set)
    calls: list[Call] = field(default_factory=list)
    literals: list[str] = field(default_factory=list)
    binds: list[tuple[str, str]] = field(default_factory=list)  # (name, literal value) bound here
    templates: list[Template] = field(default_factory=list)
    smells: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Facts:
    """Def-use facts per statement, parameters per function, call sites per callee name."""

    defs: dict[int, frozenset[str]]
    imports: dict[int, frozenset[str]]
    uses: dict[int, frozenset[str]]
    calls: dict[int, tuple[Call, ...]]
    params: dict[str, tuple[str, ...]]  # fid -> parameter names in order
    call_sites: dict[str, tuple[int, ...]]  # callee simple name -> sids
    literals: dict[int, tuple[str, ...]]  # distinctive static pieces of string literals
    binds: dict[int, tuple[tuple[str, str], ...]] = field(default_factory=dict)
    templates: dict[int, tuple[Template, ...]] = field(default_factory=dict)
    smells: dict[int, tuple[str, ...]] = field(default_factory=dict)
    text: dict[int, str] = field(default_factory=dict)  # the statement's code, comments excluded


_WORD = re.compile(r"[A-Za-z]{2,}")
_THREE_LETTERS = re.compile(r"[A-Za-z]{3}")


def distinctive(piece: str) -> bool:
    """Several words, or one long non-identifier token: not a dict key such as 'status'."""
    # the cheap tests first, the patterns compiled once: every literal piece of a script comes here
    if " " in piece and len(_WORD.findall(piece)) >= 2:
        return len(piece) >= 6
    return len(piece) >= MIN_LITERAL and _THREE_LETTERS.search(piece) is not None and not piece.isidentifier()


def literal_value(node: Node) -> str | None:
    """The value of a literal node as the log would print it (``str()``), or None if not a literal."""
    kind = node.type
    if kind not in LITERAL_TYPES:
        return None
    if kind in SIMPLE_LITERALS:
        return SIMPLE_LITERALS[kind]
    text = node.text.decode("utf-8", "replace") if node.text else ""
    if kind == "integer" and text.isdigit():
        return str(int(text))
    if kind == "string" and len(text) >= 2 and text[0] in "'\"" and text[-1] == text[0] and "\\" not in text:
        inner = text[1:-1]
        if text[0] not in inner:
            return inner
    if len(text) > MAX_LITERAL_TEXT or any(c.type == "interpolation" for c in node.named_children):
        return None
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        return None
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value if isinstance(value, str) else repr(value)


def build_facts(program: Program, trees: Sequence[Tree] = ()) -> Facts:
    """Facts of every statement; ``trees`` are the analysis' own parse trees (one per file).

    Without them (a program built by hand) each file is parsed here, by the analysis' own parser.
    """
    by_path: dict[str, dict[int, LineFacts]] = {}
    params_at: dict[str, dict[tuple[int, str], tuple[str, ...]]] = {}
    folded_at: dict[str, dict[tuple[int, int], Folded]] = {}
    parsed = len(trees) == len(program.files)
    for index, source in enumerate(program.files):
        walk = _WALKS.get(source.path, source.lines)
        if walk is None:
            tree = trees[index] if parsed else parse_tree("\n".join(source.lines))
            walker = _Walker()
            walker.walk(tree.root_node, tree.language)
            walk = (walker.by_line, walker.params_at, {})
            _WALKS.put(source.path, source.lines, walk)
        by_path[source.path], params_at[source.path], folded_at[source.path] = walk
    params: dict[str, tuple[str, ...]] = {}
    for f in program.functions:
        if f.kind != "module":
            for line in f.header_lines:
                found = params_at[f.path].get((line, f.name))
                if found is not None:
                    params[f.fid] = found
    sources = {f.path: f for f in program.files}
    defs: dict[int, frozenset[str]] = {}
    imports: dict[int, frozenset[str]] = {}
    uses: dict[int, frozenset[str]] = {}
    calls: dict[int, tuple[Call, ...]] = {}
    call_sites: dict[str, list[int]] = {}
    literals: dict[int, tuple[str, ...]] = {}
    binds: dict[int, tuple[tuple[str, str], ...]] = {}
    templates: dict[int, tuple[Template, ...]] = {}
    smells: dict[int, tuple[str, ...]] = {}
    text: dict[int, str] = {}
    for stmt in program.statements:
        folded = folded_at[stmt.path]
        span = (stmt.start_line, stmt.end_line)
        found = folded.get(span)
        if found is None:  # a statement's facts depend on its file and lines alone: folded once per file
            found = folded[span] = _fold(by_path[stmt.path], sources[stmt.path].lines, *span)
        sid = stmt.sid
        (
            defs[sid],
            imports[sid],
            uses[sid],
            calls[sid],
            literals[sid],
            binds[sid],
            templates[sid],
            smells[sid],
            text[sid],
        ) = found
        for call in found[3]:
            call_sites.setdefault(call.callee, []).append(sid)
    sites = {k: tuple(v) for k, v in call_sites.items()}
    return Facts(defs, imports, uses, calls, params, sites, literals, binds, templates, smells, text)


# a statement's facts: defs, imports, uses, calls, literals, binds, templates, smells, text
Folded = tuple[
    frozenset[str],
    frozenset[str],
    frozenset[str],
    tuple[Call, ...],
    tuple[str, ...],
    tuple[tuple[str, str], ...],
    tuple[Template, ...],
    tuple[str, ...],
    str,
]
# a file's walk: facts by line, parameters by (line, function name), statements' facts by span
Walk = tuple[dict[int, LineFacts], dict[tuple[int, str], tuple[str, ...]], dict[tuple[int, int], Folded]]


def _fold(lines: dict[int, LineFacts], source: tuple[str, ...], start: int, end: int) -> Folded:
    """The facts of the statement spanning ``start``..``end``: its lines' facts together."""
    span = range(start, end + 1)
    code = [lines[n] for n in span if n in lines]
    return (
        frozenset(d for f in code for d in f.defs),
        frozenset(d for f in code for d in f.imports),
        frozenset(u for f in code for u in f.uses if u not in IGNORED_NAMES),
        tuple(c for f in code for c in f.calls),
        tuple(piece for f in code for piece in f.literals),
        tuple(b for f in code for b in f.binds),
        tuple(t for f in code for t in f.templates),
        tuple(s for f in code for s in f.smells),
        "\n".join(source[n - 1] for n in span if 0 < n <= len(source)),
    )


class _Walks:
    """Files' walks by path and lines, the least recently used evicted first. A walk is read-only
    once kept (every set of scripts that holds the file reads the same records)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[tuple[str, tuple[str, ...]], Walk] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, path: str, lines: tuple[str, ...]) -> Walk | None:
        with self._lock:
            found = self._items.get((path, lines))
            if found is not None:
                self._items.move_to_end((path, lines))
            return found

    def put(self, path: str, lines: tuple[str, ...], walk: Walk) -> None:
        with self._lock:
            self._items[(path, lines)] = walk
            while len(self._items) > self.size:
                self._items.popitem(last=False)


_WALKS = _Walks(8)  # a file comes back in the sets of scripts right after its first: few are kept


def _text(node: Node | None) -> str:
    return node.text.decode("utf-8", "replace") if node is not None and node.text is not None else ""


def _target_name(node: Node) -> str | None:
    """``x`` for ``x``, ``attr:x`` for ``obj.x``: the name a literal is bound to."""
    if node.type == "identifier":
        return _text(node)
    if node.type == "attribute":
        return "attr:" + _text(node.child_by_field_name("attribute"))
    return None


def _value_kind(node: Node) -> str | None:
    """``num`` or ``str`` where the expression's type is plain from its text, else None."""
    if node.type in ("integer", "float"):
        return "num"
    if node.type in ("string", "concatenated_string"):
        return "str"
    if node.type == "call":
        function = node.child_by_field_name("function")
        name = _text(function)
        if name in NUMERIC_CALLS or (
            function is not None and function.type == "attribute" and name.endswith(".count")
        ):
            return "num"
        if name == "str" or name.endswith((".strip", ".lower", ".upper", ".decode")):
            return "str"
    return None


def names_read(node: Node) -> frozenset[str]:
    """Names (``x``, ``attr:x``) one expression reads; iterative."""
    found: set[str] = set()
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type == "identifier":
            found.add(_text(current))
        elif current.type == "attribute":
            attr, obj = current.child_by_field_name("attribute"), current.child_by_field_name("object")
            if attr is not None:
                found.add("attr:" + _text(attr))
            if obj is not None:
                stack.append(obj)
        elif current.type == "keyword_argument":
            value = current.child_by_field_name("value")
            if value is not None:
                stack.append(value)
        else:
            stack.extend(current.named_children)
    return frozenset(found - IGNORED_NAMES)


_KIND_NAMES: dict[int, tuple[Language, tuple[str, ...]]] = {}  # id of a grammar -> it, kinds' names


def _kind_names(language: Language) -> tuple[str, ...]:
    """Each node kind's name, by kind id, once per grammar (kept with it: its id stays its own)."""
    found = _KIND_NAMES.get(id(language))
    if found is None:
        names = tuple(language.node_kind_for_id(i) or "" for i in range(language.node_kind_count))
        found = _KIND_NAMES[id(language)] = (language, names)
    return found[1]


class _Walker:
    """Classifies every name occurrence as a definition or a use, per source line (explicit stack)."""

    def __init__(self) -> None:
        self.by_line: dict[int, LineFacts] = {}
        # (line, name) of each function definition -> its parameter names
        self.params_at: dict[tuple[int, str], tuple[str, ...]] = {}
        self.stack: list[tuple[Node, str]] = []

    def facts(self, node: Node) -> LineFacts:
        line = node.start_point[0] + 1
        found = self.by_line.get(line)
        if found is None:
            found = self.by_line[line] = LineFacts()
        return found

    def walk(self, root: Node, language: Language) -> None:
        """Every node under ``root`` (of a tree of ``language``), its handler by its kind id (an
        int) read node after node, not its type's string made anew."""
        # bound methods in a local, not on the walker: kept there they would tie it (and all it
        # found) into a reference cycle that only the cyclic collector frees
        by_name = {
            name[1:]: getattr(self, name)
            for name in dir(type(self))
            if name.startswith("_") and name[1:2].islower()
        }
        handlers = [by_name.get(name) for name in _kind_names(language)]
        count = len(handlers)
        stack = self.stack = [(root, "use")]
        pop, extend = stack.pop, stack.extend
        while stack:
            current, role = pop()
            kind = current.kind_id
            handler = handlers[kind] if kind < count else None  # an ERROR node's id is past the grammar's
            if handler is not None:
                handler(current, role)
            else:
                children = current.named_children
                if children:
                    children.reverse()
                    extend([(child, role) for child in children])

    def push(self, node: Node | None, role: str) -> None:
        if node is not None:
            self.stack.append((node, role))

    def _identifier(self, node: Node, role: str) -> None:
        facts = self.facts(node)
        (facts.defs if role == "def" else facts.uses).add(_text(node))

    def _attribute(self, node: Node, role: str) -> None:
        attr = node.child_by_field_name("attribute")
        if attr is not None:
            name = "attr:" + _text(attr)
            (self.facts(attr).defs if role == "def" else self.facts(attr).uses).add(name)
        self.push(node.child_by_field_name("object"), "use")

    def _subscript(self, node: Node, role: str) -> None:
        value = node.child_by_field_name("value")
        if value is not None:
            self.push(value, role)
            if role == "def":
                self.push(value, "use")
        for child in node.children_by_field_name("subscript"):
            self.push(child, "use")

    def _assignment(self, node: Node, role: str) -> None:
        left, right, kind = (node.child_by_field_name(f) for f in ("left", "right", "type"))
        self.push(left, "def")
        self.push(right, "use")
        self.push(kind, "use")
        if left is not None and right is not None:
            name, value = _target_name(left), literal_value(right)
            if name is not None and value is not None:
                self.facts(node).binds.append((name, value))

    def _augmented_assignment(self, node: Node, role: str) -> None:
        left = node.child_by_field_name("left")
        self.push(left, "def")
        self.push(left, "use")
        self.push(node.child_by_field_name("right"), "use")

    def _for_statement(self, node: Node, role: str) -> None:
        left = node.child_by_field_name("left")
        for child in node.named_children:
            self.push(child, "def" if child == left else "use")

    _for_in_clause = _for_statement

    def _as_pattern_target(self, node: Node, role: str) -> None:
        for child in node.named_children:
            self.push(child, "def")

    def _as_pattern(self, node: Node, role: str) -> None:
        children = node.named_children
        for child in children:
            is_target = child.type in ("as_pattern_target", "identifier") and child != children[0]
            self.push(child, "def" if is_target else "use")

    def _string(self, node: Node, role: str) -> None:
        pieces: list[str] = [""]
        holes: list[frozenset[str]] = []
        for child in node.named_children:
            if child.type == "string_content":
                text = _text(child)
                pieces[-1] += text
                for piece in FORMAT_HOLE.split(text):
                    if distinctive(piece.strip()):
                        self.facts(node).literals.append(piece.strip())
            elif child.type == "interpolation":
                self.push(child, "use")
                expression = child.named_children[0] if child.named_children else None
                holes.append(names_read(expression) if expression is not None else frozenset())
                pieces.append("")
        if holes:
            self.facts(node).templates.append(Template(tuple(pieces), tuple(holes)))

    def _keyword_argument(self, node: Node, role: str) -> None:
        value = node.child_by_field_name("value")
        self.push(value, "use")
        if value is not None:
            literal = literal_value(value)
            if literal is not None:
                self.facts(node).binds.append((_text(node.child_by_field_name("name")), literal))

    def _pair(self, node: Node, role: str) -> None:
        key, value = node.child_by_field_name("key"), node.child_by_field_name("value")
        self.push(key, "use")
        self.push(value, "use")
        if key is not None and value is not None and key.type == "string":
            name, literal = literal_value(key), literal_value(value)
            if name is not None and literal is not None:
                self.facts(node).binds.append((name, literal))

    def _comparison_operator(self, node: Node, role: str) -> None:
        operators = [_text(c) for c in node.children if not c.is_named]
        operands = node.named_children
        for child in operands:
            self.push(child, "use")
        if any(op in ("is", "is not") for op in operators):
            for operand in operands:
                if operand.type in ("string", "integer", "float", "list", "dictionary", "tuple"):
                    shown = _text(operand)[:20]
                    self.facts(node).smells.append(f"`is` compares identity with the literal {shown}")
                    break
        if operators[:1] in (["in"], ["not"]) and operands and operands[0].type == "string":
            pattern = literal_value(operands[0]) or ""
            if REGEX_IN_LITERAL.search(pattern):
                self.facts(node).smells.append(
                    f"`in` tests the literal text {_text(operands[0])[:30]}, not a pattern or alternatives"
                )
        for operand in operands:
            if operand.type == "string" and literal_value(operand) in ("None", "True", "False"):
                self.facts(node).smells.append(f"compares with the string {_text(operand)}, not the constant")
                break
        if len(operands) == 2 and operators and operators[0] in ORDERINGS:
            kinds = {_value_kind(operand) for operand in operands}
            if kinds == {"str", "num"}:
                self.facts(node).smells.append("compares a number with a string: never equal, ordering fails")

    def _import_statement(self, node: Node, role: str) -> None:
        for child in node.named_children:
            self.import_name(child)

    def _import_from_statement(self, node: Node, role: str) -> None:
        module = node.child_by_field_name("module_name")
        for child in node.named_children:
            if child != module:
                self.import_name(child)

    def import_name(self, node: Node) -> None:
        if node.type == "aliased_import":
            alias = node.child_by_field_name("alias")
            target = alias if alias is not None else node
        else:
            target = node
        name = _text(target).split(".")[0].strip()
        if re.fullmatch(r"[A-Za-z_]\w*", name):
            facts = self.facts(node)
            facts.defs.add(name)
            facts.imports.add(name)

    def _function_definition(self, node: Node, role: str) -> None:
        name_node = node.child_by_field_name("name")
        parameters = node.child_by_field_name("parameters")
        if name_node is not None and parameters is not None:
            key = (name_node.start_point[0] + 1, _text(name_node))
            self.params_at[key] = tuple(self.parameter_names(parameters))
        if parameters is not None:
            for param in parameters.named_children:
                default = param.child_by_field_name("value")
                self.push(default, "use")
                name = param.child_by_field_name("name")
                if default is not None and name is not None:
                    literal = literal_value(default)
                    if literal is not None:
                        self.facts(param).binds.append((_text(name), literal))
        for field_name in ("return_type", "body"):
            self.push(node.child_by_field_name(field_name), "use")

    def parameter_names(self, parameters: Node) -> Iterable[str]:
        for param in parameters.named_children:
            target = param.child_by_field_name("name") if param.type != "identifier" else param
            if target is None:
                target = next((c for c in param.named_children if c.type == "identifier"), None)
            if target is not None:
                yield _text(target)

    def _class_definition(self, node: Node, role: str) -> None:
        for field_name in ("superclasses", "body"):
            self.push(node.child_by_field_name(field_name), "use")

    def _lambda(self, node: Node, role: str) -> None:
        self.push(node.child_by_field_name("body"), "use")

    def _expression_statement(self, node: Node, role: str) -> None:
        for child in node.named_children:
            self.push(child, role)
            if child.type != "call":
                continue
            function = child.child_by_field_name("function")
            if function is None or function.type != "attribute":
                continue
            obj, attr = function.child_by_field_name("object"), function.child_by_field_name("attribute")
            if obj is not None and attr is not None and _text(attr) in MUTATORS and obj.type == "identifier":
                self.facts(obj).defs.add(_text(obj))

    def _call(self, node: Node, role: str) -> None:
        function = node.child_by_field_name("function")
        arguments = node.child_by_field_name("arguments")
        callee, via_attribute, receiver = "", False, ""
        if function is not None:
            if function.type == "identifier":
                callee = _text(function)
            elif function.type == "attribute":
                attr, obj = function.child_by_field_name("attribute"), function.child_by_field_name("object")
                callee = _text(attr)
                via_attribute = True
                if obj is not None and obj.type == "identifier":
                    receiver = _text(obj)
                self.push(obj, "use")
            else:
                self.push(function, "use")
        args: list[frozenset[str]] = []
        keywords: list[tuple[str, frozenset[str]]] = []
        if arguments is not None:
            for arg in arguments.named_children:
                if arg.type == "keyword_argument":
                    name = arg.child_by_field_name("name")
                    if name is not None:
                        keywords.append((_text(name), names_read(arg)))
                elif arg.type != "comment":
                    args.append(names_read(arg))
                self.push(arg, "use")
            if callee == "get" and len(arguments.named_children) >= 2:
                key, default = arguments.named_children[0], arguments.named_children[1]
                if default.type == "keyword_argument":
                    default = default.child_by_field_name("value") or default
                name, literal = literal_value(key), literal_value(default)
                if name is not None and literal is not None:
                    self.facts(node).binds.append((name, literal))
        if callee:
            self.facts(node).calls.append(Call(callee, via_attribute, tuple(args), tuple(keywords), receiver))
