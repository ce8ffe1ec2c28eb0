"""triage(): the real pipeline, and the real HTTP client against a loopback stand-in model server."""

from __future__ import annotations

import asyncio
import json

import pytest

from app.analysis.model import Script
from app.localize.llm import ModelClient
from app.localize.result import TriageOptions, TriageResult
from app.triage import check_options, triage
from tests.conftest import BENCHMARK, load_case, running_example
from tests.support.openai_standin import OpenAIStandin, Reply, closed_port_url

RESULT_KEYS = {
    "id",
    "status",
    "error_message",
    "ranker",
    "model",
    "fallback_reason",
    "level",
    "k",
    "trace",
    "ranking",
    "tokens",
    "timings",
    "postprocess",
    "prompt",
    "warnings",
    "evidence_found",
    "options",
    "ranker_model",  # which weights the built-in ranker scored with (added with learned models)
}
ITEM_KEYS = {
    "rank",
    "id",
    "path",
    "start_line",
    "end_line",
    "code",
    "score",
    "relevance",
    "reason",
    "evidence",
}


def run_golden(options: TriageOptions, url: str | None = None, **client_args: object) -> TriageResult:
    scripts, log, expected = running_example()
    options = TriageOptions(**{**options.__dict__, "log_functions": tuple(expected["log_function_patterns"])})

    async def go() -> TriageResult:
        client = None if url is None else ModelClient(url, **client_args)
        try:
            return await triage(scripts, log, options, client=client)
        finally:
            if client is not None:
                await client.aclose()

    return asyncio.run(go())


