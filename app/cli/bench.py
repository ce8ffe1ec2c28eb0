"""`tcfl bench`: time the static phase against the bare tree-sitter parse (the harness's tcfl_lab/bench.py).

The arguments live here so that ``tcfl --help`` lists the command without loading the harness;
the timing code loads when the command runs.
"""

from __future__ import annotations

import argparse

CLOCKS = ("cpu", "wall")  # tcfl_lab.bench.CLOCKS's keys
CI_PARTS = ("job", "logs", "server")  # tcfl_lab.bench.CI_PARTS


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--script-lines",
        type=int,
        nargs="+",
        metavar="N",
        help="synthetic script sizes, paired with --log-lines (default: 250/1000, 1000/10000, 2500/100000)",
    )
    p.add_argument(
        "--log-lines", type=int, nargs="+", metavar="N", help="log sizes (paired, or per --script)"
    )
    p.add_argument("--script", nargs="+", metavar="FILE", help="real scripts, each with logs of --log-lines")
    p.add_argument("--repeat", type=int, default=5, help="runs per measurement (median)")
    p.add_argument("--no-trace", action="store_true", help="skip timing `tcfl trace`'s all-variant analysis")
    p.add_argument("--clock", choices=CLOCKS, default="cpu", help="cpu (process time, default) or wall time")
    p.add_argument(
        "--startup",
        action="store_true",
        help="time cold starts instead: `tcfl --version` and a small triage, each a new process",
    )
    p.add_argument(
        "--logs",
        type=int,
        metavar="LINES",
        help="time log parsing instead: us per line and peak memory on plain, prefixed and avocado logs",
    )
    p.add_argument(
        "--ci",
        action="store_true",
        help="time CI-scale work instead: `tcfl ci` on a generated job (stored and --no-store), the "
        "static phase at 1k/100k/1M log lines (or --log-lines), the server's CPU per request",
    )
    p.add_argument(
        "--ci-parts", nargs="+", choices=CI_PARTS, metavar="PART", help="job, logs, server (default: all)"
    )
    p.add_argument("--ci-tests", type=int, default=10_000, metavar="N", help="tests of the generated job")
    p.add_argument("--ci-failures", type=int, default=500, metavar="N", help="failed tests of the job")
    p.add_argument("--ci-modules", type=int, default=50, metavar="N", help="test modules of the job")
    p.add_argument("--ci-requests", type=int, default=800, metavar="N", help="requests per server timed")
    p.add_argument("--seed", type=int, default=7, help="seed of the generated job")
    p.add_argument("--json", action="store_true", help="machine-readable rows")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bench", help="time the static phase against the bare tree-sitter parse")
    add_arguments(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from app.cli.harness import load_harness

    load_harness()
    from tcfl_lab.bench import run as bench

    return bench(args)
