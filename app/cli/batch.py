"""``tcfl batch``: triage a folder of benchmark cases or a JSONL file into a JSONL file, resumably.

The work goes through the same database queue as ``POST /v1/batches``, so a run killed at any
point continues with ``--resume`` (same input, same content hash) without redoing finished items.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import sys
from pathlib import Path
from typing import Any, TextIO

from app.cli import UsageError
from app.cli.flags import add_option_flags
from app.cli.progress import ProgressBar
from app.settings import Settings

PROGRESS_INTERVAL_S = 0.25


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("batch", help="triage many failures into a JSONL file (resumable)")
    parser.add_argument(
        "input",
        type=Path,
        metavar="CASES_DIR_OR_JSONL",
        help="a folder of benchmark case files (*.json), a JSONL file of triage request bodies or "
        "benchmark cases, or CI results (JUnit XML, pytest report-log, subunit, an avocado job folder)",
    )
    parser.add_argument("--out", required=True, type=Path, help="where to write one result per line (JSONL)")
    parser.add_argument("--resume", action="store_true", help="continue the previous run of this same input")
    parser.add_argument(
        "--concurrency",
        type=int,
        help="items at once (default: TCFL_BATCH_IN_FLIGHT with a model server, else TCFL_BATCH_CONCURRENCY)",
    )
    parser.add_argument(
        "--model-url", help="OpenAI-compatible base URL ending in /v1 (overrides TCFL_MODEL_URL)"
    )
    add_option_flags(parser, "ranker_model")
    parser.add_argument("--worker-id", help="lease owner name (default HOST:batch:INPUT-HASH)")
    parser.add_argument(
        "--db", metavar="URL", help="database holding the queue and results (default: TCFL_DATABASE_URL)"
    )
    parser.add_argument(
        "--root",
        type=Path,
        help="for CI results input (JUnit, report-log, subunit, avocado job): the checkout (default: .)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from app.localize.llm import ModelClient
    from app.service.cases import InvalidInput, LimitExceeded, input_hash, to_case
    from app.store.store import Store, safe_url

    settings = _settings(args)
    skipped: list[str] = []
    try:
        requests = _read_input(args.input, settings, skipped, args.root)
        cases = []
        for i, (where, request) in enumerate(requests):
            try:
                cases.append(to_case(request, settings, where=f"case {i}: "))
            except (InvalidInput, LimitExceeded) as exc:
                skipped.append(f"{where}: {exc}")
    except (InvalidInput, LimitExceeded) as exc:
        raise UsageError(f"{args.input}: {exc}") from None
    for problem in skipped:
        print(f"tcfl batch: skipped {problem}", file=sys.stderr)
    if not cases:
        raise UsageError(f"{args.input}: no case could be read ({len(skipped)} skipped)")
    try:
        ModelClient.from_settings(settings)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    digest = input_hash(cases)
    try:
        store = Store.open(settings.database_url)
    except Exception as exc:
        raise UsageError(f"cannot open the database {safe_url(settings.database_url)}: {exc}") from None
    try:
        batch_id = store.find_batch(digest) if args.resume else None
        if batch_id is None:
            if args.resume:
                print("tcfl batch: no earlier run of this input; starting a new one", file=sys.stderr)
            batch_id = store.create_batch(cases, source="cli", input_sha256=digest)
        else:
            print(f"tcfl batch: resuming batch {batch_id}", file=sys.stderr)
        worker_id = args.worker_id or f"{socket.gethostname()}:batch:{digest[:12]}"
        asyncio.run(_work(store, settings, batch_id, worker_id, in_flight(args.concurrency, settings)))
        rows = store.batch_results(batch_id)
    finally:
        store.close()
    _write_jsonl(args.out, rows)
    failed = sum(1 for r in rows if r["status"] == "failed")
    print(
        f"tcfl batch: batch {batch_id}: {len(rows) - failed} done, {failed} failed, "
        f"{len(skipped)} skipped -> {args.out}",
        file=sys.stderr,
    )
    return 1 if failed or skipped else 0


def in_flight(concurrency: int | None, settings: Settings) -> int:
    """Items at once: enough for a model server's continuous batching, else a few for the static phase."""
    if concurrency is not None:
        return concurrency
    return settings.batch_in_flight if settings.model_url else settings.batch_concurrency


def _settings(args: argparse.Namespace) -> Settings:
    from app.settings import SettingsError

    if args.concurrency is not None and args.concurrency < 1:
        raise UsageError(f"--concurrency must be >= 1, got {args.concurrency}")
    try:
        settings = Settings()
    except SettingsError as exc:
        first = exc.errors()[0]
        raise UsageError(f"invalid TCFL_ setting {first['loc']}: {first['msg']}") from None
    if args.model_url:
        settings = settings.model_copy(update={"model_url": args.model_url})
    if args.db:
        settings = settings.model_copy(update={"database_url": args.db})
    if args.ranker_model:
        settings = settings.model_copy(update={"ranker_model": args.ranker_model})
    return settings


