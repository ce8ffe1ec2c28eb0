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
from dataclasses import replace
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


CLOCKS: dict[str, Callable[[], float]] = {"cpu": time.process_time, "wall": time.perf_counter}
_clock: list[Callable[[], float]] = [time.process_time]


def _median_ms(fn: Callable[[], object], repeat: int) -> float:
    """Median over ``repeat`` runs; CPU time by default, steadier than wall time on a shared machine."""
    clock = _clock[0]
    samples: list[float] = []
    for _ in range(repeat):
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
    static_ms = _median_ms(lambda: prepare([script], log, options), repeat)
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
        trace_ms = _median_ms(lambda: analyze([script], log, variants=VARIANTS, explain=True), repeat)
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
