"""The jobs the analysis pool runs: pure functions with picklable arguments and results.

Imported once by the pool's fork server, so a fresh worker starts with the analysis loaded.
"""

from __future__ import annotations

import gc
from collections.abc import Sequence

from app.analysis.limits import CostLimits, check_text, check_tree
from app.analysis.model import Loc, Script
from app.analysis.render import RenderedCode
from app.analysis.source import normalize_newlines, parse_tree
from app.localize.result import TriageOptions
from app.triage import StaticPhase, narrowed_render, static_phase


def static(
    scripts: Sequence[Script], log: str, options: TriageOptions, limits: CostLimits | None = None
) -> StaticPhase:
    """Analysis, rendering, prompt and heuristic ranking of one case (everything but the model).

    With ``limits``, the case's cost is checked first (``InputTooCostly``, a ValueError, names it).
    """
    try:
        if limits is not None:
            check_cost(scripts, log, limits)
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


def check_cost(scripts: Sequence[Script], log: str, limits: CostLimits) -> None:
    """Every cost limit of ``app.analysis.limits``; parsing is cheap next to the analysis it guards."""
    check_text(scripts, log, limits)
    for script in scripts:
        check_tree(script.path, parse_tree(normalize_newlines(script.content)), limits)


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
