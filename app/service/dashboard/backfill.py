"""The snapshot of a triage stored before snapshots existed: computed once, then stored like any other."""

from __future__ import annotations

from app.analysis import snapshot
from app.analysis.pipeline import analyze
from app.analysis.render import render
from app.service.cases import triage_options
from app.service.store import Case


def snapshot_for(case: Case) -> snapshot.Snapshot:
    """The analysis the triage ran, with its own stored options (log format and log functions too)."""
    opts = triage_options(case.options).validated()
    analysis = analyze(
        case.scripts, case.log, log_functions=opts.log_functions, prefix_format=opts.log_format
    )
    return snapshot.build(analysis, render(analysis, opts.trace, opts.level), case.log)