def _read_input(
    path: Path, settings: Settings, skipped: list[str], root: Path | None
) -> list[tuple[str, Any]]:
    """(where, triage request) pairs; unreadable case files and lines go to ``skipped``, named."""
    from app.service.cases import check_batch_size

    if path.is_dir() and not (path / "results.json").is_file():
        files = sorted(path.glob("*.json"))
        if not files:
            raise UsageError(f"{path}: no *.json case files in this folder")
        check_batch_size(len(files), settings)
        requests = []
        for file in files:
            try:
                requests.append((str(file), _request(json.loads(file.read_text(encoding="utf-8")))))
            except (ValueError, OSError) as exc:
                skipped.append(f"{file}: {exc}")
        return requests
    if path.is_dir() or _is_results_file(path):
        return _from_results(path, settings, root)
    try:
        text = path.read_bytes().decode("utf-8")
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path}: not UTF-8 (byte {exc.start})") from None
    lines = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    if not lines:
        raise UsageError(f"{path}: holds no cases")
    check_batch_size(len(lines), settings)
    requests = []
    for n, line in lines:
        try:
            requests.append((f"{path} line {n}", _request(json.loads(line))))
        except ValueError as exc:
            skipped.append(f"{path} line {n}: {exc}")
    return requests


def _request(raw: Any) -> Any:
    """A triage request body, or a benchmark case (extra keys and extra per-file keys allowed)."""
    from pydantic import ValidationError

    from app.service.cases import InvalidInput, request_from_benchmark
    from app.service.schemas import TriageRequest

    if isinstance(raw, dict) and "test_files" in raw and "scripts" not in raw:
        files = raw["test_files"]
        if isinstance(files, list):
            files = [
                {"path": f.get("path"), "content": f.get("content")} if isinstance(f, dict) else f
                for f in files
            ]
        try:
            return request_from_benchmark({**raw, "test_files": files})
        except InvalidInput as exc:
            raise ValueError(str(exc)) from None
    try:
        return TriageRequest.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        raise ValueError(f"{where}: {first.get('msg')}" if where else str(first.get("msg"))) from None


def _is_results_file(path: Path) -> bool:
    from app.ingest import sniff

    try:
        with path.open("rb") as handle:
            head = handle.read(4096)
    except OSError:
        return False
    return sniff(head) in ("junit", "reportlog", "subunit")


def _from_results(path: Path, settings: Settings, root: Path | None) -> list[tuple[str, Any]]:
    """One case per failed test of a CI results file, its scripts found under ``root``."""
    from app.ingest import IngestError, read_results
    from app.ingest.resolve import Checkout, find_scripts
    from app.service.schemas import TriageRequest

    try:
        results = read_results(path)
    except IngestError as exc:
        raise UsageError(str(exc)) from None
    checkout = Checkout.scan(root or Path.cwd())
    requests = []
    for run in results.failed:
        scripts, _ = find_scripts(run, checkout, max_files=settings.max_files_per_case)
        if not scripts or not run.log.strip():
            print(f"tcfl batch: skipped {run.test_id}: no script or no log found", file=sys.stderr)
            continue
        body = {
            "scripts": [{"path": s.path, "content": s.content} for s in scripts],
            "log": run.log,
            "test_id": run.test_id[:200],
        }
        requests.append((run.test_id, TriageRequest.model_validate(body)))
    if not requests:
        raise UsageError(f"{path}: no failed test with scripts and a log ({len(results.failed)} failed)")
    return requests


async def _work(store: Any, settings: Settings, batch_id: int, worker_id: str, concurrency: int) -> None:
    from app.localize.llm import ModelClient
    from app.service.jobs import Worker
    from app.service.metrics import Metrics
    from app.service.runner import Runner

    client = ModelClient.from_settings(
        settings.model_copy(update={"model_concurrency": max(concurrency, settings.model_concurrency)})
    )
    try:
        worker = Worker(
            store,
            Runner(client, Metrics()),
            worker_id=worker_id,
            concurrency=concurrency,
            batch_id=batch_id,
        )
        progress = asyncio.create_task(_progress(store, batch_id, sys.stderr))
        try:
            await worker.run(until_idle=True)
        finally:
            progress.cancel()
            await asyncio.gather(progress, return_exceptions=True)
    finally:
        if client is not None:
            await client.aclose()


async def _progress(store: Any, batch_id: int, stream: TextIO) -> None:
    """A rich progress bar on a terminal; nothing when stderr is a file or a pipe.

    The first read is synchronous: the bar is drawn before this task first yields, so a batch that
    finishes (and cancels this task) quickly still shows its bar and final count.
    """
    view = store.get_batch(batch_id, with_items=False)
    bar = ProgressBar(f"batch {batch_id}", view["total"], stream=stream)
    if not bar.active:
        return
    with bar:
        try:
            while True:
                bar.update(view["done"] + view["failed"], view["failed"])
                await asyncio.sleep(PROGRESS_INTERVAL_S)
                view = await asyncio.to_thread(store.get_batch, batch_id, with_items=False)
        finally:
            view = store.get_batch(batch_id, with_items=False)
            bar.update(view["done"] + view["failed"], view["failed"])


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    """Write next to the target, then rename: a crash never leaves half a file under the real name."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with tmp.open("w", encoding="utf-8") as out:
            for row in rows:
                out.write(json.dumps(row, ensure_ascii=False) + "\n")
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise UsageError(f"cannot write {path}: {exc.strerror}") from None
