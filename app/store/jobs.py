"""Recording a CI job: its triages, every test's run and its launch.

``tcfl ci`` and the pytest plugin record a job in their own process through ``record_job``;
``POST /v1/ingest`` through ``record_ingest``: the upload's triages, its ingest, its runs, its
launch and the labels carried over are one transaction, so an acknowledged upload is stored whole
and a refused one leaves nothing. I/O only: what is recorded is computed by ``app.launch``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import select, text, update
from sqlalchemy.exc import IntegrityError

from app.analysis.model import Script
from app.analysis.parsed import ParseCache
from app.ci import CiReport, history_key
from app.history.records import RunFacts, RunRecord
from app.ingest.base import TestRun
from app.ingest.job import Job, start_of
from app.ingest.resolve import Checkout
from app.launch import Recorded, record_launch, run_records
from app.options import TriageOptions
from app.store.history import HistoryStore, unstorable
from app.store.ingests import add_ingest, ingest_by_key, ingest_triages
from app.store.labels import LabelStore
from app.store.launches import LaunchRow, LaunchStore
from app.store.record import Submission, record_triages, sha256_text
from app.store.store import Store, StoreUnavailable

T = TypeVar("T")


def job_started(store: Store | None, job: Job, file_time: datetime | None = None) -> datetime:
    """When the job started (``app.ingest.job.start_of``), its first recorded start read from the
    store. A failure of the job is ranked with the runs recorded before this time."""
    found = None
    if job.started_at is None and store is not None:
        try:
            found = LaunchStore(store).started_at(job.identity)
        except Exception:  # an unreadable launch only loses the job's first time
            found = None
    return start_of(job, found, file_time)


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
        stored = record_triages(conn, cases, [t.signature for t in items])
    ids = {id(t): s.id for t, s in zip(items, stored, strict=True)}
    return replace(
        report,
        triaged=tuple(t if id(t) not in ids else t.with_triage_id(ids[id(t)]) for t in report.triaged),
    )


def record_job(
    store: Store,
    report: CiReport,
    job: Job,
    started: datetime,
    checkout: Checkout | None,
    options: TriageOptions,
    parses: ParseCache | None = None,
    facts: Mapping[TestRun, RunFacts] | None = None,
    passes: Mapping[TestRun, tuple[tuple[Script, ...], RunFacts | None]] | None = None,
) -> tuple[CiReport, Recorded]:
    """The job into the store: each triage (so the dashboard shows it) unless the job was recorded
    before, every test's run (passes too, with their scripts from the checkout) and the job's
    launch; the report with its launch and known issues. ``parses``: the triages' parses, which
    the runs' facts read again (the same scripts); ``facts``: the failures' facts kept from their
    triages (``app.ci.LocalTriager.facts``), not computed again; ``passes``: passing runs' scripts
    and, where their triages had them parsed, facts (``app.ci.LocalTriager.passes``)."""
    launches = LaunchStore(store)
    if launches.find(job.identity) is None:
        report = store_triages(store, report, options)
    history = HistoryStore(store)
    records = run_records(
        report, job, started, checkout=checkout, resolve_failures=True, facts=facts, passes=passes
    )
    records = history.with_facts(records, parses)
    recorded = record_launch(
        report,
        job,
        started,
        records,
        history=history,
        launches=launches,
        labels=LabelStore(store),
    )
    return replace(report, known=dict(recorded.known), launch_id=recorded.launch_id), recorded


def record_ingest(
    store: Store,
    report: CiReport,
    triages: Mapping[int, tuple[Submission, dict[str, Any]]],
    *,
    source: str,
    job: Job,
    started: datetime,
    records: Sequence[RunRecord],
    key: str | None = None,
) -> tuple[CiReport, int]:
    """An upload into the store in one transaction: each failure's triage (``triages``: index in
    ``report.triaged`` -> the case and the runner's answer), the ingest, every test's run, the
    launch and the labels carried over to it. The report (triage ids, launch, known issues) and
    the ingest's id.

    Idempotent: an upload with the ``key`` (its Idempotency-Key) of a stored ingest, or naming a
    job (its URL, or pipeline and job id) an ingest stored before, stores nothing again and answers
    that ingest (its id, triage ids and launch). ``StoreUnavailable`` when the database refuses:
    then nothing of the upload is stored.
    """
    report, records, cases = storable(report, records, triages)
    for record in records:
        problem = unstorable(record)
        if problem is not None:
            raise Unstorable(f"test {record.test_id[:200]!r}: {problem}; nothing of the upload was stored")
    hashed = sha256_text(key) if key is not None else None
    for attempt in (1, 2):
        try:
            with store.transaction() as session:
                if store.dialect == "postgresql":  # two uploads of one job: the second waits, then finds it
                    session.execute(
                        text("SELECT pg_advisory_xact_lock(:key)"), {"key": int(job.identity[:15], 16)}
                    )
                    if hashed is not None:
                        session.execute(
                            text("SELECT pg_advisory_xact_lock(:key)"), {"key": int(hashed[:15], 16)}
                        )
                found = session.execute(
                    select(LaunchRow.id, LaunchRow.ingest_id).where(LaunchRow.identity == job.identity)
                ).first()
                first = ingest_by_key(session, hashed) if hashed is not None else None
                if first is None and found is not None and (job.job_url or (job.pipeline and job.job_id)):
                    first = found.ingest_id
                if first is not None:
                    ids = ingest_triages(session, first)
                    launch_id = found.id if found is not None else None
                    known = LabelStore(store).known(launch_id) if launch_id is not None else {}
                    answered = _with_ids(report, dict(enumerate(ids)))
                    return replace(answered, known=dict(known), launch_id=launch_id), first
                stored = record_triages(session.connection(), [cases[i] for i in sorted(cases)])
                done = _with_ids(report, {i: s.id for i, s in zip(sorted(cases), stored, strict=True)})
                body = done.to_dict()
                run_id = add_ingest(
                    session,
                    done.format,
                    source,
                    {k: body[k] for k in ("summary", "groups", "warnings")},
                    body["tests"],
                    key=hashed,
                )
                recorded = record_launch(
                    done,
                    job,
                    started,
                    records,
                    history=HistoryStore(store),
                    launches=LaunchStore(store),
                    labels=LabelStore(store),
                    ingest_id=run_id,
                )
                if not recorded.new:  # a job recorded where it ran (tcfl ci): this ingest answers retries
                    session.execute(
                        update(LaunchRow)
                        .where(LaunchRow.id == recorded.launch_id, LaunchRow.ingest_id.is_(None))
                        .values(ingest_id=run_id)
                    )
                return replace(done, known=dict(recorded.known), launch_id=recorded.launch_id), run_id
        except IntegrityError as exc:  # a writer raced on a run or launch: the retry finds its rows
            if attempt == 2:
                raise StoreUnavailable(
                    "the upload conflicted with a concurrent write twice: nothing of it was stored; retry",
                    lost=False,
                ) from exc
    raise AssertionError("not reached")


class Unstorable(ValueError):
    """An upload holds a value no database column takes (``app.store.history.unstorable``)."""


def _with_ids(report: CiReport, ids: Mapping[int, int | None]) -> CiReport:
    """The report with each triaged failure's stored triage id (on the item and its result)."""
    triaged = []
    for i, t in enumerate(report.triaged):
        triage_id = ids.get(i)
        if t.result is None or triage_id is None:
            triaged.append(t)
            continue
        triaged.append(t.with_triage_id(triage_id, on_result=True))
    return replace(report, triaged=tuple(triaged))


