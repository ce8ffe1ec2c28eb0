"""`tcfl bench`: the static phase as triage runs it, against the bare tree-sitter parse of the same script.

For each script and log size it times, in this process: the bare parse; triage's static phase
(analysis of the asked trace variant, rendered code and prompt, as ``timings.static_ms``); the
built-in ranking; and `tcfl trace`'s analysis (every variant, per-line explanations). It prints
medians, ratios to the bare parse, and the static phase's peak traced memory against the log's
size. It asserts nothing. Synthetic scripts look like real system tests; ``--script`` adds real
ones, each paired with a log made of its own log statements' texts (docs/design.md §9 sets the
budget: tens of milliseconds on 250 lines with a 1,000-line log, and linear growth).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from app.analysis.model import Script
from app.cli.bench import add_arguments

TEMPLATE = '''\
def step_{i}(session, target):
    """Step {i} of the scenario."""
    logger.info("step {i}: preparing %s", target)
    result = session.run("cmd-{i} --target %s" % target)
    if result.exit_status != 0:
        logger.warning("step {i}: command failed with %d", result.exit_status)
        raise StepError("step {i} failed")
    for attempt in range(3):
        try:
            value = session.poll(target, timeout={i})
        except TimeoutError:
            logger.debug(f"step {i}: retry {{attempt}}")
            continue
        else:
            break
    print("step {i} value:", value)
    return value

'''
SYNTHETIC_PATH = "tests/test_big.py"
DEFAULT_SIZES = ((250, 1_000), (1_000, 10_000), (2_500, 100_000))


def make_script(lines: int) -> str:
    parts: list[str] = ["import logging\n\nlogger = logging.getLogger(__name__)\n\n"]
    i = 0
    while sum(p.count("\n") for p in parts) < lines - 12:
        parts.append(TEMPLATE.format(i=i))
        i += 1
    calls = "".join(f"    step_{j}(session, 'dut')\n" for j in range(i))
    parts.append(f"def test_scenario(session):\n    logger.info('scenario start')\n{calls}")
    return "".join(parts)


def make_log(script: str, lines: int, seed: int = 7) -> str:
    """A synthetic script's log: mostly framework noise, some step messages, then a traceback."""
    rng = random.Random(seed)
    steps = script.count("def step_")
    done = max(1, steps * 2 // 3)
    out: list[str] = ["2024-05-01 10:00:00,000 INFO test: scenario start"]
    step = 0
    while len(out) < lines - 8:
        r = rng.random()
        if r < 0.15 and step < done:
            out.append(f"2024-05-01 10:00:01,{len(out) % 1000:03d} INFO test: step {step}: preparing dut")
            out.append(f"step {step} value: {rng.randint(0, 99)}")
            step += 1
        elif r < 0.2:
            out.append(f"2024-05-01 10:00:02,000 DEBUG test: step {step}: retry {rng.randint(0, 2)}")
        else:
            out.append(
                f"2024-05-01 10:00:03,{rng.randint(0, 999):03d} DEBUG framework.transport: "
                f"channel {rng.randint(1, 9)} sent {rng.randint(10, 9999)} bytes"
            )
    out += [
        "2024-05-01 10:00:04,000 ERROR test: Traceback (most recent call last):",
        f'  File "/ci/{SYNTHETIC_PATH}", line {script.count(chr(10))}, in test_scenario',
        f"    step_{done}(session, 'dut')",
        f'  File "/ci/{SYNTHETIC_PATH}", line 7, in step_0',
        '    raise StepError("step 0 failed")',
        "StepError: step failed",
    ]
    return "\n".join(out) + "\n"


def log_for(script: Script, lines: int, seed: int = 7) -> str:
    """A log for a real script: its own log statements' texts, framework noise, a final traceback."""
    from app.analysis.logstatements import find_log_statements
    from app.analysis.source import normalize_newlines, parse_program, parse_tree

    content = normalize_newlines(script.content)
    tree = parse_tree(content)
    texts = [" ".join(ls.parts) for ls in find_log_statements(tree.root_node, script.path) if ls.parts]
    program = parse_program([script], [tree])
    body = [s for s in program.statements if program.function(s.function).kind == "function"]
    last = body[-1] if body else program.statements[-1] if program.statements else None
    rng = random.Random(seed)
    out: list[str] = []
    while len(out) < lines - 4:
        if texts and rng.random() < 0.3:
            message = rng.choice(texts)
        else:
            message = f"channel {rng.randint(1, 9)} sent {rng.randint(10, 9999)} bytes"
        out.append(f"2024-05-01 10:00:{len(out) % 60:02d},{rng.randint(0, 999):03d} INFO test: {message}")
    out.append("Traceback (most recent call last):")
    if last is not None:
        code = content.split("\n")[last.start_line - 1].strip()
        out += [f'  File "/ci/{script.path}", line {last.start_line}, in {last.function}', f"    {code}"]
    out.append("AssertionError: bench")
    return "\n".join(out) + "\n"


def parse_logs(lines: int) -> dict[str, str]:
    """Logs of ``lines`` lines for the log-parsing figures: prefixed (the static-phase log: a
    timestamp, level and logger, some unprefixed value lines, a final traceback), the same
    messages without prefixes (plain), and an avocado job log."""
    prefixed = make_log(make_script(50), lines)
    plain = "\n".join(ln.split(": ", 1)[-1] if ln.startswith("2024-") else ln for ln in prefixed.split("\n"))
    avocado = "\n".join(
        f"2017-09-16 16:38:59,{i % 1000:03d} stacktrace       L{i % 90:04d} INFO | step {i}: value {i * 7}"
        for i in range(lines)
    )
    return {"prefixed": prefixed, "plain": plain, "avocado": avocado + "\n"}


def measure_log(name: str, text: str, repeat: int) -> dict[str, Any]:
    """Median microseconds per line of ``parse_log`` and its peak traced memory over the log's size."""
    import gc

    from app.analysis.logparse import parse_log

    lines = text.count("\n") or 1
    gc.collect()
    ms = _median_ms(lambda: parse_log(text), repeat)
    gc.collect()
    tracemalloc.start()
    try:
        parse_log(text)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    size = len(text.encode("utf-8"))
    return {
        "log": name,
        "lines": lines,
        "log_bytes": size,
        "us_per_line": round(ms * 1000 / lines, 3),
        "peak_x_log": round(peak / max(size, 1), 2),
    }


def log_rows(lines: int, repeat: int) -> list[dict[str, Any]]:
    from app.analysis.logparse import parse_log

    parse_log("2024-05-01 10:00:00,000 INFO test: warm\n")  # the format patterns compile on first use
    return [measure_log(name, text, repeat) for name, text in parse_logs(lines).items()]


LOG_HEADER = f"{'log':<10} {'lines':>8} {'MB':>6} {'us/line':>8} {'peak/size':>9}"


def log_row(r: dict[str, Any]) -> str:
    return (
        f"{r['log']:<10} {r['lines']:>8} {r['log_bytes'] / 1e6:>6.1f} {r['us_per_line']:>8.2f}"
        f" {r['peak_x_log']:>9.2f}"
    )


# --------------------------------------------------------------------------------------------
# `tcfl bench --ci`: a generated CI job of a system-test suite, triaged by `tcfl ci`
# --------------------------------------------------------------------------------------------

CI_TEST = """\
def test_case_{i:04d}(dut):
    log.info("case {i}: configuring %s port {port}", dut.name)
    value = helpers.configure(dut, "eth{port}", mtu={mtu})
    if value is None:
        log.warning("case {i}: port {port} gave no value")
        raise AssertionError("case {i}: configure gave nothing")
    log.info("case {i}: value is %s", value)
    result = helpers.measure(dut, value)
    assert result == {expected}, f"case {i}: {{result}} != {expected}"
    log.info("case {i}: done")

"""
CI_HELPERS = '''\
"""Helpers the generated suite's modules share."""

import logging

log = logging.getLogger(__name__)
PORTS = {ports}


def configure(dut, port, mtu=1500):
    log.debug("configuring %s on %s", port, dut.name)
    entry = PORTS.get(port)
    if entry is None:
        log.error("unknown port %s", port)
        return None
    entry = dict(entry, mtu=mtu)
    log.info("port %s configured with mtu %d", port, entry["mtu"])
    return entry["mtu"] // 100


def measure(dut, value):
    log.debug("measuring %s on %s", value, dut.name)
    reading = dut.read(value)
    return reading["value"] * 2
'''
CI_CONFTEST = """\
import pytest


class Dut:
    name = "dut1"

    def read(self, value):
        return {"value": value}


@pytest.fixture
def dut():
    return Dut()
"""


@dataclass(frozen=True)
class CiJob:
    """A generated job: its checkout folder, its JUnit results file and its sizes."""

    root: Path
    results: Path
    tests: int
    failures: int
    modules: int
    scripts: tuple[Path, ...]


def make_ci_job(
    folder: Path, *, tests: int = 10_000, failures: int = 500, modules: int = 50, seed: int = 7
) -> CiJob:
    """A seeded CI job of a system-test suite: ``modules`` test modules (about 2,000 lines each at
    the default sizes) sharing a helper module and a conftest fixture, and the JUnit XML of one run
    of its ``tests`` tests, ``failures`` of them failed with their captured log and traceback."""
    from xml.sax.saxutils import escape

    rng = random.Random(seed)
    root = folder / "checkout"
    (root / "tests").mkdir(parents=True, exist_ok=True)
    (root / "lib").mkdir(exist_ok=True)
    (root / "lib" / "__init__.py").write_text("")
    ports = {f"eth{p}": {"speed": 1000 * (p + 1), "mtu": 1500} for p in range(8)}
    (root / "lib" / "helpers.py").write_text(CI_HELPERS.format(ports=ports))
    (root / "tests" / "conftest.py").write_text(CI_CONFTEST)
    per_module = -(-tests // modules)
    failed = set(rng.sample(range(tests), failures))
    cases: list[str] = []
    scripts = [root / "lib" / "helpers.py", root / "tests" / "conftest.py"]
    for m in range(modules):
        body = ["import logging\n\nfrom lib import helpers\n\nlog = logging.getLogger(__name__)\n\n\n"]
        first = 8  # the line of the first test's def
        module = f"tests/test_mod_{m:02d}.py"
        for i in range(m * per_module, min(tests, (m + 1) * per_module)):
            port, mtu, expected = i % 8, 1500 + 100 * (i % 5), 2 * (15 + i % 5)
            body.append(CI_TEST.format(i=i, port=port, mtu=mtu, expected=expected))
            name = f"test_case_{i:04d}"
            head = f'<testcase classname="tests.test_mod_{m:02d}" name="{name}" time="{rng.random():.3f}"'
            if i not in failed:
                cases.append(head + "/>")
            else:
                log, report = _ci_failure(rng, i, port, mtu, expected, module, first)
                cases.append(
                    f'{head}><failure message="{escape(report.splitlines()[-1], {chr(34): "&quot;"})}">'
                    f"{escape(report)}</failure><system-out>{escape(log)}</system-out></testcase>"
                )
            first += CI_TEST.count("\n")
        path = root / module
        path.write_text("".join(body))
        scripts.append(path)
    xml = (
        '<?xml version="1.0" encoding="utf-8"?>\n<testsuites><testsuite name="pytest" '
        f'tests="{tests}" failures="{failures}">\n' + "\n".join(cases) + "\n</testsuite></testsuites>\n"
    )
    results = folder / "junit.xml"
    results.write_text(xml)
    return CiJob(root, results, tests, failures, modules, tuple(scripts))


def _ci_failure(
    rng: random.Random, i: int, port: int, mtu: int, expected: int, module: str, first: int
) -> tuple[str, str]:
    """A failed test's captured log (framework noise among its own messages) and its report: an
    assertion in the test, or a crash inside the helper module."""
    stamp = "2024-05-01 10:00:{:02d},{:03d}"
    lines = []
    for n in range(rng.randint(20, 120)):
        lines.append(
            f"{stamp.format(n % 60, rng.randint(0, 999))} DEBUG framework.transport: "
            f"channel {rng.randint(1, 9)} sent {rng.randint(10, 9999)} bytes"
        )
        if n == 3:
            lines.append(
                f"{stamp.format(n % 60, 0)} INFO {module[:-3].replace('/', '.')}: "
                f"case {i}: configuring dut1 port {port}"
            )
            lines.append(
                f"{stamp.format(n % 60, 1)} INFO lib.helpers: port eth{port} configured with mtu {mtu}"
            )
    crash = rng.random() < 0.3
    if not crash:
        got = expected + rng.choice((-2, 2, 4))
        lines.append(
            f"{stamp.format(59, 2)} INFO {module[:-3].replace('/', '.')}: case {i}: value is {mtu // 100}"
        )
        report = (
            "Traceback (most recent call last):\n"
            f'  File "/ci/build/{module}", line {first + 8}, in test_case_{i:04d}\n'
            f'    assert result == {expected}, f"case {i}: {{result}} != {expected}"\n'
            f"AssertionError: case {i}: {got} != {expected}"
        )
    else:
        report = (
            "Traceback (most recent call last):\n"
            f'  File "/ci/build/{module}", line {first + 2}, in test_case_{i:04d}\n'
            f'    value = helpers.configure(dut, "eth{port}", mtu={mtu})\n'
            '  File "/ci/build/lib/helpers.py", line 16, in configure\n'
            '    log.info("port %s configured with mtu %d", port, entry["mtu"])\n'
            "KeyError: 'mtu'"
        )
    return "\n".join(lines) + "\n", report


REPO = Path(__file__).resolve().parents[1]
PERF_SCRIPT = REPO / "tests" / "data" / "perf" / "test_qos_sai.py"  # a real 2,784-line script
CI_LOG_POINTS = (1_000, 100_000, 1_000_000)
CI_PARTS = ("job", "logs", "server")


def _child_usage(argv: list[str], *, cwd: Path) -> tuple[float, float, int]:
    """Run ``argv`` to its end: (CPU seconds, user + system, of it and its children; peak resident
    MiB of the largest of them; exit status). TCFL_ settings of this shell are left out."""
    import os
    import subprocess

    env = {k: v for k, v in os.environ.items() if not k.startswith("TCFL_")}
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, proc.returncode


def ci_job_row(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    """`tcfl ci` on the generated job, with the CI history stored (a new SQLite file) and without,
    each a new process; beside them the bare tree-sitter parse of every script of the job."""
    from app.analysis.source import parse_tree
    from app.ingest import read_results

    job = make_ci_job(
        work, tests=args.ci_tests, failures=args.ci_failures, modules=args.ci_modules, seed=args.seed
    )
    texts = [p.read_text() for p in job.scripts]
    parse_ms = _median_ms(lambda: [parse_tree(t) for t in texts], 3)
    read_ms = _median_ms(lambda: read_results(job.results, "auto"), 3)
    command = [sys.executable, "-m", "app.cli", "ci", str(job.results), "--root", str(job.root)]
    command += ["--format", "json", "--out", str(work / "report.json")]
    runs: dict[str, dict[str, Any]] = {}
    for name, extra in (("no_store", ["--no-store"]), ("stored", ["--db", f"sqlite:///{work / 'ci.db'}"])):
        cpu_s, peak_mib, status = _child_usage([*command, *extra], cwd=REPO)
        runs[name] = {
            "cpu_s": round(cpu_s, 3),  # to the millisecond: a small job takes a fraction of a second
            "ms_per_failed_test": round(cpu_s * 1000 / max(job.failures, 1), 2),
            "peak_mib": round(peak_mib, 1),
            "exit_status": status,
        }
    return {
        "tests": job.tests,
        "failures": job.failures,
        "modules": job.modules,
        "script_lines": sum(t.count("\n") for t in texts),
        "parse_scripts_ms": round(parse_ms, 2),
        "read_results_ms": round(read_ms, 2),
        **runs,
        "stored_x_no_store": round(runs["stored"]["cpu_s"] / max(runs["no_store"]["cpu_s"], 1e-9), 2),
    }


def ci_log_rows(args: argparse.Namespace) -> list[dict[str, Any]]:
    """The static phase of a real 2,784-line script (else a synthetic one) with logs of its own
    messages at each size, against the script's bare parse; and log parsing per line."""
    from app.analysis.logparse import parse_log
    from app.analysis.source import normalize_newlines, parse_tree
    from app.triage import prepare

    if PERF_SCRIPT.is_file():
        script = Script(PERF_SCRIPT.name, PERF_SCRIPT.read_text(encoding="utf-8"))
    else:
        script = Script(SYNTHETIC_PATH, make_script(2_500))
    options = _default_options()
    content = normalize_newlines(script.content)
    parse_ms = _median_ms(lambda: parse_tree(content), 5)
    prepare([script], log_for(script, 50), options)  # grammar, queries, patterns
    rows = []
    for lines in args.log_lines or CI_LOG_POINTS:
        log = log_for(script, lines)
        repeat = max(1, min(args.repeat, 3 if lines <= 100_000 else 1))
        static_ms = _median_ms(lambda log=log: prepare([script], log, options), repeat, setup=forget_files)
        log_ms = _median_ms(lambda log=log: parse_log(log), repeat)
        count = log.count("\n")
        rows.append(
            {
                "script": script.path,
                "script_lines": content.count("\n") + 1,
                "log_lines": count,
                "parse_ms": round(parse_ms, 3),
                "static_ms": round(static_ms, 2),
                "static_x_parse": round(static_ms / parse_ms, 2),
                "parse_log_us_per_line": round(log_ms * 1000 / max(count, 1), 3),
            }
        )
    return rows


def _loadbench() -> Any:
    """scripts/loadbench.py, the service's load benchmark, as a module (its server and client)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("tcfl_loadbench", REPO / "scripts" / "loadbench.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def ci_server_row(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    """`tcfl serve` (one process, its analysis workers beside) against the trivial endpoint of
    ``tcfl_lab.trivial`` on the same uvicorn setup: the same small request (the README example,
    heuristic ranker) sent over keep-alive connections; CPU per request of the main process."""
    import asyncio
    import os
    import socket
    import subprocess

    load = _loadbench()
    payload = load.body("heuristic")
    requests, concurrency = args.ci_requests, 20

    def fire(url: str, pid: int) -> dict[str, Any]:
        return asyncio.run(load.fire(url, payload, requests, concurrency, 300.0, server_pid=pid))  # type: ignore[no-any-return]

    with load.server(work, {}) as (url, pid):
        tcfl = fire(url, pid)
    port = load.free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("TCFL_")}
    trivial = subprocess.Popen(
        [sys.executable, "-m", "tcfl_lab.trivial", str(port)], cwd=REPO, env=env, stderr=subprocess.DEVNULL
    )
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if trivial.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit("tcfl bench: the trivial endpoint did not start") from None
                time.sleep(0.1)
        base = fire(url, trivial.pid)
    finally:
        load.stop(trivial)
    keys = ("requests_per_s", "p50_ms", "server_main_cpu_ms_per_request", "server_cpu_ms_per_request", "ok")
    return {
        "requests": requests,
        "concurrency": concurrency,
        "tcfl": {k: tcfl.get(k) for k in keys},
        "trivial": {k: base.get(k) for k in keys},
        "throughput_x_trivial": round(tcfl["requests_per_s"] / max(base["requests_per_s"], 1e-9), 3),
        "main_cpu_x_trivial": round(
            tcfl["server_main_cpu_ms_per_request"] / max(base["server_main_cpu_ms_per_request"], 1e-9), 2
        ),
    }


def ci_bench(args: argparse.Namespace) -> dict[str, Any]:
    import tempfile

    parts = args.ci_parts or CI_PARTS
    out: dict[str, Any] = {"clock": "cpu", "seed": args.seed}
    with tempfile.TemporaryDirectory(prefix="tcfl-bench-ci-") as folder:
        work = Path(folder)
        if "job" in parts:
            out["job"] = ci_job_row(args, work / "job")
        if "logs" in parts:
            out["logs"] = ci_log_rows(args)
        if "server" in parts:
            (work / "server").mkdir()
            out["server"] = ci_server_row(args, work / "server")
    return out


def print_ci(body: dict[str, Any]) -> None:
    job = body.get("job")
    if job is not None:
        print(
            f"tcfl ci on a generated job: {job['tests']} tests, {job['failures']} failed, "
            f"{job['modules']} modules ({job['script_lines']} lines of scripts); CPU of the process"
        )
        print(
            f"  bare parse of the job's scripts {job['parse_scripts_ms']:.1f} ms,"
            f" reading the results {job['read_results_ms']:.1f} ms"
        )
        for name in ("no_store", "stored"):
            r = job[name]
            print(
                f"  {name:<9} {r['cpu_s']:>8.2f} s  {r['ms_per_failed_test']:>8.2f} ms/failed test"
                f"  peak {r['peak_mib']:>7.1f} MiB  exit {r['exit_status']}"
            )
        print(f"  stored / no-store: {job['stored_x_no_store']:.2f}x")
    for row in body.get("logs", ()):
        print(
            f"static phase, {row['script']} ({row['script_lines']} lines), {row['log_lines']:>8} log lines:"
            f" {row['static_ms']:>9.1f} ms = {row['static_x_parse']:>6.1f}x the parse"
            f" ({row['parse_ms']:.2f} ms);"
            f" parse_log {row['parse_log_us_per_line']:.2f} us/line"
        )
    server = body.get("server")
    if server is not None:
        for name in ("tcfl", "trivial"):
            r = server[name]
            print(
                f"{name:<8} {r['requests_per_s']:>8.1f} req/s, main process"
                f" {r['server_main_cpu_ms_per_request']} ms CPU/request"
                f" (all processes {r['server_cpu_ms_per_request']})"
            )
        print(
            f"tcfl serve / trivial endpoint: throughput {server['throughput_x_trivial']:.3f}x, "
            f"main-process CPU {server['main_cpu_x_trivial']:.1f}x"
        )


CLOCKS: dict[str, Callable[[], float]] = {"cpu": time.process_time, "wall": time.perf_counter}
_clock: list[Callable[[], float]] = [time.process_time]


def forget_files() -> None:
    """A script's first static phase: what the analysis keeps per file (trees, checks, log calls,
    syntax-fact walks) forgotten, as a process that never saw the script has it."""
    from app.analysis import parsed
    from app.localize.channels import facts

    parsed._FILES = parsed._FileCache()
    facts._WALKS = facts._Walks(facts._WALKS.size)


def _median_ms(fn: Callable[[], object], repeat: int, *, setup: Callable[[], object] | None = None) -> float:
    """Median over ``repeat`` runs; CPU time by default, steadier than wall time on a shared machine.
    ``setup`` runs before each, untimed."""
    clock = _clock[0]
    samples: list[float] = []
    for _ in range(repeat):
        if setup is not None:
            setup()
        t0 = clock()
        fn()
        samples.append((clock() - t0) * 1000)
    return statistics.median(samples)


def measure(script: Script, log: str, repeat: int, *, trace: bool = True) -> dict[str, Any]:
    """One row: medians in ms, ratios to the bare parse, peak traced memory of the static phase."""
    from app.analysis.model import VARIANTS
    from app.analysis.parsed import ParseCache
    from app.analysis.pipeline import analyze
    from app.analysis.source import normalize_newlines, parse_tree
    from app.options import TriageOptions
    from app.rankers.heuristic import HeuristicRanker
    from app.triage import prepare

    options = TriageOptions()
    content = normalize_newlines(script.content)
    parse_ms = _median_ms(lambda: parse_tree(content), max(repeat, 5))
    static_ms = _median_ms(lambda: prepare([script], log, options), repeat, setup=forget_files)
    # the same script with its parse kept, as the service, tcfl ci and history see a test file again
    parses = ParseCache()
    prepare([script], log, options, parses=parses)
    seen_ms = _median_ms(lambda: prepare([script], log, options, parses=parses), repeat)
    request = prepare([script], log, options)
    # as a first triage of the script ranks: its syntax facts built, not read from a kept parse
    cold = replace(request, analysis=replace(request.analysis, parsed=None))
    rank_ms = _median_ms(lambda: HeuristicRanker.picks(cold, options.k), repeat)
    trace_ms = None
    if trace:
        trace_ms = _median_ms(
            lambda: analyze([script], log, variants=VARIANTS, explain=True), repeat, setup=forget_files
        )
    request = cold = None  # free them before measuring memory
    tracemalloc.start()
    try:
        kept = prepare([script], log, options)
        HeuristicRanker.picks(kept, options.k)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    log_bytes = len(log.encode("utf-8"))
    return {
        "script": script.path,
        "script_lines": content.count("\n") + 1,
        "log_lines": log.count("\n"),
        "log_bytes": log_bytes,
        "parse_ms": round(parse_ms, 3),
        "static_ms": round(static_ms, 3),
        "static_seen_ms": round(seen_ms, 3),
        "rank_ms": round(rank_ms, 3),
        "trace_ms": None if trace_ms is None else round(trace_ms, 3),
        "static_x_parse": round(static_ms / parse_ms, 2),
        "triage_x_parse": round((static_ms + rank_ms) / parse_ms, 2),
        "trace_x_parse": None if trace_ms is None else round(trace_ms / parse_ms, 2),
        "peak_mib": round(peak / 2**20, 2),
        "peak_x_log": round(peak / max(log_bytes, 1), 2),
    }


def cases(args: argparse.Namespace) -> list[tuple[Script, str]]:
    out: list[tuple[Script, str]] = []
    sizes = list(zip(args.script_lines, args.log_lines, strict=False)) if args.script_lines else []
    if not args.script and not sizes:
        sizes = list(DEFAULT_SIZES)
    for s_lines, l_lines in sizes:
        text = make_script(s_lines)
        out.append((Script(SYNTHETIC_PATH, text), make_log(text, l_lines)))
    for path in args.script or ():
        script = Script(Path(path).name, Path(path).read_text(encoding="utf-8", errors="replace"))
        for l_lines in args.log_lines or (1_000, 100_000):
            out.append((script, log_for(script, l_lines)))
    return out


HEADER = (
    f"{'script':<22} {'lines':>6} {'log lines':>9} {'parse ms':>9} {'static ms':>9} {'x parse':>7}"
    f" {'seen ms':>8} {'rank ms':>8} {'trace ms':>9} {'x parse':>7} {'peak MiB':>8} {'x log':>6}"
)


def _row(r: dict[str, Any]) -> str:
    trace = "-" if r["trace_ms"] is None else f"{r['trace_ms']:.1f}"
    trace_x = "-" if r["trace_x_parse"] is None else f"{r['trace_x_parse']:.1f}"
    return (
        f"{r['script'][-22:]:<22} {r['script_lines']:>6} {r['log_lines']:>9} {r['parse_ms']:>9.2f}"
        f" {r['static_ms']:>9.2f} {r['static_x_parse']:>7.1f} {r['static_seen_ms']:>8.2f}"
        f" {r['rank_ms']:>8.2f} {trace:>9}"
        f" {trace_x:>7} {r['peak_mib']:>8.1f} {r['peak_x_log']:>6.1f}"
    )


def startup(repeat: int) -> tuple[dict[str, float], dict[str, float]]:
    """Cold starts as a user pays them: `tcfl --version` and a small triage, each a new process.

    Median wall and median CPU (user + system of the process) ms per command. The stored triage
    writes to a database in the run's temporary folder (not the user's), created by one untimed
    run first: what is timed is a triage at the current schema, as every one after a user's first.
    """
    import os
    import resource
    import subprocess
    import tempfile

    command = [sys.executable, "-m", "app.cli"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("TCFL_")}
    with tempfile.TemporaryDirectory(prefix="tcfl-bench-") as work:
        script = Path(work) / "test_big.py"
        log = Path(work) / "failure.log"
        text = make_script(60)
        script.write_text(text, encoding="utf-8")
        log.write_text(make_log(text, 200), encoding="utf-8")
        triage = [*command, "triage", str(script), "--log", str(log)]
        runs = {
            "python_ms": [sys.executable, "-c", "pass"],
            # the yardstick: what importing the web framework alone costs a new process
            "import_fastapi_ms": [sys.executable, "-c", "import fastapi"],
            "version_ms": [*command, "--version"],
            "triage_ms": [*triage, "--no-store"],
            "triage_store_ms": [*triage, "--db", f"sqlite:///{Path(work) / 'bench.db'}"],
        }
        wall: dict[str, float] = {}
        cpu: dict[str, float] = {}
        for name, argv in runs.items():
            subprocess.run(argv, env=env, cwd=work, capture_output=True, check=True)  # untimed
            walls, cpus = [], []
            for _ in range(repeat):
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                t0 = time.perf_counter()
                subprocess.run(argv, env=env, cwd=work, capture_output=True, check=True)
                walls.append((time.perf_counter() - t0) * 1000)
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                used = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
                cpus.append(used * 1000)
            wall[name] = round(statistics.median(walls), 1)
            cpu[name] = round(statistics.median(cpus), 1)
    return wall, cpu


def run(args: argparse.Namespace) -> int:
    if args.ci:
        body = ci_bench(args)
        if args.json:
            json.dump({"ci": body}, sys.stdout, indent=1)
            sys.stdout.write("\n")
        else:
            print_ci(body)
        return 0
    if args.startup:
        times, cpu = startup(args.repeat)
        if args.json:
            body = {"repeat": args.repeat, "clock": "wall", "startup": times, "startup_cpu": cpu}
            json.dump(body, sys.stdout, indent=1)
            sys.stdout.write("\n")
        else:
            print("cold start, new process each run; median ms (wall, and CPU: user + system)")
            for name, value in times.items():
                print(f"  {name.removesuffix('_ms'):<16} wall {value:>8.1f}   cpu {cpu[name]:>8.1f}")
            base = times["import_fastapi_ms"]
            print(f"stored triage / import fastapi: wall {times['triage_store_ms'] / max(base, 1e-9):.2f}x")
        return 0
    from app.analysis.source import parse_tree
    from app.triage import prepare

    _clock[0] = CLOCKS[args.clock]
    if args.logs:
        logs = log_rows(args.logs, args.repeat)
        if args.json:
            json.dump({"repeat": args.repeat, "clock": args.clock, "logs": logs}, sys.stdout, indent=1)
            sys.stdout.write("\n")
        else:
            print(
                f"log parsing, in-process; median {args.clock} time per line; peak traced memory / log size"
            )
            print(LOG_HEADER)
            for row in logs:
                print(log_row(row))
        return 0
    warm = make_script(50)
    prepare([Script(SYNTHETIC_PATH, warm)], make_log(warm, 50), _default_options())  # grammar, queries
    parse_tree(warm)
    rows: list[dict[str, Any]] = []
    if not args.json:
        print(f"tcfl static phase, in-process; median {args.clock} ms; 'x parse': ratio to the bare parse")
        print(HEADER)
        print("-" * len(HEADER))
    for script, log in cases(args):
        row = measure(script, log, args.repeat, trace=not args.no_trace)
        rows.append(row)
        if not args.json:
            print(_row(row), flush=True)
    if args.json:
        json.dump({"repeat": args.repeat, "clock": args.clock, "rows": rows}, sys.stdout, indent=1)
        sys.stdout.write("\n")
    return 0


def _default_options() -> Any:
    from app.options import TriageOptions

    return TriageOptions()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tcfl bench", description=__doc__)
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
