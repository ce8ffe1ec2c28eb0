"""Hit@k from marked lines and stored rankings."""

from __future__ import annotations

from typing import Any

from app.analysis.model import Loc
from app.service.dashboard.accuracy import hit_at_k

PATH = "test_example.py"


def item(rank: int, start: int, end: int, path: str = PATH) -> dict[str, Any]:
    return {"rank": rank, "id": f"BLOCK {rank}", "path": path, "start_line": start, "end_line": end}


def test_hit_at_k_counts_the_best_ranked_element_holding_a_marked_line() -> None:
    ranking = [item(1, 16, 17), item(2, 13, 13), item(3, 1, 3)]
    accuracy = hit_at_k([([Loc(PATH, 3)], ranking)])
    assert accuracy.cases == 1 and accuracy.hits == {1: 0, 3: 1, 5: 1}
    assert accuracy.rate(1) == 0.0 and accuracy.rate(3) == 1.0

    several = hit_at_k([([Loc(PATH, 3), Loc(PATH, 17)], ranking)])
    assert several.hits == {1: 1, 3: 1, 5: 1}


def test_hit_at_k_ignores_other_files_and_cases_without_ranking_or_marks() -> None:
    ranking = [item(1, 1, 30, path="helpers.py")]
    accuracy = hit_at_k([([Loc(PATH, 3)], ranking), ([Loc(PATH, 3)], []), ([], [item(1, 1, 5)])])
    assert accuracy.cases == 1 and accuracy.hits == {1: 0, 3: 0, 5: 0}
    assert hit_at_k([]).rate(1) is None
