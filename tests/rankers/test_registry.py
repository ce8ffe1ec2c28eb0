"""Rankers behind one interface: picked by name, ``auto`` as before, a registered ranker used by triage."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from app import rankers
from app.localize.heuristic import rank_heuristic
from app.localize.model_file import load_model
from app.options import TriageOptions
from app.rankers import choose, make_ranker, ranker_names, register
from app.rankers.base import Pick, RankAnswer, RankRequest
from app.triage import check_options, prepare, triage
from tests.conftest import running_example


class LastElementRanker:
    """A stand-in for the history rankers to come: names the last rendered element only."""

    name = "last"

    def __init__(self, client: object = None) -> None:
        self.client = client

    async def rank(self, request: RankRequest, k: int) -> RankAnswer:
        element = request.rendered.elements[-1]
        return RankAnswer(self.name, (Pick(element, 1.0, "last element"),))


@pytest.fixture
def registered() -> Iterator[None]:
    register("last", f"{__name__}:LastElementRanker")
    yield
    rankers._REGISTRY.pop("last", None)


def golden_options(**values: object) -> TriageOptions:
    _, _, expected = running_example()
    return TriageOptions(log_functions=tuple(expected["log_function_patterns"]), **values)  # type: ignore[arg-type]


def test_the_built_in_rankers_are_registered() -> None:
    assert {"llm", "heuristic"} <= set(ranker_names())


def test_auto_means_the_model_when_one_is_configured() -> None:
    assert choose("auto", model_configured=True) == "llm"
    assert choose("auto", model_configured=False) == "heuristic"
    assert choose("heuristic", model_configured=True) == "heuristic"


def test_unknown_names_are_refused() -> None:
    with pytest.raises(ValueError, match="ranker must be one of"):
        choose("oracle", model_configured=False)
    with pytest.raises(ValueError, match="ranker must be one of"):
        make_ranker("oracle")
    with pytest.raises(ValueError, match="identifier"):
        register("auto", "x:y")
    with pytest.raises(ValueError, match="module:Factory"):
        register("other", "no_colon")


def test_the_heuristic_ranker_answers_what_the_heuristic_ranks() -> None:
    scripts, log, _ = running_example()
    request = prepare(scripts, log, golden_options(level="line", k=4))
    answer = asyncio.run(make_ranker("heuristic").rank(request, 4))
    direct = rank_heuristic(request.analysis, request.rendered, 4, model=load_model().levels["line"])
    assert answer.name == "heuristic"
    assert [p.element.id for p in answer.picks] == [s.element.id for s in direct]


def test_a_registered_ranker_is_picked_by_name_and_filled_in(registered: None) -> None:
    scripts, log, _ = running_example()
    options = golden_options(level="block", k=3, ranker="last")
    assert check_options(options).ranker == "last"
    result = asyncio.run(triage(scripts, log, options, client=None))
    assert result.ranker == "last"
    last = prepare(scripts, log, options).rendered.elements[-1].id
    assert result.ranking[0].id == last and result.ranking[0].reason == "last element"
    assert len(result.ranking) == 3
    assert all(item.reason.startswith("heuristic fill-in: ") for item in result.ranking[1:])


def test_an_unregistered_name_is_a_bad_option() -> None:
    with pytest.raises(ValueError, match="ranker"):
        check_options(golden_options(ranker="last"))
