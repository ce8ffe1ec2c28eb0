"""ModelClient against a real OpenAI-compatible stand-in server over a real socket."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Coroutine
from typing import Any, TypeVar

import pytest

from app.localize.llm import Completion, ModelClient, ModelError, ModelUnavailable, normalize_base_url
from app.localize.schema import ranking_schema
from app.settings import Settings
from tests.support.openai_standin import CHAT_PATH, MODELS_PATH, OpenAIStandin, Reply, closed_port_url

T = TypeVar("T")

MESSAGES = [
    {"role": "system", "content": "You localize faults in test code."},
    {"role": "user", "content": "BLOCK 1\n    login()\nBLOCK 2\n    assert ok\nWhich blocks are faulty?"},
]
BLOCKS = ["BLOCK 1", "BLOCK 2", "BLOCK 3"]
ANSWER = '{"faulty_blocks":["BLOCK 2","BLOCK 1"]}'


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def client(url: str, **kwargs: Any) -> ModelClient:
    kwargs.setdefault("backoff_s", 0.001)
    kwargs.setdefault("timeout_s", 5)
    return ModelClient(url, **kwargs)


async def complete(url: str, messages: list[dict[str, str]] = MESSAGES, **kwargs: Any) -> Completion:
    schema = kwargs.pop("schema", None)
    async with client(url, **kwargs) as c:
        return await c.complete(messages, schema=schema)


@pytest.fixture
def srv() -> Any:
    with OpenAIStandin() as server:
        yield server


def test_valid_answer_sends_the_exact_request(srv: OpenAIStandin) -> None:
    srv.enqueue(
        Reply(content=ANSWER, usage={"prompt_tokens": 321, "completion_tokens": 12, "total_tokens": 333})
    )
    schema = ranking_schema("block", BLOCKS, 2)

    done = run(
        complete(
            srv.url,
            schema=schema,
            model="qwen",
            api_key="s3cret",
            max_tokens=256,
            temperature=0.2,
            top_p=0.9,
            top_k=20,
        )
    )

    assert (done.text, done.finish_reason, done.input_tokens, done.output_tokens) == (ANSWER, "stop", 321, 12)
    assert (done.model, done.attempts) == ("qwen", 1)
    assert done.latency_ms > 0
    [request] = srv.requests
    assert (request.method, request.path) == ("POST", CHAT_PATH)
    assert request.headers["authorization"] == "Bearer s3cret"
    assert request.headers["content-type"] == "application/json"
    assert request.body == {
        "model": "qwen",
        "messages": MESSAGES,
        "max_tokens": 256,
        "temperature": 0.2,
        "top_p": 0.9,
        "top_k": 20,
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "ranking", "schema": schema, "strict": True},
        },
    }
    assert not [key for key in request.body if key.startswith("guided_")]


def test_optional_fields_are_left_out_when_unset(srv: OpenAIStandin) -> None:
    run(complete(srv.url, model="qwen"))

    [request] = srv.requests
    assert request.body == {
        "model": "qwen",
        "messages": MESSAGES,
        "max_tokens": 2048,
        "temperature": 0.0,
        "top_p": 1.0,
    }
    assert "authorization" not in request.headers


def test_schema_name_is_passed_through(srv: OpenAIStandin) -> None:
    async def go() -> None:
        async with client(srv.url, model="qwen") as c:
            await c.complete(MESSAGES, schema=ranking_schema("line", ["a.py:3"], 1), schema_name="lines")

    run(go())
    assert srv.requests[0].body["response_format"]["json_schema"]["name"] == "lines"


def test_model_is_discovered_once_from_v1_models() -> None:
    async def go(url: str) -> tuple[str, Completion, Completion]:
        async with client(url) as c:
            name = await c.model_name()
            return name, await c.complete(MESSAGES), await c.complete(MESSAGES)

    with OpenAIStandin(model="tiny-qwen") as srv:
        name, first, second = run(go(srv.url))
        paths = [(r.method, r.path) for r in srv.requests]

    assert name == first.model == second.model == "tiny-qwen"
    assert paths == [("GET", MODELS_PATH), ("POST", CHAT_PATH), ("POST", CHAT_PATH)]
    assert [r.body["model"] for r in srv.chat_requests()] == ["tiny-qwen", "tiny-qwen"]


def test_model_discovery_with_no_models_is_unavailable(srv: OpenAIStandin) -> None:
    srv.enqueue(*[Reply(body={"object": "list", "data": []})] * 2, path=MODELS_PATH)

    with pytest.raises(ModelUnavailable, match="lists no models"):
        run(complete(srv.url, retries=1))
    assert srv.chat_requests() == []


def test_server_error_then_success_is_retried(srv: OpenAIStandin) -> None:
    srv.enqueue(Reply(status=500), Reply(status=503), Reply(status=408), Reply(content=ANSWER))

    done = run(complete(srv.url, model="qwen", schema=ranking_schema("block", BLOCKS, 2)))

    assert (done.text, done.attempts) == (ANSWER, 4)
    bodies = [r.body for r in srv.requests]
    assert len(bodies) == 4
    assert bodies[0] == bodies[1] == bodies[2] == bodies[3]


def test_429_waits_as_long_as_retry_after_says(srv: OpenAIStandin) -> None:
    srv.enqueue(Reply(status=429, headers={"Retry-After": "1"}), Reply(content=ANSWER))

    done = run(complete(srv.url, model="qwen", backoff_s=0))

    first, second = srv.requests
    assert done.attempts == 2
    assert second.received_at - first.received_at >= 1.0


@pytest.mark.timeout(30)
def test_retry_after_is_capped(srv: OpenAIStandin) -> None:
    srv.enqueue(Reply(status=429, headers={"Retry-After": "3600"}), Reply(content=ANSWER))

    done = run(complete(srv.url, model="qwen", max_retry_after_s=0.05))

    assert (done.text, done.attempts) == (ANSWER, 2)


def test_persistent_server_errors_make_the_model_unavailable() -> None:
    with OpenAIStandin(default=Reply(status=500)) as srv:
        with pytest.raises(
            ModelUnavailable, match=r"failed 3 times; last error: HTTP 500: scripted HTTP 500"
        ):
            run(complete(srv.url, model="qwen", retries=2))
        assert len(srv.requests) == 3


def test_answer_slower_than_timeout_is_unavailable() -> None:
    """The deadline covers the whole call: a retry that cannot fit in what is left is not started."""
    with OpenAIStandin(default=Reply(content=ANSWER, delay_s=3)) as srv:
        with pytest.raises(ModelUnavailable, match=r"no answer within 0.2 s"):
            run(complete(srv.url, model="qwen", timeout_s=0.2, retries=1))
        assert len(srv.requests) == 1


def test_connection_refused_is_unavailable() -> None:
    url = closed_port_url()
    with pytest.raises(ModelUnavailable, match=r"failed 2 times; last error: cannot reach .*ConnectError"):
        run(complete(url, model="qwen", retries=1))


def test_bad_request_is_a_model_error_and_not_retried(srv: OpenAIStandin) -> None:
    message = "Unsupported JSON schema keyword: uniqueItems"
    srv.enqueue(
        Reply(status=400, body={"error": {"message": message, "type": "BadRequestError", "code": 400}})
    )

    with pytest.raises(ModelError, match="HTTP 400: Unsupported JSON schema keyword: uniqueItems") as caught:
        run(complete(srv.url, model="qwen", retries=3))

    assert caught.value.status_code == 400
    assert len(srv.requests) == 1


def test_a_prompt_over_the_context_window_names_the_limit(srv: OpenAIStandin) -> None:
    # vLLM 0.32's words when prompt + max_tokens exceed --max-model-len
    message = (
        "This model's maximum context length is 4096 tokens. However, you requested 5210 tokens "
        "(3162 in the messages, 2048 in the completion). "
        "Please reduce the length of the messages or completion."
    )
    srv.enqueue(
        Reply(status=400, body={"error": {"message": message, "type": "BadRequestError", "code": 400}})
    )

    with pytest.raises(
        ModelError, match=r"context window \(the server's max_model_len\): This model's"
    ) as caught:
        run(complete(srv.url, model="qwen", retries=3))

    assert caught.value.status_code == 400
    assert len(srv.requests) == 1


@pytest.mark.parametrize(
    "bad", [Reply(body="<html>502 from a proxy</html>"), Reply(body=["not", "an", "object"]), Reply(body={})]
)
def test_malformed_200_is_retried_like_a_server_error(srv: OpenAIStandin, bad: Reply) -> None:
    srv.enqueue(bad, Reply(content=ANSWER))

    done = run(complete(srv.url, model="qwen"))

    assert (done.text, done.attempts) == (ANSWER, 2)


def test_malformed_200_forever_is_unavailable() -> None:
    with (
        OpenAIStandin(default=Reply(body="not json")) as srv,
        pytest.raises(ModelUnavailable, match="body that is not JSON: 'not json'"),
    ):
        run(complete(srv.url, model="qwen", retries=1))


def test_missing_usage_gives_no_token_counts(srv: OpenAIStandin) -> None:
    srv.enqueue(Reply(content=ANSWER, usage=None, finish_reason="length"))

    done = run(complete(srv.url, model="qwen"))

    assert (done.input_tokens, done.output_tokens, done.finish_reason) == (None, None, "length")


def test_concurrency_bound_is_respected() -> None:
    async def go(url: str) -> list[Completion]:
        async with client(url, model="qwen", concurrency=3) as c:
            return await asyncio.gather(*(c.complete(MESSAGES) for _ in range(9)))

    with OpenAIStandin(default=Reply(content=ANSWER, delay_s=0.5)) as srv:
        done = run(go(srv.url))
        assert len(srv.requests) == 9
        assert srv.max_in_flight == 3
    assert all(d.text == ANSWER for d in done)


def test_ranking_mode_answers_the_schema_it_was_sent() -> None:
    with OpenAIStandin(default=Reply(rank=True)) as srv:
        done = run(
            complete(srv.url, model="qwen", schema=ranking_schema("line", ["a.py:7", "a.py:9", "a.py:2"], 2))
        )
    assert json.loads(done.text) == {"faulty_lines": ["a.py:7", "a.py:9"]}


def test_health(srv: OpenAIStandin) -> None:
    async def check(url: str) -> bool:
        async with client(url) as c:
            return await c.health()

    srv.enqueue(Reply(status=500), path=MODELS_PATH)
    assert run(check(srv.url)) is False
    assert run(check(srv.url)) is True
    assert run(check(closed_port_url())) is False


def test_from_settings() -> None:
    assert ModelClient.from_settings(Settings(model_url=None)) is None
    assert ModelClient.from_settings(Settings(model_url="  ")) is None
    settings = Settings(
        model_url="http://127.0.0.1:9/v1",
        model="m",
        api_key="k",
        model_timeout_s=7,
        model_retries=1,
        model_concurrency=2,
        max_output_tokens=99,
        temperature=0.5,
        top_p=0.8,
        top_k=5,
    )
    c = ModelClient.from_settings(settings, model_url="http://127.0.0.1:8/v1/")
    assert c is not None
    run(c.aclose())
    assert (c.base_url, c.timeout_s, c.retries, c.concurrency, c.max_tokens) == (
        "http://127.0.0.1:8/v1",
        7,
        1,
        2,
        99,
    )
    assert (c.temperature, c.top_p, c.top_k) == (0.5, 0.8, 5)
    assert run(c.model_name()) == "m"


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1"),
        ("http://127.0.0.1:8000/v1/", "http://127.0.0.1:8000/v1"),
        (" https://llm.example.org/api/v1// ", "https://llm.example.org/api/v1"),
    ],
)
def test_base_url_ending_in_v1_is_kept(url: str, expected: str) -> None:
    assert normalize_base_url(url) == expected


def test_base_url_without_path_gets_v1_and_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="app.localize.llm"):
        assert normalize_base_url("http://127.0.0.1:8000/") == "http://127.0.0.1:8000/v1"
    assert "has no path" in caplog.text


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:8000/v2", "127.0.0.1:8000/v1", "ftp://h/v1", "http:///v1", "http://h/v1?x=1"]
)
def test_other_base_urls_are_rejected(url: str) -> None:
    with pytest.raises(ValueError, match="model URL"):
        ModelClient(url)


@pytest.mark.parametrize(
    "messages", [[], [{"role": "user"}], [{"role": "user", "content": 3}], ["hello"], "hello"]
)
def test_bad_messages_raise_value_error_before_any_request(srv: OpenAIStandin, messages: Any) -> None:
    with pytest.raises(ValueError, match="messages"):
        run(complete(srv.url, messages=messages, model="qwen"))
    assert srv.requests == []


@pytest.mark.parametrize(
    "kwargs", [{"timeout_s": 0}, {"retries": -1}, {"concurrency": 0}, {"max_tokens": 0}, {"backoff_s": -1}]
)
def test_bad_settings_raise_value_error(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        ModelClient("http://127.0.0.1:8000/v1", **kwargs)


# -- one deadline per call, the retry budget, the circuit breaker, shutdown ---------------------


def test_a_server_trickling_one_byte_a_second_is_cut_at_the_deadline() -> None:
    """httpx's timeouts are per read; a byte a second never trips them. The call's deadline does."""
    with OpenAIStandin(default=Reply(content=ANSWER, trickle_s=1.0)) as srv:

        async def cut() -> str:
            with pytest.raises(ModelUnavailable) as caught:  # unbounded, ~300 bytes would take 5 min
                await complete(srv.url, model="qwen", timeout_s=2.0, retries=3)
            return str(caught.value)

        assert "no answer within 2 s" in run(cut())
        assert len(srv.requests) == 1  # the deadline covers the retries too


def test_retries_stop_when_the_budget_is_spent() -> None:
    with OpenAIStandin(default=Reply(status=503, delay_s=0.8)) as srv:
        with pytest.raises(ModelUnavailable, match=r"no answer within 2 s|retry budget"):
            run(complete(srv.url, model="qwen", timeout_s=2.0, retries=10, backoff_s=0.01))
        assert len(srv.requests) < 11


def test_the_breaker_opens_after_failures_then_lets_one_trial_through() -> None:
    with OpenAIStandin(default=Reply(status=500)) as srv:

        async def scenario() -> tuple[list[str], int, str]:
            model = client(srv.url, model="qwen", retries=0, breaker_failures=2, breaker_cooldown_s=0.5)
            errors = []
            async with model:
                for _ in range(3):
                    with pytest.raises(ModelUnavailable) as caught:
                        await model.complete(MESSAGES)
                    errors.append(str(caught.value))
                sent_while_open = len(srv.requests)
                state = model.breaker.state()
                await asyncio.sleep(0.6)
                assert model.breaker.state() == "half-open"
                srv.enqueue(Reply(content=ANSWER))
                done = await model.complete(MESSAGES)
                assert done.text == ANSWER and model.breaker.state() == "closed"
            return errors, sent_while_open, state

        errors, sent, state = run(scenario())
    assert "circuit open" in errors[2] and "circuit open" not in errors[1]
    assert sent == 2 and state == "open"


def test_cancel_calls_ends_a_hung_call_with_model_unavailable() -> None:
    with OpenAIStandin(default=Reply(content=ANSWER, delay_s=3600)) as srv:

        async def scenario() -> str:
            model = client(srv.url, model="qwen", timeout_s=3600)
            async with model:
                call = asyncio.create_task(model.complete(MESSAGES))
                await asyncio.sleep(0.5)
                model.cancel_calls()
                with pytest.raises(ModelUnavailable) as caught:
                    await asyncio.wait_for(call, 10)
                with pytest.raises(ModelUnavailable, match="shutting down"):
                    await model.complete(MESSAGES)
                return str(caught.value)

        assert "shutting down" in run(scenario())
