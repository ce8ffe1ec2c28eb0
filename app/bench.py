"""Static-phase benchmark: time from scripts + log to rendered prompt, over script and log sizes.

Run as ``tcfl bench`` or ``python -m app.bench``. It prints a table; it asserts nothing.
The synthetic inputs look like real system tests: helpers with logging, branches, loops,
try/except, and a log of mostly framework noise with some test messages and a traceback.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable

from app.analysis.model import Script
from app.analysis.pipeline import analyze

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
        f'  File "/ci/tests/test_big.py", line {script.count(chr(10))}, in test_scenario',
        f"    step_{done}(session, 'dut')",
        '  File "/ci/tests/test_big.py", line 7, in step_0',
        '    raise StepError("step 0 failed")',
        "StepError: step failed",
    ]
    return "\n".join(out) + "\n"


def _time(fn: Callable[[], object], repeat: int) -> list[float]:
    samples: list[float] = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1000)
    return samples


def static_phase(script: str, log: str, level: str = "block", variant: str = "tplus") -> None:
    """Everything before the model call: analysis, then rendering and the prompt when available."""
    analysis = analyze([Script("tests/test_big.py", script)], log, explain=False)
    try:
        from app.analysis.render import render
        from app.localize.prompts import build_messages
    except ImportError:
        return
    rendered = render(analysis, variant, level)
    build_messages(rendered, analysis.log.error_message, 5)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tcfl bench", description=__doc__)
    parser.add_argument("--script-lines", type=int, nargs="+", default=[250, 1_000, 5_000])
    parser.add_argument("--log-lines", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    return run(args)


def run(args: argparse.Namespace) -> int:
    static_phase(make_script(50), make_log(make_script(50), 50))  # warm caches (grammar, queries)
    header = f"{'script lines':>12} {'log lines':>10} {'median ms':>10} {'min ms':>8} {'ms/kline':>9}"
    print("tcfl static phase (parse -> rendered prompt), in-process, one core")
    print(header)
    print("-" * len(header))
    for s_lines in args.script_lines:
        script = make_script(s_lines)
        for l_lines in args.log_lines:
            log = make_log(script, l_lines)
            repeat = args.repeat if s_lines * l_lines <= 1_000 * 10_000 else max(1, args.repeat // 2)
            samples = _time(lambda script=script, log=log: static_phase(script, log), repeat)
            med = statistics.median(samples)
            per_k = med / ((s_lines + l_lines) / 1000)
            print(f"{s_lines:>12} {l_lines:>10} {med:>10.1f} {min(samples):>8.1f} {per_k:>9.2f}", flush=True)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bench", help="print static-phase timings over script and log sizes")
    p.add_argument("--script-lines", type=int, nargs="+", default=[250, 1_000, 5_000])
    p.add_argument("--log-lines", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    p.add_argument("--repeat", type=int, default=5)
    p.set_defaults(func=run)


if __name__ == "__main__":
    raise SystemExit(main())
