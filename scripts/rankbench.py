"""Ranker benchmark: median time of the heuristic and stack-trace rankers on one script, per level.

Pairs a script (default: the bundled golden example; pass a large one, e.g. a 2,800-line system
test) with a synthetic log whose traceback fails at its last assert-like line after N filler
lines, runs the analysis once, then times each ranker R times per level. Prints medians in ms.

    .venv/bin/python scripts/rankbench.py path/to/test_big.py --log-lines 1000 --repeat 11
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from app.analysis.model import Script
from app.analysis.pipeline import analyze
from app.analysis.render import render
from app.localize.heuristic import rank_heuristic, rank_stacktrace

DEFAULT = Path(__file__).resolve().parent.parent / "tests" / "data" / "running-example" / "test_example.py"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("script", nargs="?", type=Path, default=DEFAULT)
    parser.add_argument("--log-lines", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=11)
    args = parser.parse_args()
    code = args.script.read_text(encoding="utf-8", errors="replace")
    lines = code.splitlines()
    target = max(
        (
            i
            for i, line in enumerate(lines)
            if line.strip().startswith(("assert", "pytest_assert", "self.assert"))
        ),
        default=len(lines) - 1,
    )
    path = f"tests/{args.script.name}"
    log = "INFO step done\n" * args.log_lines + (
        "Traceback (most recent call last):\n"
        f'  File "/src/{path}", line {target + 1}, in test\n    {lines[target].strip() if lines else ""}\n'
        "AssertionError: 3 != 4\n"
    )
    analysis = analyze([Script(path, code)], log, explain=False)
    print(f"{args.script.name}: {len(lines)} lines, log {args.log_lines} lines, {args.repeat} runs")
    for level in ("block", "line"):
        rendered = render(analysis, "tplus", level)
        for name, rank in (("heuristic", rank_heuristic), ("stacktrace", rank_stacktrace)):
            samples = []
            for _ in range(args.repeat):
                started = time.perf_counter()
                rank(analysis, rendered, 10)
                samples.append((time.perf_counter() - started) * 1000)
            print(f"{level:<6} {name:<11} median {statistics.median(samples):8.1f} ms")


if __name__ == "__main__":
    main()
