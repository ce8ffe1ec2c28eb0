"""tcfl's ModelClient and ranking schema against a real vLLM server (CPU build, tiny random model).

The model is random, so what it ranks is noise; what is under test is the serving path that
production uses: structured output constrains every answer to exactly k known IDs, the answer
stops cleanly, usage is reported, /v1/models names the model, and requests run concurrently.
Prompts come from the production prompt builder and the running example when the analysis
pipeline is importable; otherwise from a hand-written prompt of the same shape (printed).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import pytest

from app.localize.llm import Completion, ModelClient, ModelError
from app.localize.schema import RESPONSE_KEYS, ranking_schema

if TYPE_CHECKING:
    from tests.vllm.conftest import VllmServer

pytestmark = [pytest.mark.vllm, pytest.mark.timeout(2400)]

T = TypeVar("T")
EXAMPLE = Path(__file__).resolve().parents[1] / "data" / "running-example"
KS = {"function": (1, 3), "block": (1, 3, 5), "line": (1, 3, 5, 10)}
MAX_TOKENS = 256


@dataclass(frozen=True)
class Prompt:
    level: str
    messages: list[dict[str, str]]
    ids: tuple[str, ...]
    source: str


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def client(server: VllmServer, **kwargs: Any) -> ModelClient:
    kwargs.setdefault("timeout_s", 120)
    kwargs.setdefault("retries", 1)
    kwargs.setdefault("max_tokens", MAX_TOKENS)
    return ModelClient(server.url, **kwargs)


def running_example_prompts(k: int) -> dict[str, Prompt] | None:
    """Prompts built by production code from the running example; None until the pipeline exists."""
    try:
        from app.analysis.pipeline import analyze
    except ModuleNotFoundError as exc:
        if exc.name == "app.analysis.pipeline":
            return None
        raise
    from app.analysis.model import Script, resolve_variant
    from app.analysis.render import render
    from app.localize.prompts import build_messages

    script = Script("test_example.py", (EXAMPLE / "test_example.py").read_text())
    patterns = json.loads((EXAMPLE / "expected.json").read_text())["log_function_patterns"]
    analysis = analyze([script], (EXAMPLE / "failure.log").read_text(), log_functions=patterns)
    prompts = {}
    for level in RESPONSE_KEYS:
        rendered = render(analysis, resolve_variant("tplus"), level)
        prompts[level] = Prompt(
            level=level,
            messages=build_messages(rendered, analysis.log.error_message, k),
            ids=tuple(e.id for e in rendered.elements),
            source="running example via analyze() + render() + build_messages()",
        )
    return prompts


HAND_CODE = {
    "function": (
        ("main", "def main():\n    print('Prepare testing...')\n    execute_tests()"),
        ("execute_tests", "def execute_tests():\n    values = {}\n    var_2 = var_1 / len(values)"),
        ("check", "def check(values):\n    return len(values) > 0"),
    ),
    "block": tuple(
        (f"BLOCK {i}", f"# BLOCK {i}\n{code}")
        for i, code in enumerate(
            (
                "print('Prepare testing...')",
                "var_1 = len({1, 2, 3})\nprint(f'{ {1, 2, 3} } var_1: {var_1}')",
                "print('Test 1 executed!')",
                "values = {}\nprint(f'values: {values}')",
                "var_2 = var_1 / len(values)",
                "execute_tests()",
            ),
            start=1,
        )
    ),
    "line": tuple(
        (str(n), f"{n}: {code}")
        for n, code in (
            (12, "print('Prepare testing...')"),
            (13, "var_1 = len({1, 2, 3})"),
            (14, "print('Test 1 executed!')"),
            (15, "values = {}"),
            (16, "print(f'values: {values}')"),
            (17, "var_2 = var_1 / len(values)"),
            (23, "execute_tests()"),
        )
    ),
}


def hand_written_prompts(k: int) -> dict[str, Prompt]:
    prompts = {}
    for level, elements in HAND_CODE.items():
        code = "\n".join(text for _, text in elements)
        system = (
            f"You are a fault localization assistant for Python test scripts. Given a failing test's "
            f"error message and its code, name the {k} most suspicious {level}s, most suspicious first."
        )
        user = (
            f'Answer with JSON only, as {{"{RESPONSE_KEYS[level]}": [...]}}, using the {level} IDs '
            f"shown.\n\nError message:\nZeroDivisionError: division by zero\n\nTest code:\n{code}"
        )
        prompts[level] = Prompt(
            level=level,
            messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
            ids=tuple(eid for eid, _ in elements),
            source="hand-written prompt (app.analysis.pipeline not importable yet)",
        )
    return prompts


def prompts_for(k: int) -> dict[str, Prompt]:
    return running_example_prompts(k) or hand_written_prompts(k)


def assert_valid_ranking(done: Completion, prompt: Prompt, k: int, server: VllmServer) -> None:
    answer = json.loads(done.text)
    key = RESPONSE_KEYS[prompt.level]
    assert list(answer) == [key], done.text
    assert len(answer[key]) == min(k, len(prompt.ids)), done.text
    assert set(answer[key]) <= set(prompt.ids), done.text
    assert done.finish_reason == "stop"
    assert done.input_tokens is not None and done.input_tokens > 0
    assert done.output_tokens is not None and done.output_tokens > 0
    assert done.model == server.model


CASES = [(level, k) for level, ks in KS.items() for k in ks]


@pytest.mark.parametrize(("level", "k"), CASES, ids=[f"{lv}-k{k}" for lv, k in CASES])
def test_structured_ranking_is_valid(
    vllm_server: VllmServer, vllm_timings: dict[str, list[float]], level: str, k: int
) -> None:
    prompt = prompts_for(k)[level]
    print(f"prompt source: {prompt.source}; {len(prompt.ids)} {level} IDs")

    async def go() -> Completion:
        async with client(vllm_server, model=vllm_server.model) as c:
            return await c.complete(prompt.messages, schema=ranking_schema(level, prompt.ids, k))

    done = run(go())
    vllm_timings.setdefault("request latency (sequential)", []).append(done.latency_ms / 1000)
    tokens = f"{done.input_tokens} in, {done.output_tokens} out"
    print(f"{level} k={k}: {done.text} ({tokens}, {done.latency_ms:.0f} ms)")
    assert_valid_ranking(done, prompt, k, vllm_server)


def test_model_is_discovered_and_server_is_healthy(vllm_server: VllmServer) -> None:
    async def go() -> tuple[bool, str, Completion]:
        async with client(vllm_server) as c:
            prompt = prompts_for(2)["block"]
            return await c.health(), await c.model_name(), await c.complete(prompt.messages)

    healthy, name, done = run(go())
    assert healthy is True
    assert name == vllm_server.model
    assert done.model == vllm_server.model
    assert done.input_tokens is not None and done.input_tokens > 0


def test_concurrent_requests_all_answer_within_the_schema(
    vllm_server: VllmServer, vllm_timings: dict[str, list[float]]
) -> None:
    k = 3
    prompts = prompts_for(k)
    jobs = [
        prompts[level] for level in ("block", "line", "function", "block", "line", "block", "line", "block")
    ]

    async def go() -> tuple[list[Completion], float]:
        async with client(vllm_server, model=vllm_server.model, concurrency=8) as c:
            loop = asyncio.get_running_loop()
            started = loop.time()
            answers = await asyncio.gather(
                *(c.complete(p.messages, schema=ranking_schema(p.level, p.ids, k)) for p in jobs)
            )
            return answers, loop.time() - started

    answers, wall = run(go())
    vllm_timings.setdefault("request latency (8 at once)", []).extend(d.latency_ms / 1000 for d in answers)
    vllm_timings.setdefault("8 concurrent requests, wall", []).append(wall)
    for done, prompt in zip(answers, jobs, strict=True):
        assert_valid_ranking(done, prompt, k, vllm_server)


def test_unique_items_is_rejected_by_the_server_as_a_model_error(vllm_server: VllmServer) -> None:
    """Why ranking_schema never uses uniqueItems: the grammar backend refuses it with HTTP 400."""
    prompt = prompts_for(2)["block"]
    schema = ranking_schema("block", prompt.ids, 2)
    schema["properties"][RESPONSE_KEYS["block"]]["uniqueItems"] = True

    async def go() -> Completion:
        async with client(vllm_server, model=vllm_server.model) as c:
            return await c.complete(prompt.messages, schema=schema)

    with pytest.raises(ModelError) as caught:
        run(go())
    assert caught.value.status_code == 400
