"""Ingest benchmark: hostile and large CI uploads against a real server, and ``tcfl ci --root``.

Starts its own ``tcfl serve`` on 127.0.0.1 (temporary SQLite file) and prints, per phase:

- ``fuzz``: generated malformed results files of every format (JUnit XML, pytest report-log,
  subunit v2, avocado results archives), mangled by type, depth, encoding and size, posted to the
  three routes that record runs (``/v1/ingest``, ``/v1/runs``, ``/v1/batches``) while a thread
  polls ``/healthz`` every 20 ms: the answers by status, how many 5xx, whether the good failed
  test of each ``/v1/ingest`` upload was still triaged, and ``/healthz`` p50/p99;
- ``hostile``: the hostile scripts ``/v1/triage`` refuses, sent to ``/v1/ingest`` too: both statuses;
- ``passes``: concurrent uploads of many passing tests each, while ``/healthz`` and a small
  ``/v1/triage`` are polled: their p99s, and the uploads' statuses and times;
- ``big``: one upload of many passes: wall time and the CPU the server and its workers spent;
- ``symlink``: ``tcfl ci --root`` over a checkout whose test file links to a file outside it:
  the warning, and whether the outside file's content appears in any output or in the database.

Everything is bounded and goes to loopback only. Run from the repository root:

    .venv/bin/python scripts/ingestbench.py                        # every phase
    .venv/bin/python scripts/ingestbench.py --phases fuzz --uploads 600
    .venv/bin/python scripts/ingestbench.py --phases passes,big --passes 10000 --big 100000 --per-file 50
"""

from __future__ import annotations

import argparse
import base64
import datetime as dt
import io
import json
import os
import random
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
import contextlib

from hostilebench import Watch, _tree, elif_chain, nested, percentile, server

REPO = Path(__file__).resolve().parents[1]
FORMATS = ("junit", "reportlog", "subunit", "avocado")
ROUTES = ("ingest", "runs", "batches")
SCRIPT = "def test_good():\n    x = 1\n    raise ValueError('boom')\n\n\ndef test_ok():\n    pass\n"
TRACE = (
    "Traceback (most recent call last):\n"
    '  File "/ci/test_mod.py", line 3, in test_good\n'
    "    raise ValueError('boom')\nValueError: boom\n"
)
GOOD_ID = "test_mod.test_good"
ODD = [
    "",
    " ",
    "\x00",
    "a\x00b",
    "\x1b[31mred",
    "\u2028",
    "NaN",
    "inf",
    "-1",
    "1,5",
    "1e999",
    "9" * 400,
    "x" * 1500,
    "../../etc/passwd",
    "é" * 10,
]
ODD_VALUES: list[Any] = [*ODD, None, True, 10**30, -1, 1.5, [], {}, [[["deep"]]], {"a": {"b": 1}}]


# -- generated malformed results files ------------------------------------------------------------


