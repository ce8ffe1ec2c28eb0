"""Log-parsing benchmark: microseconds per line and peak memory over the log's size.

Usage: python scripts/logbench.py [--lines 100000] [--repeat 5]   (the same as ``tcfl bench --logs N``)

Three logs of the given length: the static-phase benchmark's prefixed log (a timestamp, level and
logger on every line, some unprefixed value lines, a traceback at the end), the same messages
without prefixes, and an avocado job log. Prints the median CPU time per line over ``--repeat``
runs and the peak memory of one parse (tracemalloc) as a multiple of the log's size in bytes.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

# the harness is the checkout's, never in an installed wheel: import it from here
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tcfl_lab.bench import LOG_HEADER, log_row, log_rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(LOG_HEADER)
    for row in log_rows(args.lines, args.repeat):
        print(log_row(row))


if __name__ == "__main__":
    main()
