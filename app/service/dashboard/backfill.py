"""The snapshot of a triage stored before snapshots existed: computed once, then stored like any other."""

from __future__ import annotations

from app.analysis import snapshot
from app.service.cases import triage_options
from app.store.store import Submission
from app.triage import prepare


def snapshot_for(case: Submission) -> snapshot.Snapshot:
    """The analysis the triage ran: the same static phase, from its own stored options."""
    request = prepare(case.scripts, case.log, triage_options(case.options), explain=True)
    return snapshot.build(request.analysis, request.rendered, case.log)
