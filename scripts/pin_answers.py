"""Record (``--write``) or check the pinned answers: traces, matches, parsed logs and rankings.

The answers of the golden example, the 20 real cases and the mined corpus's right cases, as
``tests/support/pinned.py`` computes them, go to ``tests/data/snapshots/answers.json``;
``tests/test_pinned_answers.py`` runs the check. Regenerate only for an intended change of the
answers (an estimation rule, a ranker channel), never to make a speed change pass. Runs itself
again under ``PYTHONHASHSEED=0`` (see ``tests/support/pinned.py``).
Usage: .venv/bin/python scripts/pin_answers.py [--write | --sample]
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str]) -> int:
    if os.environ.get("PYTHONHASHSEED") != "0":
        env = {**os.environ, "PYTHONHASHSEED": "0"}
        os.execve(sys.executable, [sys.executable, __file__, *argv], env)
    sys.path.insert(0, str(ROOT))
    from tests.support.pinned import cases, changed, sample, write

    if "--write" in argv:
        print(f"wrote {write()}")
        return 0
    chosen = sample() if "--sample" in argv else list(cases())
    differences = changed(chosen)
    for line in differences:
        print(line)
    print(f"{len(chosen)} cases, {len(differences)} answers changed")
    return 1 if differences else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
