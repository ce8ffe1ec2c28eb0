"""Input limits measured in what the analysis costs, checked before the analysis starts.

Bytes alone do not bound the work: a small script of deeply nested calls or a long ``elif`` chain
costs more than a much larger plain script. So a case is also measured in lines, syntax nesting, statements
and branches per function, each limit named in the error so an operator knows which setting to
raise. Pure: trees in, ``InputTooCostly`` or nothing out; one iterative pass per tree.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # settings import this module; keep it free of the parser at run time
    from tree_sitter import Tree

    from app.analysis.model import Script

_FUNCTION_TYPES = frozenset({"function_definition", "lambda"})
_BRANCH_TYPES = frozenset(
    {
        "if_statement",
        "elif_clause",
        "for_statement",
        "while_statement",
        "except_clause",
        "except_group_clause",
        "case_clause",
        "conditional_expression",
    }
)
_BLOCK_TYPES = frozenset({"block"})


@dataclass(frozen=True)
class CostLimits:
    """Each field is also a ``TCFL_`` setting of the same name."""

    max_script_lines: int = 200_000  # all submitted scripts together
    max_log_lines: int = 2_000_000
    max_nesting_depth: int = 100  # nested blocks (if/for/while/try/with/def/class bodies)
    max_syntax_depth: int = 400  # any syntax nesting: brackets, calls, operators, blocks
    max_statements_per_function: int = 50_000
    max_branches_per_function: int = 5_000  # if/elif/for/while/except/case and `x if c else y`


class InputTooCostly(ValueError):
    """The case exceeds a cost limit; the message names the limit, ``setting`` the field of it."""

    def __init__(self, message: str, setting: str = "") -> None:
        super().__init__(message)
        self.setting = setting

    def __reduce__(self) -> tuple[type[InputTooCostly], tuple[str, str]]:
        return type(self), (str(self), self.setting)  # crosses the analysis worker pool whole


def _exceeded(what: str, setting: str, limit: int) -> InputTooCostly:
    """The error for a passed limit: what went over it, then the setting an operator would raise."""
    return InputTooCostly(f"{what}; {setting}={limit}", setting)


def _function_too_big(where: str, counts: list[int], limits: CostLimits) -> InputTooCostly:
    """The error for a function over its statements limit, else over its branches limit."""
    if counts[0] > limits.max_statements_per_function:
        limit, noun, setting = limits.max_statements_per_function, "statements", "max_statements_per_function"
    else:
        limit, noun, setting = limits.max_branches_per_function, "branches", "max_branches_per_function"
    return _exceeded(f"{where}: a function with over {limit} {noun}", setting, limit)


def check_text(scripts: Sequence[Script], log: str, limits: CostLimits) -> None:
    """Line counts, cheap enough to check before a request is even stored."""
    lines = sum(s.content.count("\n") + 1 for s in scripts)
    if lines > limits.max_script_lines:
        raise _exceeded(f"the scripts have {lines} lines", "max_script_lines", limits.max_script_lines)
    log_lines = log.count("\n") + 1
    if log_lines > limits.max_log_lines:
        raise _exceeded(f"the log has {log_lines} lines", "max_log_lines", limits.max_log_lines)


# what each kind of node counts for, as bits: a block, a function, a statement, a branch
_BLOCK, _FUNCTION, _STATEMENT, _BRANCH = 1, 2, 4, 8
_KINDS: dict[int, tuple[int, ...]] = {}  # id of a grammar -> bits by node kind id


def _kind_bits(tree: Tree) -> tuple[int, ...]:
    """Each node kind's bits, by kind id, once per grammar: the pass reads a node's kind id (an
    int) instead of making its type's string."""
    language = tree.language
    found = _KINDS.get(id(language))
    if found is None:
        bits = []
        for kind_id in range(language.node_kind_count):
            kind = language.node_kind_for_id(kind_id) or ""
            bits.append(
                (_BLOCK if kind in _BLOCK_TYPES else 0)
                | (_FUNCTION if kind in _FUNCTION_TYPES else 0)
                | (_STATEMENT if kind.endswith(("_statement", "_clause")) else 0)
                | (_BRANCH if kind in _BRANCH_TYPES else 0)
            )
        found = _KINDS[id(language)] = tuple(bits)
    return found


def check_tree(path: str, tree: Tree, limits: CostLimits) -> None:
    """Nesting, statements and branches of one parsed script; one iterative pass over the tree."""
    kinds = _kind_bits(tree)
    max_depth, max_blocks = limits.max_syntax_depth, limits.max_nesting_depth
    max_statements, max_branches = limits.max_statements_per_function, limits.max_branches_per_function
    cursor = tree.walk()
    opened: list[int] = []  # the bits of each open node
    blocks = 0
    functions: list[list[int]] = [[0, 0]]  # [statements, branches] of each enclosing function
    while True:
        node = cursor.node
        assert node is not None
        kind_id = node.kind_id
        bits = kinds[kind_id] if kind_id < len(kinds) else 0  # an ERROR node's id is past the grammar's
        depth = len(opened) + 1
        if depth > max_depth:
            raise _exceeded(
                f"{path}:{node.start_point.row + 1}: syntax nested over {max_depth} deep",
                "max_syntax_depth",
                max_depth,
            )
        if bits:
            if bits & _BLOCK:
                blocks += 1
                if blocks > max_blocks:
                    raise _exceeded(
                        f"{path}:{node.start_point.row + 1}: blocks nested over {max_blocks} deep",
                        "max_nesting_depth",
                        max_blocks,
                    )
            counts = functions[-1]
            if bits & _STATEMENT:
                counts[0] += 1
            if bits & _BRANCH:
                counts[1] += 1
            # a count can only pass its limit at the node that raised it, as each raise stops the pass
            if counts[0] > max_statements or counts[1] > max_branches:
                raise _function_too_big(f"{path}:{node.start_point.row + 1}", counts, limits)
            if bits & _FUNCTION:
                functions.append([0, 0])
        opened.append(bits)
        if cursor.goto_first_child():
            continue
        while True:  # close this node, then move on to its next sibling or close its parent
            closed = opened.pop()
            if closed & _BLOCK:
                blocks -= 1
            if closed & _FUNCTION:
                functions.pop()
            if cursor.goto_next_sibling():
                break
            if not cursor.goto_parent():
                return
