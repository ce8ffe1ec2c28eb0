"""Post-processing of a model's ranking (paper VI-E3): range check, duplicates, line mismatches.

Line-level answers carry the line's content next to its ID. When the content does not match the
line with that ID, the answer is moved to the kept line closest in content and position:

    cost(candidate) = (1 - Levenshtein.ratio(answer, candidate)) + LINE_WEIGHT * |candidate ID - answer ID|

(the ratio is the better of the whole line and the line without its trailing comment),

Content dominates (a perfect content match 40 lines away still beats a half-similar line next
door, 0.4 vs 0.5) while the position term decides between equally similar lines (repeated
statements), favouring the one nearest the ID the model gave, as the paper observed mismatches
to be off by about one line. A candidate must reach ``MIN_RATIO`` similarity; otherwise an
in-range ID is kept as answered and an out-of-range one is dropped.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from app.analysis.model import Loc
from app.analysis.render import Element, RenderedCode, element_for_line
from app.localize.prompts import RawAnswer

LINE_WEIGHT = 0.01
MIN_RATIO = 0.6


@dataclass(frozen=True)
class PostprocessCounts:
    invalid: int = 0  # IDs naming no rendered element, dropped
    duplicates: int = 0  # repeats of an element already ranked, dropped
    mismatches: int = 0  # line answers whose content does not match their ID's line
    repaired: int = 0  # mismatches moved to a better-matching line

    def to_dict(self) -> dict[str, int]:
        return {
            "invalid": self.invalid,
            "duplicates": self.duplicates,
            "mismatches": self.mismatches,
            "repaired": self.repaired,
        }


@dataclass(frozen=True)
class Repaired:
    elements: tuple[Element, ...]
    counts: PostprocessCounts


def normalize_code(text: str) -> str:
    """Whitespace-insensitive form used to compare a line with what the model wrote for it."""
    return re.sub(r"\s+", " ", text).strip()


def repair(answers: Sequence[RawAnswer], rendered: RenderedCode) -> Repaired:
    """Validate ``answers`` against ``rendered``: keep valid, distinct elements in answer order."""
    by_id = {element.id: element for element in rendered.elements}
    invalid = duplicates = mismatches = repaired = 0
    ranked: list[Element] = []
    seen: set[str] = set()
    for answer in answers:
        element = by_id.get(answer.id) or _loose_match(answer.id, rendered)
        content = normalize_code(answer.content or "") if rendered.level == "line" else ""
        if content and (element is None or not _same_line(content, element.code)):
            mismatches += 1
            closest = closest_line(answer, rendered)
            if closest is not None and closest is not element:
                repaired += 1
                element = closest
        if element is None:
            invalid += 1
            continue
        if element.id in seen:
            duplicates += 1
            continue
        seen.add(element.id)
        ranked.append(element)
    return Repaired(tuple(ranked), PostprocessCounts(invalid, duplicates, mismatches, repaired))


def _loose_match(answer_id: str, rendered: RenderedCode) -> Element | None:
    """A function answered by its simple name, or an ID in other case, when that is unambiguous."""
    wanted = answer_id.strip().lower()
    found = [e for e in rendered.elements if e.id.lower() == wanted]
    if not found and rendered.level == "function":
        found = [e for e in rendered.elements if e.id.rsplit(".", 1)[-1].lower() == wanted.rsplit(".", 1)[-1]]
    return found[0] if len(found) == 1 else None


def closest_line(answer: RawAnswer, rendered: RenderedCode) -> Element | None:
    """The kept line minimizing the documented content-and-position cost, if similar enough."""
    import Levenshtein  # only model answers need repair; a heuristic triage skips the import

    wanted = normalize_code(answer.content or "")
    try:
        answered_id = int(answer.id)
    except ValueError:
        answered_id = None
    best: tuple[float, int] | None = None
    best_element: Element | None = None
    for index, element in enumerate(rendered.elements):
        code = normalize_code(element.code)
        ratio = max(Levenshtein.ratio(wanted, code), Levenshtein.ratio(wanted, _without_comment(code)))
        if ratio < MIN_RATIO:
            continue
        distance = 0 if answered_id is None else abs(int(element.id) - answered_id)
        key = ((1.0 - ratio) + LINE_WEIGHT * distance, index)
        if best is None or key < best:
            best, best_element = key, element
    return best_element


def _same_line(content: str, code: str) -> bool:
    normalized = normalize_code(code)
    return content in (normalized, _without_comment(normalized))


def _without_comment(code: str) -> str:
    """The line without a trailing ``# comment`` (models often leave comments out)."""
    return re.sub(r"\s*#[^'\"]*$", "", code)


def lines_to_blocks(lines: Sequence[Element], blocks: RenderedCode) -> tuple[Element, ...]:
    """Line-to-block mapping (paper VI-D): each ranked line's block, first occurrence kept."""
    mapped: list[Element] = []
    seen: set[str] = set()
    for line in lines:
        block = element_for_line(blocks, Loc(line.path, line.lines[0]))
        if block is not None and block.id not in seen:
            seen.add(block.id)
            mapped.append(block)
    return tuple(mapped)
