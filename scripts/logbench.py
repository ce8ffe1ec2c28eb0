"""Log-parsing benchmark: microseconds per line and peak memory over the log's size.

Usage: python scripts/logbench.py [--lines 100000] [--repeat 5]

Three logs of the given length: the static-phase benchmark's prefixed log (a timestamp, level and
logger on every line, some unprefixed value lines, a traceback at the end), the same messages
without prefixes, and an avocado job log. Prints the median time per line over ``--repeat`` runs
and the peak memory of one parse (tracemalloc) as a multiple of the log's size in bytes.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
import tracemalloc

from app.analysis.logparse import parse_log
from app.bench import make_log, make_script


def logs(lines: int) -> dict[str, str]:
    prefixed = make_log(make_script(50), lines)
    plain = "\n".join(ln.split(": ", 1)[-1] if ln.startswith("2024-") else ln for ln in prefixed.split("\n"))
    avocado = "\n".join(
        f"2017-09-16 16:38:59,{i % 1000:03d} stacktrace       L{i % 90:04d} INFO | step {i}: value {i * 7}"
        for i in range(lines)
    )
    return {"prefixed": prefixed, "plain": plain, "avocado": avocado + "\n"}


def measure(text: str, repeat: int) -> tuple[float, float]:
    n = text.count("\n") or 1
    samples = []
    for _ in range(repeat):
        gc.collect()
        t0 = time.process_time()
        parse_log(text)
        samples.append((time.process_time() - t0) / n * 1e6)
    gc.collect()
    tracemalloc.start()
    parse_log(text)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return statistics.median(samples), peak / len(text.encode("utf-8"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    parse_log("2024-05-01 10:00:00,000 INFO test: warm\n")
    print(f"{'log':<10} {'lines':>8} {'MB':>6} {'us/line':>8} {'peak/size':>9}")
    for name, text in logs(args.lines).items():
        us, ratio = measure(text, args.repeat)
        size = len(text.encode("utf-8")) / 1e6
        print(f"{name:<10} {text.count(chr(10)):>8} {size:>6.1f} {us:>8.2f} {ratio:>9.2f}")


if __name__ == "__main__":
    main()
