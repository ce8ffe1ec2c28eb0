"""Benchmark of the CI path: reading results files and triaging every failed test (heuristic ranker).

Builds a job of N failed tests from the small failing suite in tests/data/ci/suite (unittest-style
tracebacks with the suite's real line numbers), as a JUnit file and as a plain unittest job log,
then prints the median wall time of reading each (per test) and of `triage_results` (per failed
test). Usage: .venv/bin/python scripts/bench-ci.py [N ...]
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from pathlib import Path

from junitparser import Failure, JUnitXml, TestCase, TestSuite

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.ci import local_triager, triage_results  # noqa: E402
from app.ingest import parse_bytes  # noqa: E402
from app.ingest.resolve import Checkout  # noqa: E402
from app.localize.result import TriageOptions  # noqa: E402

SUITE = ROOT / "tests" / "data" / "ci" / "suite"
REPEATS = 5
TRACEBACKS = (
    (
        "test_link_speed",
        'Traceback (most recent call last):\n  File "/ci/build/test_links.py", line 20, in test_link_speed\n'
        '    self.assertEqual(speed, 10000, "eth0 must run at 10G")\n'
        "AssertionError: 1000 != 10000 : eth0 must run at 10G",
    ),
    (
        "test_jumbo_mtu",
        'Traceback (most recent call last):\n  File "/ci/build/test_links.py", line 24, in test_jumbo_mtu\n'
        '    mtu = port_mtu("eth1")\n  File "/ci/build/helpers/inventory.py", line 22, in port_mtu\n'
        "    return port[\"mtu\"]\nKeyError: 'mtu'",
    ),
)


def junit(n: int) -> bytes:
    suite = TestSuite("bench")
    for i in range(n):
        name, tb = TRACEBACKS[i % 2]
        case = TestCase(f"{name}_{i}", classname="test_links.TestLinks")
        case.result = [Failure(tb.splitlines()[-1])]
        case.result[0].text = tb
        case.system_out = f"INFO checking link speed on eth{i % 2}\n"
        suite.add_testcase(case)
    xml = JUnitXml("bench")
    xml.add_testsuite(suite)
    return xml.tostring()


def joblog(n: int) -> bytes:
    blocks = []
    for i in range(n):
        name, tb = TRACEBACKS[i % 2]
        blocks.append(f"{'=' * 70}\nFAIL: {name} (test_links.TestLinks.{name})\n{'-' * 70}\n{tb}\n")
    return ("\n".join(blocks) + f"{'-' * 70}\nRan {n} tests in 1.0s\n\nFAILED (failures={n})\n").encode()


def median_ms(fn) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(REPEATS):
        started = time.perf_counter()
        fn()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def main(sizes: list[int]) -> None:
    checkout = Checkout.scan(SUITE)
    options = TriageOptions(ranker="heuristic")
    print(
        f"{'tests':>6} {'junit read ms/test':>19} {'joblog split ms/test':>21} {'triage ms/failed test':>22}"
    )
    for n in sizes:
        xml, log = junit(n), joblog(n)
        read_junit = median_ms(lambda xml=xml: parse_bytes(xml, "junit.xml")) / n
        read_log = median_ms(lambda log=log: parse_bytes(log, "job.log")) / n
        results = parse_bytes(xml, "junit.xml")
        assert len(results.failed) == n
        triager = local_triager(options, None)
        triage = median_ms(lambda r=results, t=triager: asyncio.run(triage_results(r, checkout, t))) / n
        print(f"{n:>6} {read_junit:>19.3f} {read_log:>21.3f} {triage:>22.2f}")


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [10, 100, 400])
