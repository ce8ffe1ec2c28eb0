"""Recording a CI job where the job was run: its triages, every test's run and its launch.

``tcfl ci`` and the pytest plugin record a job in their own process through ``record_job``
(``POST /v1/ingest`` stores each triage as its runner makes it, then calls
``app.launch.record_launch`` itself). I/O only: what is recorded is computed by ``app.launch``.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from app.ci import CiReport, history_key
from app.ingest.job import Job
from app.ingest.resolve import Checkout
from app.launch import Recorded, record_launch, run_records
from app.options import TriageOptions
from app.store.history import HistoryStore
from app.store.labels import LabelStore
from app.store.launches import LaunchStore
from app.store.record import Submission, record_triages
from app.store.store import Store


def job_started(store: Store | None, job: Job, file_time: datetime | None = None) -> datetime:
    """When the job started: as given (or by the CI), as first recorded when it is sent again, as
    its results file says, else now. A failure of the job is ranked with the runs recorded before
    this time."""
    if job.started_at is not None:
        return job.started_at
    if store is not None:
        try:
            found = LaunchStore(store).started_at(job.identity)
        except Exception:  # an unreadable launch only loses the job's first time
            found = None
        if found is not None:
            return found if found.tzinfo else found.replace(tzinfo=UTC)
    return file_time if file_time is not None else datetime.now(UTC)


def store_triages(store: Store, report: CiReport, options: TriageOptions) -> CiReport:
    """Each failure's triage stored as ``tcfl triage`` stores one, its id on the report."""
    items = [t for t in report.triaged if t.result is not None]
    cases = [
        (
            Submission(
                scripts=t.sources,
                log=t.run.log,
                options=options.to_dict(),
                test_id=t.run.test_id[:200],
                test=history_key(t.run),
            ),
            t.result.to_dict(),
        )
        for t in items
        if t.result is not None
    ]
    if not cases:
        return report
    with store.engine.begin() as conn:
        stored = record_triages(conn, cases)
    ids = {id(t): s.id for t, s in zip(items, stored, strict=True)}
    return replace(
        report, triaged=tuple(replace(t, triage_id=ids.get(id(t), t.triage_id)) for t in report.triaged)
    )


def record_job(
    store: Store,
    report: CiReport,
    job: Job,
    started: datetime,
    checkout: Checkout | None,
    options: TriageOptions,
) -> tuple[CiReport, Recorded]:
    """The job into the store: each triage (so the dashboard shows it) unless the job was recorded
    before, every test's run (passes too, with their scripts from the checkout) and the job's
    launch; the report with its launch and known issues."""
    launches = LaunchStore(store)
    if launches.find(job.identity) is None:
        report = store_triages(store, report, options)
    records = run_records(report, job, started, checkout=checkout, resolve_failures=True)
    recorded = record_launch(
        report,
        job,
        started,
        records,
        history=HistoryStore(store),
        launches=launches,
        labels=LabelStore(store),
    )
    return replace(report, known=dict(recorded.known), launch_id=recorded.launch_id), recorded