def _attr(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace('"', "&quot;")


def junit(rng: random.Random) -> tuple[str, bytes]:
    good = (
        '<testcase classname="test_mod" name="test_good" time="0.5">'
        f'<failure message="ValueError: boom">{_attr(TRACE)}</failure></testcase>'
        '<testcase classname="test_mod" name="test_ok" time="0.1"/>'
    )
    bad = []
    for _ in range(rng.randint(1, 4)):
        kind = rng.randint(0, 6)
        name, time_ = _attr(rng.choice(ODD)), _attr(rng.choice(ODD))
        classname = _attr(rng.choice(ODD))
        case = f'<testcase classname="{classname}" name="{name}" time="{time_}"><failure/></testcase>'
        if kind == 1:
            depth = rng.randint(1, 400)  # nested suites
            case = '<testsuite name="in">' * depth + case + "</testsuite>" * depth
        elif kind == 2:
            case = f'<testcase name="n&#0;ul" time="{time_}"><error message="&#x1b;"/></testcase>'
        elif kind == 3:
            case = f'<testcase name="{"y" * rng.randint(900, 3000)}"/>'
        bad.append(case)
    body = good + "".join(bad)
    head = '<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="s">'
    text = f"{head}{body}</testsuite></testsuites>"
    data = text.encode("utf-8", "surrogatepass")
    kind = rng.randint(0, 9)
    if kind == 0:
        data = data.replace(b'name="s"', b'name="\xff\xfe"')  # bytes that are not UTF-8
    elif kind == 1:
        data = text.replace("utf-8", "utf-16").encode("utf-16")
    elif kind == 2:
        data = data[: rng.randint(10, len(data))]  # truncated: a whole-file 422
    return "junit.xml", data


def _report(nodeid: Any, outcome: Any, **extra: Any) -> str:
    record = {
        "$report_type": "TestReport",
        "nodeid": nodeid,
        "location": ["test_mod.py", 0, str(nodeid)],
        "when": "call",
        "outcome": outcome,
        "duration": 0.1,
        "longrepr": None,
        **extra,
    }
    return json.dumps(record)


def reportlog(rng: random.Random) -> tuple[str, bytes]:
    lines = [
        _report("test_mod.py::test_good", "failed", longrepr=TRACE),
        _report("test_mod.py::test_ok", "passed"),
    ]
    for _ in range(rng.randint(1, 5)):
        kind = rng.randint(0, 5)
        if kind == 0:
            lines.append("{not json")
        elif kind == 1:
            lines.append('{"$report_type": "TestReport", "nodeid": ' + "[" * 3000 + "]" * 3000 + "}")
        elif kind == 2:
            lines.append(_report(rng.choice(ODD_VALUES), rng.choice(ODD_VALUES)))
        elif kind == 3:
            lines.append(_report("t.py::test_x", "failed", duration=rng.choice([float("nan"), "NaN", 1e308])))
        elif kind == 4:
            lines.append(_report("t.py::test_y", "failed", longrepr={"chain": rng.choice(ODD_VALUES)}))
        else:
            lines.append(_report("t.py::" + rng.choice(ODD), "failed", sections=rng.choice(ODD_VALUES)))
    rng.shuffle(lines)
    return "report.jsonl", ("\n".join(lines) + "\n").encode("utf-8", "surrogatepass")


def _packets(events: list[dict[str, Any]]) -> bytes:
    from subunit import StreamResultToBytes

    buffer = io.BytesIO()
    out = StreamResultToBytes(buffer)
    for event in events:
        out.status(**event)
    return buffer.getvalue()


def subunit(rng: random.Random) -> tuple[str, bytes]:
    t0 = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
    good = _packets(
        [
            {"test_id": "test_mod.test_good", "test_status": "inprogress", "timestamp": t0},
            {
                "test_id": "test_mod.test_good",
                "test_status": "fail",
                "timestamp": t0 + dt.timedelta(seconds=1),
                "file_name": "traceback",
                "file_bytes": TRACE.encode(),
                "mime_type": "text/plain",
            },
            {"test_id": "test_mod.test_ok", "test_status": "success", "timestamp": t0},
        ]
    )
    bad = []
    for _ in range(rng.randint(1, 4)):
        test_id = rng.choice(ODD) or "x"
        event = {
            "test_id": test_id,
            "test_status": rng.choice(["fail", "success", "exists", "uxsuccess", "inprogress"]),
            "timestamp": rng.choice([None, t0, dt.datetime(1970, 1, 1, tzinfo=dt.UTC)]),
            "file_name": "traceback",
            "file_bytes": rng.randbytes(rng.randint(0, 60)),
            "mime_type": "text/plain;charset=utf8",
        }
        try:
            data = _packets([event])
        except (UnicodeEncodeError, ValueError):
            data = _packets([{"test_id": "x", "test_status": "fail"}])
        if rng.random() < 0.4:
            data = data[:-1] + bytes([data[-1] ^ 0xFF])  # a damaged packet
        bad.append(data)
    parts = [good, *bad]
    rng.shuffle(parts)
    return "stream.subunit", b"".join(parts)


def _tar(members: list[tuple[str, bytes]]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def avocado(rng: random.Random) -> tuple[str, bytes]:
    tests: list[Any] = [
        {
            "id": "1-test_mod.py:test_good",
            "name": "test_mod.py:test_good",
            "status": "FAIL",
            "fail_reason": "boom",
            "time_elapsed": 0.5,
            "logdir": "/job/test-results/1-test_mod.py_test_good",
        },
        {"id": "2-test_mod.py:test_ok", "status": "PASS", "time_elapsed": 0.1, "logdir": "/x/2"},
    ]
    for _ in range(rng.randint(1, 4)):
        entry: dict[str, Any] = {"id": "3-bad.py:T.test", "status": "FAIL", "time_elapsed": 1}
        for key in rng.sample(["id", "name", "status", "fail_reason", "time_elapsed", "logdir"], 3):
            entry[key] = rng.choice(ODD_VALUES)
        tests.append(entry if rng.random() < 0.8 else rng.choice(ODD_VALUES))
    members = [
        ("job-1/results.json", json.dumps({"tests": tests}).encode("utf-8", "surrogatepass")),
        ("job-1/test-results/1-test_mod.py_test_good/debug.log", TRACE.encode()),
    ]
    if rng.random() < 0.2:
        members.append(("job-1/test-results/3/debug.log", rng.randbytes(200)))
    return "results.tar.gz", _tar(members)


GENERATORS: dict[str, Callable[[random.Random], tuple[str, bytes]]] = {
    "junit": junit,
    "reportlog": reportlog,
    "subunit": subunit,
    "avocado": avocado,
}


def runs_body(rng: random.Random, fmt: str) -> dict[str, Any]:
    """Run records as ``POST /v1/runs`` takes them: a good pass and failure, then mangled records."""
    runs: list[Any] = [
        {
            "test_id": "test_mod.py::test_ok",
            "verdict": "pass",
            "scripts": [{"path": "test_mod.py", "content": SCRIPT}],
        },
        {"test_id": "test_mod.py::test_good", "verdict": "fail", "log": TRACE},
    ]
    for _ in range(rng.randint(1, 3)):
        record: dict[str, Any] = {"test_id": f"{fmt}.py::test_{rng.randint(0, 10**6)}", "verdict": "fail"}
        for key in rng.sample(
            ["test_id", "verdict", "started_at", "env", "ci", "scripts", "log", "params"], 2
        ):
            record[key] = rng.choice(ODD_VALUES)
        runs.append(record)
    if rng.random() < 0.5:  # only the good ones: recorded
        runs = runs[:2]
    return {"runs": runs}


def batch_lines(rng: random.Random) -> bytes:
    good = {
        "scripts": [{"path": "test_mod.py", "content": SCRIPT}],
        "log": TRACE,
        "ranker": "heuristic",
        "test_id": GOOD_ID,
    }
    lines = [json.dumps(good)]
    if rng.random() < 0.5:
        bad = dict(good)
        bad[rng.choice(["test_id", "log", "k", "level", "log_functions"])] = rng.choice(ODD_VALUES)
        lines.append(json.dumps(bad))
    return ("\n".join(lines) + "\n").encode("utf-8", "surrogatepass")


# -- phases ------------------------------------------------------------------------------------


def fuzz(url: str, pid: int, uploads: int, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    statuses: Counter[str] = Counter()
    good_kept = good_seen = 0
    errors5xx: list[str] = []
    with Watch(url, pid) as watch, httpx.Client(base_url=url, timeout=120) as http:
        for n in range(uploads):
            fmt, route = FORMATS[n % 4], ROUTES[(n // 4) % 3]
            name, data = GENERATORS[fmt](rng)
            if route == "ingest":
                body = {
                    "results": {
                        "name": name,
                        "content": base64.b64encode(data).decode(),
                        "encoding": "base64",
                    },
                    "scripts": [{"path": "test_mod.py", "content": SCRIPT}],
                    "ranker": "heuristic",
                    "pipeline": "fuzz",
                    "job_id": str(n),
                }
                response = http.post("/v1/ingest", json=body)
                if response.status_code == 200:
                    good_seen += 1
                    tests = {t["test_id"]: t for t in response.json()["tests"]}
                    good = [t for k, t in tests.items() if "test_good" in k]
                    good_kept += bool(good) and all(t.get("triaged") for t in good)
            elif route == "runs":
                response = http.post("/v1/runs", json=runs_body(rng, fmt))
            else:
                response = http.post(
                    "/v1/batches", content=batch_lines(rng), headers={"content-type": "application/x-ndjson"}
                )
            statuses[f"{route} {response.status_code}"] += 1
            if response.status_code >= 500:
                errors5xx.append(f"{route} {fmt}: {response.text[:200]}")
    return {
        "uploads": uploads,
        "5xx": len(errors5xx),
        "first_5xx": errors5xx[:3],
        "statuses": dict(sorted(statuses.items())),
        "ingest_200": good_seen,
        "good_failure_triaged": good_kept,
        "healthz_p50_ms": round(percentile(watch.latencies, 0.5), 1),
        "healthz_p99_ms": round(percentile(watch.latencies, 0.99), 1),
        "healthz_failed": watch.failures,
    }


HOSTILE = {
    "elif-6000": lambda: elif_chain(6000),
    "if-400": lambda: nested("if x{i}:", 400),
    "calls-5000": lambda: "def test_good():\n    x = " + "f(" * 5000 + "1" + ")" * 5000 + "\n",
    "statements-60000": lambda: "def test_good():\n" + "".join(f"    x{i} = {i}\n" for i in range(60_000)),
}


def hostile(url: str) -> list[dict[str, Any]]:
    """Each hostile script through /v1/triage and /v1/ingest (as the failing test's script)."""
    rows = []
    with httpx.Client(base_url=url, timeout=300) as http:
        for name, make in HOSTILE.items():
            script = make()
            tri = http.post(
                "/v1/triage",
                json={
                    "scripts": [{"path": "test_mod.py", "content": script}],
                    "log": TRACE,
                    "ranker": "heuristic",
                },
            )
            junit_text = (
                '<testsuites><testsuite name="s"><testcase classname="test_mod" name="test_good">'
                f'<failure message="ValueError: boom">{_attr(TRACE)}</failure></testcase>'
                "</testsuite></testsuites>"
            )
            started = time.perf_counter()
            ing = http.post(
                "/v1/ingest",
                json={
                    "results": {"name": "junit.xml", "content": junit_text},
                    "scripts": [{"path": "test_mod.py", "content": script}],
                    "ranker": "heuristic",
                },
            )
            seconds = time.perf_counter() - started
            said, status = "", ing.status_code
            if ing.status_code == 200:  # the failure's own answer: the limit's status and message
                tests = ing.json()["tests"]
                status = tests[0].get("refused_status") if tests else None
                said = (tests[0].get("problem") or "").removeprefix("triage refused: ") if tests else ""
            else:
                said = str(ing.json().get("detail"))
            detail = str(tri.json().get("detail", ""))
            rows.append(
                {
                    "class": name,
                    "triage": tri.status_code,
                    "ingest": ing.status_code,
                    "ingest_failure": status,
                    "same_message": said == detail,
                    "ingest_s": round(seconds, 2),
                    "detail": detail[:90],
                }
            )
    return rows


def checkout(files: int, tests_per_file: int) -> list[dict[str, str]]:
    """Test files of plain test functions, as a CI checkout holds them."""
    out = []
    for f in range(files):
        body = "".join(
            f"def test_{t}():\n    value = {t}\n    if value > 1:\n        value -= 1\n"
            "    assert value >= 0\n\n\n"
            for t in range(tests_per_file)
        )
        out.append({"path": f"tests/test_m{f}.py", "content": body})
    return out


def passes_junit(count: int, files: int) -> bytes:
    per = max(1, count // files)
    cases = (
        f'<testcase classname="tests.test_m{i // per % files}" name="test_{i % per}" time="0.01"/>'
        for i in range(count)
    )
    return (
        '<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">'
        + "".join(cases)
        + "</testsuite></testsuites>"
    ).encode()


def _upload(http: httpx.Client, data: bytes, scripts: list[dict[str, str]], job: str) -> httpx.Response:
    body = {
        "results": {"name": "junit.xml", "content": data.decode()},
        "scripts": scripts,
        "ranker": "heuristic",
        "pipeline": "passes",
        "job_id": job,
    }
    response = http.post("/v1/ingest", json=body)
    for _ in range(60):  # refused for now (a limit of turns): again after the time it asks for
        if response.status_code not in (429, 503):
            break
        time.sleep(float(response.headers.get("retry-after", "5")))
        response = http.post("/v1/ingest", json=body)
    if response.status_code == 202:  # queued: follow its status URL until it is done
        where = response.headers.get("location") or response.json()["status_url"]
        while True:
            time.sleep(0.5)
            response = http.get(where)
            if response.status_code != 200 or response.json().get("status") not in ("queued", "running"):
                return response
    return response


def passes(url: str, pid: int, uploads: int, count: int, files: int) -> dict[str, Any]:
    scripts = checkout(files, max(1, count // files))
    data = passes_junit(count, files)
    small = {
        "scripts": [{"path": "test_mod.py", "content": SCRIPT}],
        "log": TRACE,
        "ranker": "heuristic",
    }
    triage_ms: list[float] = []
    statuses: Counter[str] = Counter()
    durations: list[float] = []
    stop = threading.Event()

    def small_loop() -> None:
        with httpx.Client(base_url=url, timeout=120) as http:
            while not stop.is_set():
                started = time.perf_counter()
                code = http.post("/v1/triage", json=small).status_code
                triage_ms.append((time.perf_counter() - started) * 1000)
                statuses[f"triage {code}"] += 1
                stop.wait(0.1)

    def upload(n: int) -> None:
        with httpx.Client(base_url=url, timeout=600) as http:
            started = time.perf_counter()
            response = _upload(http, data, scripts, f"p{n}-{time.time()}")
            durations.append(time.perf_counter() - started)
            statuses[f"ingest {response.status_code}"] += 1

    with Watch(url, pid) as idle:  # the baseline: /healthz on this machine with nothing else sent
        time.sleep(3)
    with Watch(url, pid) as watch:
        poller = threading.Thread(target=small_loop)
        poller.start()
        threads = [threading.Thread(target=upload, args=(n,)) for n in range(uploads)]
        started = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        wall = time.perf_counter() - started
        stop.set()
        poller.join()
    return {
        "uploads": uploads,
        "passes_each": count,
        "bytes_each": len(data),
        "wall_s": round(wall, 1),
        "upload_max_s": round(max(durations, default=float("nan")), 1),
        "statuses": dict(statuses),
        "healthz_p99_ms": round(percentile(watch.latencies, 0.99), 1),
        "healthz_max_ms": round(max(watch.latencies, default=float("nan")), 1),
        "healthz_idle_p99_ms": round(percentile(idle.latencies, 0.99), 1),
        "triage_p99_ms": round(percentile(triage_ms, 0.99), 1),
        "triage_count": len(triage_ms),
    }


def _cpu_s(pids: list[int]) -> float:
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += sum(int(v) for v in fields[11:15])  # utime, stime, cutime, cstime
    return total / ticks


def big(url: str, pid: int, count: int, files: int) -> dict[str, Any]:
    scripts = checkout(files, max(1, count // files))
    data = passes_junit(count, files)
    before = _cpu_s(_tree(pid))
    started = time.perf_counter()
    with httpx.Client(base_url=url, timeout=900) as http:
        response = _upload(http, data, scripts, f"big-{time.time()}")
    wall = time.perf_counter() - started
    cpu = _cpu_s(_tree(pid)) - before
    summary = response.json().get("summary", {}) if response.status_code == 200 else response.text[:200]
    return {
        "passes": count,
        "bytes": len(data),
        "status": response.status_code,
        "wall_s": round(wall, 1),
        "server_cpu_s": round(cpu, 1),
        "summary": summary,
    }


def symlink() -> dict[str, Any]:
    """``tcfl ci --root`` with a test file that links outside the checkout."""
    secret = f"TOKEN-{random.randrange(10**12)}-SECRET"
    with tempfile.TemporaryDirectory(prefix="ingestbench-") as tmp:
        base = Path(tmp)
        outside = base / "outside.py"
        outside.write_text(f"def test_good():\n    token = '{secret}'\n    raise ValueError(token)\n")
        root = base / "repo"
        root.mkdir()
        (root / "test_mod.py").symlink_to(outside)
        (root / "test_env.py").symlink_to("/proc/self/environ")  # the job's environment, the secret in it
        os.mkfifo(root / "test_fifo.py")  # reading it would block
        failing = "".join(
            f'<testcase classname="{name}" name="test_good">'
            f'<failure message="boom">{_attr(TRACE.replace("test_mod", name))}</failure></testcase>'
            for name in ("test_mod", "test_env", "test_fifo")
        )
        results = base / "junit.xml"
        results.write_text(
            f'<testsuites><testsuite name="s">{failing}'
            '<testcase classname="test_mod" name="test_ok"/></testsuite></testsuites>'
        )
        db = base / "h.db"
        summary = base / "summary.md"
        env = {k: v for k, v in os.environ.items() if not k.startswith(("TCFL_", "GITHUB_", "CI"))}
        env.update(GITHUB_STEP_SUMMARY=str(summary), PYTHONPATH=str(REPO), BENCH_SECRET=secret)
        outs: dict[str, str] = {}
        warned = False
        codes = {}
        for fmt in ("json", "text", "markdown"):
            proc = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "app.cli",
                    "ci",
                    str(results),
                    "--root",
                    str(root),
                    "--format",
                    fmt,
                    "--db",
                    f"sqlite:///{db}",
                    "--ranker",
                    "heuristic",
                    "--job-id",
                    fmt,
                    "--pipeline",
                    "p",
                ],
                capture_output=True,
                text=True,
                env=env,
                cwd=base,
                timeout=300,
            )
            outs[fmt] = proc.stdout + proc.stderr
            codes[fmt] = proc.returncode
            warned = warned or ("outside" in outs[fmt] and "not a regular file" in outs[fmt])
        found = [fmt for fmt, text in outs.items() if secret in text]
        if summary.exists() and secret in summary.read_text(errors="replace"):
            found.append("job summary")
        if db.exists() and secret.encode() in db.read_bytes():
            found.append("database (raw)")
        if db.exists():
            import sqlite3
            import zlib

            with sqlite3.connect(db) as conn:  # every column of every table, compressed or not
                tables = [t for (t,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
                for table in tables:
                    for row in conn.execute(f'SELECT * FROM "{table}"'):
                        for value in row:
                            raw = value if isinstance(value, bytes) else str(value).encode()
                            with contextlib.suppress(zlib.error):
                                raw = zlib.decompress(raw)
                            if secret.encode() in raw:
                                found.append(f"database ({table})")
    said = sorted(
        {line.strip()[:160] for text in outs.values() for line in text.splitlines() if "; refused" in line}
    )
    return {"warned": warned, "exit": codes, "content_found_in": found, "warnings": said[:4]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--phases", default="fuzz,hostile,passes,big,symlink")
    parser.add_argument("--uploads", type=int, default=520, help="malformed uploads in the fuzz phase")
    parser.add_argument("--seed", type=int, default=24)
    parser.add_argument("--concurrent", type=int, default=7, help="concurrent uploads in the passes phase")
    parser.add_argument("--passes", type=int, default=10_000, help="passes per upload in the passes phase")
    parser.add_argument("--big", type=int, default=100_000, help="passes in the big upload")
    parser.add_argument("--per-file", type=int, default=50, help="test functions per test file of the passes")
    parser.add_argument("--workers", type=int, default=2, help="analysis workers")
    args = parser.parse_args(argv)
    phases = [p.strip() for p in args.phases.split(",") if p.strip()]
    results: dict[str, Any] = {}
    if "symlink" in phases:
        results["symlink"] = symlink()
        print("symlink", json.dumps(results["symlink"]), flush=True)
    if set(phases) - {"symlink"}:
        # its batch worker on (batch items are analysed in the same pool), the limits at their defaults
        with server(args.workers, prefix="ingestbench-", stop_s=30) as (url, pid):
            for phase in phases:
                if phase == "fuzz":
                    results[phase] = fuzz(url, pid, args.uploads, args.seed)
                elif phase == "hostile":
                    results[phase] = hostile(url)
                elif phase == "passes":
                    results[phase] = passes(
                        url, pid, args.concurrent, args.passes, max(1, args.passes // args.per_file)
                    )
                elif phase == "big":
                    results[phase] = big(url, pid, args.big, max(1, args.big // args.per_file))
                else:
                    continue
                print(phase, json.dumps(results[phase]), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