def storable(
    report: CiReport,
    records: Sequence[RunRecord],
    triages: Mapping[int, tuple[Submission, dict[str, Any]]],
) -> tuple[CiReport, list[RunRecord], dict[int, tuple[Submission, dict[str, Any]]]]:
    """What an upload stores, checked before anything is: a duration that is not a finite number
    becomes none, and NUL characters (which PostgreSQL text refuses) are taken out of the text,
    each with a warning on the report. The same input always gives the same records."""
    warnings: list[str] = []
    runs = report.results.runs if report.results is not None else ()
    cleaned: dict[int, TestRun] = {}
    for run in runs:
        new = _clean_run(run, warnings)
        cleaned[id(run)] = new
    triaged = tuple(
        replace(t, run=cleaned.get(id(t.run)) or _clean_run(t.run, warnings)) for t in report.triaged
    )
    results = report.results
    if results is not None:
        results = replace(results, runs=tuple(cleaned[id(r)] for r in runs))
    nul = sum(_has_nul(r) for r in records) + sum(_has_nul(c) for c, _ in triages.values())
    if nul:
        warnings.append(f"{nul} record(s) held NUL characters; stored without them")
    out = replace(
        report,
        triaged=triaged,
        results=results,
        warnings=(*report.warnings, *dict.fromkeys(warnings)),
    )
    return (
        out,
        [_no_nul(r) for r in records],
        {i: (_no_nul(case), data) for i, (case, data) in triages.items()},
    )


def _clean_run(run: TestRun, warnings: list[str]) -> TestRun:
    duration = run.duration_s
    if duration is not None and (not isinstance(duration, int | float) or not math.isfinite(duration)):
        warnings.append(f"{run.test_id[:200]!r}: duration {duration!r} is not a finite number; none stored")
        duration = None
    if _has_nul(run):
        warnings.append(f"{run.test_id[:200].replace(chr(0), '')!r}: NUL characters taken out of its text")
    return replace(_no_nul(run), duration_s=duration)


def _has_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, tuple | list):
        return any(_has_nul(v) for v in value)
    if isinstance(value, Mapping):
        return any(_has_nul(k) or _has_nul(v) for k, v in value.items())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return any(_has_nul(getattr(value, f.name)) for f in dataclasses.fields(value))
    return False


def _no_nul(value: T) -> T:
    """``value`` with NUL characters taken out of every text it holds (dataclasses, tuples, maps)."""
    if not _has_nul(value):
        return value
    if isinstance(value, str):
        return value.replace("\x00", "")  # type: ignore[return-value]
    if isinstance(value, tuple):
        return tuple(_no_nul(v) for v in value)  # type: ignore[return-value]
    if isinstance(value, list):
        return [_no_nul(v) for v in value]  # type: ignore[return-value]
    if isinstance(value, Mapping):
        return {_no_nul(k): _no_nul(v) for k, v in value.items()}  # type: ignore[return-value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {
            f.name: _no_nul(getattr(value, f.name))
            for f in dataclasses.fields(value)
            if f.init and _has_nul(getattr(value, f.name))
        }
        return replace(value, **changes)  # type: ignore[type-var]
    return value