def test_heuristic_result_has_the_design_contract_shape() -> None:
    result = run_golden(TriageOptions(level="block", k=3))
    body = result.to_dict()
    assert set(body) == RESULT_KEYS
    assert body["status"] == "done" and body["id"] is None
    assert body["ranker"] == "heuristic" and body["model"] is None and body["fallback_reason"] is None
    assert body["tokens"] is None
    assert body["ranker_model"].startswith("shipped")
    assert body["error_message"] == "ZeroDivisionError: division by zero"
    assert body["trace"]["variant"] == "tplus" and body["trace"]["kept_lines"] == 14
    assert body["trace"]["total_lines"] == 21 and 0 < body["trace"]["pruning_rate"] < 1
    assert [item["rank"] for item in body["ranking"]] == [1, 2, 3]
    assert all(set(item) == ITEM_KEYS for item in body["ranking"])
    relevance = [item["relevance"] for item in body["ranking"]]
    assert relevance[0] == 100 and relevance == sorted(relevance, reverse=True) and relevance[-1] >= 0
    assert body["ranking"][0]["id"] == "BLOCK 6"
    assert body["ranking"][0]["start_line"] == 16 and body["ranking"][0]["path"] == "test_example.py"
    assert body["timings"]["static_ms"] > 0 and body["timings"]["model_ms"] == 0
    assert body["timings"]["total_ms"] >= body["timings"]["static_ms"]
    assert body["prompt"]["chars"] > 0 and body["prompt"]["lines"] > 10
    assert body["postprocess"] == {"invalid": 0, "duplicates": 0, "mismatches": 0, "repaired": 0}
    json.dumps(body)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (TriageOptions(level="file"), "level"),
        (TriageOptions(k=0), "k must be"),
        (TriageOptions(trace="T9"), "unknown trace variant"),
        (TriageOptions(ranker="oracle"), "ranker"),
        (TriageOptions(output_format="yaml"), "output_format"),
    ],
)
def test_bad_options_are_rejected_with_a_clear_message(options: TriageOptions, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        run_golden(options)


def test_trace_aliases_are_resolved() -> None:
    assert run_golden(TriageOptions(trace="tmax", k=1)).variant == "CSR(T1_dbt_nexe&T2)"


def test_asking_for_the_model_without_a_server_falls_back_and_says_so() -> None:
    result = run_golden(TriageOptions(ranker="llm", k=2))
    assert result.ranker == "heuristic"
    assert "no model server" in (result.fallback_reason or "")
    assert result.fallback_reason in result.warnings


def heuristic_ids(k: int) -> list[str]:
    """What the heuristic ranker itself answers on the golden case: a fallback must answer the same."""
    return [item.id for item in run_golden(TriageOptions(ranker="heuristic", k=k)).ranking]


def test_an_unreachable_server_falls_back_to_the_heuristic() -> None:
    result = run_golden(TriageOptions(k=2), closed_port_url(), retries=0, timeout_s=2)
    assert result.ranker == "heuristic" and result.model is None and result.tokens is None
    assert (result.fallback_reason or "").startswith("model unavailable")
    assert [item.id for item in result.ranking] == heuristic_ids(2)


def test_the_model_ranking_is_used_and_labelled() -> None:
    with OpenAIStandin(default=Reply(rank=True)) as server:
        result = run_golden(TriageOptions(k=3), server.url)
        request = server.chat_requests()[0].body
    assert result.ranker == "llm" and result.model == "standin-model" and result.fallback_reason is None
    assert result.tokens == (11, 7)
    schema = request["response_format"]["json_schema"]["schema"]["properties"]["faulty_blocks"]
    assert schema["items"]["enum"] == ["BLOCK 1", "BLOCK 3", "BLOCK 4", "BLOCK 6", "BLOCK 7"]
    assert [item.id for item in result.ranking] == schema["items"]["enum"][:3]
    assert all(item.score is None and item.reason.startswith("model rank") for item in result.ranking)
    assert request["messages"][1]["content"].count("# BLOCK") == 5


def test_a_short_model_answer_is_filled_from_the_heuristic_and_labelled() -> None:
    with OpenAIStandin(
        default=Reply(content='{"faulty_blocks": ["BLOCK 1", "BLOCK 99", "BLOCK 1"]}')
    ) as server:
        result = run_golden(TriageOptions(k=3), server.url)
    assert result.ranker == "llm"
    # the model's one valid pick, then the heuristic's best picks that are not it
    assert [item.id for item in result.ranking] == [
        "BLOCK 1",
        *[i for i in heuristic_ids(4) if i != "BLOCK 1"][:2],
    ]
    assert result.ranking[0].reason == "model rank 1"
    assert all(item.reason.startswith("heuristic fill-in: ") for item in result.ranking[1:])
    assert result.postprocess.invalid == 1 and result.postprocess.duplicates == 1
    assert "1 valid item(s) of 3" in (result.fallback_reason or "")


def test_a_garbage_answer_makes_the_heuristic_answer() -> None:
    with OpenAIStandin(
        default=Reply(content="I am sorry, I cannot do that.", finish_reason="length")
    ) as server:
        result = run_golden(TriageOptions(k=2), server.url)
    assert result.ranker == "heuristic" and result.model is None
    assert [item.id for item in result.ranking] == heuristic_ids(2)
    assert any("cut off" in w for w in result.warnings)
    assert "the heuristic ranker answered" in (result.fallback_reason or "")


def test_a_failing_server_falls_back() -> None:
    with OpenAIStandin(default=Reply(status=503)) as server:
        result = run_golden(TriageOptions(k=1), server.url, retries=1, backoff_s=0.01)
    assert result.ranker == "heuristic"
    assert (result.fallback_reason or "").startswith("model unavailable")


def test_paper_line_format_is_repaired_with_levenshtein() -> None:
    answer = "16: var_2 = var_1 / len(values)\n3: return set()\n3: return set()"
    with OpenAIStandin(default=Reply(content=answer)) as server:
        result = run_golden(TriageOptions(level="line", k=2, output_format="paper"), server.url)
        request = server.chat_requests()[0].body
    assert "response_format" not in request
    assert "17:     var_2 = var_1 / len(values)" in request["messages"][1]["content"]
    assert [item.id for item in result.ranking] == ["17", "3"]
    assert result.postprocess.mismatches == 1 and result.postprocess.repaired == 1
    assert result.postprocess.duplicates == 1


def test_line_to_block_mapping_asks_for_lines_and_answers_blocks() -> None:
    with OpenAIStandin(default=Reply(content='{"faulty_lines": ["3", "2", "13"]}')) as server:
        result = run_golden(TriageOptions(level="block", k=2, line_to_block=True), server.url)
        request = server.chat_requests()[0].body
    assert "faulty_lines" in request["response_format"]["json_schema"]["schema"]["properties"]
    assert [item.id for item in result.ranking] == ["BLOCK 1", "BLOCK 4"]
    assert result.ranker == "llm"


def test_two_phase_ranks_functions_then_blocks_inside_them() -> None:
    with OpenAIStandin(default=Reply(rank=True)) as server:
        server.enqueue(Reply(content='{"faulty_functions": ["test_1", "main", "execute_tests"]}'))
        server.enqueue(Reply(content='{"faulty_blocks": ["BLOCK 1"]}'))
        result = run_golden(TriageOptions(level="block", k=1, two_phase=True), server.url)
        first, second = (r.body for r in server.chat_requests())
    assert (
        first["response_format"]["json_schema"]["schema"]["properties"]["faulty_functions"]["maxItems"] == 3
    )
    assert [item.id for item in result.ranking] == ["BLOCK 1"]
    assert result.tokens == (22, 14)
    assert "# BLOCK 1" in second["messages"][1]["content"]


def test_two_phase_narrows_the_second_prompt_to_the_chosen_functions() -> None:
    with OpenAIStandin(default=Reply(rank=True)) as server:
        server.enqueue(Reply(content='{"faulty_functions": ["test_1"]}'))
        result = run_golden(TriageOptions(level="line", k=2, two_phase=True), server.url)
        second = server.chat_requests()[1].body
    enum = second["response_format"]["json_schema"]["schema"]["properties"]["faulty_lines"]["items"]["enum"]
    assert enum == ["1", "2", "3"]
    assert [item.id for item in result.ranking] == ["1", "2"]


def test_real_case_through_the_model_path() -> None:
    scripts, log, _ = load_case(BENCHMARK / "sonic-fib-utils-dict-keys.json")

    async def go() -> TriageResult:
        async with ModelClient(server.url) as client:
            return await triage(scripts, log, TriageOptions(level="function", k=3), client=client)

    with OpenAIStandin(default=Reply(rank=True)) as server:
        result = asyncio.run(go())
    assert result.ranker == "llm" and len(result.ranking) == 3
    assert "TypeError" in result.error_message


def test_empty_scripts_give_an_empty_ranking_not_a_crash() -> None:
    result = asyncio.run(triage([Script("t.py", "")], "", TriageOptions(), client=None))
    assert result.ranking == () and result.ranker == "heuristic"


@pytest.mark.parametrize(
    "expression",
    [
        " + ".join(f'"p{i}"' for i in range(3000)),
        "f(" * 400 + "1" + ")" * 400,
        "a" + ".b" * 3000,
    ],
    ids=["long-concatenation", "deep-calls", "long-attribute-chain"],
)
def test_pathological_expressions_do_not_crash_the_ranker(expression: str) -> None:
    script = Script("t.py", f"def test_a():\n    x = {expression}\n    assert x\n")
    log = 'Traceback (most recent call last):\n  File "t.py", line 3, in test_a\nAssertionError\n'
    result = asyncio.run(triage([script], log, TriageOptions(level="line", k=2), client=None))
    assert [item.id for item in result.ranking] == ["3", "2"]


def test_a_refused_request_falls_back_with_the_server_reason() -> None:
    refusal = Reply(status=400, body={"error": {"message": "prompt is longer than the context window"}})
    with OpenAIStandin(default=refusal) as server:
        result = run_golden(TriageOptions(k=1), server.url, retries=0)
    assert result.ranker == "heuristic"
    assert (result.fallback_reason or "").startswith("model refused the request")
    assert "context window" in (result.fallback_reason or "")


def test_a_configured_log_format_is_used_and_a_bad_one_rejected() -> None:
    scripts = [Script("t.py", "def test_a():\n    print('step one')\n    print('step two')\n")]
    log = "<<step two>> step one\n" * 3  # the prefix itself looks like a message of line 3

    def kept(log_format: str | None) -> int:
        options = TriageOptions(k=1, trace="tplus", level="line", log_format=log_format)
        return asyncio.run(triage(scripts, log, options, client=None)).kept_lines

    assert kept(r"<<[^>]*>> (?P<msg>.*)") == 2  # line 3 did not run: only "step one" was printed
    assert kept(None) == 3  # undetected prefix: the line matches both prints, so nothing is known
    with pytest.raises(ValueError, match="named group"):
        check_options(TriageOptions(log_format="(no message group)"))


def test_disabled_channels_switch_off_trace_refinements_too() -> None:
    """A refinement of the enhanced trace named in disabled_channels reaches the analysis."""
    import textwrap

    from app.triage import prepare

    source = textwrap.dedent(
        """\
        import logging
        log = logging.getLogger(__name__)


        def test_finally(session):
            try:
                session.send()
            finally:
                session.close()
        """
    )
    log = "Traceback (most recent call last):\n"
    log += '  File "t.py", line 7, in test_finally\n    session.send()\nOSError\n'
    scripts = [Script("t.py", source)]

    def kept(options: TriageOptions) -> bool:
        request = prepare(scripts, log, options)
        return any(loc.line == 9 for loc in request.analysis.traces["tplus"].kept)

    assert kept(TriageOptions(level="line"))
    assert not kept(TriageOptions(level="line", disabled_channels=frozenset({"after-failure"})))
    with pytest.raises(ValueError, match="unknown channel"):
        check_options(TriageOptions(disabled_channels=frozenset({"after-failures"})))
