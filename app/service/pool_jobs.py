"""The jobs the analysis pool runs: pure functions with picklable arguments and results.

Imported once by the pool's fork server, so a fresh worker starts with the analysis loaded.
"""

from __future__ import annotations

import gc
from collections.abc import Sequence

from app.analysis.model import Loc, Script
from app.analysis.render import RenderedCode
from app.localize.result import TriageOptions
from app.triage import StaticPhase, narrowed_render, static_phase


def static(scripts: Sequence[Script], log: str, options: TriageOptions) -> StaticPhase:
    """Analysis, rendering, prompt and heuristic ranking of one case (everything but the model)."""
    try:
        phase, _analysis = static_phase(scripts, log, options)
        return phase
    finally:
        gc.collect()


def narrow(
    scripts: Sequence[Script], log: str, options: TriageOptions, lines: frozenset[Loc]
) -> RenderedCode:
    """Phase 2 of a two-phase ranking: the trace cut down to ``lines`` (the analysis is redone)."""
    try:
        _phase, analysis = static_phase(scripts, log, options)
        return narrowed_render(analysis, options, lines)
    finally:
        gc.collect()


def ping() -> int:
    """Nothing: lets tests and the benchmark see a worker answer."""
    return 0


def burn(seconds: float) -> int:
    """Spin on the CPU (for tests of the CPU deadline)."""
    import time

    end = time.process_time() + seconds
    n = 0
    while time.process_time() < end:
        n += 1
    return n


def hog(megabytes: int) -> int:
    """Hold ``megabytes`` of memory (for tests of the memory ceiling)."""
    block = bytearray(megabytes * 1024 * 1024)
    return len(block)
